// The send buffer: every byte from SND.UNA to the end of what the application handed over
// (RFC 9293 3.3.1's "send sequence space" minus what is ACKed). Bytes are held as chunks,
// each with a BufRef, so transmit is zero-copy: a segment's payload is a list of TxPieces
// pointing into the chunks, and a chunk the application handed over by reference (e.g. a
// registered memory region) stays pinned until ACKed. Data the application hands over by
// value is copied once, into pooled blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>

#include "base/buf_ref.h"
#include "base/bytes.h"
#include "tcp/dev/device.h"

namespace esock::tcp {

class SendBuffer {
 public:
  explicit SendBuffer(std::size_t capacity, std::size_t block_size = 64 * 1024)
      : capacity_(capacity), block_size_(block_size) {}

  std::size_t size() const { return size_; }  // bytes from SND.UNA to the end
  std::size_t space() const { return size_ < capacity_ ? capacity_ - size_ : 0; }
  std::size_t capacity() const { return capacity_; }
  void set_capacity(std::size_t c) { capacity_ = c; }
  // Heap the buffer keeps while empty: the current copy block (block_size octets).
  std::size_t reserved_bytes() const { return block_.ref ? block_.cap : 0; }
  // When empty: drops the copy block and the chunk list's room (a connection that will
  // send no more, TIME-WAIT; 64 KiB per connection otherwise).
  void release_memory();

  // Copies as much of `data` as fits; returns the count.
  std::size_t append_copy(bytes_view data);
  // Appends `data` by reference (no copy); all or nothing. `end_of_record` marks the last
  // byte as a record boundary (see cut_at_record).
  bool append_ref(bytes_view data, const BufRef& ref, bool end_of_record = false);
  // Appends one whole record, all or nothing: each part by reference when it has a ref,
  // copied when its ref is empty (TxPiece's convention); the last byte ends the record.
  // False (nothing appended) when the parts do not fit or are all empty.
  bool append_record(std::span<const TxPiece> parts);

  // Drops `n` bytes from the front (they were ACKed). Chunks fully acked release their ref.
  void consume(std::size_t n);

  // Fills `out` with pieces covering [offset, offset + len) counted from SND.UNA; returns
  // the bytes covered (less than len if out is too small).
  std::size_t gather(std::size_t offset, std::size_t len, std::span<TxPiece> out,
                     std::size_t* pieces) const;

  // Record boundaries in (offset, offset + max_len], as lengths from `offset`: the first
  // and the last one (0 when there is none).
  struct RecordEnds {
    std::size_t first = 0;
    std::size_t last = 0;
  };
  RecordEnds record_ends(std::size_t offset, std::size_t max_len) const;

  // Largest length <= max_len starting at `offset` that ends on a record boundary, or
  // max_len when no record boundary lies in (offset, offset + max_len] or the first record
  // is longer than max_len. Lets an upper layer (MPA) keep every segment starting at an FPDU.
  std::size_t cut_at_record(std::size_t offset, std::size_t max_len) const {
    const RecordEnds r = record_ends(offset, max_len);
    return r.last ? r.last : max_len;
  }
  // True when a record ends exactly at `offset` (counted from SND.UNA, offset > 0).
  bool record_ends_at(std::size_t offset) const {
    return offset > 0 && record_ends(offset - 1, 1).last == 1;
  }

 private:
  struct Chunk {
    const std::uint8_t* data;
    std::size_t len;
    BufRef ref;
    bool eor;
    bool owned_block;  // points into a copy block (may grow while contiguous there)
  };
  // The pooled block copies go into; chunks reference it, so it lives until they are ACKed.
  struct CopyBlock {
    std::uint8_t* data = nullptr;
    std::size_t cap = 0;
    std::size_t used = 0;
    BufRef ref;
  };
  CopyBlock block_;
  std::size_t capacity_;
  std::size_t block_size_;  // the largest copy block
  static constexpr std::size_t min_block = 4096;
  std::size_t size_ = 0;
  std::size_t head_off_ = 0;  // bytes of chunks_.front() already consumed
  std::deque<Chunk> chunks_;

  // Finding the chunk that holds a position is the hot loop of every transmit (gather, and
  // record_ends for MPA's records). Walking from the front each time costs O(chunks in
  // flight) per segment, O(n^2) per window, which zero-copy FPDUs (several chunks each)
  // made dominant: 40% of a sender's profile at 64 in-flight 64 KiB Writes. Positions are
  // counted from a point that only moves forward ("absolute"); a one-entry cache of the
  // last chunk found makes the usual forward scan start where the previous one ended.
  struct Loc {
    std::size_t index;  // into chunks_
    std::size_t start;  // absolute position of that chunk's first octet
  };
  // The chunk holding absolute position `abs` (chunks_.size() when beyond the end).
  Loc locate(std::size_t abs) const;
  std::size_t front_abs_ = 0;  // absolute position of chunks_.front()'s first octet
  mutable Loc cache_{0, 0};
};

}  // namespace esock::tcp
