#include "tcp/engine/drop_reason.h"

namespace esock::tcp {

const char* to_string(DropReason r) {
  switch (r) {
    case DropReason::bad_checksum:
      return "bad_checksum";
    case DropReason::bad_header:
      return "bad_header";
    case DropReason::no_connection:
      return "no_connection";
    case DropReason::listen_rst:
      return "listen_rst";
    case DropReason::listen_ack:
      return "listen_ack";
    case DropReason::listen_no_syn:
      return "listen_no_syn";
    case DropReason::listen_tuple_busy:
      return "listen_tuple_busy";
    case DropReason::syn_data:
      return "syn_data";
    case DropReason::handshake_bad_ack:
      return "handshake_bad_ack";
    case DropReason::syn_sent_rst_no_ack:
      return "syn_sent_rst_no_ack";
    case DropReason::syn_sent_no_syn:
      return "syn_sent_no_syn";
    case DropReason::conn_closed:
      return "conn_closed";
    case DropReason::ts_missing:
      return "ts_missing";
    case DropReason::paws:
      return "paws";
    case DropReason::old_sequence:
      return "old_sequence";
    case DropReason::beyond_window:
      return "beyond_window";
    case DropReason::rst_out_of_window:
      return "rst_out_of_window";
    case DropReason::rst_inexact:
      return "rst_inexact";
    case DropReason::syn_in_window:
      return "syn_in_window";
    case DropReason::no_ack:
      return "no_ack";
    case DropReason::ack_unsent:
      return "ack_unsent";
    case DropReason::ack_too_old:
      return "ack_too_old";
    case DropReason::data_after_fin:
      return "data_after_fin";
    case DropReason::orphan_data:
      return "orphan_data";
    case DropReason::ooo_queue_full:
      return "ooo_queue_full";
    case DropReason::rx_memory:
      return "rx_memory";
  }
  return "?";
}

std::uint64_t DropCounters::total() const {
  std::uint64_t t = 0;
  for (std::uint64_t n : count) t += n;
  return t;
}

DropCounters& DropCounters::operator+=(const DropCounters& o) {
  for (std::size_t i = 0; i < drop_reason_count; ++i) count[i] += o.count[i];
  return *this;
}

std::string to_string(const DropCounters& d) {
  std::string s;
  for (std::size_t i = 0; i < drop_reason_count; ++i) {
    if (d.count[i] == 0) continue;
    if (!s.empty()) s += ' ';
    s += to_string(static_cast<DropReason>(i));
    s += '=';
    s += std::to_string(d.count[i]);
  }
  return s.empty() ? "none" : s;
}

}  // namespace esock::tcp
