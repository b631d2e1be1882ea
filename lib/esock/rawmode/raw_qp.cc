#include "esock/rawmode/raw_qp.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <limits>

namespace esock::sockets {

namespace {
constexpr int all_access = ddp::access_local_write | ddp::access_remote_read |
                           ddp::access_remote_write | ddp::access_remote_atomic;
}  // namespace

RawQp::~RawQp() {
  dereg_all();
}

int RawQp::reg_mr(void* addr, std::size_t len, int access, ddp::stag_t* out) {
  if (access & ~all_access) return EINVAL;
  if (len == 0 || len > std::numeric_limits<std::uint32_t>::max()) return EINVAL;
  const auto base = reinterpret_cast<std::uintptr_t>(addr);
  // The range must not wrap the address space (its last octet's TO must exist).
  if (addr == nullptr || base > std::numeric_limits<std::uintptr_t>::max() - (len - 1))
    return EFAULT;
  const ddp::stag_t s = v_.reg_mr(addr, len, static_cast<std::uint32_t>(access));
  if (s == 0) return ENOMEM;  // every argument error was caught above: the table is full
  regions_.push_back(Region{base, len, access, s});
  *out = s;
  return 0;
}

int RawQp::dereg_mr(ddp::stag_t stag) {
  const auto it = std::find_if(regions_.begin(), regions_.end(),
                               [&](const Region& r) { return r.stag == stag; });
  if (it == regions_.end()) return EINVAL;
  v_.dereg_mr(stag);
  if (tw_ != nullptr) tw_->disarm_region(stag);
  regions_.erase(it);
  return 0;
}

bool RawQp::dereg_all() {
  for (const Region& r : regions_) {
    v_.dereg_mr(r.stag);
    if (tw_ != nullptr) tw_->disarm_region(r.stag);
  }
  bool held = false;
  for (const Region& r : regions_) held = held || v_.reads_from(r.stag);
  regions_.clear();
  return held;
}

const RawQp::Region* RawQp::find(ddp::stag_t stag) const {
  for (const Region& r : regions_)
    if (r.stag == stag) return &r;
  return nullptr;
}

// The local STag checks of RFC 5040 section 7 (valid, access, bounds), done here so a bad
// local argument is an errno for the caller instead of a failed queue pair.
int RawQp::check(std::span<const RawSge> sg, bool sink, std::vector<ddp::Sge>& out) const {
  std::uint64_t total = 0;
  for (const RawSge& e : sg) {
    const Region* r = find(e.lkey);
    if (r == nullptr) return EINVAL;
    const auto a = reinterpret_cast<std::uintptr_t>(e.addr);
    // Overflow-safe: off = a - base only once a >= base is known.
    if (a < r->base || e.length > r->len || a - r->base > r->len - e.length) return EFAULT;
    if (sink && !(r->access & ddp::access_local_write)) return EACCES;
    total += e.length;
    out.push_back(ddp::Sge{static_cast<std::uint8_t*>(e.addr), e.length, e.lkey});
  }
  if (total > std::numeric_limits<std::uint32_t>::max()) return EMSGSIZE;
  return 0;
}

int RawQp::post(RawOp op, std::uint64_t wr_id, std::span<const RawSge> sg, ddp::stag_t rkey,
                std::uint64_t remote_to) {
  if (sg.size() > ddp::max_sge) return EINVAL;
  // A receive or Read needs somewhere to place data; Send/Write may be zero-length.
  const bool sink = op == RawOp::recv || op == RawOp::read;
  if (sink && sg.empty()) return EINVAL;
  std::vector<ddp::Sge> s;
  s.reserve(sg.size());
  if (const int err = check(sg, sink, s); err != 0) return err;
  if (const int err = op == RawOp::recv ? error_ : may_send(); err != 0) return err;
  int rc = 0;
  switch (op) {
    case RawOp::send:
      rc = v_.post_send(wr_id, s);
      break;
    case RawOp::recv:
      rc = v_.post_recv(wr_id, s);
      break;
    case RawOp::write:
      rc = v_.post_write(wr_id, s, rkey, remote_to);
      break;
    case RawOp::read:
      rc = v_.post_read(wr_id, s, rkey, remote_to);
      break;
  }
  return posted(rc);
}

int RawQp::may_send() const {
  if (error_ != 0) return error_;
  return write_shut_ ? EPIPE : 0;
}

int RawQp::posted(int rc) const {
  if (rc == ENOMEM) return ENOBUFS;
  if (rc == ENOTCONN) return error_ != 0 ? error_ : EPIPE;
  return rc;
}

int RawQp::post_imm(std::uint64_t wr_id, std::span<const RawSge> sg, bool write, ddp::stag_t rkey,
                    std::uint64_t remote_to, std::uint64_t imm, bool solicited) {
  if (sg.size() > ddp::max_sge) return EINVAL;
  std::vector<ddp::Sge> s;
  s.reserve(sg.size());
  if (const int err = check(sg, false, s); err != 0) return err;
  if (const int err = may_send(); err != 0) return err;
  return posted(write ? v_.post_write_imm(wr_id, s, rkey, remote_to, imm, solicited)
                      : v_.post_send_imm(wr_id, imm, solicited));
}

int RawQp::post_atomic(std::uint64_t wr_id, const RawSge& result, const ddp::AtomicRequest& req) {
  if (result.length != 8) return EINVAL;
  std::vector<ddp::Sge> s;
  if (const int err = check({&result, 1}, true, s); err != 0) return err;
  if (const int err = may_send(); err != 0) return err;
  return posted(v_.post_atomic(wr_id, s[0], req));
}

int RawQp::tripwire_arm(void* addr, std::size_t len, std::uint64_t cookie, bool persistent,
                        std::uint32_t* id) {
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  if (len == 0) return EINVAL;
  const Region* in = nullptr;
  for (const Region& r : regions_) {
    if (a < r.base || len > r.len || a - r.base > r.len - len) continue;
    in = &r;  // a region holding the whole range; one that may be written wins
    if (r.access & ddp::access_remote_write) break;
  }
  if (in == nullptr) return EFAULT;
  if (!(in->access & ddp::access_remote_write)) return EACCES;
  if (tw_ == nullptr && (tw_ = v_.tripwires()) == nullptr) return EOPNOTSUPP;
  // Tagged Offsets are addresses (verbs.h): the range's TO is its address.
  *id = tw_->arm(in->stag, a, len, cookie, persistent);
  return *id == 0 ? ENOMEM : 0;
}

int RawQp::tripwire_disarm(std::uint32_t id) {
  return tw_ == nullptr ? EINVAL : tw_->disarm(id);
}

std::size_t RawQp::tripwire_poll(std::span<ddp::TripwireEvent> out) {
  return tw_ == nullptr ? 0 : tw_->poll(out);
}

void RawQp::collect() {
  std::array<ddp::Completion, 64> buf;
  for (std::size_t n; (n = v_.poll_send_cq(buf)) > 0;)
    cq_.insert(cq_.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
  for (std::size_t n; (n = v_.poll_recv_cq(buf)) > 0;)
    cq_.insert(cq_.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
}

std::size_t RawQp::take(std::span<ddp::Completion> out) {
  const std::size_t n = std::min(out.size(), cq_.size());
  std::copy_n(cq_.begin(), n, out.begin());
  cq_.erase(cq_.begin(), cq_.begin() + static_cast<std::ptrdiff_t>(n));
  return n;
}

}  // namespace esock::sockets
