// ESTP v1 wire format (docs/stream-protocol.md): the Hello carried in MPA private data and
// the 16-octet common header at offset 0 of every RDMAP Send. Checked views (bounds and
// magic verified once, at parse) and plain repr structs; big-endian named offsets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/bytes.h"

namespace esock::estp {

inline constexpr std::uint32_t magic = 0x45535450;  // "ESTP"
inline constexpr std::uint8_t version = 1;
inline constexpr std::size_t hello_len = 16;
inline constexpr std::size_t hdr_len = 16;
inline constexpr std::size_t adv_len = 32;   // SRCAVAIL / SINKAVAIL (section 5)
inline constexpr std::size_t done_len = 20;  // RDMADONE / WRITEDONE / SINKCANCEL
inline constexpr std::uint32_t min_buffer_size = 256;

enum class Type : std::uint8_t {
  data = 0x01,
  credit = 0x02,
  srcavail = 0x03,
  rdmadone = 0x04,
  sinkavail = 0x05,
  writedone = 0x06,
  sinkcancel = 0x07,
  fin = 0x08,
};

inline constexpr std::uint16_t flag_eom = 0x0001;         // header flags (section 4)
inline constexpr std::uint8_t hello_flag_msgmode = 0x01;  // Hello flags (section 3)
// RAWMODE: no ESTP messages follow; the application drives the queue pair (section 3).
inline constexpr std::uint8_t hello_flag_raw = 0x02;
// This end writes into the peer's sinks and answers every SINKCANCEL (section 6.2): a
// receiver offers a sink only to a peer that says so.
inline constexpr std::uint8_t hello_flag_sink = 0x04;
// RAWMODE: this end takes RFC 7306's messages (Atomic Request/Response, Immediate Data),
// which that RFC (section 1.1) leaves to the ULPs to agree on (section 3).
inline constexpr std::uint8_t hello_flag_rdmap_ext = 0x08;

struct Hello {
  bool msgmode = false;
  std::uint32_t recv_buffers = 0;      // R
  std::uint32_t recv_buffer_size = 0;  // B
  bool raw = false;
  bool sink = false;       // hello_flag_sink
  bool rdmap_ext = false;  // hello_flag_rdmap_ext
};

std::vector<std::uint8_t> emit_hello(const Hello& h);
// nullopt: too short, wrong magic or version, R == 0 or B < 256 (section 3 rules).
std::optional<Hello> parse_hello(bytes_view pd);

// One ESTP message. Fields beyond the common header are meaningful per type only.
struct Message {
  Type type = Type::credit;
  std::uint16_t flags = 0;
  std::uint32_t credits = 0;
  std::uint32_t length = 0;
  std::uint32_t stag = 0;  // SRCAVAIL / SINKAVAIL
  std::uint64_t to = 0;    // SRCAVAIL / SINKAVAIL
  std::uint32_t id = 0;    // rendezvous messages
  bytes_view payload{};    // DATA (a view into the parsed buffer)
};

// Octets emit() writes for m (DATA: header + payload length).
std::size_t wire_size(const Message& m);
// Writes m (header + type body, not the DATA payload) into out; returns octets written or
// 0 when out is too small. The caller places DATA payload at out[hdr_len].
std::size_t emit_header(const Message& m, mut_bytes out);
// nullopt on any section 4 protocol error: short, magic, version, unknown type, or a length
// inconsistent with the message size.
std::optional<Message> parse(bytes_view msg);

}  // namespace esock::estp
