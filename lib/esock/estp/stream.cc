// ESTP engine: set-up, the send side and credit accounting (docs/stream-protocol.md
// sections 3, 6 and 8). The receive side is in stream_rx.cc.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "esock/estp/stream.h"

namespace esock::estp {

namespace {
// Send buffers beyond this many are never needed: the copies are handed to the verbs at
// once and complete when framed, so a few dozen cover a full credit window.
constexpr std::uint32_t max_send_buffers = 64;
// A DATA message larger than this gains nothing (FPDUs are MSS-sized anyway).
constexpr std::size_t max_send_buffer_size = 256 * 1024;
// The peer's Hello sizes our send buffers (R of them, B octets each, section 2); whatever
// it claims, they take at most this much memory (R = B = 2^32 - 1 asked for 16 MiB).
constexpr std::size_t max_send_memory = 4u << 20;
// Rendezvous offers above this are split by the caller (SRCAVAIL length is 32 bits and
// one registration stays modest).
constexpr std::size_t max_rndv = std::size_t{1} << 30;
}  // namespace

Hello hello_of(const Params& p) {
  // Stream-mode ends write into sinks unless sinks are off (section 6.2); MSGMODE uses none.
  return Hello{p.msgmode, p.recv_buffers, p.recv_buffer_size, false,
               !p.msgmode && p.sink_threshold != 0};
}

Stream::Stream(rnic::Verbs& v, Params local, Hello peer)
    : v_(v), local_(local), peer_(peer), credits_(peer.recv_buffers) {
  sbuf_size_ = std::min<std::size_t>(peer_.recv_buffer_size, max_send_buffer_size);
  const auto by_memory = static_cast<std::uint32_t>(
      std::max<std::size_t>(1, max_send_memory / std::max<std::size_t>(sbuf_size_, 1)));
  const std::uint32_t n = std::min({peer_.recv_buffers, max_send_buffers, by_memory});
  stats_.hello_clamped = n < peer_.recv_buffers || sbuf_size_ < peer_.recv_buffer_size;
  for (std::uint32_t i = 0; i < n; ++i) sfree_.push_back(n - 1 - i);
  sbuf_payload_.assign(n, 0);
}

std::size_t Stream::unsent_octets() const {
  std::size_t n = 0;
  for (const std::uint32_t len : sbuf_payload_) n += len;  // completed buffers hold 0
  for (const Rndv& r : rndvs_)
    if (!r.done) n += r.len;
  return n;
}

Stream::~Stream() {
  cancel_pull();
  cancel_rndv();
  cancel_sink_write();
  drop_sink();
  if (rstag_ != 0) v_.dereg_mr(rstag_);
  if (sstag_ != 0) v_.dereg_mr(sstag_);
}

int Stream::start(bool initiator) {
  const std::size_t R = local_.recv_buffers, B = local_.recv_buffer_size;
  if (R == 0 || B < min_buffer_size || peer_.recv_buffers == 0 ||
      peer_.recv_buffer_size < min_buffer_size)
    return EINVAL;
  rbufs_ = LazyPages(R * B);
  sbufs_ = LazyPages(sfree_.size() * sbuf_size_);
  if (rbufs_.empty() || sbufs_.empty()) return ENOMEM;
  rstag_ = v_.reg_mr(rbufs_.data(), rbufs_.size(), ddp::access_local_write);
  sstag_ = v_.reg_mr(sbufs_.data(), sbufs_.size(), ddp::access_local_write);
  if (rstag_ == 0 || sstag_ == 0) return ENOMEM;
  for (std::uint32_t i = 0; i < R; ++i) {
    const ddp::Sge sge{rbufs_.data() + i * B, static_cast<std::uint32_t>(B), rstag_};
    if (const int rc = v_.post_recv(i, {&sge, 1}); rc != 0) return rc;
  }
  granted_total_ = R;
  // Section 3: the initiator's first FPDU is an ESTP message, so the responder (which
  // sends nothing before it, RFC 5044 section 7.1) may start talking.
  if (initiator && !send(Message{.type = Type::credit}, {})) return ENOBUFS;
  return 0;
}

void Stream::progress() {
  ddp::Completion c[32];
  for (std::size_t n; (n = v_.poll_recv_cq(c)) != 0;)
    for (std::size_t i = 0; i < n; ++i) on_recv(c[i]);
  for (std::size_t n; (n = v_.poll_send_cq(c)) != 0;)
    for (std::size_t i = 0; i < n; ++i) on_send(c[i]);
  send_due();
}

void Stream::fail(int err) {
  // A reset after the peer's FIN (CLOSE-WAIT: what a write to a peer that closed its socket
  // draws) reads as EPIPE, as the kernel's tcp_reset reports it there.
  if (err == ECONNRESET && (peer_fin_ || peer_closed_)) err = EPIPE;
  if (error_ == 0) error_ = err;
}

bool Stream::can_send(Type t) const {
  if (error_ != 0 || sfree_.empty()) return false;
  if (credits_ >= 2) return true;
  // Section 6, last-credit rule: the last credit goes only to a control message, whose
  // buffer the peer re-posts at once and grants back with its next message: a CREDIT that
  // carries grants, an RDMADONE, or the FIN. Spent on a DATA (or SRCAVAIL) it could sit in
  // a peer that does not read, and grants made after it could never be sent (the peer,
  // waiting for them to write, stops reading: a relay such as socat stalled so).
  if (credits_ != 1) return false;
  // WRITEDONE and SINKCANCEL are re-posted at once too (their octets, if any, are in the
  // sink): section 6.2.
  return t == Type::fin || t == Type::rdmadone || t == Type::writedone || t == Type::sinkcancel ||
         (t == Type::credit && pending_loud_ + pending_quiet_ > 0);
}

bool Stream::send(Message m, bytes_view payload) {
  if (!can_send(m.type)) return false;
  const std::uint32_t i = sfree_.back();
  std::uint8_t* p = sbufs_.data() + i * sbuf_size_;
  m.credits = pending_loud_ + pending_quiet_;
  if (m.type == Type::data) m.length = static_cast<std::uint32_t>(payload.size());
  m.payload = payload;
  const std::size_t n = wire_size(m);
  if (n > sbuf_size_ || emit_header(m, {p, sbuf_size_}) == 0) return false;
  if (!payload.empty()) std::memcpy(p + hdr_len, payload.data(), payload.size());
  const ddp::Sge sge{p, static_cast<std::uint32_t>(n), sstag_};
  if (v_.post_send(i, {&sge, 1}) != 0) {
    fail(ECONNRESET);  // the queue pair left RTS: the connection is gone
    return false;
  }
  sbuf_payload_[i] = m.type == Type::data ? static_cast<std::uint32_t>(payload.size()) : 0;
  sfree_.pop_back();
  ++sent_total_;
  if (m.type == Type::fin) fin_seq_ = sent_total_;
  granted_total_ += m.credits;
  pending_loud_ = pending_quiet_ = 0;
  --credits_;
  if (m.type == Type::data || m.type == Type::srcavail || m.type == Type::fin ||
      m.type == Type::writedone) {
    ++bearing_tx_;
    peer_sink_.valid = false;  // section 6.2: other stream data first voids the peer's sink
  }
  if (m.type == Type::data) ++stats_.data_tx;
  if (m.type == Type::credit) ++stats_.credit_tx;
  if (m.type == Type::srcavail) ++stats_.srcavail_tx;
  return true;
}

void Stream::on_send(const ddp::Completion& c) {
  if (c.wr_id == ~std::uint64_t{0}) {  // our RDMA Read (a pull)
    pull_finished(c.status == ddp::Status::success);
    return;
  }
  if (c.wr_id == ~std::uint64_t{1}) {  // our RDMA Write into the peer's sink
    if (swrite_.active) swrite_.completed = true;
    if (c.status != ddp::Status::success) fail(ECONNRESET);
    return;
  }
  if (c.wr_id < sbufs_.size() / sbuf_size_) {
    sfree_.push_back(static_cast<std::uint32_t>(c.wr_id));
    sbuf_payload_[c.wr_id] = 0;
  }
  if (c.status != ddp::Status::success) fail(ECONNRESET);
}

std::int64_t Stream::peer_credits_estimate() const {
  return static_cast<std::int64_t>(granted_total_) - static_cast<std::int64_t>(received_total_);
}

void Stream::send_due() {
  if (error_ != 0) return;
  while (!dones_due_.empty()) {
    const auto [id, len] = dones_due_.front();
    if (!send(Message{.type = Type::rdmadone, .length = len, .id = id}, {})) return;
    dones_due_.pop_front();
  }
  send_sink_due();
  if (fin_wanted_ && !fin_sent_ && send(Message{.type = Type::fin}, {})) fin_sent_ = true;
  // Standalone credit (section 6). Grants for buffers that held a CREDIT are "quiet": on
  // their own they go back only in bulk (>= 2) to a starving peer, so two idle ends never
  // bounce one credit back and forth, and at most one grant per side is ever held back.
  // After the peer's FIN, once everything before it was read, the grants go at once: the
  // peer's close may wait for them (fin_delivered()). Not before: a partial grant could
  // take our last credit and leave the rest held for good.
  const std::uint32_t pending = pending_loud_ + pending_quiet_;
  const bool starving = peer_credits_estimate() <= 1;
  const std::uint32_t half = std::max<std::uint32_t>(1, local_.recv_buffers / 2);
  const bool all_read_to_fin = peer_fin_ && rq_.empty();
  const bool due = pending_loud_ > 0 ? (pending >= half || starving || all_read_to_fin)
                                     : (pending_quiet_ >= 2 && starving);
  if (due && send(Message{.type = Type::credit}, {})) return;
}

std::ptrdiff_t Stream::write(bytes_view data, bool eom) {
  if (error_ != 0) return -error_;
  if (fin_wanted_ || peer_closed_) return -EPIPE;
  const std::size_t max_payload = sbuf_size_ - hdr_len;
  const std::uint16_t eom_flag = local_.msgmode && eom ? flag_eom : 0;
  if (data.empty()) {
    if (!local_.msgmode) return 0;
    if (send(Message{.type = Type::data, .flags = eom_flag}, {})) return 0;
    return error_ != 0 ? -error_ : -EAGAIN;  // a failed post fails the connection
  }
  std::size_t taken = 0;
  while (taken < data.size()) {
    const std::size_t chunk = std::min(data.size() - taken, max_payload);
    const bool last = taken + chunk == data.size();
    const Message m{.type = Type::data, .flags = last ? eom_flag : std::uint16_t{0}};
    if (!send(m, data.subspan(taken, chunk))) break;
    taken += chunk;
  }
  stats_.copied_octets_tx += taken;
  if (taken > 0) return static_cast<std::ptrdiff_t>(taken);
  return error_ != 0 ? -error_ : -EAGAIN;  // a failed post fails the connection
}

bool Stream::can_write_whole(std::size_t n) const {
  if (error_ != 0 || fin_wanted_ || peer_closed_) return true;  // write() fails at once
  const std::size_t max_payload = sbuf_size_ - hdr_len;
  const std::size_t k = std::max<std::size_t>(1, (n + max_payload - 1) / max_payload);
  if (sfree_.size() < k) return false;
  return credits_ >= k + 1;  // the last credit is kept for a control message (section 6)
}

int Stream::start_rndv(bytes_view src, std::uint32_t* out_id) {
  if (error_ != 0) return error_;
  if (fin_wanted_ || peer_closed_) return EPIPE;
  if (rndvs_.size() >= std::max<std::uint32_t>(1, local_.max_rndv_out)) return EBUSY;
  if (src.empty() || src.size() > max_rndv) return EINVAL;
  if (!can_send(Type::srcavail)) return EAGAIN;
  std::erase_if(cancelled_stags_, [this](ddp::stag_t st) { return !v_.reads_from(st); });
  auto* p = const_cast<std::uint8_t*>(src.data());  // the peer only reads it
  const ddp::stag_t stag = v_.reg_mr(p, src.size(), ddp::access_remote_read);
  if (stag == 0) return ENOMEM;
  const std::uint32_t id = next_rndv_id_++;
  const Message m{.type = Type::srcavail,
                  .flags = local_.msgmode ? flag_eom : std::uint16_t{0},
                  .length = static_cast<std::uint32_t>(src.size()),
                  .stag = stag,
                  .to = reinterpret_cast<std::uintptr_t>(p),
                  .id = id};
  if (!send(m, {})) {
    v_.dereg_mr(stag);
    return error_ != 0 ? error_ : EAGAIN;
  }
  rndvs_.push_back(Rndv{.stag = stag, .id = id, .len = src.size()});
  if (out_id != nullptr) *out_id = id;
  return 0;
}

bool Stream::give_back(ddp::stag_t stag, bool* deregistered) {
  if (!*deregistered) {
    v_.dereg_mr(stag);  // a late Read Request (or the rest of an early one) fails
    *deregistered = true;
  }
  return !v_.reads_from(stag);  // TCP may still retransmit what it holds
}

void Stream::give_up(ddp::stag_t stag, bool deregistered, ddp::stag_t* cancelled) {
  if (!deregistered) v_.dereg_mr(stag);  // what is not sent yet now fails its check
  *cancelled = stag;
}

std::optional<std::size_t> Stream::rndv_finished() {
  if (rndvs_.empty() || !rndvs_.front().done) return std::nullopt;
  Rndv& r = rndvs_.front();
  if (!give_back(r.stag, &r.deregistered)) return std::nullopt;
  const std::size_t n = std::min(r.pulled, r.len);
  stats_.rdmadone_clamped += r.pulled > r.len;
  stats_.zcopy_octets_tx += n;
  rndvs_.pop_front();
  return n;
}

void Stream::cancel_rndv() {
  for (const Rndv& r : rndvs_) {
    ddp::stag_t cancelled = 0;
    give_up(r.stag, r.deregistered, &cancelled);
    cancelled_stags_.push_back(cancelled);
  }
  rndvs_.clear();
}

bool Stream::rndv_released() const {
  return rndvs_.empty() && std::none_of(cancelled_stags_.begin(), cancelled_stags_.end(),
                                        [this](ddp::stag_t st) { return v_.reads_from(st); });
}

int Stream::move_rndv(std::uint32_t id, const std::uint8_t* copy) {
  const auto r =
      std::find_if(rndvs_.begin(), rndvs_.end(), [id](const Rndv& x) { return x.id == id; });
  if (r == rndvs_.end() || r->done || r->deregistered) return ENOENT;
  if (r->moved) return 0;
  const int rc = v_.move_mr(r->stag, const_cast<std::uint8_t*>(copy), &r->held);  // only read
  if (rc == 0) r->moved = true;
  return rc;
}

bool Stream::rndv_reads_old(std::uint32_t id) const {
  const auto r =
      std::find_if(rndvs_.begin(), rndvs_.end(), [id](const Rndv& x) { return x.id == id; });
  return r == rndvs_.end() || !r->moved || v_.reads_old(r->stag, r->held);
}

void Stream::shutdown_write() {
  if (!fin_wanted_) fin_after_peer_ = peer_fin_;
  fin_wanted_ = true;
  send_due();
}

bool Stream::tx_idle() const {
  const std::size_t nsend = sbuf_size_ ? sbufs_.size() / sbuf_size_ : 0;
  return error_ != 0 || (rndvs_.empty() && dones_due_.empty() && cancel_answers_due_.empty() &&
                         (!fin_wanted_ || fin_sent_) && sfree_.size() == nsend);
}

bool Stream::writable() const {
  return error_ != 0 || fin_wanted_ || peer_closed_ ||
         (rndvs_.empty() && !swrite_.active && can_send(Type::data));
}

}  // namespace esock::estp
