// The statistics region one process using esock publishes and esock-stat reads
// (tools/esock-stat, esock-stat(1)): a file /dev/shm/esock-stat.<pid>, written by the
// runtime (stats_region.h) every 100 ms from counters it keeps anyway, so nothing on the
// data path changes for it. Readers copy it under the sequence counter (a seqlock): odd while
// a snapshot is being written; a copy taken between two equal even values is consistent.
// Plain C layout: both sides are built from this header (layout_version guards the rest).
#pragma once

#include <atomic>
#include <cstdint>

namespace esock::stats {

inline constexpr char magic[8] = {'E', 'S', 'O', 'C', 'K', 'S', 'T', '1'};
inline constexpr std::uint32_t layout_version = 4;
inline constexpr const char* file_prefix = "esock-stat.";  // + pid, under /dev/shm
inline constexpr std::uint32_t max_conns = 256;
inline constexpr std::uint32_t max_counters = 64;

struct Counter {
  char name[40];  // e.g. "tcp.retransmits"; empty: unused
  std::uint64_t value;
};

// One DDPMODE connection or listener.
struct Conn {
  char mode[8];    // "stream", "message" or "raw"
  char state[12];  // "connecting", "listening", "connected", "failed", "closing"
  char local[56];  // "A.B.C.D port N"
  char peer[56];
  std::uint8_t mpa_revision, mpa_crc, markers_tx, markers_rx;  // negotiated (RFC 5044 7.1)
  std::uint16_t ird, ord;                                      // RFC 6581
  std::uint32_t send_credits;  // ESTP: messages we may still send (stream-protocol.md 2)
  std::int32_t error;          // errno of a failed connection, else 0
  std::uint32_t pad;
  std::uint64_t bytes_tx, bytes_rx;  // application octets written and read
  // ESTP messages (estp::StreamStats).
  std::uint64_t data_tx, data_rx, credit_tx, srcavail_tx, srcavail_rx;
  std::uint64_t zero_copy_pulls, bounce_pulls, sinks_offered, sinks_written, sink_writes;
  // The transport and the iWARP engine (ProviderConn::counters).
  std::uint64_t tcp_retransmits, fpdus_tx, fpdus_rx, ooo_segments, ooo_placed;
  // Queue depths: octets received and not read yet, written and not sent yet (ESTP).
  std::uint64_t rx_queued, tx_queued;
  std::uint8_t terminated;  // a Terminate was sent or received
  std::uint8_t pad2[3];
  // Zero-copy (docs/sockets.md, "Zero-copy modes"): the mode of large writes (ESOCK_ZCOPY_*),
  // octets sent by copy and by reference (counted once each finished: an asynchronous write
  // not pulled yet, a cancelled one or a failed sink write is in bytes_tx only), asynchronous
  // writes started, the faults guarded pages held (a write's: block-on-write; a read's: a
  // touch before its data landed), the copies made on write with their octets
  // (copy-on-write; those octets count in zcopy_tx too: they went by rendezvous, from the
  // copy), and asynchronous reads started with their octets.
  std::int32_t zcopy_mode;
  std::uint64_t copied_tx, zcopy_tx, async_writes, guard_faults, cow_copies, cow_octets;
  std::uint64_t async_reads, async_read_octets;
};

struct Region {
  char magic[8];
  std::uint32_t version;
  std::uint32_t size;  // sizeof(Region) of the writer
  std::int32_t pid;
  char program[64];  // the process's comm
  char provider[16];
  char esock_version[16];
  std::uint64_t started_ns;  // CLOCK_REALTIME
  std::uint64_t updated_ns;
  std::atomic<std::uint64_t> seq;
  std::uint32_t nconns;      // entries used in conn[]
  std::uint32_t conns_seen;  // connections and listeners in the process (may exceed max_conns)
  std::uint32_t ncounters;   // entries used in counters[]: the provider's (stack, port)
  std::uint32_t pad;
  Counter counters[max_counters];
  Conn conn[max_conns];
};

}  // namespace esock::stats
