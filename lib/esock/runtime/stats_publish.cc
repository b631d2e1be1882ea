// The runtime's snapshot for esock-stat (stats_layout.h, stats_region.h): every connection's
// and listener's mode, state, addresses, negotiated MPA, ESTP credits and counters, and the
// own stack's counters. Runs in a round, under the runtime lock, at most every 100 ms.
#include <arpa/inet.h>
#include <unistd.h>

#include <cstring>

#include "esock/process/addr_text.h"
#include "esock/process/config.h"
#include "esock/runtime/runtime.h"

namespace esock::sockets {

namespace {

template <std::size_t N>
void put(char (&dst)[N], const std::string& src) {
  std::strncpy(dst, src.c_str(), N - 1);
  dst[N - 1] = '\0';
}

const char* state_name(const Socket& s) {
  if (s.lis) return "listening";
  if (s.conn && s.conn->close_ladder.closing()) return "closing";
  switch (s.state()) {
    case Socket::State::connecting:
      return "connecting";
    case Socket::State::connected:
      return "connected";
    case Socket::State::failed:
      return "failed";
    default:
      return "other";
  }
}

void describe(const Socket& s, stats::Conn* c) {
  *c = stats::Conn{};
  put(c->mode, s.rawmode() ? "raw" : s.msgmode() ? "message" : "stream");
  put(c->state, state_name(s));
  c->error = s.error;
  c->bytes_tx = s.bytes_tx.load(std::memory_order_relaxed);
  c->bytes_rx = s.bytes_rx.load(std::memory_order_relaxed);
  c->zcopy_mode = zcopy_mode(s);
  if (s.lis && s.lis->pl) {  // a listener: its port
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (s.lis->pl->name(reinterpret_cast<sockaddr*>(&a), &len) == 0) put(c->local, address_text(a));
  }
  if (!s.conn || !s.conn->pc) return;
  const ProviderConn& pc = *s.conn->pc;
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (pc.name(false, reinterpret_cast<sockaddr*>(&a), &len) == 0) put(c->local, address_text(a));
  len = sizeof a;
  a = {};
  if (pc.name(true, reinterpret_cast<sockaddr*>(&a), &len) == 0) put(c->peer, address_text(a));
  const ConnCounters k = pc.counters();
  c->tcp_retransmits = k.tcp_retransmits;
  c->fpdus_tx = k.fpdus_tx;
  c->fpdus_rx = k.fpdus_rx;
  c->ooo_segments = k.ooo_segments;
  c->ooo_placed = k.ooo_placed;
  c->terminated = k.terminated ? 1 : 0;
  c->async_writes = s.conn->async_writes_total;
  c->guard_faults = s.conn->guard_faults;
  c->cow_copies = s.conn->cow_copies;
  c->cow_octets = s.conn->cow_octets;
  c->async_reads = s.conn->async_reads_total;
  c->async_read_octets = s.conn->async_read_octets;
  if (s.state() == Socket::State::connected) {
    const mpa::Negotiated& n = pc.negotiated();
    c->mpa_revision = n.revision;
    c->mpa_crc = n.crc;
    c->markers_tx = n.markers_tx;
    c->markers_rx = n.markers_rx;
    c->ird = static_cast<std::uint16_t>(n.ird);
    c->ord = static_cast<std::uint16_t>(n.ord);
  }
  if (const estp::Stream* st = s.conn->stream.get()) {
    const estp::StreamStats& x = st->stats();
    c->send_credits = st->send_credits();
    c->rx_queued = st->readable_octets();
    c->tx_queued = st->unsent_octets();
    c->data_tx = x.data_tx;
    c->data_rx = x.data_rx;
    c->credit_tx = x.credit_tx;
    c->srcavail_tx = x.srcavail_tx;
    c->srcavail_rx = x.srcavail_rx;
    c->zero_copy_pulls = x.zero_copy_pulls;
    c->bounce_pulls = x.bounce_pulls;
    c->sinks_offered = x.sinks_offered;
    c->sinks_written = x.sinks_written;
    c->sink_writes = x.sink_writes;
    c->copied_tx = x.copied_octets_tx;
    c->zcopy_tx = x.zcopy_octets_tx;
  }
}

}  // namespace

void DdpRuntime::publish_stats() {
  if (stats_ && stats_->pid() != ::getpid()) stats_.reset();  // a fork child: its own region
  if (!stats_) {
    stats_.reset(StatsRegion::create(config().provider.c_str()));
    if (!stats_) {
      stats_off_ = true;  // /dev/shm not writable: esock-stat does not see this process
      return;
    }
  }
  std::vector<std::pair<std::string, std::uint64_t>> counters;
  if (stack_ != nullptr && !stack_of_parent_) stack_->counters(&counters);
  stats_->publish(counters, [&](stats::Conn* out, std::uint32_t* used) {
    std::uint32_t n = 0;
    for (const auto& s : socks_) {
      if (n < stats::max_conns) describe(*s, &out[n++]);
    }
    *used = n;
    return static_cast<std::uint32_t>(socks_.size());
  });
  stats_shown_ = static_cast<std::uint32_t>(socks_.size());
}

}  // namespace esock::sockets
