// The extension API (esock.h) over the kernel-socket provider: RAWMODE connections driven
// with registered memory, Send/Receive with gather/scatter lists, RDMA Write and Read, the
// completion descriptor in epoll, the negotiated MPA parameters, and every errno for bad
// arguments (docs/sockets.md, "Extension API").
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>

#include <climits>
#include <cstring>
#include <thread>

#include "ddp_helpers.h"
#include "raw_pair.h"

using namespace esock_test;

namespace {

TEST(ExtApi, SendRecvScatterGatherAndCompletionFdInEpoll) {
  int a = -1, b = -1;
  ASSERT_NO_FATAL_FAILURE(raw_pair(&a, &b));
  EXPECT_EQ(esock_comp_fd(a), a);
  std::vector<std::uint8_t> rx(300, 0), tx = pattern(300, 7);
  const std::uint32_t rk = esock_reg_mr(b, rx.data(), rx.size(), ESOCK_ACCESS_LOCAL_WRITE);
  const std::uint32_t tk = esock_reg_mr(a, tx.data(), tx.size(), 0);
  ASSERT_NE(rk, 0u) << std::strerror(errno);
  ASSERT_NE(tk, 0u) << std::strerror(errno);
  // Scatter into two pieces of one region; gather from three.
  const esock_sge rs[2] = {{rx.data(), 100, rk}, {rx.data() + 100, 200, rk}};
  ASSERT_EQ(esock_post_recv(b, 42, rs, 2), 0) << std::strerror(errno);
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0xb;
  ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, esock_comp_fd(b), &ev), 0);
  EXPECT_FALSE(readable_now(b));
  const esock_sge ts[3] = {
      {tx.data(), 50, tk}, {tx.data() + 50, 150, tk}, {tx.data() + 200, 50, tk}};
  ASSERT_EQ(esock_post_send(a, 7, ts, 3), 0) << std::strerror(errno);
  epoll_event out{};
  ASSERT_EQ(::epoll_wait(ep, &out, 1, 10000), 1);
  const std::uint64_t tag = out.data.u64;  // epoll_event is packed: copy before binding
  EXPECT_EQ(tag, 0xbu);
  esock_wc wc[4];
  ASSERT_EQ(esock_poll_cq(b, wc, 4), 1);
  EXPECT_EQ(wc[0].wr_id, 42u);
  EXPECT_EQ(wc[0].opcode, ESOCK_WC_RECV);
  EXPECT_EQ(wc[0].status, ESOCK_WC_SUCCESS);
  EXPECT_EQ(wc[0].byte_len, 250u);
  EXPECT_EQ(std::memcmp(rx.data(), tx.data(), 250), 0);
  EXPECT_FALSE(readable_now(b));  // drained: the signal follows the completion buffer
  const esock_wc s = wait_wc(a);
  EXPECT_EQ(s.wr_id, 7u);
  EXPECT_EQ(s.opcode, ESOCK_WC_SEND);
  EXPECT_EQ(s.status, ESOCK_WC_SUCCESS);
  EXPECT_EQ(esock_dereg_mr(a, tk), 0);
  EXPECT_EQ(esock_dereg_mr(b, rk), 0);
  ::close(ep);
  ::close(a);
  ::close(b);
}

// The pattern of examples/sockets/rdma_pingpong: advertise {STag, address} by Send, then
// one-sided Write and Read, each verified.
TEST(ExtApi, RdmaWriteAndReadIntoAdvertisedRegion) {
  int a = -1, b = -1;
  ASSERT_NO_FATAL_FAILURE(raw_pair(&a, &b));
  std::vector<std::uint8_t> region(1 << 20, 0);
  const auto src = pattern(region.size(), 3);
  std::memcpy(region.data() + region.size() / 2, src.data(), region.size() / 2);
  const std::uint32_t bk =
      esock_reg_mr(b, region.data(), region.size(),
                   ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_WRITE | ESOCK_ACCESS_REMOTE_READ);
  ASSERT_NE(bk, 0u);
  struct Adv {
    std::uint64_t addr;
    std::uint32_t stag;
  } adv{reinterpret_cast<std::uintptr_t>(region.data()), bk}, got{};
  const std::uint32_t ak = esock_reg_mr(a, &got, sizeof got, ESOCK_ACCESS_LOCAL_WRITE);
  const std::uint32_t bak = esock_reg_mr(b, &adv, sizeof adv, 0);
  const esock_sge r{&got, sizeof got, ak};
  ASSERT_EQ(esock_post_recv(a, 1, &r, 1), 0);
  const esock_sge s{&adv, sizeof adv, bak};
  ASSERT_EQ(esock_post_send(b, 2, &s, 1), 0);
  ASSERT_EQ(wait_wc(a).byte_len, sizeof got);
  EXPECT_EQ(wait_wc(b).status, ESOCK_WC_SUCCESS);
  EXPECT_EQ(got.stag, bk);

  // RDMA Write of 512 KiB into the first half.
  const auto wdata = pattern(region.size() / 2, 9);
  std::vector<std::uint8_t> wbuf = wdata;
  const std::uint32_t wk = esock_reg_mr(a, wbuf.data(), wbuf.size(), 0);
  const esock_sge ws{wbuf.data(), static_cast<std::uint32_t>(wbuf.size()), wk};
  ASSERT_EQ(esock_post_write(a, 3, &ws, 1, got.stag, got.addr), 0) << std::strerror(errno);
  esock_wc wc = wait_wc(a);
  EXPECT_EQ(wc.wr_id, 3u);
  EXPECT_EQ(wc.opcode, ESOCK_WC_WRITE);
  EXPECT_EQ(wc.status, ESOCK_WC_SUCCESS);
  // The Write completes at the initiator when handed to TCP; a Send after it arrives after
  // it (RFC 5040 section 5.5 ordering), so the Send's arrival proves placement.
  std::uint8_t note = 0;
  const std::uint32_t nk = esock_reg_mr(b, &note, 1, ESOCK_ACCESS_LOCAL_WRITE);
  const esock_sge ns{&note, 1, nk};
  ASSERT_EQ(esock_post_recv(b, 4, &ns, 1), 0);
  ASSERT_EQ(esock_post_send(a, 5, nullptr, 0), 0) << std::strerror(errno);
  EXPECT_EQ(wait_wc(b).wr_id, 4u);
  EXPECT_EQ(wait_wc(a).wr_id, 5u);
  EXPECT_EQ(std::memcmp(region.data(), wdata.data(), wdata.size()), 0);

  // RDMA Read of the second half, scattered into two local pieces.
  std::vector<std::uint8_t> rbuf(region.size() / 2, 0);
  const std::uint32_t rk = esock_reg_mr(a, rbuf.data(), rbuf.size(), ESOCK_ACCESS_LOCAL_WRITE);
  const esock_sge rs[2] = {
      {rbuf.data(), 1000, rk},
      {rbuf.data() + 1000, static_cast<std::uint32_t>(rbuf.size() - 1000), rk}};
  ASSERT_EQ(esock_post_read(a, 6, rs, 2, got.stag, got.addr + region.size() / 2), 0);
  wc = wait_wc(a);
  EXPECT_EQ(wc.wr_id, 6u);
  EXPECT_EQ(wc.opcode, ESOCK_WC_READ);
  EXPECT_EQ(wc.status, ESOCK_WC_SUCCESS);
  EXPECT_EQ(rbuf,
            std::vector<std::uint8_t>(src.begin(), src.begin() + static_cast<long>(rbuf.size())));
  ::close(a);
  ::close(b);
}

TEST(ExtApi, RemoteReadWithoutRightsFailsTheRequest) {
  int a = -1, b = -1;
  ASSERT_NO_FATAL_FAILURE(raw_pair(&a, &b));
  std::vector<std::uint8_t> region(4096, 1), local(4096, 0);
  const std::uint32_t bk = esock_reg_mr(b, region.data(), region.size(), ESOCK_ACCESS_REMOTE_WRITE);
  // A passive side starts its input with one poll (docs/sockets.md, "Start-up").
  EXPECT_EQ(esock_poll_cq(b, nullptr, 0), 0);
  const std::uint32_t lk = esock_reg_mr(a, local.data(), local.size(), ESOCK_ACCESS_LOCAL_WRITE);
  const esock_sge s{local.data(), 4096, lk};
  ASSERT_EQ(esock_post_read(a, 9, &s, 1, bk, reinterpret_cast<std::uintptr_t>(region.data())), 0);
  const esock_wc wc = wait_wc(a);
  EXPECT_EQ(wc.wr_id, 9u);
  EXPECT_NE(wc.status, ESOCK_WC_SUCCESS);
  EXPECT_EQ(local, std::vector<std::uint8_t>(4096, 0));
  // The protection error terminated the connection (RFC 5040 section 7): both ends hang up.
  pollfd p{b, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1);
  EXPECT_TRUE(p.revents & POLLHUP);
  esock_wc more[4];
  int n;
  while ((n = esock_poll_cq(a, more, 4)) > 0) {
  }
  EXPECT_EQ(n, -1);
  EXPECT_EQ(esock_post_send(a, 10, nullptr, 0), -1);
  ::close(a);
  ::close(b);
}

// The responder sends at once; the initiator posts its receive only afterwards. Input is
// held until the first post, so the Send waits for it instead of finding no buffer.
TEST(ExtApi, ReceivePostedAfterThePeerSentStillCatchesIt) {
  int a = -1, b = -1;
  ASSERT_NO_FATAL_FAILURE(raw_pair(&a, &b));
  std::uint64_t msg = 0x1122334455667788u, got = 0;
  const std::uint32_t bk = esock_reg_mr(b, &msg, sizeof msg, 0);
  const esock_sge s{&msg, sizeof msg, bk};
  ASSERT_EQ(esock_post_send(b, 1, &s, 1), 0);
  EXPECT_EQ(wait_wc(b).status, ESOCK_WC_SUCCESS);  // handed to TCP: it is on its way
  const std::uint32_t ak = esock_reg_mr(a, &got, sizeof got, ESOCK_ACCESS_LOCAL_WRITE);
  const esock_sge r{&got, sizeof got, ak};
  ASSERT_EQ(esock_post_recv(a, 2, &r, 1), 0);
  const esock_wc wc = wait_wc(a);
  EXPECT_EQ(wc.status, ESOCK_WC_SUCCESS);
  EXPECT_EQ(got, msg);
  ::close(a);
  ::close(b);
}

TEST(ExtApi, QueryMpaOnRawAndStreamSockets) {
  int a = -1, b = -1;
  ASSERT_NO_FATAL_FAILURE(raw_pair(&a, &b));
  esock_mpa_info mi{};
  ASSERT_EQ(esock_query_mpa(a, &mi), 0) << std::strerror(errno);
  EXPECT_EQ(mi.revision, 2);
  EXPECT_EQ(mi.crc, 1);  // ESOCK_MPA_CRC defaults to require
  EXPECT_EQ(mi.p2p, 1);  // RAWMODE asks for an RTR (docs/sockets.md)
  EXPECT_NE(mi.rtr, ESOCK_RTR_NONE);
  EXPECT_GT(mi.ird, 0);
  EXPECT_GT(mi.ord, 0);
  esock_mpa_info mb{};
  ASSERT_EQ(esock_query_mpa(b, &mb), 0);
  EXPECT_EQ(mb.rtr, mi.rtr);
  EXPECT_EQ(mb.markers_rx, mi.markers_tx);
  EXPECT_EQ(esock_query_mpa(a, nullptr), -1);
  EXPECT_EQ(errno, EFAULT);
  ::close(a);
  ::close(b);

  std::uint16_t port = 0;
  const int l = ddp_listener(&port);
  std::thread t([&] { b = ::accept(l, nullptr, nullptr); });
  a = ddp_connect(port);
  t.join();
  ASSERT_GE(a, 0);
  ASSERT_EQ(esock_query_mpa(a, &mi), 0);
  EXPECT_EQ(mi.p2p, 0);
  EXPECT_EQ(mi.rtr, ESOCK_RTR_NONE);
  // A stream socket's queue pair belongs to ESTP.
  EXPECT_EQ(esock_reg_mr(a, &mi, sizeof mi, 0), 0u);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(esock_comp_fd(a), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ::close(a);
  ::close(b);
  ::close(l);
}

TEST(ExtApi, BadArguments) {
  int a = -1, b = -1;
  ASSERT_NO_FATAL_FAILURE(raw_pair(&a, &b));
  std::vector<std::uint8_t> buf(1024);
  esock_wc wc;
  // Descriptors: closed number, not a socket, a plain socket, an armed (unconnected) one.
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  ::close(p[1]);
  EXPECT_EQ(esock_post_send(p[1], 0, nullptr, 0), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(esock_poll_cq(p[0], &wc, 1), -1);
  EXPECT_EQ(errno, ENOTSOCK);
  const int plain = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(esock_reg_mr(plain, buf.data(), buf.size(), 0), 0u);
  EXPECT_EQ(errno, ENOTSOCK);
  esock_mpa_info mi;
  EXPECT_EQ(esock_query_mpa(plain, &mi), -1);
  EXPECT_EQ(errno, ENOTSOCK);
  const int armed = raw_socket();
  EXPECT_EQ(esock_reg_mr(armed, buf.data(), buf.size(), 0), 0u);
  EXPECT_EQ(errno, ENOTCONN);
  EXPECT_EQ(esock_query_mpa(armed, &mi), -1);
  EXPECT_EQ(errno, ENOTCONN);
  // Options: RAWMODE excludes MSGMODE, and is reported.
  int one = 1, v = 0;
  socklen_t vl = sizeof v;
  EXPECT_EQ(::setsockopt(armed, SOL_ESOCK, ESOCK_MSGMODE, &one, sizeof one), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(::getsockopt(armed, SOL_ESOCK, ESOCK_RAWMODE, &v, &vl), 0);
  EXPECT_EQ(v, 1);
  EXPECT_EQ(::setsockopt(a, SOL_ESOCK, ESOCK_RAWMODE, &one, sizeof one), -1);
  EXPECT_EQ(errno, EISCONN);
  // Byte-stream calls on a RAWMODE socket.
  EXPECT_EQ(::write(a, buf.data(), 1), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(::read(a, buf.data(), 1), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  // Registration.
  EXPECT_EQ(esock_reg_mr(a, buf.data(), 0, 0), 0u);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(esock_reg_mr(a, buf.data(), buf.size(), 16), 0u);  // an unknown access bit
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(esock_reg_mr(a, nullptr, 16, 0), 0u);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(esock_reg_mr(a, reinterpret_cast<void*>(~std::uintptr_t{0} - 8), 64, 0), 0u);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(esock_dereg_mr(a, 0x1234), -1);
  EXPECT_EQ(errno, EINVAL);
  const std::uint32_t ro = esock_reg_mr(a, buf.data(), 512, 0);
  const std::uint32_t rw = esock_reg_mr(a, buf.data() + 512, 512, ESOCK_ACCESS_LOCAL_WRITE);
  ASSERT_NE(ro, 0u);
  ASSERT_NE(rw, 0u);
  EXPECT_EQ(esock_dereg_mr(b, ro), -1);  // regions belong to their own connection
  EXPECT_EQ(errno, EINVAL);
  // Lists.
  esock_sge many[ESOCK_MAX_SGE + 1];
  for (auto& e : many) e = esock_sge{buf.data(), 1, ro};
  EXPECT_EQ(esock_post_send(a, 0, many, ESOCK_MAX_SGE + 1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(esock_post_send(a, 0, many, -1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(esock_post_send(a, 0, nullptr, 1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(esock_post_recv(a, 0, nullptr, 0), -1);  // a receive needs a buffer
  EXPECT_EQ(errno, EINVAL);
  esock_sge s{buf.data(), 16, ro ^ 0x100};  // unknown lkey
  EXPECT_EQ(esock_post_send(a, 0, &s, 1), -1);
  EXPECT_EQ(errno, EINVAL);
  s = esock_sge{buf.data() + 500, 16, ro};  // runs past its region's end
  EXPECT_EQ(esock_post_send(a, 0, &s, 1), -1);
  EXPECT_EQ(errno, EFAULT);
  s = esock_sge{buf.data() + 512, 1, ro};  // starts past it (inside the next region)
  EXPECT_EQ(esock_post_send(a, 0, &s, 1), -1);
  EXPECT_EQ(errno, EFAULT);
  s = esock_sge{buf.data() + 511, 0xffffffffu, ro};
  EXPECT_EQ(esock_post_send(a, 0, &s, 1), -1);
  EXPECT_EQ(errno, EFAULT);
  s = esock_sge{buf.data(), 16, ro};  // a receive sink without LOCAL_WRITE
  EXPECT_EQ(esock_post_recv(a, 0, &s, 1), -1);
  EXPECT_EQ(errno, EACCES);
  EXPECT_EQ(esock_post_read(a, 0, &s, 1, 0x100, 0), -1);
  EXPECT_EQ(errno, EACCES);
  s = esock_sge{buf.data() + 512, 16, rw};
  EXPECT_EQ(esock_post_recv(a, 0, &s, 1), 0);
  EXPECT_EQ(esock_poll_cq(a, &wc, -1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(esock_poll_cq(a, nullptr, 1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(esock_poll_cq(a, nullptr, 0), 0);
  // After shutdown(SHUT_WR), send-queue work fails with EPIPE; receives may still be posted.
  ASSERT_EQ(::shutdown(a, SHUT_WR), 0);
  s = esock_sge{buf.data(), 16, ro};
  EXPECT_EQ(esock_post_send(a, 0, &s, 1), -1);
  EXPECT_EQ(errno, EPIPE);
  // The peer sees the orderly end as POLLIN|POLLRDHUP on its completion descriptor.
  EXPECT_EQ(esock_comp_fd(b), b);  // starts b's input
  pollfd pe{b, POLLRDHUP, 0};
  ASSERT_EQ(::poll(&pe, 1, 10000), 1);
  EXPECT_TRUE(pe.revents & POLLRDHUP);
  ::close(p[0]);
  ::close(plain);
  ::close(armed);
  ::close(a);
  ::close(b);
}

// Hardening (careless caller): registering memory that is not there, or not writable for
// a writable region, is EFAULT as ibv_reg_mr answers (it was accepted, and a peer's RDMA
// Write into it would have crashed the process).
TEST(ExtApi, RegMrOfUnmappedOrReadOnlyMemoryIsEfault) {
  int a = -1, b = -1;
  ASSERT_NO_FATAL_FAILURE(raw_pair(&a, &b));
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* gone =
      ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(gone, MAP_FAILED);
  ASSERT_EQ(::munmap(gone, 2 * page), 0);
  EXPECT_EQ(esock_reg_mr(a, gone, page, ESOCK_ACCESS_REMOTE_WRITE), 0u);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(esock_reg_mr(a, gone, page, 0), 0u);
  EXPECT_EQ(errno, EFAULT);
  void* ro = ::mmap(nullptr, 2 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(ro, MAP_FAILED);
  EXPECT_EQ(esock_reg_mr(a, ro, page, ESOCK_ACCESS_REMOTE_WRITE), 0u);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(esock_reg_mr(a, ro, page, ESOCK_ACCESS_LOCAL_WRITE), 0u);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(esock_reg_mr(a, ro, page, ESOCK_ACCESS_REMOTE_ATOMIC), 0u);  // atomics store too
  EXPECT_EQ(errno, EFAULT);
  EXPECT_NE(esock_reg_mr(a, ro, page, ESOCK_ACCESS_REMOTE_READ), 0u) << "read-only is fine to read";
  // A region that runs past the end of a mapping into a hole.
  void* half =
      ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(half, MAP_FAILED);
  ASSERT_EQ(::munmap(static_cast<char*>(half) + page, page), 0);
  EXPECT_EQ(esock_reg_mr(a, half, 2 * page, 0), 0u);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_NE(esock_reg_mr(a, half, page, ESOCK_ACCESS_REMOTE_WRITE), 0u);
  ::munmap(ro, 2 * page);
  ::munmap(half, page);
  ::close(a);
  ::close(b);
}

// Hardening (careless caller): the number of completions asked for bounds nothing esock
// allocates; esock_poll_cq(fd, wc, INT_MAX) used to abort on bad_alloc, bad fd or not.
TEST(ExtApi, PollCqWithIntMaxAllocatesNothingAndStillWorks) {
  esock_wc wc[4];
  EXPECT_EQ(esock_poll_cq(-1, wc, INT_MAX), -1);
  EXPECT_EQ(errno, EBADF);
  int a = -1, b = -1;
  ASSERT_NO_FATAL_FAILURE(raw_pair(&a, &b));
  EXPECT_EQ(esock_poll_cq(b, wc, INT_MAX), 0);  // starts b's input; nothing completed yet
  std::vector<std::uint8_t> rx(64, 0), tx(64, 7);
  const std::uint32_t rk = esock_reg_mr(b, rx.data(), rx.size(), ESOCK_ACCESS_LOCAL_WRITE);
  const esock_sge r{rx.data(), 64, rk};
  ASSERT_EQ(esock_post_recv(b, 1, &r, 1), 0);
  const std::uint32_t tk = esock_reg_mr(a, tx.data(), tx.size(), 0);
  const esock_sge t{tx.data(), 64, tk};
  ASSERT_EQ(esock_post_send(a, 2, &t, 1), 0);
  pollfd p{b, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1);
  // A caller whose array is as large as it says takes everything there is.
  std::vector<esock_wc> many(1000);
  EXPECT_EQ(esock_poll_cq(b, many.data(), static_cast<int>(many.size())), 1);
  EXPECT_EQ(many[0].wr_id, 1u);
  EXPECT_EQ(rx, tx);
  ::close(a);
  ::close(b);
}

TEST(ExtApi, ModeMismatchFailsConnect) {
  std::uint16_t port = 0;
  const int l = ddp_listener(&port);  // a stream (ESTP) listener
  std::thread t([&] {
    pollfd p{l, POLLIN, 0};
    if (::poll(&p, 1, 10000) == 1) {
      const int fl = ::fcntl(l, F_GETFL);
      ::fcntl(l, F_SETFL, fl | O_NONBLOCK);
      const int c = ::accept(l, nullptr, nullptr);  // dropped: never delivered
      EXPECT_EQ(c, -1);
    }
  });
  const int a = raw_socket();
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(port);
  EXPECT_EQ(::connect(a, reinterpret_cast<sockaddr*>(&sa), sizeof sa), -1);
  EXPECT_EQ(errno, EPROTO);
  t.join();
  ::close(a);
  ::close(l);
}

}  // namespace
