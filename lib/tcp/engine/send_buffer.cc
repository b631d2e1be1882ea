#include "tcp/engine/send_buffer.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace esock::tcp {

// Copied bytes go into the current pooled block wherever the previous copy stopped, even
// when reference chunks or record ends came in between (MPA interleaves small copied
// headers and trailers with payload references): a fresh 64 KiB block per copied piece made
// malloc, page faults and heap trimming 60% of a zero-copy FPDU receiver's profile.
std::size_t SendBuffer::append_copy(bytes_view data) {
  std::size_t n = std::min(data.size(), space());
  std::size_t done = 0;
  while (done < n) {
    if (block_.used == block_.cap) {
      // A block as large as what is buffered (with this append), at least min_block and at
      // most block_size_: a connection that exchanges small messages keeps a small block
      // (10,000 idle connections held 64 KiB each), a bulk sender reaches full blocks after
      // a few.
      const std::size_t cap = std::clamp(std::bit_ceil(size_ + (n - done)),
                                         std::min(min_block, block_size_), block_size_);
      std::uint8_t* mem = nullptr;
      BufRef ref = HeapBuf::make(cap, &mem);
      block_ = CopyBlock{mem, cap, 0, std::move(ref)};
    }
    std::size_t k = std::min(n - done, block_.cap - block_.used);
    std::uint8_t* dst = block_.data + block_.used;
    // Appending past the bytes already handed to the device is safe: in-flight frames
    // reference only [data, data + len) of their chunk as it was when they were built.
    std::memcpy(dst, data.data() + done, k);
    Chunk* tail = chunks_.empty() ? nullptr : &chunks_.back();
    if (tail && tail->owned_block && !tail->eor && tail->data + tail->len == dst) {
      tail->len += k;  // the same block, contiguous: one chunk, one gather piece
    } else {
      chunks_.push_back(Chunk{dst, k, block_.ref, false, true});
    }
    block_.used += k;
    done += k;
  }
  size_ += n;
  return n;
}

bool SendBuffer::append_ref(bytes_view data, const BufRef& ref, bool end_of_record) {
  if (data.size() > space()) return false;
  if (data.empty()) {
    if (end_of_record && !chunks_.empty()) chunks_.back().eor = true;
    return true;
  }
  chunks_.push_back(Chunk{data.data(), data.size(), ref, end_of_record, false});
  size_ += data.size();
  return true;
}

void SendBuffer::consume(std::size_t n) {
  n = std::min(n, size_);
  size_ -= n;
  while (n > 0) {
    Chunk& c = chunks_.front();
    std::size_t left = c.len - head_off_;
    if (n < left) {
      head_off_ += n;
      return;
    }
    n -= left;
    head_off_ = 0;
    front_abs_ += chunks_.front().len;
    chunks_.pop_front();
    if (cache_.index > 0) {
      --cache_.index;
    } else {
      cache_ = Loc{0, front_abs_};
    }
  }
  // The current copy block stays (block_ holds it) until it is full, even when drained.
}

void SendBuffer::release_memory() {
  if (size_ != 0) return;
  block_ = CopyBlock{};
  std::deque<Chunk>().swap(chunks_);
  head_off_ = 0;
  cache_ = Loc{0, front_abs_};
}

SendBuffer::Loc SendBuffer::locate(std::size_t abs) const {
  Loc l = cache_.start <= abs && cache_.index < chunks_.size() ? cache_ : Loc{0, front_abs_};
  while (l.index < chunks_.size() && abs >= l.start + chunks_[l.index].len) {
    l.start += chunks_[l.index].len;
    ++l.index;
  }
  if (l.index < chunks_.size()) cache_ = l;
  return l;
}

std::size_t SendBuffer::gather(std::size_t offset, std::size_t len, std::span<TxPiece> out,
                               std::size_t* pieces) const {
  std::size_t covered = 0, k = 0;
  const std::size_t abs = front_abs_ + head_off_ + offset;
  Loc l = locate(abs);
  std::size_t pos = abs - l.start;  // within chunks_[l.index]
  for (std::size_t i = l.index; i < chunks_.size(); ++i) {
    if (covered == len || k == out.size()) break;
    const Chunk& c = chunks_[i];
    std::size_t take = std::min(c.len - pos, len - covered);
    out[k++] = TxPiece{bytes_view(c.data + pos, take), c.ref};
    covered += take;
    pos = 0;
  }
  *pieces = k;
  return covered;
}

bool SendBuffer::append_record(std::span<const TxPiece> parts) {
  std::size_t total = 0;
  for (const TxPiece& p : parts) total += p.data.size();
  if (total == 0 || total > space()) return false;
  for (const TxPiece& p : parts) {
    if (p.data.empty()) continue;
    if (p.ref)
      append_ref(p.data, p.ref, false);
    else
      append_copy(p.data);  // fits: checked above
  }
  chunks_.back().eor = true;
  return true;
}

SendBuffer::RecordEnds SendBuffer::record_ends(std::size_t offset, std::size_t max_len) const {
  const std::size_t abs = front_abs_ + head_off_ + offset;
  Loc l = locate(abs);
  std::size_t pos = abs - l.start;
  std::size_t run = 0;  // bytes from offset to the end of the current chunk
  RecordEnds r;
  for (std::size_t i = l.index; i < chunks_.size(); ++i) {
    const Chunk& c = chunks_[i];
    run += c.len - pos;
    pos = 0;
    if (run > max_len) break;
    if (c.eor) {
      if (!r.first) r.first = run;
      r.last = run;
    }
  }
  return r;
}

}  // namespace esock::tcp
