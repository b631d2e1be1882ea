// Fuzzes ESOCK_DPDK_FAULTS' parser (tcp/dev/fault_text.h) and the payload filter it installs:
// arbitrary text either parses to probabilities in 0..1, the same both ways, or is refused
// with a reason; arbitrary octets as a frame's headers never read past them.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tcp/dev/fault_text.h"

using namespace esock;
using namespace esock::tcp;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

bool probability(double p) {
  return p >= 0 && p <= 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string why;
  if (const auto c = parse_fault_text(text, &why)) {
    for (const FaultSpec* s : {&c->tx, &c->rx})
      check(probability(s->loss) && probability(s->reorder) && probability(s->duplicate) &&
            probability(s->corrupt) && static_cast<bool>(s->filter));
    check(c->tx.loss == c->rx.loss && c->tx.corrupt == c->rx.corrupt);
  } else {
    check(!why.empty());
  }
  // The same octets as a frame's headers (a copy of exactly that size, so ASan sees any
  // read beyond), with any claimed length.
  const std::vector<std::uint8_t> head(data, data + size);
  (void)carries_tcp_payload({bytes_view(head), size, 0});
  (void)carries_tcp_payload({bytes_view(head), size + 1500, 0});
  return 0;
}
