// RFC 7306 and tripwires through the extension API (esock.h) over the kernel-socket provider:
// atomics from two connections on one counter, CmpSwap races, Immediate Data behind a Write,
// tripwires in an epoll set with a kernel descriptor, the errors a bad atomic earns, and the
// esock 0.1 layout of esock_poll_cq for programs built before imm_data existed.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/epoll.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "ddp_helpers.h"
#include "raw_pair.h"

using namespace esock_test;

namespace {

std::uint64_t addr(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

// n FetchAdds of `add` on (rkey, target) from fd, at most `window` outstanding; the
// original values land in out[0..n).
void fetch_adds(int fd, std::uint32_t rkey, std::uint64_t target, std::uint64_t add,
                std::vector<std::uint64_t>& out) {
  const std::uint32_t ok = esock_reg_mr(fd, out.data(), out.size() * 8, ESOCK_ACCESS_LOCAL_WRITE);
  ASSERT_NE(ok, 0u) << std::strerror(errno);
  std::size_t posted = 0, done = 0;
  while (done < out.size()) {
    while (posted < out.size() && posted - done < 8) {
      const esock_sge r{&out[posted], 8, ok};
      ASSERT_EQ(esock_post_atomic_fetch_add(fd, posted, &r, rkey, target, add, 0), 0)
          << std::strerror(errno);
      ++posted;
    }
    const esock_wc wc = wait_wc(fd);
    ASSERT_EQ(wc.status, ESOCK_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, ESOCK_WC_FETCH_ADD);
    ASSERT_EQ(wc.byte_len, 8u);
    ++done;
  }
}

// The responders' queue pairs run only while their sockets are in use: a thread polls them
// for as long as this lives.
class Responders {
 public:
  Responders(int b1, int b2)
      : t_([this, b1, b2] {
          esock_wc wc;
          while (!stop_) {
            esock_poll_cq(b1, &wc, 1);
            esock_poll_cq(b2, &wc, 1);
            std::this_thread::sleep_for(std::chrono::microseconds(100));
          }
        }) {}
  ~Responders() {
    stop_ = true;
    t_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread t_;
};

TEST(ExtRfc7306, AtomicsFromTwoConnectionsAndALocalThreadGiveTheExactTotal) {
  int a1 = -1, b1 = -1, a2 = -1, b2 = -1;
  ASSERT_NO_FATAL_FAILURE(raw_pair(&a1, &b1));
  ASSERT_NO_FATAL_FAILURE(raw_pair(&a2, &b2));
  alignas(8) static std::uint64_t counter = 0;
  const std::uint32_t k1 = esock_reg_mr(b1, &counter, 8, ESOCK_ACCESS_REMOTE_ATOMIC);
  const std::uint32_t k2 = esock_reg_mr(b2, &counter, 8, ESOCK_ACCESS_REMOTE_ATOMIC);
  ASSERT_NE(k1, 0u);
  ASSERT_NE(k2, 0u);
  auto responders = std::make_unique<Responders>(b1, b2);
  constexpr std::size_t n = 2000;
  std::vector<std::uint64_t> r1(n), r2(n);
  std::thread t1([&] { fetch_adds(a1, k1, addr(&counter), 1, r1); });
  std::thread t2([&] { fetch_adds(a2, k2, addr(&counter), 1, r2); });
  // The memory-ordering contract: a local thread's atomic adds are atomic with them too.
  for (std::size_t i = 0; i < n; ++i) __atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);
  t1.join();
  t2.join();
  responders.reset();
  EXPECT_EQ(__atomic_load_n(&counter, __ATOMIC_SEQ_CST), 3 * n);
  // Every original value the peers saw is distinct: no two adds read the same value.
  std::vector<std::uint64_t> all(r1);
  all.insert(all.end(), r2.begin(), r2.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  for (int fd : {a1, b1, a2, b2}) ::close(fd);
}

TEST(ExtRfc7306, CmpSwapRacesHaveExactlyOneWinner) {
  int a1 = -1, b1 = -1, a2 = -1, b2 = -1;
  ASSERT_NO_FATAL_FAILURE(raw_pair(&a1, &b1));
  ASSERT_NO_FATAL_FAILURE(raw_pair(&a2, &b2));
  alignas(8) static std::uint64_t lock = 0;
  const std::uint32_t k1 = esock_reg_mr(b1, &lock, 8, ESOCK_ACCESS_REMOTE_ATOMIC);
  const std::uint32_t k2 = esock_reg_mr(b2, &lock, 8, ESOCK_ACCESS_REMOTE_ATOMIC);
  alignas(8) std::uint64_t o1 = 0, o2 = 0;
  const std::uint32_t m1 = esock_reg_mr(a1, &o1, 8, ESOCK_ACCESS_LOCAL_WRITE);
  const std::uint32_t m2 = esock_reg_mr(a2, &o2, 8, ESOCK_ACCESS_LOCAL_WRITE);
  auto responders = std::make_unique<Responders>(b1, b2);
  int wins1 = 0, wins2 = 0;
  for (int round = 0; round < 200; ++round) {
    __atomic_store_n(&lock, 0, __ATOMIC_SEQ_CST);
    const esock_sge s1{&o1, 8, m1}, s2{&o2, 8, m2};
    // Both try 0 -> their own id at once.
    ASSERT_EQ(esock_post_atomic_cmp_swap(a1, 1, &s1, k1, addr(&lock), 0, ~0ull, 1, ~0ull), 0);
    ASSERT_EQ(esock_post_atomic_cmp_swap(a2, 2, &s2, k2, addr(&lock), 0, ~0ull, 2, ~0ull), 0);
    ASSERT_EQ(wait_wc(a1).status, ESOCK_WC_SUCCESS);
    ASSERT_EQ(wait_wc(a2).status, ESOCK_WC_SUCCESS);
    const bool w1 = o1 == 0, w2 = o2 == 0;
    ASSERT_NE(w1, w2) << "round " << round << ": " << o1 << " " << o2;
    ASSERT_EQ(lock, w1 ? 1u : 2u);
    ASSERT_EQ(w1 ? o2 : o1, w1 ? 1u : 2u);  // the loser saw the winner's id
    wins1 += w1;
    wins2 += w2;
  }
  responders.reset();
  EXPECT_EQ(wins1 + wins2, 200);
  for (int fd : {a1, b1, a2, b2}) ::close(fd);
}

TEST(ExtRfc7306, ImmediateDataAloneAndBehindAWrite) {
  int a = -1, b = -1;
  ASSERT_NO_FATAL_FAILURE(raw_pair(&a, &b));
  std::vector<std::uint8_t> mem(100000, 0), rx(16), src = pattern(100000, 5);
  const std::uint32_t mk = esock_reg_mr(b, mem.data(), mem.size(), ESOCK_ACCESS_REMOTE_WRITE);
  const std::uint32_t rk = esock_reg_mr(b, rx.data(), rx.size(), ESOCK_ACCESS_LOCAL_WRITE);
  const std::uint32_t sk = esock_reg_mr(a, src.data(), src.size(), 0);
  const esock_sge r{rx.data(), 16, rk};
  ASSERT_EQ(esock_post_recv(b, 1, &r, 1), 0);
  ASSERT_EQ(esock_post_recv(b, 2, &r, 1), 0);
  ASSERT_EQ(esock_post_send_imm(a, 10, 0x1122334455667788ull, ESOCK_SEND_SOLICITED), 0)
      << std::strerror(errno);
  const esock_sge s{src.data(), static_cast<std::uint32_t>(src.size()), sk};
  ASSERT_EQ(esock_post_write_imm(a, 11, &s, 1, mk, addr(mem.data()), 42, 0), 0);
  esock_wc wc = wait_wc(b);
  EXPECT_EQ(wc.wr_id, 1u);
  EXPECT_EQ(wc.opcode, ESOCK_WC_RECV_IMM);
  EXPECT_EQ(wc.imm_data, 0x1122334455667788ull);
  EXPECT_EQ(wc.byte_len, 8u);
  wc = wait_wc(b);
  EXPECT_EQ(wc.opcode, ESOCK_WC_RECV_IMM);
  EXPECT_EQ(wc.imm_data, 42u);
  EXPECT_EQ(mem, src);  // RFC 7306 section 7: the Write is in place by the completion
  wc = wait_wc(a);
  EXPECT_EQ(wc.opcode, ESOCK_WC_SEND_IMM);
  wc = wait_wc(a);
  EXPECT_EQ(wc.wr_id, 11u);
  EXPECT_EQ(wc.opcode, ESOCK_WC_WRITE_IMM);
  EXPECT_EQ(wc.byte_len, src.size());
  EXPECT_EQ(esock_post_send_imm(a, 12, 1, 2), -1);  // unknown flag
  EXPECT_EQ(errno, EINVAL);
  ::close(a);
  ::close(b);
}

TEST(ExtRfc7306, AMisalignedOrForbiddenAtomicFailsTheRequestAndTheConnection) {
  for (const bool misaligned : {true, false}) {
    int a = -1, b = -1;
    ASSERT_NO_FATAL_FAILURE(raw_pair(&a, &b));
    alignas(8) static std::uint64_t target[2] = {7, 7};
    const std::uint32_t tk = esock_reg_mr(
        b, target, 16, misaligned ? ESOCK_ACCESS_REMOTE_ATOMIC : ESOCK_ACCESS_REMOTE_WRITE);
    alignas(8) std::uint64_t o = 0;
    const std::uint32_t ok = esock_reg_mr(a, &o, 8, ESOCK_ACCESS_LOCAL_WRITE);
    esock_wc wc;
    ASSERT_EQ(esock_poll_cq(b, &wc, 1), 0);  // b's input starts
    const esock_sge r{&o, 8, ok};
    ASSERT_EQ(esock_post_atomic_fetch_add(a, 1, &r, tk, addr(target) + (misaligned ? 4 : 0), 1, 0),
              0);
    wc = wait_wc(a);
    // RFC 7306 section 8.2 (0x0207, a Remote Operation Error) / RFC 5040's access rights.
    EXPECT_EQ(wc.status, misaligned ? ESOCK_WC_REM_OP_ERR : ESOCK_WC_REM_ACCESS_ERR);
    EXPECT_EQ(target[0], 7u);
    EXPECT_EQ(target[1], 7u);
    ::close(a);
    ::close(b);
  }
}

TEST(ExtRfc7306, ATripwireWakesAnEpollSetWithAKernelPipeOncePerLanding) {
  int a = -1, b = -1;
  ASSERT_NO_FATAL_FAILURE(raw_pair(&a, &b));
  std::vector<std::uint8_t> ring(65536, 0), src = pattern(65536, 9);
  const std::uint32_t rk = esock_reg_mr(b, ring.data(), ring.size(), ESOCK_ACCESS_REMOTE_WRITE);
  const std::uint32_t sk = esock_reg_mr(a, src.data(), src.size(), 0);
  const int head = esock_tripwire_arm(b, ring.data() + 65528, 8, 0xead, ESOCK_TRIPWIRE_PERSISTENT);
  const int once = esock_tripwire_arm(b, ring.data(), 4096, 0x1, 0);
  ASSERT_GT(head, 0) << std::strerror(errno);
  ASSERT_GT(once, 0);
  EXPECT_EQ(esock_tripwire_fd(b), b);
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 1;
  ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, esock_tripwire_fd(b), &ev), 0);
  ev.data.u64 = 2;
  ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, pipefd[0], &ev), 0);
  esock_tripwire_event te[4];
  EXPECT_EQ(esock_tripwire_poll(b, te, 4), 0);  // non-blocking: nothing yet
  auto write_at = [&](std::size_t off, std::size_t len, std::uint64_t id) {
    const esock_sge s{src.data() + off, static_cast<std::uint32_t>(len), sk};
    ASSERT_EQ(esock_post_write(a, id, &s, 1, rk, addr(ring.data()) + off), 0);
    ASSERT_EQ(wait_wc(a).status, ESOCK_WC_SUCCESS);
  };
  write_at(8192, 4096, 1);  // armed by nobody
  // A Send behind it: once it arrived, so had the Write (RFC 5040 section 5.5).
  std::vector<std::uint8_t> rx(8);
  const std::uint32_t xk = esock_reg_mr(b, rx.data(), rx.size(), ESOCK_ACCESS_LOCAL_WRITE);
  const esock_sge x{rx.data(), 8, xk};
  ASSERT_EQ(esock_post_recv(b, 7, &x, 1), 0);
  ASSERT_EQ(esock_post_send(a, 2, nullptr, 0), 0);
  ASSERT_EQ(wait_wc(b).opcode, ESOCK_WC_RECV);
  ASSERT_EQ(wait_wc(a).opcode, ESOCK_WC_SEND);
  EXPECT_EQ(esock_tripwire_poll(b, te, 4), 0) << "a Write outside every armed range fired";
  ASSERT_EQ(::write(pipefd[1], "k", 1), 1);
  epoll_event out[2];
  ASSERT_EQ(::epoll_wait(ep, out, 2, 10000), 1);
  std::uint64_t tag = out[0].data.u64;
  EXPECT_EQ(tag, 2u);  // only the pipe
  char c;
  ASSERT_EQ(::read(pipefd[0], &c, 1), 1);
  for (int i = 0; i < 3; ++i) {
    write_at(0, 65536, 10 + i);  // covers both tripwires
    ASSERT_EQ(::epoll_wait(ep, out, 2, 10000), 1);
    tag = out[0].data.u64;
    EXPECT_EQ(tag, 1u);
    const int n = esock_tripwire_poll(b, te, 4);
    ASSERT_EQ(n, i == 0 ? 2 : 1);
    // Within one Write, events come in the order its octets landed: the first 4 KiB first.
    const esock_tripwire_event& h = te[n - 1];
    EXPECT_EQ(h.id, static_cast<std::uint32_t>(head));
    EXPECT_EQ(h.cookie, 0xeadu);
    EXPECT_EQ(h.landings, 1u);
    EXPECT_EQ(h.addr, addr(ring.data()) + 65528);
    EXPECT_EQ(h.length, 8u);
    EXPECT_EQ(h.flags, 0u);
    if (i == 0) {
      EXPECT_EQ(te[0].id, static_cast<std::uint32_t>(once));
      EXPECT_EQ(te[0].length, 4096u);
      EXPECT_EQ(te[0].flags, static_cast<std::uint32_t>(ESOCK_TRIPWIRE_DISARMED));
    }
    EXPECT_EQ(std::memcmp(ring.data(), src.data(), ring.size()), 0);
  }
  EXPECT_EQ(esock_tripwire_disarm(b, once), -1);  // spent by its event
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(esock_tripwire_disarm(b, head), 0);
  write_at(0, 64, 20);
  EXPECT_EQ(::epoll_wait(ep, out, 2, 50), 0);
  EXPECT_EQ(esock_tripwire_poll(b, te, 4), 0);
  ::close(ep);
  ::close(pipefd[0]);
  ::close(pipefd[1]);
  ::close(a);
  ::close(b);
}

TEST(ExtRfc7306, TripwireArgumentsAreChecked) {
  int a = -1, b = -1;
  ASSERT_NO_FATAL_FAILURE(raw_pair(&a, &b));
  std::vector<std::uint8_t> mem(4096), ro(4096);
  ASSERT_NE(esock_reg_mr(b, mem.data(), mem.size(), ESOCK_ACCESS_REMOTE_WRITE), 0u);
  ASSERT_NE(esock_reg_mr(b, ro.data(), ro.size(), ESOCK_ACCESS_REMOTE_READ), 0u);
  EXPECT_EQ(esock_tripwire_arm(b, mem.data(), 0, 0, 0), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(esock_tripwire_arm(b, mem.data(), 8, 0, 4), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(esock_tripwire_arm(b, mem.data() + 4090, 8, 0, 0), -1);  // past the region
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(esock_tripwire_arm(b, ro.data(), 8, 0, 0), -1);
  EXPECT_EQ(errno, EACCES);
  EXPECT_EQ(esock_tripwire_disarm(b, 0), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(esock_tripwire_poll(b, nullptr, 1), -1);
  EXPECT_EQ(errno, EINVAL);
  const esock_sge r{mem.data(), 8, 0};
  EXPECT_EQ(esock_post_atomic_fetch_add(b, 1, &r, 1, 0, 1, 0), -1);  // unknown lkey
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(esock_post_atomic_fetch_add(b, 1, nullptr, 1, 0, 1, 0), -1);
  EXPECT_EQ(errno, EINVAL);
  ::close(a);
  ::close(b);
}

TEST(ExtRfc7306, AProgramBuiltAgainstEsock01GetsTheSmallerCompletionEntry) {
  using poll01 = int (*)(int, void*, int);
  auto* old_poll = reinterpret_cast<poll01>(dlvsym(RTLD_DEFAULT, "esock_poll_cq", "ESOCK_0.1"));
  ASSERT_NE(old_poll, nullptr) << dlerror();
  auto* new_poll = reinterpret_cast<poll01>(dlvsym(RTLD_DEFAULT, "esock_poll_cq", "ESOCK_0.2"));
  ASSERT_NE(new_poll, nullptr);
  EXPECT_NE(reinterpret_cast<void*>(old_poll), reinterpret_cast<void*>(new_poll));
  int a = -1, b = -1;
  ASSERT_NO_FATAL_FAILURE(raw_pair(&a, &b));
  std::vector<std::uint8_t> rx(64);
  const std::uint32_t rk = esock_reg_mr(b, rx.data(), rx.size(), ESOCK_ACCESS_LOCAL_WRITE);
  const esock_sge r{rx.data(), 64, rk};
  for (int i = 0; i < 2; ++i) ASSERT_EQ(esock_post_recv(b, 100 + i, &r, 1), 0);
  ASSERT_EQ(esock_post_send(a, 1, nullptr, 0), 0);
  ASSERT_EQ(esock_post_send(a, 2, nullptr, 0), 0);
  // 0.1's entry: {wr_id, opcode, status, byte_len} = 24 octets; the guard after two must stay.
  std::vector<std::uint8_t> buf(3 * 24, 0xa5);
  int got = 0;
  for (int i = 0; i < 1000 && got < 2; ++i) {
    const int n = old_poll(b, buf.data() + got * 24, 2 - got);
    ASSERT_GE(n, 0);
    got += n;
    if (got < 2) ::usleep(1000);
  }
  ASSERT_EQ(got, 2);
  std::uint64_t id;
  std::memcpy(&id, buf.data() + 24, 8);
  EXPECT_EQ(id, 101u);  // the second entry starts 24 octets in
  for (std::size_t i = 48; i < buf.size(); ++i) ASSERT_EQ(buf[i], 0xa5) << i;
  ::close(a);
  ::close(b);
}

}  // namespace
