// The receiver's out-of-order store (RFC 9293 section 3.10.7.4: segments beyond rcv_nxt
// are held until the hole before them is filled). In-order data never comes here; the
// engine queues it elsewhere. A segment the upper layer has already placed (DDP places
// out-of-order FPDUs straight into user buffers, ARCHITECTURE.md) is stored as a "range
// only" piece: TCP must still ACK and SACK it, but holds no bytes for it.
//
// Bounded memory: at most max_bytes payload bytes and max_ranges stored pieces (each a
// contiguous range with one buffer reference, since a piece pins its whole buffer).
// Adjacent range-only pieces merge. One owner, no locking.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/buf_ref.h"
#include "base/bytes.h"
#include "base/function_ref.h"
#include "tcp/wire/tcp.h"

namespace esock::tcp {

class Reassembly {
 public:
  // Room for a few pieces up front; it grows (geometrically) with use up to max_ranges. A
  // connection that never sees reordering never pays for a full window of pieces (the
  // eager reservation was ~250 KiB per connection: 500 in TIME-WAIT held 121 MiB).
  static constexpr std::size_t initial_pieces = 16;
  explicit Reassembly(std::size_t max_bytes, std::size_t max_ranges);
  std::size_t reserved_pieces() const { return pieces_.capacity(); }
  std::size_t reserved_bytes() const { return pieces_.capacity() * sizeof(Piece); }
  // Empties the store and gives back its room (nothing more can arrive: TIME-WAIT).
  void release_memory();

  // Stores [seq, seq + len) beyond rcv_nxt (a part at or below rcv_nxt is cut off).
  // `data` is the payload (ref keeps it alive and is copied into each stored piece); an
  // empty `data` with len > 0 stores the range only. Where the range overlaps stored
  // pieces, the stored ones win and only the new parts are kept. Returns false, storing
  // nothing, when the limits would be exceeded (the segment is dropped; the peer resends
  // it) or when data is neither empty nor len bytes. Already-received data returns true.
  bool insert(std::uint32_t rcv_nxt, std::uint32_t seq, std::uint32_t len, bytes_view data,
              const BufRef& ref);

  // True when [seq, seq + len) overlaps no stored piece and insert() of it as a range-only
  // piece (empty data) would succeed. The engine asks this before offering a segment to
  // the upper layer: once the upper layer has consumed the bytes, TCP must be able to
  // remember the range, or the retransmission would hand the same bytes over again.
  bool can_store_range_only(std::uint32_t seq, std::uint32_t len) const;
  // The first sequence number stored (the lowest piece), if any.
  std::optional<std::uint32_t> first_seq() const {
    if (pieces_.empty()) return std::nullopt;
    return pieces_.front().seq;
  }

  using PopFn =
      function_ref<void(std::uint32_t seq, bytes_view data, const BufRef& ref, std::uint32_t len)>;
  // Hands over, in sequence order, every stored piece starting at or before rcv_nxt,
  // trimmed of what rcv_nxt already covers, and advances rcv_nxt past it. Range-only
  // pieces come with empty data (and an empty ref) and their length. fn must not call
  // back into this object.
  void pop_ready(std::uint32_t& rcv_nxt, PopFn fn);

  // RFC 2018 section 4: the first block is the one holding the most recently stored
  // segment, then blocks holding the other recent segments (most recent first, no
  // duplicates), then any remaining blocks in sequence order, up to out.size(). Returns
  // the number written. The engine leaves the option out when the segment that triggered
  // the ACK advanced rcv_nxt and nothing is stored.
  std::size_t sack_blocks(std::span<SackBlock> out) const;

  std::size_t bytes_held() const { return bytes_held_; }  // range-only pieces count 0
  std::size_t peak_bytes_held() const { return peak_bytes_; }
  std::size_t piece_count() const { return pieces_.size(); }
  bool empty() const { return pieces_.empty(); }
  void clear();

 private:
  struct Piece {
    std::uint32_t seq;
    std::uint32_t len;
    bytes_view data;  // empty for a range-only piece
    BufRef ref;
    std::uint32_t end() const { return seq + len; }
    bool range_only() const { return data.empty(); }
  };
  void note_recent(std::uint32_t seq);
  void merge_range_only();
  std::size_t first_ending_after(std::uint32_t seq) const;
  // Index of the piece holding seq, or pieces_.size().
  std::size_t find(std::uint32_t seq) const;
  // The contiguous run of pieces around pieces_[i]; *next = the index after the run.
  SackBlock island(std::size_t i, std::size_t* next) const;

  std::size_t max_bytes_;
  std::size_t max_ranges_;
  std::vector<Piece> pieces_;  // sorted by seq, disjoint
  std::size_t bytes_held_ = 0;
  std::size_t peak_bytes_ = 0;
  static constexpr std::size_t recent_max = 8;
  std::array<std::uint32_t, recent_max> recent_{};  // newest first
  std::size_t recent_count_ = 0;
};

}  // namespace esock::tcp
