#include "esock/ddpmode/ext_api.h"

#include <fcntl.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "esock/esock.h"
#include "esock/process/config.h"
#include "esock/process/libc.h"
#include "esock/process/memory_map.h"
#include "esock/rawmode/raw_qp.h"
#include "esock/runtime/fd_table.h"
#include "esock/runtime/runtime.h"
#include "esock/runtime/socket.h"

namespace esock::sockets {

namespace {

static_assert(ESOCK_ACCESS_LOCAL_WRITE == ddp::access_local_write &&
              ESOCK_ACCESS_REMOTE_READ == ddp::access_remote_read &&
              ESOCK_ACCESS_REMOTE_WRITE == ddp::access_remote_write &&
              ESOCK_ACCESS_REMOTE_ATOMIC == ddp::access_remote_atomic);

// esock 0.1's completion entry, for programs bound to esock_poll_cq@ESOCK_0.1.
struct esock_wc_v01 {
  uint64_t wr_id;
  int opcode;
  int status;
  uint32_t byte_len;
};
static_assert(sizeof(esock_wc_v01) == 24 && sizeof(esock_wc) == 32);
static_assert(sizeof(esock_tripwire_event) == 40);  // the ABI of esock 0.2
static_assert(ESOCK_MAX_SGE == ddp::max_sge);

int fail(int err) {
  errno = err;
  return -1;
}

// The socket behind fd, or null with *err: EBADF for a closed number, ENOTSOCK for any
// descriptor that is not DDPMODE.
std::shared_ptr<Socket> lookup(int fd, int* err) {
  auto s = fd_get(fd);
  if (!s) *err = ESOCK_LIBC(fcntl)(fd, F_GETFD) < 0 ? EBADF : ENOTSOCK;
  return s;
}

// Under the runtime lock: why this connected socket cannot be used by the API, or 0.
int usable(Socket& s, bool need_raw) {
  // A fork copy: this process's to use, another's (ENOTCONN), or not decided yet (EAGAIN).
  if (const int err = DdpRuntime::get().take_over(s); err != 0) return err;
  if (s.orphaned) return ENOTCONN;
  switch (s.state()) {
    case Socket::State::connected:
      break;
    case Socket::State::closed:
      return EBADF;
    case Socket::State::failed:
      return s.error != 0 ? s.error : ENOTCONN;
    default:
      return ENOTCONN;
  }
  if (!s.conn || !s.conn->pc) return ENOTCONN;
  if (need_raw && !s.conn->raw) return EOPNOTSUPP;
  return 0;
}

// Runs f(raw) for a usable RAWMODE socket under the runtime lock, then lets the runtime
// flush and update the readiness signal; returns f's errno-style result as -1/errno.
// The first work request or poll starts reading the connection (docs/sockets.md).
void start_input(DdpRuntime& rt, Conn& c) {
  if (!c.raw_input_held) return;
  c.raw_input_held = false;
  c.pc->hold_input(false);
  rt.wake();
}

template <typename F>
int with_raw(int fd, F&& f, bool starts_input = false) {
  int err = 0;
  auto s = lookup(fd, &err);
  if (!s) return fail(err);
  DdpRuntime& rt = DdpRuntime::get();
  std::lock_guard lk(rt.mu);
  if ((err = usable(*s, true)) != 0) return fail(err);
  const int r = f(*s->conn->raw);
  if (starts_input) start_input(rt, *s->conn);
  rt.after_op(*s);
  return r < 0 ? fail(-r) : r;
}

int wc_status(ddp::Status st) {
  switch (st) {
    case ddp::Status::success:
      return ESOCK_WC_SUCCESS;
    case ddp::Status::local_length_error:
      return ESOCK_WC_LOC_LEN_ERR;
    case ddp::Status::local_protection_error:
      return ESOCK_WC_LOC_PROT_ERR;
    case ddp::Status::local_qp_operation_error:
      return ESOCK_WC_LOC_QP_OP_ERR;
    case ddp::Status::remote_access_error:
      return ESOCK_WC_REM_ACCESS_ERR;
    case ddp::Status::remote_operation_error:
      return ESOCK_WC_REM_OP_ERR;
    case ddp::Status::remote_invalid_request_error:
      return ESOCK_WC_REM_INV_REQ_ERR;
    case ddp::Status::flushed:
      return ESOCK_WC_WR_FLUSH_ERR;
    case ddp::Status::general_error:
      break;
  }
  return ESOCK_WC_GENERAL_ERR;
}

int wc_opcode(ddp::Opcode op) {
  switch (op) {
    case ddp::Opcode::send:
      return ESOCK_WC_SEND;
    case ddp::Opcode::recv:
      return ESOCK_WC_RECV;
    case ddp::Opcode::write:
      return ESOCK_WC_WRITE;
    case ddp::Opcode::read:
      return ESOCK_WC_READ;
    case ddp::Opcode::send_imm:
      return ESOCK_WC_SEND_IMM;
    case ddp::Opcode::write_imm:
      return ESOCK_WC_WRITE_IMM;
    case ddp::Opcode::fetch_add:
      return ESOCK_WC_FETCH_ADD;
    case ddp::Opcode::cmp_swap:
      return ESOCK_WC_CMP_SWAP;
    case ddp::Opcode::recv_imm:
      break;
  }
  return ESOCK_WC_RECV_IMM;
}

std::span<const RawSge> raw_list(const esock_sge* sg, int num_sge,
                                 std::array<RawSge, ESOCK_MAX_SGE>& list) {
  for (int i = 0; i < num_sge; ++i)
    list[static_cast<std::size_t>(i)] = RawSge{sg[i].addr, sg[i].length, sg[i].lkey};
  return {list.data(), static_cast<std::size_t>(num_sge)};
}

}  // namespace

std::uint32_t ext_reg_mr(int fd, void* addr, std::size_t len, int access) {
  // Memory a peer may write, or we may read to send, must be there (as ibv_reg_mr checks by
  // pinning it): else the first remote Write into it would crash the process. Checked
  // before taking the runtime lock (it reads /proc/self/maps).
  // A peer's atomic (RFC 7306) writes its result into the target too.
  const bool writes = (access & (ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_WRITE |
                                 ESOCK_ACCESS_REMOTE_ATOMIC)) != 0;
  const auto base = reinterpret_cast<std::uintptr_t>(addr);
  if (addr != nullptr && len > 0 && base <= UINTPTR_MAX - (len - 1) &&
      !range_mapped(addr, len, writes)) {
    fail(EFAULT);
    return 0;
  }
  ddp::stag_t stag = 0;
  const int r = with_raw(fd, [&](RawQp& q) { return -q.reg_mr(addr, len, access, &stag); });
  return r < 0 ? 0 : stag;
}

int ext_dereg_mr(int fd, std::uint32_t stag) {
  int err = 0;
  auto s = lookup(fd, &err);
  if (!s) return fail(err);
  DdpRuntime& rt = DdpRuntime::get();
  std::unique_lock lk(rt.mu);
  if ((err = usable(*s, true)) != 0) return fail(err);
  if ((err = s->conn->raw->dereg_mr(stag)) != 0) return fail(err);
  rt.after_op(*s);
  // As ibv_dereg_mr: once this returns the application may free the region, so nothing of
  // the connection may read it any more: no new Read Response segment is sourced from it
  // (deregistered), and one the peer's Read already took waits for TCP to let go of its
  // octets (ACK, or the connection's end), at most ESOCK_TIMEOUT_MS: a peer that neither
  // ACKs nor lets TCP give up then has the connection reset. Issue 20, item 1.
  rt.wait_or_reset(lk, *s, std::chrono::milliseconds(config().timeout_ms),
                   [&] { return s->conn && s->conn->pc && s->conn->pc->verbs().reads_from(stag); });
  return 0;
}

int ext_post(int fd, RawOp op, std::uint64_t wr_id, const esock_sge* sg, int num_sge,
             std::uint32_t rkey, std::uint64_t remote_addr) {
  if (num_sge < 0 || num_sge > ESOCK_MAX_SGE || (num_sge > 0 && sg == nullptr)) return fail(EINVAL);
  std::array<RawSge, ESOCK_MAX_SGE> list{};
  const auto l = raw_list(sg, num_sge, list);
  return with_raw(
      fd, [&](RawQp& q) { return -q.post(op, wr_id, l, rkey, remote_addr); }, true);
}

int ext_post_imm(int fd, std::uint64_t wr_id, const esock_sge* sg, int num_sge, bool write,
                 std::uint32_t rkey, std::uint64_t remote_addr, std::uint64_t imm, int flags) {
  if (num_sge < 0 || num_sge > ESOCK_MAX_SGE || (num_sge > 0 && sg == nullptr) ||
      (flags & ~ESOCK_SEND_SOLICITED) != 0)
    return fail(EINVAL);
  std::array<RawSge, ESOCK_MAX_SGE> list{};
  const auto l = raw_list(sg, num_sge, list);
  const bool se = (flags & ESOCK_SEND_SOLICITED) != 0;
  return with_raw(
      fd, [&](RawQp& q) { return -q.post_imm(wr_id, l, write, rkey, remote_addr, imm, se); }, true);
}

int ext_post_atomic(int fd, std::uint64_t wr_id, const esock_sge* result, std::uint32_t rkey,
                    std::uint64_t remote_addr, const AtomicArgs& a) {
  if (result == nullptr) return fail(EINVAL);
  ddp::AtomicRequest r;
  r.op = static_cast<std::uint8_t>(a.cmp_swap ? ddp::AtomicOp::cmp_swap : ddp::AtomicOp::fetch_add);
  r.stag = rkey;
  r.to = remote_addr;
  r.add_swap = a.data;
  r.add_swap_mask = a.data_mask;
  // RFC 7306 section 5.2.1: FetchAdd's compare fields are sent as 0 and all ones.
  r.compare = a.cmp_swap ? a.compare : 0;
  r.compare_mask = a.cmp_swap ? a.compare_mask : ~std::uint64_t{0};
  const RawSge res{result->addr, result->length, result->lkey};
  return with_raw(
      fd, [&](RawQp& q) { return -q.post_atomic(wr_id, res, r); }, true);
}

int ext_tripwire_arm(int fd, void* addr, std::size_t len, std::uint64_t cookie, int flags) {
  if (len == 0 || (flags & ~ESOCK_TRIPWIRE_PERSISTENT) != 0) return fail(EINVAL);
  return with_raw(fd, [&](RawQp& q) {
    std::uint32_t id = 0;
    const int err =
        q.tripwire_arm(addr, len, cookie, (flags & ESOCK_TRIPWIRE_PERSISTENT) != 0, &id);
    // Ids wrap within 1..INT_MAX (TripwireSet::max_id); kept as a guard for the int result.
    if (err == 0 && id > INT32_MAX) {
      q.tripwire_disarm(id);
      return -ENOMEM;
    }
    return err != 0 ? -err : static_cast<int>(id);
  });
}

int ext_tripwire_disarm(int fd, int id) {
  if (id <= 0) return fail(EINVAL);
  return with_raw(fd, [&](RawQp& q) { return -q.tripwire_disarm(static_cast<std::uint32_t>(id)); });
}

int ext_tripwire_poll(int fd, esock_tripwire_event* ev, int max) {
  if (max < 0 || (max > 0 && ev == nullptr)) return fail(EINVAL);
  return with_raw(
      fd,
      [&](RawQp& q) {
        std::array<ddp::TripwireEvent, 64> got;
        int n = 0;
        while (n < max) {
          const std::size_t want =
              std::min<std::size_t>(got.size(), static_cast<std::size_t>(max - n));
          const std::size_t k = q.tripwire_poll({got.data(), want});
          for (std::size_t i = 0; i < k; ++i) {
            const ddp::TripwireEvent& e = got[i];
            ev[n++] = esock_tripwire_event{e.cookie,   e.to,
                                           e.length,   e.id,
                                           e.landings, e.disarmed ? ESOCK_TRIPWIRE_DISARMED : 0u,
                                           0};
          }
          if (k < want) break;
        }
        return n;
      },
      true);
}

int ext_poll_cq(int fd, void* out, int max, bool v01) {
  auto* wc = static_cast<esock_wc*>(out);
  auto* wc01 = static_cast<esock_wc_v01*>(out);
  if (max < 0 || (max > 0 && wc == nullptr)) return fail(EINVAL);
  // Taken in chunks: what the caller asks for is no bound on what we allocate (INT_MAX).
  std::array<ddp::Completion, 64> got;
  int n = 0;
  int err = 0;
  auto s = lookup(fd, &err);
  if (!s) return fail(err);
  DdpRuntime& rt = DdpRuntime::get();
  std::lock_guard lk(rt.mu);
  if ((err = usable(*s, true)) != 0) return fail(err);
  RawQp& q = *s->conn->raw;
  start_input(rt, *s->conn);
  rt.after_op(*s);  // completions of what the caller's thread just moved
  while (n < max) {
    const std::size_t want = std::min<std::size_t>(got.size(), static_cast<std::size_t>(max - n));
    const std::size_t k = q.take({got.data(), want});
    for (std::size_t i = 0; i < k; ++i) {
      const ddp::Completion& c = got[i];
      if (v01)
        wc01[n++] = esock_wc_v01{c.wr_id, wc_opcode(c.opcode), wc_status(c.status), c.byte_len};
      else
        wc[n++] = esock_wc{c.wr_id, wc_opcode(c.opcode), wc_status(c.status), c.byte_len, c.imm};
    }
    if (k < want) break;
  }
  rt.after_op(*s);  // the signal follows the buffer
  if (n == 0 && max > 0 && q.error() != 0) return fail(q.error());
  return n;
}

int ext_comp_fd(int fd) {
  // Asking for the descriptor to wait on means the application is ready: input starts.
  return with_raw(
      fd, [&](RawQp&) { return fd; }, true);
}

int ext_query_mpa(int fd, esock_mpa_info* info) {
  int err = 0;
  auto s = lookup(fd, &err);
  if (!s) return fail(err);
  if (info == nullptr) return fail(EFAULT);
  DdpRuntime& rt = DdpRuntime::get();
  std::lock_guard lk(rt.mu);
  if ((err = usable(*s, false)) != 0) return fail(err);
  const mpa::Negotiated& n = s->conn->pc->negotiated();
  info->revision = n.revision;
  info->markers_tx = n.markers_tx;
  info->markers_rx = n.markers_rx;
  info->crc = n.crc;
  info->ird = n.ird;
  info->ord = n.ord;
  info->p2p = n.p2p;
  info->rtr = static_cast<std::uint8_t>(n.rtr == mpa::Rtr::send    ? ESOCK_RTR_SEND
                                        : n.rtr == mpa::Rtr::write ? ESOCK_RTR_WRITE
                                        : n.rtr == mpa::Rtr::read  ? ESOCK_RTR_READ
                                                                   : ESOCK_RTR_NONE);
  return 0;
}

}  // namespace esock::sockets
