#include "report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace esock::tcp::tool {
namespace {

double rate(std::uint64_t bytes, double secs) {
  return secs > 0 ? static_cast<double>(bytes) / secs / 1e6 : 0;
}

int wscale(std::uint8_t w) {
  return w == 255 ? -1 : w;  // TcbInfo encodes "not negotiated" as 255
}

}  // namespace

void print_report(const Options& o, const Transfer& x, Runtime& rt) {
  Instant end = x.end() == End::running ? rt.now() : x.finish();
  double secs = static_cast<double>((end - x.start()).count()) / 1e9;
  std::printf("RESULT end=%s error=%s sent=%llu recv=%llu secs=%.3f tx_MBps=%.1f rx_MBps=%.1f\n",
              to_string(x.end()), x.error() ? std::strerror(x.error()) : "none",
              static_cast<unsigned long long>(x.sent().bytes()),
              static_cast<unsigned long long>(x.received().bytes()), secs,
              rate(x.sent().bytes(), secs), rate(x.received().bytes(), secs));
  std::printf("SHA256 sent=%s\n", x.sent().hex().c_str());
  std::printf("SHA256 recv=%s\n", x.received().hex().c_str());
  std::optional<TcbInfo> info = x.info;
  std::optional<TcbStats> st = x.stats;
  if (!info && x.connection()) {
    info = x.connection()->tcb().info();
    st = x.connection()->tcb().stats();
  }
  if (info) {
    std::printf(
        "TCB state=%s mss=%u peer_mss=%u sack=%d ts=%d wscale=%d,%d cwnd=%u ssthresh=%u "
        "srtt_us=%lld rto_us=%lld cc=%s\n",
        to_string(info->state), info->smss, info->peer_mss, info->sack, info->timestamps,
        wscale(info->snd_wscale), wscale(info->rcv_wscale), info->cwnd, info->ssthresh,
        static_cast<long long>(info->srtt.count() / 1000),
        static_cast<long long>(info->rto.count() / 1000), info->congestion);
  }
  if (st) {
    std::printf(
        "STATS segs_in=%llu segs_out=%llu retransmits=%llu rto_expirations=%llu "
        "fast_recoveries=%llu dup_acks_in=%llu ooo_segments=%llu ooo_dropped=%llu "
        "peak_ooo_bytes=%llu challenge_acks=%llu\n",
        static_cast<unsigned long long>(st->segs_in), static_cast<unsigned long long>(st->segs_out),
        static_cast<unsigned long long>(st->retransmits),
        static_cast<unsigned long long>(st->rto_expirations),
        static_cast<unsigned long long>(st->fast_recoveries),
        static_cast<unsigned long long>(st->dup_acks_in),
        static_cast<unsigned long long>(st->ooo_segments),
        static_cast<unsigned long long>(st->ooo_dropped),
        static_cast<unsigned long long>(st->peak_ooo_bytes),
        static_cast<unsigned long long>(st->challenge_acks));
  }
  const InterfaceStats& is = rt.stack().iface().stats();
  std::printf(
      "IFACE rx_frames=%llu rx_dropped=%llu tcp_bad_csum=%llu tx_device_full=%llu "
      "tx_arp_dropped=%llu\n",
      static_cast<unsigned long long>(is.rx_frames), static_cast<unsigned long long>(is.rx_dropped),
      static_cast<unsigned long long>(is.tcp_bad_csum),
      static_cast<unsigned long long>(is.tx_device_full),
      static_cast<unsigned long long>(is.tx_arp_dropped));
  // Stack-wide TCP input drops by reason (drop_reason.h): the non-zero ones as key=value.
  const DropCounters drops = rt.stack().stats().drops;
  std::printf("DROPS total=%llu%s%s\n", static_cast<unsigned long long>(drops.total()),
              drops.total() ? " " : "", drops.total() ? to_string(drops).c_str() : "");
  if (const FaultInjector* f = rt.faults()) {
    const FaultCounters& tx = f->tx_counters();
    const FaultCounters& rx = f->rx_counters();
    std::printf(
        "FAULTS seed=%llu tx_seen=%llu tx_lost=%llu tx_reordered=%llu rx_seen=%llu "
        "rx_lost=%llu rx_reordered=%llu\n",
        static_cast<unsigned long long>(o.seed), static_cast<unsigned long long>(tx.seen),
        static_cast<unsigned long long>(tx.lost), static_cast<unsigned long long>(tx.reordered),
        static_cast<unsigned long long>(rx.seen), static_cast<unsigned long long>(rx.lost),
        static_cast<unsigned long long>(rx.reordered));
  }
  std::fflush(stdout);
}

int exit_status(const Options& o, const Transfer& x) {
  auto fail = [](const char* why) {
    std::fprintf(stderr, "esock_tcp: FAILED: %s\n", why);
    return 1;
  };
  if (o.expect_reset) return x.end() == End::reset ? 0 : fail("expected the peer to reset");
  if (o.abort_after) return x.end() == End::aborted ? 0 : fail("did not get to --abort-after");
  if (x.end() != End::fin) return fail("the stream did not end with FIN both ways");
  if (o.send && x.sent().bytes() != *o.send) return fail("sent fewer bytes than --send");
  return 0;
}

}  // namespace esock::tcp::tool
