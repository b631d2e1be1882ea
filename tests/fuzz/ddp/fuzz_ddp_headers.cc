// DDP/RDMAP header, Read Request and RFC 7306 body parsers, then a responder Qp fed the input
// as a stream of ULPDUs: each ULPDU is prefixed by a 1-octet length (0 ends the stream). The
// Qp has a posted receive, a remote-writable, a remote-readable and a remote-atomic region
// and an armed tripwire, so placement, atomic and tripwire paths run; with the first octet's
// bit 4 it has agreed to RFC 7306 (else those opcodes are unexpected); its output is drained
// after every segment.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ddp/qp.h"
#include "ddp/tripwire.h"
#include "ddp/wire_ext.h"

using namespace esock;
using namespace esock::ddp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bytes_view in(data, size);
  DdpHeader h;
  if (parse(in, h) == WireError::ok) {
    std::vector<std::uint8_t> out(h.length());
    if (emit(h, out) != h.length()) __builtin_trap();
    DdpHeader back;
    if (parse(out, back) != WireError::ok || !(back == h)) __builtin_trap();
  }
  ReadRequest rr;
  if (parse(in, rr) == WireError::ok) {
    std::vector<std::uint8_t> out(read_request_len);
    emit(rr, out);
    ReadRequest back;
    if (parse(out, back) != WireError::ok || !(back == rr)) __builtin_trap();
  }

  AtomicRequest ar;
  if (parse(in, ar) == WireError::ok) {
    std::vector<std::uint8_t> out(atomic_request_len);
    emit(ar, out);
    AtomicRequest back;
    if (parse(out, back) != WireError::ok || !(back == ar)) __builtin_trap();
  }
  AtomicResponse resp;
  if (parse(in, resp) == WireError::ok) {
    std::vector<std::uint8_t> out(atomic_response_len);
    emit(resp, out);
    AtomicResponse back;
    if (parse(out, back) != WireError::ok || !(back == resp)) __builtin_trap();
  }

  static std::vector<std::uint8_t> mem(4096), rx(512);
  alignas(8) static std::uint64_t counters[4];
  StagTable stags{1};  // fixed keys: runs are reproducible
  const std::uint32_t pd = stags.alloc_pd();
  const stag_t wk = stags.register_mr(pd, mem.data(), mem.size(), access_remote_write);
  stags.register_mr(pd, mem.data(), mem.size(), access_remote_read);
  const stag_t lk = stags.register_mr(pd, rx.data(), rx.size(), access_local_write);
  stags.register_mr(pd, counters, sizeof counters, access_remote_atomic);
  CompletionQueue scq(64), rcq(64);
  QpConfig cfg{};
  cfg.pd = pd;
  cfg.ird = 4;
  cfg.mulpdu = 128;
  cfg.rdmap_ext = size > 0 && (data[0] & 0x10);
  Qp qp(cfg, stags, scq, rcq);
  TripwireSet trips;
  trips.arm(wk, reinterpret_cast<std::uintptr_t>(mem.data()) + 100, 200, 1, true);
  trips.arm(wk, reinterpret_cast<std::uintptr_t>(mem.data()), 4096, 2, false);
  qp.set_tripwires(&trips);
  const Sge sg[] = {{rx.data(), 256, lk}, {rx.data() + 256, 256, lk}};
  for (int i = 0; i < 4; ++i) qp.post_recv(static_cast<std::uint64_t>(i), sg);
  qp.rts();
  if (size > 0 && (data[0] & 1)) qp.expect_rtr(static_cast<RtrOp>((data[0] >> 1) % 3));
  std::size_t off = size > 0 ? 1 : 0;
  OutSegment seg;
  while (off < size) {
    const std::size_t n = data[off++];
    if (n == 0 || n > size - off) break;
    qp.on_segment(bytes_view(data + off, n));
    off += n;
    for (int k = 0; k < 64 && qp.next_segment(seg); ++k) {
    }
  }
  std::vector<Completion> c(64);
  scq.poll(c);
  rcq.poll(c);
  std::vector<TripwireEvent> ev(4);
  trips.poll(ev);
  qp.llp_closed();
  return 0;
}
