// The dpdk provider (the plugin libesock_dpdk.so, docs/sockets.md "Providers"): DDPMODE
// connections on esock's own TCP/IP stack (lib/tcp) over one DPDK port, with iWARP by
// lib/esock/utcp (FPDU-aligned segments, Markers by sequence number, out-of-order placement,
// zero-copy transmit). The runtime's progress thread polls the stack; every call here comes
// under the runtime lock, so the stack keeps its one-thread model (ARCHITECTURE.md).
//
// A plugin rather than part of libesock.so: DPDK's libraries run constructors when loaded,
// which every program under esockrun would otherwise pay for, pass-through ones included.
#include <arpa/inet.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "esock/process/config.h"
#include "esock/providers/dpdk_debris.h"
#include "esock/providers/dpdk_signals.h"
#include "esock/providers/provider.h"
#include "esock/rnic/engine_verbs.h"
#include "esock/utcp/endpoint.h"
#include "esock/utcp/plain_relay.h"
#include "tcp/dev/fault_text.h"
#include "tcp/dev/memif_frames.h"
#include "tcp/runtime/runtime.h"

namespace esock::sockets {

namespace {

sockaddr_in to_sockaddr(tcp::Ipv4Addr ip, std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(ip.v);
  a.sin_port = htons(port);
  return a;
}

bool parse_cidr(const std::string& text, tcp::Ipv4Addr* ip, std::uint8_t* prefix) {
  const auto slash = text.find('/');
  if (!tcp::Ipv4Addr::parse(text.substr(0, slash), ip)) return false;
  if (slash == std::string::npos) return true;  // keeps the default prefix
  char* end = nullptr;
  const unsigned long n = std::strtoul(text.c_str() + slash + 1, &end, 10);
  if (end == text.c_str() + slash + 1 || *end != '\0' || n < 1 || n > 30) return false;
  *prefix = static_cast<std::uint8_t>(n);
  return true;
}

// The socket file a net_memif server creates (role=server, socket=PATH, socket-abstract=no),
// or empty: closing the port would remove it, and exit does not close the port.
std::string memif_socket(const std::string& devargs, bool want_server) {
  if (!tcp::is_memif(devargs)) return {};
  std::string path;
  bool server = false, file = false;
  std::size_t at = devargs.find(',');
  while (at != std::string::npos) {
    const std::size_t next = devargs.find(',', at + 1);
    const std::string kv = devargs.substr(at + 1, next == std::string::npos ? next : next - at - 1);
    if (kv == "role=server") server = true;
    if (kv == "socket-abstract=no") file = true;
    if (kv.rfind("socket=", 0) == 0) path = kv.substr(7);
    at = next;
  }
  return server == want_server && file ? path : std::string{};
}

std::string memif_server_socket(const std::string& devargs) {
  return memif_socket(devargs, true);
}

// A memif client started before its server found no socket and never retried ("Failed to
// connect socket", then the connect failed): it waits for the server's socket file, up to
// the set-up timeout, before bringing the port up (issue 14, item 6).
void wait_for_memif_server(const std::string& devargs, int timeout_ms, bool debug) {
  const std::string path = memif_socket(devargs, false);
  if (path.empty()) return;
  for (int waited = 0; waited < timeout_ms; waited += 10) {
    if (waited == 10 && debug)
      std::fprintf(stderr, "esock: dpdk: waiting for the memif server's socket %s\n", path.c_str());
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) return;
    ::usleep(10 * 1000);
  }
}

class DpdkProvider;

class DpdkConn final : public ProviderConn {
 public:
  ConnCounters counters() const override {
    ConnCounters c;
    if (!ep_) return c;
    const rnic::EngineStats& e = ep_->engine().stats();
    c.fpdus_tx = e.fpdus_tx;
    c.fpdus_rx = e.fpdus_rx;
    c.ooo_segments = e.ooo_segments;
    c.ooo_placed = e.ooo_segments_placed;
    c.terminated = ep_->engine().terminated();
    if (const tcp::Connection* t = ep_->tcp_connection())
      c.tcp_retransmits = t->tcb().stats().retransmits;
    return c;
  }
  // Active open, started once the port's link is up (memif: the peer attached).
  DpdkConn(DpdkProvider& p, const sockaddr_in& dst, const utcp::Options& o);
  // Passive open on a connection from the accept queue.
  DpdkConn(DpdkProvider& p, tcp::Connection* c, const utcp::Options& o);
  ~DpdkConn() override;  // the endpoint releases its TCP connection to the stack

  bool start_if_link_up();  // active open: false while waiting for the link
  // Process exit: the stack goes away under the endpoint, which must not touch it again.
  void abandon() {
    if (ep_) ep_->set_wake(nullptr, nullptr);
    (void)ep_.release();
    abandoned_ = true;
  }
  bool progress() {
    const bool did = ep_ && ep_->progress();
    if (did) note_active();
    return did;
  }
  void note_active() {  // (the runtime hears of it once per take_activity)
    if (active_) return;
    active_ = true;
    activity();
  }
  bool take_activity() override { return std::exchange(active_, false); }
  bool reports_activity() const override { return true; }

  rnic::Verbs& verbs() override { return *verbs_; }
  const mpa::Negotiated& negotiated() const override { return ep_->negotiated(); }
  int poll_fd() const override { return -1; }
  short poll_events() const override { return 0; }
  void on_ready(short) override {}
  void flush() override;
  // The endpoint frames and queues to TCP at once, and flush() hands frames to the port.
  bool output_pending() const override { return false; }
  TransportState transport_state() const override {
    if (!ep_) return TransportState::open;
    const utcp::Endpoint::State st = ep_->state();
    if (ep_->engine().terminated()) {
      // A Terminate (sent or received, RFC 5040 section 5.3) ends the stream as a reset.
      // One we sent only once TCP has it acknowledged (or the stream is gone): the reset
      // that follows would otherwise overtake it in the peer's receive path, and the peer's
      // work requests would end as flushed instead of with the error the Terminate names.
      const bool gone = st == utcp::Endpoint::State::failed || st == utcp::Endpoint::State::closed;
      return ep_->engine().qp().terminate_received() || gone || terminate_acked()
                 ? TransportState::broken
                 : TransportState::open;
    }
    switch (st) {
      case utcp::Endpoint::State::failed:
        return TransportState::broken;
      case utcp::Endpoint::State::closed:
        return TransportState::ended;
      default:
        return TransportState::open;
    }
  }
  bool terminate_acked() const {
    const tcp::Connection* c = ep_->tcp_connection();
    return c == nullptr || (c->tcb().unsent() == 0 && c->tcb().snd_una() == c->tcb().snd_nxt());
  }
  void shutdown() override {
    if (ep_) ep_->close();
    flush();
  }
  void abort() override {
    if (ep_) ep_->abort();
  }
  void hold_input(bool on) override {
    hold_ = on;
    if (ep_) ep_->hold_input(on);
  }
  int name(bool peer, sockaddr* addr, socklen_t* len) const override {
    if (!ep_) {
      errno = ENOTCONN;
      return -1;
    }
    return copy_sockaddr(peer ? peer_ : local_, addr, len);
  }
  int option_fd() const override { return -1; }
  int setup_state() const override;
  std::string setup_error() const override;
  // Peers without esock (utcp::Endpoint tells them): silent only once TCP is up.
  bool peer_not_mpa() const override { return ep_ && ep_->peer_not_mpa(); }
  bool peer_silent() const override {
    return ep_ && ep_->state() == utcp::Endpoint::State::negotiating && ep_->peer_silent();
  }
  bool relay_plain(int fd) override;
  void keep_while_sent(std::shared_ptr<void> mem) override {
    if (ep_) ep_->keep_while_sent(std::move(mem));
  }

 private:
  void attach(std::unique_ptr<utcp::Endpoint> ep);

  DpdkProvider& p_;
  sockaddr_in dst_{};
  utcp::Options opts_;
  rnic::Context ctx_;
  std::unique_ptr<utcp::Endpoint> ep_;
  std::unique_ptr<rnic::EngineVerbs> verbs_;
  sockaddr_in local_{}, peer_{};
  int start_err_ = 0;
  bool hold_ = false;
  bool abandoned_ = false;
  bool active_ = true;  // take_activity()
 public:
  bool woken_ = false;  // on the provider's ready_ list
  bool started() const { return ep_ != nullptr; }
  int start_failed() const { return start_err_; }
  static void wake_thunk(void* self);
};

class DpdkListener final : public ProviderListener {
 public:
  DpdkListener(DpdkProvider& p, tcp::Listener* l) : p_(p), l_(l) {}
  ~DpdkListener() override;
  bool pending() const override { return l_->pending() > 0; }
  std::unique_ptr<ProviderConn> accept(const mpa::Config& cfg) override;
  int name(sockaddr* addr, socklen_t* len) const override;

 private:
  DpdkProvider& p_;
  tcp::Listener* l_;
};

class DpdkProvider final : public Provider {
 public:
  explicit DpdkProvider(const Config& c) : cfg_(c) {}
  const char* name() const override { return "dpdk"; }
  bool own_stack() const override { return true; }

  // esock-stat: the stack's and the interface's counters, and every drop reason seen.
  void counters(std::vector<std::pair<std::string, std::uint64_t>>* out) const override {
    if (!rt_) return;
    const tcp::StackStats st = rt_->stack().stats();
    const tcp::InterfaceStats& is = rt_->stack().iface().stats();
    for (const auto& [name, v] :
         {std::pair<const char*, std::uint64_t>{"if.rx_frames", is.rx_frames},
          {"if.rx_dropped", is.rx_dropped},
          {"if.tcp_rx", is.tcp_rx},
          {"if.tcp_tx", is.tcp_tx},
          {"if.tcp_bad_csum", is.tcp_bad_csum},
          {"if.arp_requests_rx", is.arp_requests_rx},
          {"if.arp_requests_tx", is.arp_requests_tx},
          {"if.tx_no_route", is.tx_no_route},
          {"if.tx_device_full", is.tx_device_full},
          {"tcp.connections", rt_->stack().connection_count()},  // now, TIME-WAIT included
          {"tcp.unsettled", rt_->stack().unsettled()},           // now: closes under way
          {"tcp.time_wait", rt_->stack().time_wait_listed()},    // now (about)
          {"dpdk.progress_unwoken", progress_unwoken_},          // (poll_once: 0 is the design)
          {"tcp.connections_opened", st.connections_opened},
          {"tcp.connections_closed", st.connections_closed},
          {"tcp.syns_received", st.syns_received},
          {"tcp.segments_no_connection", st.segments_no_connection},
          {"tcp.accept_queue_overflow", st.accept_queue_overflow},
          {"tcp.time_wait_reopened", st.time_wait_reopened},
          {"tcp.rx_bytes_held", st.rx_bytes_held},
          {"tcp.drops", st.drops.total()}})
      out->emplace_back(name, v);
    for (std::size_t r = 0; r < tcp::drop_reason_count; ++r)
      if (st.drops.count[r] != 0)
        out->emplace_back(
            std::string("tcp.drop.") + tcp::to_string(static_cast<tcp::DropReason>(r)),
            st.drops.count[r]);
  }

  int start(std::string* why) override {
    if (rt_) return 0;
    if (start_err_ != 0) {
      *why = start_why_;
      return start_err_;
    }
    start_err_ = bring_up(&start_why_);
    *why = start_why_;
    return start_err_;
  }

  std::unique_ptr<ProviderConn> connect(const sockaddr_in& dst, const mpa::Config& cfg, int* err,
                                        std::string* why) override {
    if (dst.sin_family != AF_INET) {
      *err = EAFNOSUPPORT;
      *why = "the dpdk provider carries IPv4 only";
      return nullptr;
    }
    if (dst.sin_port == 0 || dst.sin_addr.s_addr == htonl(INADDR_ANY)) {
      *err = EADDRNOTAVAIL;
      *why = "no destination port or address";
      return nullptr;
    }
    return std::make_unique<DpdkConn>(*this, dst, options(cfg));
  }

  std::unique_ptr<ProviderListener> listen(const sockaddr_in& local, int backlog, int* err,
                                           std::string* why) override {
    const std::uint16_t port = ntohs(local.sin_port);  // the stack's one address (ddp_bind)
    tcp::Listener* l =
        rt_->stack().listen(port, static_cast<std::size_t>(std::clamp(backlog, 1, 4096)), err);
    if (l == nullptr) {
      *why = std::string("listen on the DPDK stack: ") + std::strerror(*err);
      return nullptr;
    }
    return std::make_unique<DpdkListener>(*this, l);
  }

  bool poll_once() override {
    bool did = rt_->poll_once();
    // The endpoints TCP gave work this round (Endpoint::set_wake), not every endpoint:
    // 4000 idle connections spent a third of a held process's time in their progress.
    // A full pass still comes, every full_progress_every per 10 connections (at least
    // every 1 ms, at most every second: sockets::full_pass_period): active opens waiting for the
    // link start in it, and what it finds to do on an endpoint nobody woke is counted
    // (dpdk.progress_unwoken; 0 is the design).
    const auto now = std::chrono::steady_clock::now();
    // (Two lists taking turns, so a round allocates nothing; what a progress wakes again
    // waits for the next round.)
    progressing_.swap(ready_);
    if (now >= next_full_progress_ || full_pass_due_) {
      next_full_progress_ = now + full_pass_period(full_progress_every, conns_.size());
      full_pass_due_ = false;
      for (DpdkConn* c : conns_) {
        const bool was_woken = c->woken_;
        c->woken_ = false;
        const bool was_started = c->started();
        const bool d = c->start_if_link_up() && c->progress();
        // An active open waiting for the link is tried again next round.
        full_pass_due_ = full_pass_due_ || (!c->started() && c->start_failed() == 0);
        if (d && !was_woken && was_started) ++progress_unwoken_;
        did |= d;
      }
    } else {
      for (DpdkConn* c : progressing_) {
        c->woken_ = false;
        did |= c->progress();
      }
    }
    progressing_.clear();
    for (auto& r : relays_) did |= r->pump();
    // A relay over (both ends of stream, or a reset) releases its connection to the stack
    // once everything it passed on was acknowledged (so an exit right after loses nothing);
    // the stack finishes it (FIN-WAIT, TIME-WAIT) on its own.
    std::erase_if(relays_, [](const auto& r) { return r->done() && r->settled(); });
    if (did) rt_->stack().iface().flush();  // what the endpoints queued leaves this round
    return did;
  }

  bool open_plain(const sockaddr_in& dst, int fd, sockaddr_in* local, int* err) override {
    tcp::Connection* c =
        stack().connect(tcp::Ipv4Addr{ntohl(dst.sin_addr.s_addr)}, ntohs(dst.sin_port), err);
    if (c == nullptr) {
      ::close(fd);
      return false;
    }
    c->set_nodelay(true);  // the relay hands TCP what the pair holds at once
    *local = to_sockaddr(c->tuple().local_ip, c->tuple().local_port);
    relay(c, fd);
    return true;
  }

  // c carried on as plain TCP through fd (utcp/plain_relay.h).
  void relay(tcp::Connection* c, int fd) {
    relays_.push_back(std::make_unique<utcp::PlainRelay>(stack(), c, fd));
  }

  void poll_fds(std::vector<pollfd>* out) const override {
    // Every relay not over, events or none: a hang-up (the application's close after its
    // shutdown) shows whatever is asked.
    for (const auto& r : relays_)
      if (!r->done()) out->push_back(pollfd{r->fd(), r->poll_events(), 0});
  }

  void take_device_signals() override { take_tap_signals(); }

  std::size_t drain_at_exit() override {
    std::size_t left = 0;
    for (auto& r : relays_) {
      r->finish();
      left += r->settled() ? 0 : 1;
    }
    // Those over release their connections now (a reset goes out at once, a FIN after
    // what is queued), before the stack stops.
    std::erase_if(relays_, [](const auto& r) { return r->done() && r->settled(); });
    rt_->stack().iface().flush();
    // Closes under way in TCP (a FIN to be acknowledged, the peer's FIN to come) finish in
    // the drain too (a peer left in LAST-ACK would retransmit its FIN for minutes); stop()
    // resets what is left of those a reset can end.
    return left + rt_->stack().unsettled();
  }

  void stop() override {
    // Endpoints still attached point into the stack: they are abandoned with it (the
    // process is exiting and the progress thread never runs again).
    // What did not close in the exit drain (thousands of connections may not) is reset
    // first, so no peer waits for good for a FIN that would never come.
    // In batches a transmit ring takes, the device given a moment between them (its peer
    // empties a memif ring), within a bound.
    if (rt_) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
      while (rt_->stack().abort_unfinished(64) == 64 && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        rt_->poll_once();
      }
    }
    for (DpdkConn* c : conns_) c->abandon();
    conns_.clear();
    ready_.clear();
    for (auto& r : relays_) r->abandon();
    relays_.clear();
    if (!rt_) return;
    // DPDK is left as it is (abandon_at_exit says why); what closing the port would have
    // removed on the host is removed here. exit() flushes a capture's stdio buffer.
    rt_->abandon_at_exit();
    (void)rt_.release();
    if (!memif_socket_.empty()) ::unlink(memif_socket_.c_str());
  }

  utcp::Options options(const mpa::Config& cfg) const {
    utcp::Options o;
    o.mpa = cfg;
    return o;
  }
  tcp::Stack& stack() { return rt_->stack(); }
  tcp::Runtime& runtime() { return *rt_; }
  void attach(DpdkConn* c) {
    conns_.push_back(c);
    full_pass_due_ = true;  // which starts an active open once the link is up
  }
  void detach(DpdkConn* c) {
    std::erase(conns_, c);
    if (c->woken_) std::erase(ready_, c);
    std::erase(progressing_, c);  // (empty outside poll_once; freed there by nothing today)
  }
  void wake(DpdkConn* c) {
    if (c->woken_) return;
    c->woken_ = true;
    ready_.push_back(c);
  }
  tcp::Ipv4Addr ip() const { return ip_; }

 private:
  int bring_up(std::string* why) {
    tcp::RuntimeConfig rc;
    if (cfg_.dpdk_vdev.empty()) {
      *why = "ESOCK_DPDK_VDEV is not set (the DPDK device, e.g. net_memif0,role=server,...)";
      return ENODEV;
    }
    if (!parse_cidr(cfg_.dpdk_ip, &rc.stack.iface.ip, &rc.stack.iface.prefix_len)) {
      *why = "ESOCK_DPDK_IP must be the stack's address as A.B.C.D/NN, got '" + cfg_.dpdk_ip + "'";
      return EINVAL;
    }
    if (!cfg_.dpdk_gateway.empty() &&
        !tcp::Ipv4Addr::parse(cfg_.dpdk_gateway, &rc.stack.iface.gateway)) {
      *why = "ESOCK_DPDK_GATEWAY is not an IPv4 address: '" + cfg_.dpdk_gateway + "'";
      return EINVAL;
    }
    ip_ = rc.stack.iface.ip;
    memif_socket_ = memif_server_socket(cfg_.dpdk_vdev);
    // What a process killed earlier left behind would make this start fail or pile up.
    const std::string removed = remove_stale_debris(memif_socket_);
    if (cfg_.debug && !removed.empty()) std::fprintf(stderr, "esock: dpdk: %s", removed.c_str());
    // EAL's directory is named now (as Eal::init would: one EAL per process), so a signal
    // during bring-up, once the memif socket exists, removes it too.
    if (cfg_.dpdk_file_prefix.empty())
      cfg_.dpdk_file_prefix = "esock-" + std::to_string(::getpid()) + "-0";
    remove_debris_on_signals(memif_socket_, eal_runtime_root() + "/" + cfg_.dpdk_file_prefix);
    wait_for_memif_server(cfg_.dpdk_vdev, cfg_.timeout_ms, cfg_.debug);
    // MTU (ESOCK_DPDK_MTU): as configured; else jumbo on memif, the port's elsewhere.
    const tcp::MemifFrames frames = tcp::memif_frames(cfg_.dpdk_vdev, cfg_.dpdk_mtu);
    rc.vdev = frames.devargs;
    rc.mtu = static_cast<std::uint16_t>(frames.mtu);
    rc.mtu_beyond_port = tcp::is_memif(rc.vdev);
    rc.core = cfg_.dpdk_core;
    rc.memory_mb = cfg_.dpdk_memory_mb;
    rc.file_prefix = cfg_.dpdk_file_prefix;
    rc.pcap_path = cfg_.dpdk_pcap;
    if (!cfg_.dpdk_faults.empty()) {  // tests under loss and reordering (ESOCK_DPDK_FAULTS)
      std::string bad;
      rc.faults = tcp::parse_fault_text(cfg_.dpdk_faults, &bad);
      if (!rc.faults) {
        *why = "ESOCK_DPDK_FAULTS: " + bad;
        return EINVAL;
      }
    }
    rc.link_timeout = Duration{};  // a listener's peer may come much later; connect waits
    // EAL pins the thread that initialises it to its lcore (-l); that is an application
    // thread here, so its CPU affinity is put back afterwards.
    cpu_set_t mask;
    const bool had_mask = ::sched_getaffinity(0, sizeof mask, &mask) == 0;
    rt_ = tcp::Runtime::create(rc, why);
    if (had_mask) ::sched_setaffinity(0, sizeof mask, &mask);
    if (!rt_) {
      *why = "DPDK: " + *why;
      return ENODEV;
    }
    remove_debris_on_signals(memif_socket_, rt_->eal_runtime_dir());
    return 0;
  }

  Config cfg_;
  std::unique_ptr<tcp::Runtime> rt_;
  tcp::Ipv4Addr ip_;
  int start_err_ = 0;
  std::string start_why_;
  std::vector<DpdkConn*> conns_;
  std::vector<DpdkConn*> ready_;        // woken since their last progress (DpdkConn::woken_)
  std::vector<DpdkConn*> progressing_;  // this round's (poll_once)
  bool full_pass_due_ = false;          // a connection came, or an active open waits for the link
  static constexpr std::chrono::milliseconds full_progress_every{1};
  std::chrono::steady_clock::time_point next_full_progress_{};
  std::uint64_t progress_unwoken_ = 0;
  std::vector<std::unique_ptr<utcp::PlainRelay>> relays_;  // peers without esock
  std::string memif_socket_;  // a memif server's socket file, removed at exit
};

DpdkConn::DpdkConn(DpdkProvider& p, const sockaddr_in& dst, const utcp::Options& o)
    : p_(p), dst_(dst), opts_(o) {
  p_.attach(this);
}

DpdkConn::DpdkConn(DpdkProvider& p, tcp::Connection* c, const utcp::Options& o) : p_(p), opts_(o) {
  p_.attach(this);
  attach(utcp::Endpoint::accept(p_.stack(), c, ctx_, opts_));
}

DpdkConn::~DpdkConn() {
  if (abandoned_) return;
  // The endpoint's release below may still report TCP events: not to this connection.
  if (ep_) ep_->set_wake(nullptr, nullptr);
  p_.detach(this);
  verbs_.reset();
  ep_.reset();
}

void DpdkConn::wake_thunk(void* self) {
  auto* c = static_cast<DpdkConn*>(self);
  c->p_.wake(c);
}

void DpdkConn::attach(std::unique_ptr<utcp::Endpoint> ep) {
  ep_ = std::move(ep);
  ep_->set_wake(&DpdkConn::wake_thunk, this);
  p_.wake(this);  // what happened before the hook was set
  ep_->hold_input(hold_);
  verbs_ = std::make_unique<rnic::EngineVerbs>(ep_->engine());
  const tcp::FourTuple& t = ep_->tcp_connection()->tuple();
  local_ = to_sockaddr(t.local_ip, t.local_port);
  peer_ = to_sockaddr(t.remote_ip, t.remote_port);
}

bool DpdkConn::start_if_link_up() {
  if (ep_ || start_err_ != 0) return ep_ != nullptr;
  if (!p_.runtime().link_up()) return false;
  int err = 0;
  auto ep = utcp::Endpoint::connect(p_.stack(), ctx_, tcp::Ipv4Addr{ntohl(dst_.sin_addr.s_addr)},
                                    ntohs(dst_.sin_port), opts_, &err);
  if (!ep) {
    start_err_ = err != 0 ? err : EADDRNOTAVAIL;
    return false;
  }
  attach(std::move(ep));
  return true;
}

void DpdkConn::flush() {
  // Called by application threads right after they post: the frames leave now rather
  // than at the progress thread's next round.
  if (ep_ && ep_->progress()) {
    note_active();  // completions it made wait for the runtime's service
    p_.stack().iface().flush();
  }
}

bool DpdkConn::relay_plain(int fd) {
  tcp::Connection* c = ep_ ? ep_->release_plain() : nullptr;
  if (c == nullptr) {
    ::close(fd);
    return false;
  }
  p_.relay(c, fd);
  return true;
}

int DpdkConn::setup_state() const {
  if (start_err_ != 0) return start_err_;
  if (!ep_) return EINPROGRESS;
  if (ep_->peer_not_mpa()) return EPROTO;  // nothing of what it sent was consumed
  switch (ep_->state()) {
    case utcp::Endpoint::State::connecting:
    case utcp::Endpoint::State::negotiating:
      return EINPROGRESS;
    case utcp::Endpoint::State::established:
      return 0;
    case utcp::Endpoint::State::closed:
      return ECONNRESET;  // the peer closed during MPA negotiation
    case utcp::Endpoint::State::failed:
      break;
  }
  // TCP's own verdict (refused, timed out, reset) where there is one; otherwise MPA ended
  // it (Reject or a malformed exchange): refused, as docs/sockets.md says for connect.
  const tcp::Connection* c = ep_->tcp_connection();
  if (c != nullptr && c->error() != 0) return c->error();
  return ECONNREFUSED;
}

std::string DpdkConn::setup_error() const {
  if (start_err_ != 0) return std::string("TCP connect: ") + std::strerror(start_err_);
  if (!ep_) return "the DPDK port's link is down (is the peer attached?)";
  if (ep_->peer_not_mpa()) return "the peer's first octets are not MPA's";
  if (!ep_->error().empty()) return ep_->error();
  return "connection closed during MPA negotiation";
}

DpdkListener::~DpdkListener() {
  p_.stack().close_listener(l_);
}

std::unique_ptr<ProviderConn> DpdkListener::accept(const mpa::Config& cfg) {
  tcp::Connection* c = p_.stack().accept(l_);
  if (c == nullptr) return nullptr;
  return std::make_unique<DpdkConn>(p_, c, p_.options(cfg));
}

int DpdkListener::name(sockaddr* addr, socklen_t* len) const {
  return copy_sockaddr(to_sockaddr(p_.ip(), l_->port()), addr, len);
}

}  // namespace

}  // namespace esock::sockets

extern "C" __attribute__((visibility("default"))) esock::sockets::Provider* esock_provider_create(
    const esock::sockets::Config& cfg, std::string* why) {
  (void)why;
  return new esock::sockets::DpdkProvider(cfg);
}
