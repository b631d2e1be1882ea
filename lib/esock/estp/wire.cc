#include "esock/estp/wire.h"

#include "base/endian.h"

namespace esock::estp {

namespace {
// Common header offsets (section 4).
constexpr std::size_t off_magic = 0, off_version = 4, off_type = 5, off_flags = 6, off_credits = 8,
                      off_length = 12;
// Rendezvous bodies (section 5).
constexpr std::size_t off_stag = 16, off_to = 20, off_adv_id = 28, off_done_id = 16;
// Hello (section 3).
constexpr std::size_t off_h_flags = 5, off_h_r = 8, off_h_b = 12;

std::size_t body_len(Type t) {
  switch (t) {
    case Type::srcavail:
    case Type::sinkavail:
      return adv_len;
    case Type::rdmadone:
    case Type::writedone:
    case Type::sinkcancel:
      return done_len;
    default:
      return hdr_len;
  }
}
}  // namespace

std::vector<std::uint8_t> emit_hello(const Hello& h) {
  std::vector<std::uint8_t> v(hello_len, 0);
  store_be32(v.data() + off_magic, magic);
  v[off_version] = version;
  v[off_h_flags] = static_cast<std::uint8_t>(
      (h.msgmode ? hello_flag_msgmode : 0) | (h.raw ? hello_flag_raw : 0) |
      (h.sink ? hello_flag_sink : 0) | (h.rdmap_ext ? hello_flag_rdmap_ext : 0));
  store_be32(v.data() + off_h_r, h.recv_buffers);
  store_be32(v.data() + off_h_b, h.recv_buffer_size);
  return v;
}

std::optional<Hello> parse_hello(bytes_view pd) {
  if (pd.size() < hello_len) return std::nullopt;
  if (load_be32(pd.data() + off_magic) != magic || pd[off_version] != version) return std::nullopt;
  Hello h;
  h.msgmode = (pd[off_h_flags] & hello_flag_msgmode) != 0;
  h.raw = (pd[off_h_flags] & hello_flag_raw) != 0;
  h.sink = (pd[off_h_flags] & hello_flag_sink) != 0;
  h.rdmap_ext = (pd[off_h_flags] & hello_flag_rdmap_ext) != 0;
  h.recv_buffers = load_be32(pd.data() + off_h_r);
  h.recv_buffer_size = load_be32(pd.data() + off_h_b);
  if (h.recv_buffers == 0 || h.recv_buffer_size < min_buffer_size) return std::nullopt;
  return h;
}

std::size_t wire_size(const Message& m) {
  return m.type == Type::data ? hdr_len + m.payload.size() : body_len(m.type);
}

std::size_t emit_header(const Message& m, mut_bytes out) {
  const std::size_t n = body_len(m.type);
  if (out.size() < n) return 0;
  std::uint8_t* p = out.data();
  store_be32(p + off_magic, magic);
  p[off_version] = version;
  p[off_type] = static_cast<std::uint8_t>(m.type);
  store_be16(p + off_flags, m.flags);
  store_be32(p + off_credits, m.credits);
  store_be32(p + off_length, m.length);
  if (n == adv_len) {
    store_be32(p + off_stag, m.stag);
    store_be64(p + off_to, m.to);
    store_be32(p + off_adv_id, m.id);
  } else if (n == done_len) {
    store_be32(p + off_done_id, m.id);
  }
  return n;
}

std::optional<Message> parse(bytes_view msg) {
  if (msg.size() < hdr_len) return std::nullopt;
  const std::uint8_t* p = msg.data();
  if (load_be32(p + off_magic) != magic || p[off_version] != version) return std::nullopt;
  const std::uint8_t t = p[off_type];
  if (t < static_cast<std::uint8_t>(Type::data) || t > static_cast<std::uint8_t>(Type::fin))
    return std::nullopt;
  Message m;
  m.type = static_cast<Type>(t);
  m.flags = load_be16(p + off_flags);
  m.credits = load_be32(p + off_credits);
  m.length = load_be32(p + off_length);
  const std::size_t body = body_len(m.type);
  if (m.type == Type::data) {
    if (m.length != msg.size() - hdr_len) return std::nullopt;
    m.payload = msg.subspan(hdr_len);
    return m;
  }
  if (msg.size() != body) return std::nullopt;
  if ((m.type == Type::credit || m.type == Type::fin || m.type == Type::sinkcancel) &&
      m.length != 0)
    return std::nullopt;
  if (body == adv_len) {
    m.stag = load_be32(p + off_stag);
    m.to = load_be64(p + off_to);
    m.id = load_be32(p + off_adv_id);
  } else if (body == done_len) {
    m.id = load_be32(p + off_done_id);
  }
  return m;
}

}  // namespace esock::estp
