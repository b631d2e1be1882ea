// The ARP translation table (RFC 826) with address resolution state (RFC 1122 section
// 2.3.2): resolved entries that expire, and resolving entries that hold a bounded queue of
// frames waiting for the neighbour's MAC and retransmit their request until they give up.
// No I/O: the interface sends the requests this table asks for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "base/time.h"
#include "tcp/dev/device.h"
#include "tcp/wire/addr.h"

namespace esock::tcp {

// A frame that waits for its next hop's MAC: a private copy of the whole Ethernet frame
// (RFC 1122 2.3.2.2 asks to keep at least one; we keep up to pending_max).
struct PendingFrame {
  std::vector<std::uint8_t> bytes;  // destination MAC filled in on resolution
  std::size_t head_len = 0;         // Ethernet + IPv4 + TCP headers
  TxOffload offload;
};

struct ArpCacheConfig {
  Duration timeout = 60s;          // a resolved entry's lifetime
  Duration retry = 1s;             // between requests for an unresolved neighbour
  std::uint8_t max_retries = 3;    // requests after the first before giving up
  std::size_t pending_max = 64;    // frames queued per unresolved neighbour
  std::size_t max_entries = 1024;  // bounds the table against ARP floods
};

class ArpCache {
 public:
  explicit ArpCache(const ArpCacheConfig& cfg) : cfg_(cfg) {}

  // The MAC of a resolved, unexpired entry.
  std::optional<MacAddr> lookup(Ipv4Addr ip, Instant now) const;

  // RFC 826 "merge": when `ip` already has an entry (resolved or resolving), set its MAC
  // and restart its lifetime; frames it was holding are appended to *released in the order
  // they were queued. Returns the merge flag.
  bool merge(Ipv4Addr ip, const MacAddr& mac, Instant now, std::vector<PendingFrame>* released);
  // RFC 826: "if Merge_flag is false, add the triplet" (only for packets aimed at us).
  // false: the table is full.
  bool insert(Ipv4Addr ip, const MacAddr& mac, Instant now);

  enum class Enqueue : std::uint8_t {
    queued_new,  // first frame for this neighbour: the caller sends the first request now
    queued,      // a request is already outstanding
    full,        // the neighbour's queue or the table is full: the frame is dropped
  };
  Enqueue enqueue(Ipv4Addr ip, PendingFrame&& frame, Instant now);

  // Retransmit and expiry work due at `now`: neighbours to send another request to are
  // appended to *retry; neighbours that exhausted their retries are removed and the number
  // of frames they held is added to *dropped; expired resolved entries are removed.
  void on_timer(Instant now, std::vector<Ipv4Addr>* retry, std::size_t* dropped);

  std::size_t size() const { return map_.size(); }
  // Whether `ip` has an outstanding resolution (for tests and diagnostics).
  bool resolving(Ipv4Addr ip) const;

 private:
  struct Entry {
    bool resolved = false;
    MacAddr mac;
    Instant deadline;  // resolved: expiry; resolving: next retransmit
    std::uint8_t retries = 0;
    std::vector<PendingFrame> pending;
  };
  bool make_room(Instant now);

  ArpCacheConfig cfg_;
  std::unordered_map<std::uint32_t, Entry> map_;
};

}  // namespace esock::tcp
