// IPv4 fragment reassembly (RFC 791 section 3.2, "reassembly procedure"), bounded and
// timed out. A datagram whose fragments overlap is dropped whole, together with the
// fragments of it still to come (the rule RFC 5722 gives for IPv6; overlaps have no
// legitimate use and are how reassembly-ambiguity attacks work). Exact duplicates, which
// retransmission produces, are ignored.
//
// Fragments never overlap in a kept datagram, so it is complete exactly when the octets
// received equal the length given by the last fragment: that is RFC 815's hole list
// reduced to a counter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "base/buf_ref.h"
#include "base/bytes.h"
#include "base/time.h"
#include "tcp/wire/ipv4.h"

namespace esock::tcp {

class Ipv4Reassembly {
 public:
  Ipv4Reassembly(Duration timeout, std::size_t max_bytes)
      : timeout_(timeout), max_bytes_(max_bytes) {}

  enum class Outcome : std::uint8_t {
    pending,   // kept (or an exact duplicate ignored); more fragments are needed
    complete,  // *out holds the whole datagram's data
    dropped,   // this fragment, and the datagram it belongs to if any, were discarded
  };
  struct Datagram {
    BufRef ref;          // a HeapBuf
    bytes_view payload;  // the reassembled IPv4 data (no header)
  };

  // Adds one fragment (a checked view with is_fragment() true). Keyed by source,
  // destination, identification and protocol (RFC 791 3.2).
  Outcome add(const Ipv4View& frag, Instant now, Datagram* out);

  // Discards datagrams whose lifetime ended (RFC 791: the reassembly timer); returns how
  // many incomplete datagrams were given up.
  std::size_t expire(Instant now);

  std::size_t bytes_held() const { return used_; }
  std::size_t datagrams() const { return map_.size(); }

 private:
  using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint16_t, std::uint8_t>;
  struct Entry {
    std::map<std::size_t, std::vector<std::uint8_t>> frags;  // by offset, never overlapping
    std::size_t received = 0;                                // data octets held
    std::optional<std::size_t> total;  // data length, known once the last fragment came
    std::size_t charged = 0;           // what this entry counts against max_bytes
    Instant deadline;
    bool dead = false;  // dropped; its later fragments are discarded too
  };
  Outcome kill(Entry& e);
  bool overlaps(const Entry& e, std::size_t off, std::size_t len, bool* duplicate) const;

  Duration timeout_;
  std::size_t max_bytes_;
  std::size_t used_ = 0;
  std::map<Key, Entry> map_;
};

}  // namespace esock::tcp
