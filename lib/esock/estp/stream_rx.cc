// ESTP engine: the receive side — message dispatch, buffer re-posting (credit grants),
// reads in stream and MSGMODE, and pulls of advertised sources by RDMA Read
// (docs/stream-protocol.md sections 5, 6.1 and 7).
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "esock/estp/stream.h"

namespace esock::estp {

namespace {
constexpr std::uint64_t pull_wr_id = ~std::uint64_t{0};
// A bounce pull fetches at most this much at a time in stream mode, and prefetches MSGMODE
// messages up to this length: the bound on what a peer's advertisement makes us allocate.
constexpr std::size_t max_bounce = 4u << 20;
// Advertised sources queued and not yet pulled: esock itself has at most one outstanding
// per direction; a peer that queues more than this is treated as hostile (each costs us a
// queue entry but it only a credit, which we return at once).
constexpr std::size_t max_queued_sources = 64;
}  // namespace

void Stream::repost(std::uint32_t buf, bool quiet) {
  if (error_ != 0) return;
  const std::size_t B = local_.recv_buffer_size;
  const ddp::Sge sge{rbufs_.data() + buf * B, static_cast<std::uint32_t>(B), rstag_};
  if (v_.post_recv(buf, {&sge, 1}) != 0) {
    fail(ECONNRESET);
    return;
  }
  ++(quiet ? pending_quiet_ : pending_loud_);
}

void Stream::on_recv(const ddp::Completion& c) {
  if (c.status != ddp::Status::success) {
    // Flushed receives after the peer's FIN (an orderly close) are expected; any other
    // failure means the stream is gone (section 8).
    if (!peer_fin_) fail(c.status == ddp::Status::flushed ? ECONNRESET : EPROTO);
    return;
  }
  ++received_total_;
  const std::size_t B = local_.recv_buffer_size;
  if (c.wr_id >= local_.recv_buffers || c.byte_len > B) {
    fail(EPROTO);
    return;
  }
  const auto buf = static_cast<std::uint32_t>(c.wr_id);
  const std::optional<Message> m = parse({rbufs_.data() + buf * B, c.byte_len});
  if (!m) {
    fail(EPROTO);  // section 4: malformed message
    return;
  }
  on_message(buf, *m);
}

void Stream::on_message(std::uint32_t buf, const Message& m) {
  credits_ += m.credits;
  grants_rx_ += m.credits;
  const bool data_bearing = m.type == Type::data || m.type == Type::srcavail;
  if ((data_bearing || m.type == Type::fin || m.type == Type::writedone) && peer_fin_) {
    fail(EPROTO);  // nothing may follow FIN in the stream
    return;
  }
  if (data_bearing || m.type == Type::fin || m.type == Type::writedone) ++bearing_rx_;
  // Section 6.2: other stream data before a WRITEDONE voids our sink.
  if (data_bearing || m.type == Type::fin) sink_resolve(Sink::State::voided, 0);
  switch (m.type) {
    case Type::data:
      if (m.length == 0 && !local_.msgmode) {
        repost(buf, false);
        return;
      }
      ++stats_.data_rx;
      rq_.push_back(Entry{.kind = Entry::Kind::data,
                          .buf = buf,
                          .p = m.payload.data(),
                          .len = m.length,
                          .eom = (m.flags & flag_eom) != 0});
      return;
    case Type::srcavail:
      if (m.length == 0) {
        fail(EPROTO);
        return;
      }
      if (std::count_if(rq_.begin(), rq_.end(), [](const Entry& e) {
            return e.kind == Entry::Kind::src;
          }) >= static_cast<std::ptrdiff_t>(max_queued_sources)) {
        fail(EPROTO);
        return;
      }
      ++stats_.srcavail_rx;
      rq_.push_back(Entry{.kind = Entry::Kind::src,
                          .len = m.length,
                          .eom = true,
                          .stag = m.stag,
                          .to = m.to,
                          .id = m.id});
      break;
    case Type::rdmadone:
      // The peer pulls sources in stream order, so RDMADONEs come in that order; one for
      // no outstanding source (a stale id) is ignored.
      for (Rndv& r : rndvs_) {
        if (r.id != m.id) continue;
        r.done = true;
        r.pulled = m.length;
        break;
      }
      break;
    case Type::writedone:
    case Type::sinkavail:
    case Type::sinkcancel:
      on_sink_message(m);
      if (error_ != 0) return;
      break;
    case Type::credit:
      repost(buf, true);
      return;
    case Type::fin:
      peer_fin_ = true;
      break;
  }
  repost(buf, false);  // the descriptor was copied out: the buffer is free at once
}

ReadOut Stream::read(std::span<const mut_bytes> dst, bool peek) {
  ReadOut out;
  if (local_.msgmode && discarding_ && !peek) {
    // Section 7: the rest of a truncated message goes before anything else is read.
    while (discarding_ && !rq_.empty() && rq_.front().kind != Entry::Kind::src) {
      Entry& e = rq_.front();
      discarding_ = !e.eom;
      if (e.kind == Entry::Kind::data) repost(e.buf, false);
      rq_.pop_front();
    }
    if (discarding_) {
      out.err = error_ != 0 ? error_ : EAGAIN;
      return out;
    }
  }
  if (local_.msgmode) {
    // MSGMODE reads return whole messages: wait until the last piece has arrived.
    bool complete = false;
    for (const Entry& e : rq_) {
      if (e.kind == Entry::Kind::src) break;
      if ((complete = e.eom)) break;
    }
    if (!complete && !rq_.empty() && rq_.front().kind != Entry::Kind::src) {
      out.err = error_ != 0 ? error_ : EAGAIN;
      return out;
    }
  }
  std::size_t di = 0, doff = 0;
  std::size_t consumed_entries = 0;
  for (std::size_t ei = 0; ei < rq_.size(); ++ei) {
    Entry& e = rq_[ei];
    if (e.kind == Entry::Kind::src) break;
    std::size_t off = e.off;
    while (off < e.len && di < dst.size()) {
      const std::size_t k = std::min(e.len - off, dst[di].size() - doff);
      std::memcpy(dst[di].data() + doff, e.p + off, k);
      off += k;
      doff += k;
      out.n += k;
      if (doff == dst[di].size()) ++di, doff = 0;
    }
    if (!peek) e.off = off;
    const bool whole = off == e.len;
    if (whole) ++consumed_entries;
    if (local_.msgmode) {
      if (e.eom) {
        out.eom = true;
        out.truncated = !whole || e.truncated;
        break;
      }
      if (!whole) {  // buffer full in the middle of a message
        out.truncated = true;
        break;
      }
      continue;
    }
    if (!whole || di == dst.size()) break;
  }
  if (!peek) {
    if (local_.msgmode && out.truncated) {
      // Drop the remainder of this message (now, or as it arrives).
      bool ended = false;
      while (!ended && !rq_.empty() && rq_.front().kind != Entry::Kind::src) {
        ended = rq_.front().eom;
        if (rq_.front().kind == Entry::Kind::data) repost(rq_.front().buf, false);
        rq_.pop_front();
      }
      discarding_ = !ended;
      consumed_entries = 0;
    }
    for (; consumed_entries > 0; --consumed_entries) {
      if (rq_.front().kind == Entry::Kind::data) repost(rq_.front().buf, false);
      rq_.pop_front();
    }
    send_due();
  }
  if (out.n > 0 || out.eom) return out;
  // After the peer's FIN everything it sent has been read: end of stream, even if a reset
  // came after (EPIPE, stream.cc), as the kernel's read returns 0 there.
  if (peer_fin_ && rq_.empty() && error_ == EPIPE) return out;
  if (error_ != 0) {
    out.err = error_;  // an SRCAVAIL still queued can no longer be pulled (section 8)
  } else if (!rq_.empty()) {
    out.err = EAGAIN;  // an SRCAVAIL waits for a pull
  } else if (!peer_fin_) {
    out.err = EAGAIN;
  }
  return out;
}

bool Stream::pull_needed() const {
  return error_ == 0 && !pull_.active && !pull_.done && !rq_.empty() &&
         rq_.front().kind == Entry::Kind::src && !discarding_;
}

std::size_t Stream::pull_available() const {
  return pull_needed() ? rq_.front().len - rq_.front().off : 0;
}

int Stream::pull(mut_bytes dst) {
  if (!pull_needed()) return error_ != 0 ? error_ : EINVAL;
  if (dst.empty()) return EINVAL;
  const Entry& e = rq_.front();
  const std::size_t len = std::min(dst.size(), e.len - e.off);
  const ddp::stag_t stag = v_.reg_mr(dst.data(), len, ddp::access_local_write);
  if (stag == 0) return ENOMEM;
  const ddp::Sge sge{dst.data(), static_cast<std::uint32_t>(len), stag};
  if (const int rc = v_.post_read(pull_wr_id, {&sge, 1}, e.stag, e.to + e.off); rc != 0) {
    v_.dereg_mr(stag);
    return rc;
  }
  pull_ = Pull{.active = true, .stag = stag, .len = len};
  ++stats_.zero_copy_pulls;
  return 0;
}

std::size_t Stream::first_src() const {
  for (std::size_t i = 0; i < rq_.size(); ++i)
    if (rq_[i].kind == Entry::Kind::src) return i;
  return rq_.size();
}

bool Stream::prefetch_needed() const {
  if (error_ != 0 || pull_.active || pull_.done || discarding_) return false;
  std::size_t buffered = 0;
  for (const Entry& e : rq_) {
    if (e.kind == Entry::Kind::src)
      return buffered < max_bounce && (!local_.msgmode || e.len <= max_bounce);
    if (e.kind == Entry::Kind::bounce) buffered += e.len - e.off;
  }
  return false;
}

int Stream::pull_bounce(std::size_t reader_len) {
  if (!prefetch_needed() && !(local_.msgmode && reader_len > 0 && pull_needed()))
    return error_ != 0 ? error_ : EINVAL;
  const Entry& e = rq_[first_src()];
  // MSGMODE pulls the whole message so a later read can see all of it, within the bound.
  const std::size_t len = local_.msgmode
                              ? std::min<std::size_t>(e.len, std::max(max_bounce, reader_len))
                              : std::min(e.len - e.off, max_bounce);
  Pull p{.active = true, .bounce = true, .len = len, .truncated = local_.msgmode && len < e.len};
  p.buf.resize(len);
  p.stag = v_.reg_mr(p.buf.data(), len, ddp::access_local_write);
  if (p.stag == 0) return ENOMEM;
  const ddp::Sge sge{p.buf.data(), static_cast<std::uint32_t>(len), p.stag};
  if (const int rc = v_.post_read(pull_wr_id, {&sge, 1}, e.stag, e.to + e.off); rc != 0) {
    v_.dereg_mr(p.stag);
    return rc;
  }
  pull_ = std::move(p);
  ++stats_.bounce_pulls;
  return 0;
}

void Stream::pull_finished(bool ok) {
  if (!pull_.active) return;  // cancelled
  v_.dereg_mr(pull_.stag);
  pull_.active = false;
  const std::size_t k = first_src();
  if (!ok || k == rq_.size()) {
    fail(ECONNRESET);
    pull_.done = !pull_.bounce;
    pull_.result = ReadOut{.err = error_};
    return;
  }
  Entry& e = rq_[k];
  const std::size_t len = pull_.len;
  e.off += len;
  const bool finished = local_.msgmode || e.off == e.len;
  const std::uint32_t id = e.id;
  const std::size_t total = e.off;
  const bool truncated = local_.msgmode && e.off < e.len;
  if (finished) {
    rq_.erase(rq_.begin() + static_cast<std::ptrdiff_t>(k));
    // Section 6.1 step 3: RDMA Read ordering guarantees the data was read before the
    // RDMADONE Send is processed by the source.
    dones_due_.emplace_back(id, static_cast<std::uint32_t>(total));
  }
  if (pull_.bounce) {
    Entry b{.kind = Entry::Kind::bounce,
            .len = len,
            .eom = local_.msgmode,
            .truncated = pull_.truncated};
    b.owned = std::move(pull_.buf);
    b.p = b.owned.data();
    rq_.insert(rq_.begin() + static_cast<std::ptrdiff_t>(k), std::move(b));
  } else {
    pull_.done = true;
    pull_.result = ReadOut{.n = len, .eom = local_.msgmode, .truncated = truncated};
  }
  pull_.buf.clear();
  send_due();
}

std::optional<ReadOut> Stream::pull_result() {
  if (!pull_.done) return std::nullopt;
  pull_.done = false;
  return pull_.result;
}

void Stream::cancel_pull() {
  if (pull_.active) v_.dereg_mr(pull_.stag);  // a late Read Response fails its STag check
  pull_ = Pull{};
}

std::size_t Stream::readable_octets() const {
  std::size_t n = 0;
  bool skipping = local_.msgmode && discarding_;  // the tail a read will drop first
  for (const Entry& e : rq_) {
    if (skipping && e.kind != Entry::Kind::src) {
      skipping = !e.eom;
      continue;
    }
    skipping = false;
    n += e.len - e.off;
    if (local_.msgmode && e.eom) return n;
  }
  if (local_.msgmode) return 0;
  // A zero-copy pull takes octets of the first source (pull_finished consumes them).
  return pull_.active && !pull_.bounce ? n - std::min(n, pull_.len) : n;
}

bool Stream::readable() const {
  if (error_ != 0 || pull_.done) return true;
  if (sink_.state == Sink::State::written || sink_.state == Sink::State::voided) return true;
  if (rq_.empty()) return peer_fin_;
  if (rq_.front().kind == Entry::Kind::src) return false;
  if (!local_.msgmode) return true;
  // Section 7: a message is readable once its last piece has arrived (as read() decides);
  // a partial one must not raise POLLIN, or a poller would spin on EAGAIN.
  for (const Entry& e : rq_) {
    if (e.kind == Entry::Kind::src) return false;
    if (e.eom) return true;
  }
  return false;
}

}  // namespace esock::estp
