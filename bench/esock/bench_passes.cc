// bench_esock_passes: the per-octet ceiling of DDPMODE's design over net_memif, with no
// protocol at all, against kernel TCP over loopback in the same run.
//
// DDPMODE over memif touches every octet in these passes (bench/esock/README.md, "Where the
// time goes"): the writer computes CRC32c (MPA, RFC 5044 section 4.4) and the Internet
// checksum (RFC 9293 section 3.1) over the application's buffer, and memif copies the frame
// into the shared ring; the reader's memif copies the frame out of the ring into an mbuf,
// the reader verifies the checksum and the CRC, and DDP places the payload into the
// application's buffer. This program runs exactly those passes on two threads (one per
// core, a ring of memif's size between them), adding one kind of pass at a time, so the
// table says what each costs and what no implementation of this design can beat here:
//
//   copies             writer: ring copy; reader: ring copy out (what memif alone does)
//   + placement        reader also copies into the application's buffer
//   + CRC32c           both ends run CRC32c over the payload
//   + checksum         both ends run the Internet checksum: all of DDPMODE's passes
//
// Each line copies with rte_memcpy as DPDK 22.11's memif does (its build's SSE code), and
// the last one again with glibc's memcpy. The kernel line is one thread writing and one
// reading over a TCP loopback connection (not pinned, as bench_esock_ddpmode's), measured before
// and after the others (this machine has slow phases: both are printed, ratios are to their mean).
// Writes are of each size given, from and into one buffer of that size each, as
// bench_esock_ddpmode's stream.
//
// Usage: bench_esock_passes [--seconds S] [--mtu N] [--sizes N,N...]
// Prints a markdown table (MB = 10^6 octets of payload) with CPU seconds per side.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <rte_memcpy.h>
#include <sched.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mpa/crc32c.h"
#include "tcp/wire/checksum.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t ring_slots = 2048;   // memif rsize=11, as bench/esock/run.sh
constexpr std::size_t slot_size = 16384;   // memif bsize=16384
constexpr std::size_t mbuf_count = 512;    // the reader's receive mbufs, cycled
constexpr std::size_t frame_headers = 74;  // Ethernet, IPv4, TCP, MPA, DDP tagged, CRC

struct Passes {
  const char* name;
  bool placement, crc, checksum, libc_copy;
};

struct alignas(64) Slot {
  std::uint32_t len;
  std::uint32_t crc;
  std::uint16_t sum;
};

struct Ring {
  std::vector<std::uint8_t> data = std::vector<std::uint8_t>(ring_slots * slot_size);
  std::vector<Slot> meta = std::vector<Slot>(ring_slots);
  alignas(64) std::atomic<std::uint64_t> head{0};  // written by the writer
  alignas(64) std::atomic<std::uint64_t> tail{0};  // written by the reader
  alignas(64) std::atomic<bool> stop{false};
};

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % static_cast<int>(std::thread::hardware_concurrency()), &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void copy(bool libc, void* dst, const void* src, std::size_t n) {
  if (libc) {
    std::memcpy(dst, src, n);
  } else {
    rte_memcpy(dst, src, n);
  }
}

std::uint16_t checksum(const std::uint8_t* p, std::size_t n) {
  esock::tcp::InetChecksum c;
  c.add({p, n});
  return c.checksum();
}

struct Result {
  double mbps = 0, writer_cpu = 0, reader_cpu = 0;
  bool ok = true;
};

Result run_passes(const Passes& p, double seconds, std::size_t payload, std::size_t write_size) {
  Ring ring;
  std::vector<std::uint8_t> src(write_size), dst(write_size);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 131 + 7);
  std::uint8_t header[frame_headers] = {};
  Result r;
  std::uint64_t delivered = 0;
  double reader_cpu = 0;
  std::thread reader([&] {
    pin(1);
    std::vector<std::uint8_t> mbufs(mbuf_count * slot_size);
    const double c0 = thread_cpu_s();
    std::uint64_t tail = 0;
    std::size_t off = 0;
    for (;;) {
      const std::uint64_t head = ring.head.load(std::memory_order_acquire);
      if (head == tail) {
        if (ring.stop.load(std::memory_order_acquire) && ring.head.load() == tail) break;
        __builtin_ia32_pause();
        continue;
      }
      for (; tail != head; ++tail) {
        const Slot m = ring.meta[tail % ring_slots];  // the slot is the writer's once released
        std::uint8_t* mbuf = &mbufs[(tail % mbuf_count) * slot_size];
        copy(p.libc_copy, mbuf, &ring.data[(tail % ring_slots) * slot_size], frame_headers + m.len);
        ring.tail.store(tail + 1, std::memory_order_release);
        const std::uint8_t* data = mbuf + frame_headers;
        if (p.checksum && checksum(data, m.len) != m.sum) r.ok = false;
        if (p.crc && esock::mpa::crc32c({data, m.len}) != m.crc) r.ok = false;
        if (p.placement) copy(p.libc_copy, &dst[off], data, m.len);
        off = (off + m.len) % write_size;
        delivered += m.len;
      }
    }
    reader_cpu = thread_cpu_s() - c0;
  });
  const auto t0 = Clock::now();
  std::thread writer([&] {  // a thread of its own: the main thread stays unpinned
    pin(0);
    const double c0 = thread_cpu_s();
    const auto end = t0 + std::chrono::duration<double>(seconds);
    std::uint64_t head = 0;
    while (Clock::now() < end) {
      for (std::size_t off = 0; off < write_size; off += payload) {
        const std::size_t len = std::min(payload, write_size - off);
        while (head - ring.tail.load(std::memory_order_acquire) == ring_slots) {
          __builtin_ia32_pause();
        }
        Slot& m = ring.meta[head % ring_slots];
        m.len = static_cast<std::uint32_t>(len);
        if (p.crc) m.crc = esock::mpa::crc32c({&src[off], len});
        if (p.checksum) m.sum = checksum(&src[off], len);
        std::uint8_t* frame = &ring.data[(head % ring_slots) * slot_size];
        copy(p.libc_copy, frame, header, frame_headers);
        copy(p.libc_copy, frame + frame_headers, &src[off], len);
        ring.head.store(++head, std::memory_order_release);
      }
    }
    ring.stop.store(true, std::memory_order_release);
    r.writer_cpu = thread_cpu_s() - c0;
  });
  writer.join();
  reader.join();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  r.reader_cpu = reader_cpu;
  r.mbps = static_cast<double>(delivered) / secs / 1e6;
  if (p.placement && std::memcmp(src.data(), dst.data(), write_size) != 0) r.ok = false;
  return r;
}

// Kernel TCP over loopback: one thread writes, one reads into a buffer of the write's size.
Result run_kernel(double seconds, std::size_t write_size) {
  Result r;
  const int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof a;
  if (lfd < 0 || ::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(lfd, 1) != 0 || ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &alen) != 0) {
    std::perror("kernel listener");
    r.ok = false;
    return r;
  }
  const int cfd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(cfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::perror("kernel connect");
    r.ok = false;
    return r;
  }
  const int sfd = ::accept(lfd, nullptr, nullptr);
  std::uint64_t got = 0;
  double reader_cpu = 0;
  std::thread reader([&] {  // not pinned: as bench_esock_ddpmode's kernel contender
    std::vector<std::uint8_t> buf(write_size);
    const double c0 = thread_cpu_s();
    for (ssize_t n; (n = ::read(sfd, buf.data(), buf.size())) > 0;) got += n;
    reader_cpu = thread_cpu_s() - c0;
  });
  std::vector<std::uint8_t> src(write_size, 0x5a);
  std::uint64_t sent = 0;
  const double c0 = thread_cpu_s();
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    for (std::size_t off = 0; off < write_size;) {
      const ssize_t n = ::write(cfd, &src[off], write_size - off);
      if (n <= 0) {
        r.ok = false;
        break;
      }
      off += static_cast<std::size_t>(n);
      sent += static_cast<std::uint64_t>(n);
    }
  }
  ::shutdown(cfd, SHUT_WR);
  r.writer_cpu = thread_cpu_s() - c0;
  reader.join();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  r.reader_cpu = reader_cpu;
  r.mbps = static_cast<double>(got) / secs / 1e6;
  r.ok = r.ok && got == sent;
  ::close(cfd);
  ::close(sfd);
  ::close(lfd);
  return r;
}

std::string size_label(std::size_t n) {
  if (n >= (1u << 20) && n % (1u << 20) == 0) return std::to_string(n >> 20) + " MiB";
  if (n >= 1024 && n % 1024 == 0) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " B";
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 2;
  unsigned mtu = 16000;  // bench/esock/run.sh's memif frames
  std::vector<std::size_t> sizes = {65536, 1 << 20};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--mtu") == 0 && i + 1 < argc) {
      mtu = static_cast<unsigned>(std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
      sizes.clear();
      for (const char* p = argv[++i]; *p != '\0';) {
        char* end = nullptr;
        const unsigned long long v = std::strtoull(p, &end, 10);
        if (end == p || v < 4096 || v > (64u << 20)) {
          std::fprintf(stderr, "--sizes: octet counts 4096..67108864, comma separated\n");
          return 2;
        }
        sizes.push_back(static_cast<std::size_t>(v));
        p = *end == ',' ? end + 1 : end;
      }
    } else {
      std::fprintf(stderr, "usage: %s [--seconds S] [--mtu N] [--sizes N,N...]\n", argv[0]);
      return 2;
    }
  }
  if (mtu < 576 || mtu + 14 > slot_size || seconds <= 0 || sizes.empty()) {
    std::fprintf(stderr, "--mtu: 576..%zu, --seconds: > 0\n", slot_size - 14);
    return 2;
  }
  // The payload a DDP tagged segment carries in one frame: the MTU less IPv4 and TCP (40),
  // MPA's length and CRC (6) and the tagged DDP header (14).
  const std::size_t payload = mtu - 60;
  const Passes lines[] = {
      {"copies (memif alone)", false, false, false, false},
      {"+ placement", true, false, false, false},
      {"+ CRC32c", true, true, false, false},
      {"+ checksum: all of DDPMODE's passes", true, true, true, false},
      {"the same with glibc memcpy", true, true, true, true},
  };
  std::printf("Per-octet ceiling, %u-octet frames, %.1f s per line\n\n", mtu, seconds);
  std::printf(
      "| write | passes | MB/s | / kernel | writer CPU s | reader CPU s | data |\n"
      "|---:|---|---:|---:|---:|---:|---|\n");
  bool ok = true;
  const auto row = [&](std::size_t size, const char* name, const Result& r, double kernel) {
    ok = ok && r.ok;
    std::printf("| %s | %s | %.0f | %.2f | %.2f | %.2f | %s |\n", size_label(size).c_str(), name,
                r.mbps, kernel > 0 ? r.mbps / kernel : 0.0, r.writer_cpu, r.reader_cpu,
                !r.ok            ? "FAILED"
                : name[0] == 'k' ? "all arrived"
                                 : "verified");
    std::fflush(stdout);
  };
  for (const std::size_t size : sizes) {
    const Result before = run_kernel(seconds, size);
    std::vector<Result> rs;
    for (const Passes& p : lines) rs.push_back(run_passes(p, seconds, payload, size));
    const Result after = run_kernel(seconds, size);
    const double kernel = (before.mbps + after.mbps) / 2;
    row(size, "kernel TCP loopback, before", before, kernel);
    row(size, "kernel TCP loopback, after", after, kernel);
    for (std::size_t i = 0; i < rs.size(); ++i) row(size, lines[i].name, rs[i], kernel);
  }
  return ok ? 0 : 1;
}
