// esock_iwarp run skeleton: runtime, connection and MPA, the control exchange, close.
#include "driver.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "driver_impl.h"
#include "pattern.h"
#include "tcp/dev/memif_frames.h"

namespace esock::utcp::tool {
namespace {

constexpr std::uint64_t max_region = 32u << 20;  // data regions larger than this wrap

Duration seconds(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

}  // namespace

bool Region::alloc(rnic::Context& ctx, std::size_t len) {
  mem.assign(std::max<std::size_t>(len, 1), 0);
  stag = ctx.reg_mr(mem.data(), mem.size(),
                    ddp::access_local_write | ddp::access_remote_read | ddp::access_remote_write);
  return stag != 0;
}

bool RecvRing::init(rnic::Context& ctx, std::size_t nbuf, std::uint32_t buf_len,
                    std::uint64_t total) {
  nbuf_ = std::max<std::size_t>(nbuf, 1);
  buf_len_ = buf_len;
  total_ = total;
  return mem_.alloc(ctx, nbuf_ * buf_len_);
}

int RecvRing::post(Endpoint& ep, std::uint64_t k) {
  const ddp::Sge s = mem_.sge((k % nbuf_) * buf_len_, buf_len_);
  return ep.post_recv(k, {&s, 1});
}

int RecvRing::post_initial(Endpoint& ep) {
  for (std::uint64_t k = 1; k <= std::min<std::uint64_t>(nbuf_, total_); ++k)
    if (int rc = post(ep, k)) return rc;
  return 0;
}

int RecvRing::repost(Endpoint& ep, std::uint64_t k) {
  return k + nbuf_ <= total_ ? post(ep, k + nbuf_) : 0;
}

Driver::~Driver() = default;

void Driver::fail(const std::string& why) {
  if (!error_.empty()) return;
  error_ = why;
  for (char& c : error_)
    if (c == ' ' || c == '\t' || c == '\n' || c == '=') c = '_';
}

bool Driver::start_runtime() {
  tcp::RuntimeConfig rc;
  // --mtu on memif: buffers sized to the frame (memif_frames.h); 0 keeps the port's 1500
  // here, so the tool's runs stay comparable with the bench tables made before jumbo frames.
  const tcp::MemifFrames frames = tcp::memif_frames(o_.vdev, o_.mtu ? o_.mtu : 1500);
  rc.vdev = frames.devargs;
  rc.core = o_.core;
  rc.file_prefix = o_.file_prefix;
  rc.mtu = static_cast<std::uint16_t>(o_.mtu ? frames.mtu : 0);
  rc.mtu_beyond_port = tcp::is_memif(o_.vdev);
  rc.stack.iface.ip = o_.ip;
  rc.stack.iface.prefix_len = o_.prefix_len;
  if (o_.loss_pct > 0 || o_.reorder_pct > 0) {
    // The same damage both ways on this process's port, as a lossy wire would do it.
    tcp::FaultConfig f;
    f.seed = o_.seed;
    for (tcp::FaultSpec* s : {&f.tx, &f.rx}) {
      s->loss = o_.loss_pct / 100;
      s->reorder = o_.reorder_pct / 100;
      s->reorder_frames = 3;
    }
    rc.faults = f;
  }
  rc.pcap_path = o_.pcap;
  rc.idle.sleep_us = o_.busy ? 0 : o_.idle_sleep_us;
  rc.link_timeout = seconds(std::min(o_.timeout_s, 20.0));
  std::string err;
  rt_ = tcp::Runtime::create(rc, &err);
  if (!rt_) {
    std::fprintf(stderr, "esock_iwarp: %s\n", err.c_str());
    fail("runtime:" + err);
    return false;
  }
  loop_.emplace(*rt_, o_.busy, o_.idle_sleep_us);
  deadline_ = rt_->now() + seconds(o_.timeout_s);
  std::printf("esock_iwarp: port up mac=%s ip=%s/%u\n", rt_->device().mac().to_string().c_str(),
              o_.ip.to_string().c_str(), o_.prefix_len);
  std::fflush(stdout);
  return true;
}

utcp::Options Driver::endpoint_options() const {
  utcp::Options eo;
  // on: ask the peer for Markers / CRC (M=1, C=1); off: refuse, so a mismatched pair of
  // command lines fails the MPA exchange instead of measuring something else.
  eo.mpa.markers = o_.markers ? mpa::Policy::require : mpa::Policy::refuse;
  eo.mpa.crc = o_.crc ? mpa::Policy::require : mpa::Policy::refuse;
  // The server learns --depth only from the HELLO, after MPA: it offers the most.
  const std::uint16_t rd =
      client() ? static_cast<std::uint16_t>(std::clamp<std::uint32_t>(o_.depth, 16, 1024)) : 1024;
  eo.mpa.ird = eo.mpa.ord = eo.qp.ird = eo.qp.ord = rd;
  eo.qp.sq_depth = 1024 + 16;
  eo.qp.rq_depth = 4096 + 16;
  eo.cq_depth = 8192;
  eo.ooo_placement = o_.placement;
  return eo;
}

bool Driver::open() {
  tcp::Stack& st = rt_->stack();
  int err = 0;
  if (client()) {
    ep_ = Endpoint::connect(st, ctx_, o_.peer, o_.port, endpoint_options(), &err);
    if (!ep_) {
      fail(std::string("connect:") + std::strerror(err));
      return false;
    }
  } else {
    tcp::Listener* l = st.listen(o_.port, 4, &err);
    if (l == nullptr) {
      fail(std::string("listen:") + std::strerror(err));
      return false;
    }
    std::printf("esock_iwarp: listening on %s:%u\n", o_.ip.to_string().c_str(), o_.port);
    std::fflush(stdout);
    tcp::Connection* c = nullptr;
    if (!run_until(
            "no_connection", [&](Instant) { return (c = st.accept(l)) != nullptr; },
            [&] { return c != nullptr; }))
      return false;
    st.close_listener(l);  // one connection per run
    ep_ = Endpoint::accept(st, c, ctx_, endpoint_options());
  }
  loop_->set_endpoint(ep_.get());
  auto settled = [&] {
    return ep_->state() != Endpoint::State::connecting &&
           ep_->state() != Endpoint::State::negotiating;
  };
  if (!run_until(
          "mpa_timeout", [](Instant) { return false; }, settled))
    return false;
  if (ep_->state() != Endpoint::State::established) {
    fail("mpa:" + ep_->error());
    return false;
  }
  const mpa::Negotiated& n = ep_->negotiated();
  std::printf("esock_iwarp: connected mpa_rev=%u markers=%d/%d crc=%d ird=%u ord=%u\n", n.revision,
              n.markers_tx, n.markers_rx, n.crc, n.ird, n.ord);
  std::fflush(stdout);
  return true;
}

bool Driver::size_workload() {
  if (o_.size == 0 || o_.iters == 0) {
    fail("empty_workload");
    return false;
  }
  slots_ = std::min<std::uint64_t>(o_.iters, std::max<std::uint64_t>(1, max_region / o_.size));
  region_len_ = slots_ * o_.size;
  const bool lat = o_.mode == Mode::lat;
  if (client())
    n_data_rx_ = lat && o_.op != Op::read ? o_.iters : 0;  // pongs / doorbells
  else
    n_data_rx_ = o_.op == Op::send || (lat && o_.op == Op::write) ? o_.iters : 0;
  // Sends land in posted receives; anything else that arrives untagged is control.
  const std::uint32_t buf_len =
      o_.op == Op::send ? std::max<std::uint32_t>(o_.size, ctl_len) : std::uint32_t{ctl_len};
  std::size_t nbuf = 8;
  if (!client() && o_.op == Op::send && !lat) {
    // The client keeps at most half of these in flight (ADVERT tells it how many), so a
    // Send never meets an empty receive queue (RFC 5040 section 7.1: that is fatal).
    nbuf = std::max<std::size_t>(2 * o_.depth + 16,
                                 std::min<std::size_t>(4 * o_.depth, (64u << 20) / buf_len));
    nbuf = std::min<std::size_t>(nbuf, 4096);
    if (nbuf * buf_len > (256u << 20)) nbuf = std::max<std::size_t>(2, (256u << 20) / buf_len);
  }
  if (!ring_.init(ctx_, nbuf, buf_len, n_data_rx_ + 1)) {
    fail("reg_mr");
    return false;
  }
  // Sources: a Send/Write side's local region; targets: Written into (zero) or Read from.
  const bool need_local = client() ? o_.op != Op::read : lat && o_.op != Op::read;
  const bool need_target =
      client() ? o_.op == Op::read || (lat && o_.op == Op::write) : o_.op != Op::send;
  if ((need_local && !local_.alloc(ctx_, region_len_)) ||
      (need_target && !target_.alloc(ctx_, region_len_))) {
    fail("reg_mr");
    return false;
  }
  if (o_.verify) {
    verify_ = Verdict::ok;
    if (need_local) pattern_fill(pattern_seed_, 0, mut_bytes(local_.mem.data(), region_len_));
    if (need_target && !client() && o_.op == Op::read)
      pattern_fill(pattern_seed_, 0, mut_bytes(target_.mem.data(), region_len_));
  }
  if (ring_.post_initial(*ep_) != 0) {
    fail("post_recv");
    return false;
  }
  return true;
}

bool Driver::post_first_recv() {
  if (!ctl_.alloc(ctx_, ctl_len * (1 + ctl_slots))) {
    fail("reg_mr");
    return false;
  }
  const ddp::Sge rx0 = ctl_.sge(0, ctl_len);
  if (ep_->post_recv(0, {&rx0, 1}) != 0) {
    fail("post_recv");
    return false;
  }
  return true;
}

bool Driver::post_ctl_bytes(const std::uint8_t* p, std::uint32_t len) {
  // A Send's payload is referenced, not copied, until TCP has it acknowledged (zero-copy
  // transmit), so each control Send gets a slot of its own until it completes.
  if (ctl_posted_ - ctl_done_ >= ctl_slots) {
    fail("control_slots_exhausted");
    return false;
  }
  const std::uint64_t off = ctl_len * (1 + ctl_posted_ % ctl_slots);
  std::memcpy(ctl_.mem.data() + off, p, len);
  const ddp::Sge s = ctl_.sge(off, len);
  if (int rc = ep_->post_send(ctl_wr | ctl_posted_, {&s, 1})) {
    fail(std::string("post_send_control:") + std::strerror(rc));
    return false;
  }
  ++ctl_posted_;
  return true;
}

bool Driver::post_ctl(const Ctl& c) {
  std::uint8_t b[ctl_len] = {};
  encode(c, b);
  return post_ctl_bytes(b, ctl_off::end);
}

bool Driver::post_doorbell(std::uint32_t m) {
  std::uint8_t b[4];
  store_be32(b, m);
  return post_ctl_bytes(b, sizeof b);
}

bool Driver::client_hello() {
  pattern_seed_ = o_.seed;
  // Message 0 (ADVERT) first: receives complete in posting order.
  if (!post_first_recv() || !size_workload()) return false;
  Ctl h;
  h.type = CtlType::hello;
  h.op = o_.op;
  h.mode = o_.mode;
  h.verify = o_.verify ? Verdict::ok : Verdict::off;
  h.size = o_.size;
  h.depth = o_.depth;
  h.iters = o_.iters;
  h.seed = pattern_seed_;
  if (!target_.mem.empty()) {
    h.stag = target_.stag;
    h.to = target_.to();
    h.len = region_len_;
  }
  if (!post_ctl(h)) return false;
  auto noop = [](const ddp::Completion&) { return true; };
  auto unexpected = [&](std::uint64_t, std::uint32_t) { return fail("unexpected_message"), false; };
  if (!run_until(
          "no_advert", [&](Instant) { return drain(noop, unexpected); },
          [&] { return peer_first_.has_value() || failed(); }))
    return false;
  if (failed()) return false;
  if (peer_first_->type != CtlType::advert ||
      (o_.op != Op::send && (peer_first_->stag == 0 || peer_first_->len < region_len_))) {
    fail("bad_advert");
    return false;
  }
  return true;
}

bool Driver::server_hello() {
  // RFC 5044 section 7.1: the initiator's FPDU comes first, so the HELLO needs only its
  // own receive; the ring is sized and posted once the HELLO says for what.
  if (!post_first_recv()) return false;
  auto noop = [](const ddp::Completion&) { return true; };
  auto unexpected = [&](std::uint64_t, std::uint32_t) { return fail("unexpected_message"), false; };
  if (!run_until(
          "no_hello", [&](Instant) { return drain(noop, unexpected); },
          [&] { return peer_first_.has_value() || failed(); }))
    return false;
  if (failed()) return false;
  const Ctl& h = *peer_first_;
  if (h.type != CtlType::hello || h.size == 0 || h.iters == 0 || h.depth == 0 || h.depth > 1024) {
    fail("bad_hello");
    return false;
  }
  if (o_.size != 0 && (o_.op != h.op || o_.mode != h.mode || o_.size != h.size ||
                       (o_.iters != 0 && o_.iters != h.iters)))
    std::fprintf(stderr, "esock_iwarp: note: running the client's workload, not ours\n");
  o_.op = h.op;
  o_.mode = h.mode;
  o_.size = h.size;
  o_.iters = h.iters;
  o_.depth = h.depth;
  o_.verify = o_.verify || h.verify != Verdict::off;
  pattern_seed_ = h.seed;
  if (!size_workload()) return false;
  Ctl a;
  a.type = CtlType::advert;
  a.op = o_.op;
  a.mode = o_.mode;
  a.size = o_.size;
  a.iters = o_.iters;
  a.depth = static_cast<std::uint32_t>(ring_.nbuf());  // receives we keep posted
  a.seed = pattern_seed_;
  if (!target_.mem.empty()) {
    a.stag = target_.stag;
    a.to = target_.to();
    a.len = region_len_;
  }
  start_ = loop_->now();
  return post_ctl(a);
}

}  // namespace esock::utcp::tool
