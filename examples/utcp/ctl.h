// esock_iwarp's control messages: small Sends that start and end a run. The client's HELLO
// names the workload (so the server needs no workload options) and the client's target
// region; the server's ADVERT names the region the client Writes into or Reads from (the
// STag and TO an RDMA Write/Read needs, RFC 5040 section 4.4: TO is the virtual address, as
// siw and rping advertise it); each side's DONE carries its verify verdict and, being a Send
// behind every earlier Write of the same side, also fences those Writes (RFC 5040 section
// 5.5: a Send is delivered only after the Writes before it are placed).
// Layout (big-endian, named offsets): magic "EIWP", type, op, mode, verify, size, depth,
// iters, seed, stag, TO, length.
#pragma once

#include <cstdint>
#include <optional>

#include "base/bytes.h"
#include "base/endian.h"
#include "options.h"

namespace esock::utcp::tool {

inline constexpr std::size_t ctl_len = 64;  // a receive buffer always holds a whole message
inline constexpr std::uint32_t ctl_magic = 0x45495750;  // "EIWP"

enum class CtlType : std::uint8_t { hello = 1, advert = 2, done = 3 };
enum class Verdict : std::uint8_t { off = 0, ok = 1, failed = 2 };

struct Ctl {
  CtlType type = CtlType::hello;
  Op op = Op::write;
  Mode mode = Mode::bw;
  Verdict verify = Verdict::off;
  std::uint32_t size = 0, depth = 0;
  std::uint64_t iters = 0, seed = 0;
  std::uint32_t stag = 0;  // the sender's target region (0: none)
  std::uint64_t to = 0, len = 0;
};

namespace ctl_off {
inline constexpr std::size_t magic = 0, type = 4, op = 5, mode = 6, verify = 7, size = 8,
                             depth = 12, iters = 16, seed = 24, stag = 32, to = 40, len = 48,
                             end = 56;
}  // namespace ctl_off

inline void encode(const Ctl& c, std::uint8_t* p) {
  store_be32(p + ctl_off::magic, ctl_magic);
  p[ctl_off::type] = static_cast<std::uint8_t>(c.type);
  p[ctl_off::op] = static_cast<std::uint8_t>(c.op);
  p[ctl_off::mode] = static_cast<std::uint8_t>(c.mode);
  p[ctl_off::verify] = static_cast<std::uint8_t>(c.verify);
  store_be32(p + ctl_off::size, c.size);
  store_be32(p + ctl_off::depth, c.depth);
  store_be64(p + ctl_off::iters, c.iters);
  store_be64(p + ctl_off::seed, c.seed);
  store_be32(p + ctl_off::stag, c.stag);
  store_be32(p + ctl_off::stag + 4, 0);
  store_be64(p + ctl_off::to, c.to);
  store_be64(p + ctl_off::len, c.len);
}

// Nullopt unless `in` is a whole, sane control message.
inline std::optional<Ctl> decode(bytes_view in) {
  if (in.size() < ctl_off::end || load_be32(in.data()) != ctl_magic) return std::nullopt;
  const std::uint8_t* p = in.data();
  Ctl c;
  const std::uint8_t type = p[ctl_off::type], op = p[ctl_off::op], mode = p[ctl_off::mode],
                     verify = p[ctl_off::verify];
  if (type < 1 || type > 3 || op < 1 || op > 3 || mode < 1 || mode > 2 || verify > 2)
    return std::nullopt;
  c.type = static_cast<CtlType>(type);
  c.op = static_cast<Op>(op);
  c.mode = static_cast<Mode>(mode);
  c.verify = static_cast<Verdict>(verify);
  c.size = load_be32(p + ctl_off::size);
  c.depth = load_be32(p + ctl_off::depth);
  c.iters = load_be64(p + ctl_off::iters);
  c.seed = load_be64(p + ctl_off::seed);
  c.stag = load_be32(p + ctl_off::stag);
  c.to = load_be64(p + ctl_off::to);
  c.len = load_be64(p + ctl_off::len);
  return c;
}

}  // namespace esock::utcp::tool
