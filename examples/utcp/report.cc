// esock_iwarp's RESULT line: one line of key=value pairs (the keys are a contract with the
// benchmark scripts and tests/integration/utcp; new keys may be added, none renamed).
#include <cstdio>
#include <string>

#include "driver.h"

namespace esock::utcp::tool {
namespace {

const char* verdict(Verdict v) {
  switch (v) {
    case Verdict::off:
      return "off";
    case Verdict::ok:
      return "ok";
    case Verdict::failed:
      return "failed";
  }
  return "?";
}

unsigned long long ull(std::uint64_t v) {
  return static_cast<unsigned long long>(v);
}

}  // namespace

void Driver::snapshot() {
  if (!ep_) return;
  ep_stats_ = ep_->stats();
  negotiated_ = ep_->negotiated();
  if (tcp::Connection* c = ep_->tcp_connection()) tcb_stats_ = c->tcb().stats();
}

void Driver::print_result() {
  const double secs =
      end_ > start_ && start_ != Instant{} ? static_cast<double>((end_ - start_).count()) / 1e9 : 0;
  const double mbps = secs > 0 ? static_cast<double>(bytes_) / secs / 1e6 : 0;
  const double mps = secs > 0 ? static_cast<double>(done_ops_) / secs : 0;
  Percentiles rtt = percentiles(rtt_us_);
  Percentiles fill, open;
  if (loop_) {
    fill = percentiles(loop_->fill_us());
    open = percentiles(loop_->open_us());
  }
  const Stats es = ep_stats_.value_or(Stats{});
  const tcp::TcbStats ts = tcb_stats_.value_or(tcp::TcbStats{});
  const bool markers = negotiated_ && (negotiated_->markers_tx || negotiated_->markers_rx);
  const bool crc = negotiated_ && negotiated_->crc;
  std::string line;
  char buf[512];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(buf, sizeof buf, fmt, args...);
    line += buf;
  };
  add("RESULT role=%s op=%s mode=%s size=%u iters=%llu bytes=%llu secs=%.6f MBps=%.1f "
      "msgs_per_s=%.0f",
      client() ? "client" : "server", to_string(o_.op), to_string(o_.mode), o_.size, ull(done_ops_),
      ull(bytes_), secs, mbps, mps);
  // lat_* and rtt_* are both the full round trip (no halving); 0 in bw mode.
  add(" lat_p50_us=%.2f lat_p99_us=%.2f rtt_p50_us=%.2f rtt_p99_us=%.2f rtt_max_us=%.2f", rtt.p50,
      rtt.p99, rtt.p50, rtt.p99, rtt.max);
  add(" markers=%s crc=%s placement=%s loss=%g reorder=%g depth=%u", markers ? "on" : "off",
      crc ? "on" : "off", o_.placement ? "on" : "off", o_.loss_pct, o_.reorder_pct, o_.depth);
  add(" fpdus_tx=%llu fpdus_rx=%llu fpdus_placed_early=%llu", ull(es.fpdus_tx), ull(es.fpdus_rx),
      ull(es.fpdus_placed_early));
  // TCP's view of this side's connection (TcbStats): segments that arrived ahead of a hole,
  // those the endpoint placed (TCP kept only their range), the most out-of-order octets TCP
  // ever buffered, and segments sent again.
  add(" ooo_segments=%llu ooo_placed=%llu peak_ooo_bytes=%llu retransmits=%llu",
      ull(ts.ooo_segments), ull(ts.ooo_placed_by_user), ull(ts.peak_ooo_bytes),
      ull(ts.retransmits));
  add(" hole_fills=%zu hole_fill_p50_us=%.2f hole_fill_p99_us=%.2f hole_fill_max_us=%.2f",
      fill.count, fill.p50, fill.p99, fill.max);
  add(" hole_open_p50_us=%.2f hole_open_p99_us=%.2f hole_open_max_us=%.2f", open.p50, open.p99,
      open.max);
  // The endpoint's own view of the out-of-order segments TCP offered it.
  add(" ep_ooo_segments=%llu ep_ooo_placed=%llu ooo_not_self_describing=%llu"
      " ooo_not_whole_fpdus=%llu ooo_crc_errors=%llu ooo_framing_errors=%llu"
      " ooo_not_placeable=%llu placed_bytes=%llu tx_payload_bytes=%llu tx_copied_bytes=%llu",
      ull(es.ooo_segments), ull(es.ooo_segments_placed), ull(es.ooo_not_self_describing),
      ull(es.ooo_not_whole_fpdus), ull(es.ooo_crc_errors), ull(es.ooo_framing_errors),
      ull(es.ooo_not_placeable), ull(es.placed_bytes), ull(es.tx_payload_bytes),
      ull(es.tx_copied_bytes));
  add(" rto_expirations=%llu fast_recoveries=%llu ooo_dropped=%llu", ull(ts.rto_expirations),
      ull(ts.fast_recoveries), ull(ts.ooo_dropped));
  // The stack's TCP input drops (all connections, tcp/engine/drop_reason.h): the total,
  // then tcp_drop_<reason>=n for each reason that moved.
  if (rt_) {
    const tcp::DropCounters drops = rt_->stack().stats().drops;
    add(" tcp_drops=%llu", ull(drops.total()));
    for (std::size_t i = 0; i < tcp::drop_reason_count; ++i)
      if (drops.count[i])
        add(" tcp_drop_%s=%llu", tcp::to_string(static_cast<tcp::DropReason>(i)),
            ull(drops.count[i]));
  }
  if (rt_ && rt_->faults()) {
    const tcp::FaultCounters& tx = rt_->faults()->tx_counters();
    const tcp::FaultCounters& rx = rt_->faults()->rx_counters();
    add(" fault_tx_lost=%llu fault_rx_lost=%llu fault_tx_reordered=%llu fault_rx_reordered=%llu",
        ull(tx.lost), ull(rx.lost), ull(tx.reordered), ull(rx.reordered));
  }
  add(" verify=%s error=%s", verdict(verify_), error_.empty() ? "none" : error_.c_str());
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace esock::utcp::tool
