// ESOCK_ZCOPY_MODE (docs/sockets.md, "Zero-copy modes") over the kernel-socket provider: a
// large write in each mode delivers every octet, and an asynchronous write (AZ-SDP)
// returns with its whole pages read-only until the peer pulled them, so a program that
// overwrites its buffer right after write() never sends the overwritten octets.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>

#include "ddp_helpers.h"

// ASan (gcc says so with __SANITIZE_ADDRESS__, clang with __has_feature).
#if defined(__SANITIZE_ADDRESS__)
#define ZCOPY_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ZCOPY_TEST_ASAN 1
#endif
#endif
#ifndef ZCOPY_TEST_ASAN
#define ZCOPY_TEST_ASAN 0
#endif

#if ZCOPY_TEST_ASAN
// The child of ExitRightAfterAnAsyncWriteDeliversIt exits while esock's progress thread
// runs (the point of that test). LeakSanitizer's check at exit could not always suspend
// that thread ("Running thread ... was not suspended. False leaks are possible.", CI of
// d916436) and then reported the locals of its loop, still in use, as leaked. The child
// turns the check off (LeakSanitizer asks this hook at exit); every other process keeps it.
namespace {
std::atomic<bool> g_lsan_off{false};
}
extern "C" __attribute__((visibility("default"))) int __lsan_is_turned_off() {
  return g_lsan_off.load() ? 1 : 0;
}
#endif

namespace esock_test {
namespace {

using namespace std::chrono_literals;

const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

TEST(DdpZcopy, TheOptionIsPerSocketAndChecked) {
  DdpPair p;
  ASSERT_GE(p.cli, 0);
  int mode = -1;
  socklen_t len = sizeof mode;
  ASSERT_EQ(::getsockopt(p.cli, SOL_ESOCK, ESOCK_ZCOPY_MODE, &mode, &len), 0);
  EXPECT_EQ(mode, ESOCK_ZCOPY_SYNC);  // ESOCK_ZCOPY's default
  EXPECT_EQ(set_zcopy_mode(p.cli, ESOCK_ZCOPY_ASYNC), 0);
  ASSERT_EQ(::getsockopt(p.cli, SOL_ESOCK, ESOCK_ZCOPY_MODE, &mode, &len), 0);
  EXPECT_EQ(mode, ESOCK_ZCOPY_ASYNC);
  ASSERT_EQ(::getsockopt(p.srv, SOL_ESOCK, ESOCK_ZCOPY_MODE, &mode, &len), 0);
  EXPECT_EQ(mode, ESOCK_ZCOPY_SYNC) << "the other end keeps its own";
  EXPECT_EQ(set_zcopy_mode(p.cli, ESOCK_ZCOPY_ASYNC_COW), 0);
  ASSERT_EQ(::getsockopt(p.cli, SOL_ESOCK, ESOCK_ZCOPY_MODE, &mode, &len), 0);
  EXPECT_EQ(mode, ESOCK_ZCOPY_ASYNC_COW);
  EXPECT_EQ(set_zcopy_mode(p.cli, 4), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(set_zcopy_mode(p.cli, -1), -1);
  EXPECT_EQ(errno, EINVAL);
  const int plain = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(set_zcopy_mode(plain, ESOCK_ZCOPY_ASYNC), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ::close(plain);
}

// Every mode delivers every octet of large writes from unaligned buffers, in both
// directions at once (an echo: each end writes before it reads).
TEST(DdpZcopy, EveryModeDeliversEveryOctet) {
  for (const int mode : {ESOCK_ZCOPY_COPY, ESOCK_ZCOPY_SYNC, ESOCK_ZCOPY_ASYNC}) {
    SCOPED_TRACE(mode);
    DdpPair p;
    ASSERT_GE(p.srv, 0);
    ASSERT_EQ(set_zcopy_mode(p.cli, mode), 0);
    ASSERT_EQ(set_zcopy_mode(p.srv, mode), 0);
    const std::size_t n = 6 * 1024 * 1024 + 123;
    const std::vector<std::uint8_t> data = pattern(n, 7 + static_cast<std::uint32_t>(mode));
    MappedPages src(n + 2 * page);
    std::memcpy(src.p + 100, data.data(), n);  // unaligned: a copied head and tail
    std::vector<std::uint8_t> back(n);
    // The echo's buffer outlives what it sends (freeing it at once would wait in free();
    // under ASan, whose allocator stands in for free(), it would be a use after free).
    std::vector<std::uint8_t> ebuf(n);
    std::thread echo([&] {
      EXPECT_TRUE(read_all(p.srv, ebuf.data(), n));
      EXPECT_TRUE(write_all(p.srv, ebuf.data(), n));
    });
    ASSERT_TRUE(write_all(p.cli, src.p + 100, n));
    ASSERT_TRUE(read_all(p.cli, back.data(), n));
    echo.join();
    EXPECT_TRUE(back == data);
  }
}

// The modes are the byte stream's: a MSGMODE socket ignores ESOCK_ZCOPY=copy, so a message
// larger than the reader's receive buffers (16 x 64 KiB) still goes by rendezvous (copied,
// it would wait for credits the whole-message reader never grants:
// DpdkMsgmode.EchoKeepsEveryMessageWhole hung so over rdmacm). Run with ESOCK_ZCOPY=copy
// by integration.esock.ddp_msgmode_under_zcopy_copy.
TEST(DdpZcopy, MsgmodeIgnoresTheProcessCopyMode) {
  const char* z = std::getenv("ESOCK_ZCOPY");
  if (z == nullptr || std::string(z) != "copy") GTEST_SKIP() << "needs ESOCK_ZCOPY=copy";
  std::uint16_t port = 0;
  const int lfd = ddp_listener(&port, true);
  ASSERT_GE(lfd, 0);
  int srv = -1;
  std::thread t([&] { srv = ::accept(lfd, nullptr, nullptr); });
  const int cli = ddp_connect(port, true);
  t.join();
  ASSERT_GE(cli, 0);
  ASSERT_GE(srv, 0);
  const std::size_t n = 2 * 1024 * 1024;
  const auto out = pattern(n, 5);
  std::vector<std::uint8_t> in(n + 1);
  std::thread reader([&] { EXPECT_EQ(::recv(srv, in.data(), in.size(), 0), ssize_t(n)); });
  EXPECT_EQ(::send(cli, out.data(), n, 0), ssize_t(n));
  reader.join();
  in.resize(n);
  EXPECT_TRUE(in == out);
  for (int fd : {cli, srv, lfd}) ::close(fd);
}

// The AZ-SDP contract (../shared/seeds/000_*): write() returns before the peer pulled the
// data, the pages it sends from are read-only meanwhile, and a program that overwrites its
// buffer at once and writes again sends the first contents, then the second. The reader
// comes `late`. Block-on-write (ESOCK_ZCOPY_ASYNC): the store waits in the fault until the
// peer pulled the first. Copy-on-write (ESOCK_ZCOPY_ASYNC_COW, the seed's section 4.2.2):
// it waits only while esock copies what the peer has not pulled, not for the reader.
void overwrite_after_write(int mode, std::chrono::milliseconds late) {
  const bool cow = mode == ESOCK_ZCOPY_ASYNC_COW;
  DdpPair p;
  ASSERT_GE(p.srv, 0);
  ASSERT_EQ(set_zcopy_mode(p.cli, mode), 0);
  const std::size_t n = 16 * 1024 * 1024;  // past what the peer fetches ahead (4 MiB)
  MappedPages buf(n);
  std::memset(buf.p, 'A', n);
  std::vector<std::uint8_t> got(2 * n);
  std::atomic<bool> reading{false};
  std::thread reader([&] {
    std::this_thread::sleep_for(late);
    reading = true;
    EXPECT_TRUE(read_all(p.srv, got.data(), got.size()));
  });
  ASSERT_TRUE(write_all(p.cli, buf.p, n));
  EXPECT_FALSE(reading.load()) << "the write waited for the reader";
  EXPECT_EQ(perms_at(buf.p + n - page), "r--p") << "the last pages wait to be pulled";
  std::memset(buf.p, 'B', n);  // block: waits, page by page, until the peer pulled it
  EXPECT_EQ(reading.load(), !cow) << (cow ? "the overwrite waited for the reader" : "");
  ASSERT_TRUE(write_all(p.cli, buf.p, n));
  if (cow) {
    std::memset(buf.p, 'C', n);  // the second write's pages are copied in turn
    EXPECT_FALSE(reading.load()) << "the second overwrite waited for the reader";
  }
  reader.join();
  EXPECT_EQ(std::count(got.begin(), got.begin() + static_cast<long>(n), 'A'), static_cast<long>(n))
      << "an overwritten octet reached the peer";
  EXPECT_EQ(std::count(got.begin() + static_cast<long>(n), got.end(), 'B'), static_cast<long>(n));
  // Once pulled (or copied), the pages are the application's again.
  for (int i = 0; i < 200 && perms_at(buf.p + n - page) != "rw-p"; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(perms_at(buf.p + n - page), "rw-p");
}

TEST(DdpZcopy, AnAsyncWriteReturnsAtOnceAndAnOverwriteNeverReachesThePeer) {
  overwrite_after_write(ESOCK_ZCOPY_ASYNC, 300ms);
}

TEST(DdpZcopy, ACopyOnWriteOverwriteGoesOnAtOnceAndNeverReachesThePeer) {
  overwrite_after_write(ESOCK_ZCOPY_ASYNC_COW, 1500ms);
}

// A program that frees its buffer right after an asynchronous write: glibc unmaps a block
// this large at once, which would take the pages from under the transport; the interposed
// free() waits until the peer pulled them (block-on-write), or only for the copy
// (copy-on-write: the reader comes `late`, after free() returned). (Not under ASan, whose
// allocator holds freed blocks in quarantine and reports the transport's later reads of one.)
void free_after_write(int mode, std::chrono::milliseconds late) {
#if ZCOPY_TEST_ASAN
  GTEST_SKIP() << "ASan's allocator stands in for free()";
#endif
  DdpPair p;
  ASSERT_GE(p.srv, 0);
  ASSERT_EQ(set_zcopy_mode(p.cli, mode), 0);
  const std::size_t n = 16 * 1024 * 1024;
  const std::vector<std::uint8_t> data = pattern(n, 11);
  std::vector<std::uint8_t> got(n);
  std::atomic<bool> reading{false};
  std::thread reader([&] {
    std::this_thread::sleep_for(late);
    reading = true;
    EXPECT_TRUE(read_all(p.srv, got.data(), n));
  });
  auto* buf = static_cast<std::uint8_t*>(std::malloc(n));
  ASSERT_NE(buf, nullptr);
  std::memcpy(buf, data.data(), n);
  ASSERT_TRUE(write_all(p.cli, buf, n));
  std::free(buf);  // waits for the pull (or the copy), then unmaps
  if (mode == ESOCK_ZCOPY_ASYNC_COW) {
    EXPECT_FALSE(reading.load()) << "free() waited for the reader";
  }
  reader.join();
  EXPECT_TRUE(got == data);
}

TEST(DdpZcopy, FreeingTheBufferOfAnAsyncWriteWaitsUntilThePeerPulledIt) {
  free_after_write(ESOCK_ZCOPY_ASYNC, 200ms);
}

TEST(DdpZcopy, FreeingTheBufferOfACopyOnWriteWriteWaitsOnlyForTheCopy) {
  free_after_write(ESOCK_ZCOPY_ASYNC_COW, 1500ms);
}

// Reading into the buffer of an asynchronous write (an echo program reuses its buffer):
// over DDPMODE the read waits until the peer pulled the pages (a copy into them under the
// stack's lock would wait in the fault for a release that needs that lock), and a kernel
// read(2), which would fail with EFAULT on a read-only page, waits the same way. With
// copy-on-write both wait only for the copy, not for the peer, which reads `late`.
void read_into_written_buffer(int mode, std::chrono::milliseconds late) {
  const bool cow = mode == ESOCK_ZCOPY_ASYNC_COW;
  DdpPair p;
  ASSERT_GE(p.srv, 0);
  ASSERT_EQ(set_zcopy_mode(p.cli, mode), 0);
  const std::size_t n = 16 * 1024 * 1024;
  MappedPages buf(n);
  std::memset(buf.p, 'A', n);
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  std::atomic<int> peer_reads{0};
  // The reply is queued before the peer pulls: the read finds data while the pages are
  // still guarded.
  std::thread peer([&] {
    std::vector<std::uint8_t> got(n);
    EXPECT_TRUE(write_all(p.srv, reinterpret_cast<const std::uint8_t*>("reply"), 5));
    EXPECT_EQ(::write(pipefd[1], "pipe!", 5), 5);
    std::this_thread::sleep_for(late);
    ++peer_reads;
    EXPECT_TRUE(read_all(p.srv, got.data(), n));
    EXPECT_EQ(std::count(got.begin(), got.end(), 'A'), static_cast<long>(n));
  });
  ASSERT_TRUE(write_all(p.cli, buf.p, n));
  ASSERT_EQ(perms_at(buf.p + n - page), "r--p");
  std::this_thread::sleep_for(100ms);                 // the reply is in
  ASSERT_TRUE(read_all(p.cli, buf.p + n - page, 5));  // DDPMODE read into a guarded page
  EXPECT_EQ(std::memcmp(buf.p + n - page, "reply", 5), 0);
  if (cow) {
    EXPECT_EQ(peer_reads.load(), 0) << "the read waited for the peer";
  }
  std::memset(buf.p, 'A', n);
  ASSERT_TRUE(write_all(p.cli, buf.p, n));  // guarded again
  std::thread peer2([&] {
    std::vector<std::uint8_t> got(n);
    std::this_thread::sleep_for(late);
    ++peer_reads;
    EXPECT_TRUE(read_all(p.srv, got.data(), n));
  });
  EXPECT_EQ(::read(pipefd[0], buf.p + n - page, 5), 5) << std::strerror(errno);
  EXPECT_EQ(std::memcmp(buf.p + n - page, "pipe!", 5), 0);
  if (cow) {
    EXPECT_EQ(peer_reads.load(), 0) << "the kernel read waited for the peer";
  }
  peer.join();
  peer2.join();
  ::close(pipefd[0]);
  ::close(pipefd[1]);
}

TEST(DdpZcopy, ReadsIntoTheBufferOfAnAsyncWriteWaitForThePull) {
  read_into_written_buffer(ESOCK_ZCOPY_ASYNC, 300ms);
}

TEST(DdpZcopy, ReadsIntoTheBufferOfACopyOnWriteWriteWaitOnlyForTheCopy) {
  read_into_written_buffer(ESOCK_ZCOPY_ASYNC_COW, 1500ms);
}

// The same buffer written twice before the peer pulled the first (a sender that loops
// over one buffer): both writes' pages stay guarded until both are pulled (block-on-write)
// or both are copied (copy-on-write: the guards overlap, and the overwrite does not wait
// for the `late` reader), so an overwrite after the second write reaches neither.
void written_twice(int mode, std::chrono::milliseconds late) {
  DdpPair p;
  ASSERT_GE(p.srv, 0);
  ASSERT_EQ(set_zcopy_mode(p.cli, mode), 0);
  const std::size_t n = 8 * 1024 * 1024;
  MappedPages buf(n);
  std::memset(buf.p, 'A', n);
  std::vector<std::uint8_t> got(3 * n);
  std::atomic<bool> reading{false};
  std::thread reader([&] {
    std::this_thread::sleep_for(late);
    reading = true;
    EXPECT_TRUE(read_all(p.srv, got.data(), got.size()));
  });
  ASSERT_TRUE(write_all(p.cli, buf.p, n));
  ASSERT_TRUE(write_all(p.cli, buf.p, n));
  std::memset(buf.p, 'B', n);
  if (mode == ESOCK_ZCOPY_ASYNC_COW) {
    EXPECT_FALSE(reading.load()) << "the overwrite waited";
  }
  ASSERT_TRUE(write_all(p.cli, buf.p, n));
  reader.join();
  EXPECT_EQ(std::count(got.begin(), got.begin() + 2 * static_cast<long>(n), 'A'),
            2 * static_cast<long>(n));
  EXPECT_EQ(std::count(got.begin() + 2 * static_cast<long>(n), got.end(), 'B'),
            static_cast<long>(n));
}

TEST(DdpZcopy, OneBufferWrittenTwiceStaysGuardedUntilBothArePulled) {
  written_twice(ESOCK_ZCOPY_ASYNC, 300ms);
}

TEST(DdpZcopy, ACopyOnWriteOfOneBufferWrittenTwiceCopiesBoth) {
  written_twice(ESOCK_ZCOPY_ASYNC_COW, 1500ms);
}

// A program that exits right after its last (asynchronous) write: the kernel would still
// send what its send buffer held, so esock waits at exit until the peer pulled it.
TEST(DdpZcopy, ExitRightAfterAnAsyncWriteDeliversIt) {
  std::uint16_t port = 0;
  const int lfd = ddp_listener(&port);
  ASSERT_GE(lfd, 0);
  const std::size_t n = 8 * 1024 * 1024;
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ddp_connect(port);
    if (fd < 0 || set_zcopy_mode(fd, ESOCK_ZCOPY_ASYNC) != 0) ::_exit(2);
    auto* buf = static_cast<std::uint8_t*>(
        ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    std::memset(buf, 'C', n);
    if (!write_all(fd, buf, n)) ::_exit(3);
#if ZCOPY_TEST_ASAN
    g_lsan_off = true;
#endif
    std::exit(0);  // no close, no wait: exit's handlers
  }
  ASSERT_GT(pid, 0);
  const int fd = ::accept(lfd, nullptr, nullptr);
  ASSERT_GE(fd, 0);
  std::this_thread::sleep_for(300ms);  // the writer is at exit by now
  std::vector<std::uint8_t> got(n);
  EXPECT_TRUE(read_all(fd, got.data(), n));
  EXPECT_EQ(std::count(got.begin(), got.end(), 'C'), static_cast<long>(n));
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ::close(fd);
  ::close(lfd);
}

// close() right after asynchronous writes: they returned, so they are delivered (the
// close waits for the peer to pull them, as the kernel sends what its buffer holds).
TEST(DdpZcopy, CloseRightAfterAnAsyncWriteDeliversIt) {
  DdpPair p;
  ASSERT_GE(p.srv, 0);
  ASSERT_EQ(set_zcopy_mode(p.cli, ESOCK_ZCOPY_ASYNC), 0);
  const std::size_t n = 8 * 1024 * 1024;
  MappedPages buf(n);
  std::memset(buf.p, 'D', n);
  ASSERT_TRUE(write_all(p.cli, buf.p, n));
  ASSERT_EQ(::close(p.cli), 0);
  p.cli = -1;
  std::this_thread::sleep_for(200ms);
  std::vector<std::uint8_t> got(n + 1);
  EXPECT_TRUE(read_all(p.srv, got.data(), n));
  EXPECT_EQ(std::count(got.begin(), got.begin() + static_cast<long>(n), 'D'), static_cast<long>(n));
  EXPECT_EQ(::read(p.srv, got.data(), 1), 0) << "end of stream after the data";
}

// Two threads writing large buffers to one socket in sync mode: each waits for its own
// pull (neither fails, neither returns on the other's), and every octet arrives.
TEST(DdpZcopy, TwoSyncWritersEachWaitForTheirOwnPull) {
  DdpPair p;
  ASSERT_GE(p.srv, 0);
  const std::size_t n = 4 * 1024 * 1024;
  std::vector<std::uint8_t> a(n, 'a'), b(n, 'b');
  std::atomic<int> ok{0};
  std::thread t1([&] { ok += write_all(p.cli, a.data(), n) ? 1 : 0; });
  std::thread t2([&] { ok += write_all(p.cli, b.data(), n) ? 1 : 0; });
  std::vector<std::uint8_t> got(2 * n);
  EXPECT_TRUE(read_all(p.srv, got.data(), got.size()));
  t1.join();
  t2.join();
  EXPECT_EQ(ok.load(), 2);
  EXPECT_EQ(std::count(got.begin(), got.end(), 'a'), static_cast<long>(n));
  EXPECT_EQ(std::count(got.begin(), got.end(), 'b'), static_cast<long>(n));
}

}  // namespace
}  // namespace esock_test
