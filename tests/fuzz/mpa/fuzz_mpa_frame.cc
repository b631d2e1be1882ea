// Fuzzes the MPA Request/Reply parser and the negotiator in both roles.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "mpa/negotiator.h"
#include "mpa/wire.h"

using namespace esock;
using namespace esock::mpa;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void drive(Config cfg, bytes_view in, std::size_t chunk) {
  Negotiator n(std::move(cfg));
  (void)n.take_output();
  std::size_t used = 0;
  while (used < in.size()) {
    const std::size_t k = std::min(chunk, in.size() - used);
    const std::size_t c = n.feed(in.subspan(used, k));
    check(c <= k);
    used += c;
    if (c < k) break;  // the frame ended inside this chunk, or the negotiation is over
  }
  if (n.state() == Negotiator::State::in_progress) n.peer_closed();
  check(n.state() != Negotiator::State::in_progress);
  const auto out = n.take_output();
  if (!out.empty()) {  // whatever we send must parse
    FrameRepr f;
    check(parse_frame(out, f) == FrameError::none);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t knobs = data[0];
  const bytes_view in(data + 1, size - 1);
  FrameRepr f;
  std::size_t used = 0;
  if (parse_frame(in, f, &used) == FrameError::none) {
    check(used <= in.size());
    std::vector<std::uint8_t> out;
    f.emit(out);
    FrameRepr g;
    check(parse_frame(out, g) == FrameError::none);
    check(g.request == f.request && g.markers == f.markers && g.crc == f.crc &&
          g.reject == f.reject && g.revision == f.revision && g.v2 == f.v2 &&
          g.private_data == f.private_data);
  }
  Config c;
  c.revision = (knobs & 1) ? 2 : 1;
  c.markers = static_cast<Policy>((knobs >> 1) % 3);
  c.crc = static_cast<Policy>((knobs >> 3) % 3);
  c.p2p = knobs & 0x20;
  c.rtr_send = knobs & 0x40;
  c.rtr_read = knobs & 0x80;
  c.ird = static_cast<std::uint16_t>(knobs & 0x1f);
  const std::size_t chunk = 1 + knobs % 29;
  c.initiator = false;
  drive(c, in, chunk);
  c.initiator = true;
  drive(c, in, chunk);
  return 0;
}
