#include "tcp/engine/no_tcb.h"

namespace esock::tcp {

std::optional<TcpRepr> reset_for(const TcpRepr& seg, std::size_t payload_len) {
  if (seg.has(tcp_flag::rst)) return std::nullopt;  // never answer a reset with a reset
  TcpRepr r;
  r.src_port = seg.dst_port;
  r.dst_port = seg.src_port;
  if (seg.has(tcp_flag::ack)) {
    r.seq = seg.ack;
    r.flags = tcp_flag::rst;
  } else {
    std::uint32_t len = static_cast<std::uint32_t>(payload_len) + (seg.has(tcp_flag::syn) ? 1 : 0) +
                        (seg.has(tcp_flag::fin) ? 1 : 0);
    r.seq = 0;
    r.ack = seg.seq + len;
    r.flags = tcp_flag::rst | tcp_flag::ack;
  }
  return r;
}

ListenVerdict listen_verdict(const TcpRepr& seg) {
  if (seg.has(tcp_flag::rst)) return ListenVerdict::drop;   // first: ignore RST
  if (seg.has(tcp_flag::ack)) return ListenVerdict::reset;  // second: any ACK is bad
  if (seg.has(tcp_flag::syn)) return ListenVerdict::syn;    // third
  return ListenVerdict::drop;                               // fourth: other text or control
}

}  // namespace esock::tcp
