// Fuzzes the ESTP wire parsers (docs/stream-protocol.md sections 3-5): parse() of one RDMAP
// Send payload and parse_hello() of MPA private data. Whatever parses must re-emit to the
// same octets (every field is kept), and never claim more octets than it was given.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "esock/estp/wire.h"

using namespace esock;
using namespace esock::estp;

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bytes_view in(data, size);
  if (const auto m = parse(in)) {
    check(in.size() >= hdr_len);
    check(wire_size(*m) == in.size());
    if (m->type == Type::data) {
      check(m->length == m->payload.size());
      check(m->payload.data() == in.data() + hdr_len);
    }
    std::vector<std::uint8_t> out(wire_size(*m));
    check(emit_header(*m, out) == (m->type == Type::data ? hdr_len : out.size()));
    if (!m->payload.empty())
      std::memcpy(out.data() + hdr_len, m->payload.data(), m->payload.size());
    check(out.size() == in.size() && std::memcmp(out.data(), in.data(), in.size()) == 0);
    // A short buffer is refused, never overrun.
    std::vector<std::uint8_t> small(hdr_len - 1);
    check(emit_header(*m, small) == 0);
  }
  if (const auto h = parse_hello(in)) {
    check(h->recv_buffers != 0 && h->recv_buffer_size >= min_buffer_size);
    const auto out = emit_hello(*h);
    check(out.size() == hello_len);
    // Reserved octets and unknown flag bits are not carried; everything else is.
    std::vector<std::uint8_t> want(in.begin(), in.begin() + hello_len);
    want[5] &= hello_flag_msgmode | hello_flag_raw | hello_flag_sink | hello_flag_rdmap_ext;
    want[6] = want[7] = 0;
    check(out == want);
  }
  return 0;
}
