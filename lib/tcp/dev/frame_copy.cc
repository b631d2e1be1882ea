#include "tcp/dev/frame_copy.h"

#include <cstring>

namespace esock::tcp {

std::size_t frame_length(const TxFrame& frame) {
  std::size_t n = frame.head.size();
  for (const TxPiece& p : frame.payload) n += p.data.size();
  return n;
}

void copy_frame(const TxFrame& frame, mut_bytes out) {
  std::size_t at = 0;
  auto put = [&](bytes_view b) {
    if (!b.empty()) std::memcpy(out.data() + at, b.data(), b.size());
    at += b.size();
  };
  put(frame.head);
  for (const TxPiece& p : frame.payload) put(p.data);
}

FlatFrame flatten(const TxFrame& frame) {
  const std::size_t len = frame_length(frame);
  std::uint8_t* data = nullptr;
  FlatFrame f;
  f.ref = HeapBuf::make(len, &data);
  f.data = mut_bytes(data, len);
  copy_frame(frame, f.data);
  return f;
}

RxFrame copy_rx(const RxFrame& frame) {
  std::uint8_t* data = nullptr;
  RxFrame out;
  out.ref = HeapBuf::make(frame.data.size(), &data);
  if (!frame.data.empty()) std::memcpy(data, frame.data.data(), frame.data.size());
  out.data = bytes_view(data, frame.data.size());
  out.csum = frame.csum;
  return out;
}

}  // namespace esock::tcp
