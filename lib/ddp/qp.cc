// Qp: configuration, verbs posting, state changes, Terminate generation and flushing.
#include <algorithm>
#include <cerrno>

#include "ddp/qp.h"

namespace esock::ddp {

Qp::Qp(QpConfig cfg, StagTable& stags, CompletionQueue& send_cq, CompletionQueue& recv_cq)
    : cfg_(cfg), stags_(stags), scq_(send_cq), rcq_(recv_cq) {
  set_mulpdu(cfg.mulpdu);
  set_ird_ord(cfg.ird, cfg.ord);
}

void Qp::set_mulpdu(std::uint32_t m) {
  cfg_.mulpdu = std::clamp<std::uint32_t>(m, min_mulpdu, 65535);
}

void Qp::set_ird_ord(std::uint16_t ird, std::uint16_t ord) {
  cfg_.ird = ird;
  cfg_.ord = ord;
  rr_ahead_.assign(ird, std::nullopt);
}

int Qp::rts() {
  if (state_ != QpState::idle) return EINVAL;
  state_ = QpState::rts;
  return 0;
}

int Qp::close() {
  if (state_ != QpState::rts) return ENOTCONN;
  state_ = QpState::closing;
  return 0;
}

std::size_t Qp::incoming_reads() const {
  std::size_t n = irq_.size();
  for (const auto& p : rr_ahead_) n += p ? 1 : 0;
  return n;
}

bool Qp::reads_from(stag_t stag) const {
  for (const Sourced& r : sourced_)
    if (r.stag == stag) return true;
  return false;
}

std::uint64_t Qp::seal_sourced(stag_t stag) {
  // Only the newest run can grow (note_sourced), so sealing it is enough.
  for (auto it = sourced_.rbegin(); it != sourced_.rend(); ++it) {
    if (it->stag != stag) continue;
    it->sealed = true;
    return it->last_seg_id;
  }
  return 0;
}

bool Qp::reads_from(stag_t stag, std::uint64_t held) const {
  if (held == 0) return false;
  for (const Sourced& r : sourced_)
    if (r.stag == stag && r.last_seg_id <= held) return true;
  return false;
}

// Local SGE validation at post time: a failing lkey is refused with EINVAL rather than
// completed in error, so no segment ever names memory we did not check.
int Qp::check_sges(std::span<const Sge> sg, std::uint32_t access, std::uint64_t& total) const {
  if (sg.size() > max_sge) return EINVAL;
  total = 0;
  for (const Sge& s : sg) {
    if (s.length == 0) continue;
    if (s.addr == nullptr) return EINVAL;
    const auto to = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(s.addr));
    if (stags_.check(s.lkey, cfg_.pd, access, to, s.length, nullptr) != StagTable::Check::ok)
      return EINVAL;
    total += s.length;
  }
  // RDMAP messages and Read sizes are 32-bit (RFC 5040 section 4.4).
  return total > UINT32_MAX ? EINVAL : 0;
}

bool Qp::can_post_sq() const {
  return state_ == QpState::rts;
}

// Validates a send-queue WR's state, depth and gather list, then queues it: the send queue
// is processed strictly in posting order (RFC 5040's ordering rules).
int Qp::queue_sq(SqWr wr, std::span<const Sge> sg, std::uint32_t access) {
  if (!can_post_sq()) return ENOTCONN;
  if (sq_.size() >= cfg_.sq_depth) return ENOMEM;
  std::uint64_t total;
  if (int e = check_sges(sg, access, total)) return e;
  // A Read's Data Source range must not wrap the 64-bit TO space.
  if (wr.op == Opcode::read && wr.remote_to > UINT64_MAX - total) return EINVAL;
  wr.sg.assign(sg.begin(), sg.end());
  wr.total = static_cast<std::uint32_t>(total);
  sq_.push_back(std::move(wr));
  return 0;
}

int Qp::post_send(std::uint64_t wr_id, std::span<const Sge> sg, bool solicited, stag_t invalidate) {
  SqWr wr;
  wr.wr_id = wr_id;
  wr.op = Opcode::send;
  wr.solicited = solicited;
  wr.inv = invalidate;
  return queue_sq(std::move(wr), sg, 0);
}

int Qp::post_write(std::uint64_t wr_id, std::span<const Sge> sg, stag_t rkey,
                   std::uint64_t remote_to) {
  SqWr wr;
  wr.wr_id = wr_id;
  wr.op = Opcode::write;
  wr.rkey = rkey;
  wr.remote_to = remote_to;
  return queue_sq(std::move(wr), sg, 0);
}

int Qp::post_read(std::uint64_t wr_id, std::span<const Sge> sink, stag_t rkey,
                  std::uint64_t remote_to) {
  if (sink.empty() || cfg_.ord == 0) return can_post_sq() ? EINVAL : ENOTCONN;
  SqWr wr;
  wr.wr_id = wr_id;
  wr.op = Opcode::read;
  wr.rkey = rkey;
  wr.remote_to = remote_to;
  wr.reads_left = sink.size();
  return queue_sq(std::move(wr), sink, access_local_write);
}

int Qp::post_recv(std::uint64_t wr_id, std::span<const Sge> sg) {
  // Receives may be posted before RTS (they must be, for the first Send to land).
  if (state_ != QpState::idle && state_ != QpState::rts) return ENOTCONN;
  if (rq_.size() >= cfg_.rq_depth) return ENOMEM;
  std::uint64_t total;
  if (int e = check_sges(sg, access_local_write, total)) return e;
  RecvWr wr;
  wr.wr_id = wr_id;
  wr.sg.assign(sg.begin(), sg.end());
  wr.capacity = total;
  rq_.push_back(std::move(wr));
  return 0;
}

void Qp::send_rtr(RtrOp r) {
  rtr_to_send_ = r;
}

void Qp::expect_rtr(RtrOp r) {
  rtr_expected_ = r;
  // A Send RTR consumes MSN 1 of QN 0 without a receive WR (RFC 6581).
}

void Qp::on_acked(std::uint64_t seg_id) {
  while (!sourced_.empty() && sourced_.front().last_seg_id <= seg_id) sourced_.pop_front();
  for (SqWr& wr : sq_) {
    if (!wr.done && wr.handed_out && !uses_ord(wr.op) && wr.last_seg_id <= seg_id) wr.done = true;
  }
  drain_sq();
}

// Send Queue completions leave in posting order (verbs): a finished Send behind an
// unanswered Read waits for it.
void Qp::drain_sq() {
  while (!sq_.empty() && sq_.front().done) {
    const SqWr& wr = sq_.front();
    if (!wr.silent) {
      scq_.push(Completion{wr.wr_id, wr.op, wr.status, wr.total, false, 0});
    } else if (wr.status != Status::success && wr.status != Status::flushed && sq_.size() > 1 &&
               (sq_[1].status == Status::success || sq_[1].status == Status::flushed)) {
      sq_[1].status = wr.status;  // the Write of a write_imm: its error is the WR's
    }
    sq_.pop_front();
    if (sq_next_ > 0) --sq_next_;
  }
}

// Flushes every WR (verbs: entering the error state). The oldest started SQ WR gets
// `first_started` when given (the status the Terminate implies for it).
void Qp::flush(std::optional<Status> first_started) {
  for (SqWr& wr : sq_) {
    if (wr.done) continue;
    if (first_started && wr.started) {
      wr.status = *first_started;
      first_started.reset();
    } else if (wr.status == Status::success) {
      wr.status = Status::flushed;
    }
    wr.done = true;
  }
  drain_sq();
  sq_next_ = 0;
  for (const RecvWr& wr : rq_) {
    const Status st = wr.status == Status::success ? Status::flushed : wr.status;
    rcq_.push(Completion{wr.wr_id, Opcode::recv, st, 0, false, 0});
  }
  rq_.clear();
  orq_.clear();
  irq_.clear();
  for (auto& p : rr_ahead_) p.reset();
  cur_ = Cursor{};
  rtr_to_send_.reset();
  rtr_expected_.reset();
}

// A fatal error detected here: queue the Terminate RFC 5040 section 4.8 describes and
// enter the terminate state; next_segment() hands the Terminate out and moves to error.
// Header copy: for errors raised by an incoming DDP segment (RDMAP and DDP layers) the
// DDP Segment Length (M) and the Terminated DDP Header (D) are included; for a Read
// Request the Terminated RDMA Header (R) as well. LLP and catastrophic errors carry none.
// A segment whose payload was placed early passes only its header octets in `offending`
// and its whole length in seg_len, so its Terminate is the one on_segment would send.
void Qp::fail(TerminateCause c, bytes_view offending, std::size_t seg_len) {
  if (state_ != QpState::rts && state_ != QpState::closing) return;
  Terminate t;
  t.cause = c;
  const bool from_segment = c.layer != term::layer_llp && c.type != 0 && !offending.empty();
  if (from_segment) {
    const std::size_t hl = (offending[0] & 0x80) ? tagged_hdr_len : untagged_hdr_len;
    if (offending.size() >= hl) {
      t.m = t.d = true;
      t.ddp_seg_len = static_cast<std::uint16_t>(std::min<std::size_t>(seg_len, 65535));
      t.ddp_hdr_len = hl;
      std::copy_n(offending.begin(), hl, t.ddp_hdr.begin());
      const bool is_rr =
          hl == untagged_hdr_len &&
          (offending[1] & 0x0f) == static_cast<std::uint8_t>(RdmapOpcode::read_request);
      if (is_rr && offending.size() >= hl + read_request_len) {
        t.r = true;
        std::copy_n(offending.begin() + static_cast<std::ptrdiff_t>(hl), read_request_len,
                    t.rdma_hdr.begin());
      }
    }
  }
  term_len_ = emit(t, term_buf_);
  if (tripwires_ != nullptr) tripwires_->abort_message();  // a Write cut short fires nothing
  cause_ = c;
  term_pending_ = true;
  state_ = QpState::terminate;
  flush(std::nullopt);
}

void Qp::llp_error(TerminateCause c) {
  if (state_ == QpState::idle) {
    state_ = QpState::error;
    cause_ = c;
    flush(std::nullopt);
    return;
  }
  fail(c, {});
}

void Qp::llp_closed() {
  switch (state_) {
    case QpState::rts:
    case QpState::closing: {
      bool pending = !orq_.empty() || !irq_.empty();
      for (const SqWr& wr : sq_) pending = pending || !wr.done;
      flush(std::nullopt);
      state_ = pending ? QpState::error : QpState::idle;
      break;
    }
    case QpState::terminate:
      term_pending_ = false;  // the stream is gone; the Terminate cannot be sent
      state_ = QpState::error;
      break;
    default:
      break;
  }
}

}  // namespace esock::ddp
