#include "tcp/engine/recv_queue.h"

#include <algorithm>
#include <cstring>

namespace esock::tcp {

std::size_t RecvQueue::read(mut_bytes out) {
  std::size_t done = 0;
  while (done < out.size() && !pieces_.empty()) {
    Piece& p = pieces_.front();
    std::size_t k = std::min(out.size() - done, p.data.size());
    std::memcpy(out.data() + done, p.data.data(), k);
    done += k;
    consume(k);
  }
  return done;
}

void RecvQueue::consume(std::size_t n) {
  n = std::min(n, size_);
  size_ -= n;
  while (n > 0) {
    Piece& p = pieces_.front();
    if (n < p.data.size()) {
      p.data = p.data.subspan(n);
      return;
    }
    n -= p.data.size();
    pieces_.pop_front();
  }
}

}  // namespace esock::tcp
