// The rdmacm provider's connections and listeners (rdmacm.cc has the provider): DDPMODE
// connections on the kernel's verbs, an RNIC or siw, through librdmacm. The kernel's device
// does MPA, DDP and RDMAP; esock brings the ESTP stream (or RAWMODE) over its queue pair.
//
// The ESTP Hello rides in the rdma_cm connection's private data, which iWARP carries as the
// MPA Request/Reply's ULP private data after the RFC 6581 block (docs/stream-protocol.md
// section 3), so the wire is the same as with esock's own stacks.
#pragma once

#include <rdma/rdma_cma.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "esock/providers/provider.h"
#include "esock/rdmacm/cm_state.h"
#include "esock/rdmacm/device_info.h"
#include "esock/rdmacm/ib_verbs.h"

namespace esock::sockets {

// A librdmacm event, copied and acknowledged before it is handled (so a handler may destroy
// the id it names: rdma_destroy_id waits for every event of the id to be acknowledged).
struct CmEventCopy {
  rdma_cm_event_type type{};
  int status = 0;
  rdma_cm_id* id = nullptr;
  rdma_cm_id* listen_id = nullptr;
  std::vector<std::uint8_t> private_data;
  std::uint8_t initiator_depth = 0, responder_resources = 0;
};

// What an rdma_cm id's context points at.
class CmTarget {
 public:
  virtual ~CmTarget() = default;
  virtual void on_cm_event(const CmEventCopy& e) = 0;
};

class RdmacmProvider;

class RdmacmConn final : public ProviderConn, public CmTarget {
 public:
  // Initiator: resolves dst (the device comes with the route), then connects (start()).
  RdmacmConn(RdmacmProvider& p, const mpa::Config& cfg);
  // Responder: a connection request taken from a listener (its own id, now this one's).
  RdmacmConn(RdmacmProvider& p, const mpa::Config& cfg, rdma_cm_id* id,
             std::vector<std::uint8_t> peer_pd, std::uint8_t peer_ird, std::uint8_t peer_ord);
  ~RdmacmConn() override;

  void connect(const sockaddr_in& dst, int timeout_ms);
  void accept();
  void on_cm_event(const CmEventCopy& e) override;
  // The completion channel's events, and a graceful disconnect that waited for the sends.
  bool progress();

  rnic::Verbs& verbs() override { return *verbs_; }
  const mpa::Negotiated& negotiated() const override { return negotiated_; }
  ConnCounters counters() const override;
  int poll_fd() const override { return -1; }  // the provider's poll_fds has its channel
  short poll_events() const override { return 0; }
  void on_ready(short) override {}
  void flush() override {}  // posting hands work to the device at once
  bool output_pending() const override { return verbs_ && verbs_->sends_outstanding() > 0; }
  // siw stops reading its socket once the queue pair is CLOSING and releases it with what
  // arrived unread: Linux answers with a reset and drops the unsent octets (seen in
  // interop.rdmacm_suite, fd_semantics: a SINKAVAIL after the peer's close began).
  bool shutdown_ends_both() const override { return true; }
  TransportState transport_state() const override;
  void shutdown() override;
  void abort() override;
  void hold_input(bool) override {}  // receives were posted before the peer could send
  int name(bool peer, sockaddr* addr, socklen_t* len) const override;
  int option_fd() const override { return -1; }
  int setup_state() const override { return cm_.setup_state(); }
  std::string setup_error() const override { return why_; }
  // An rdma_connect that has had no answer: a peer that does not speak iWARP keeps it so
  // until MPA times out (siw: 10 s), the runtime's fallback takes it earlier.
  bool peer_silent() const override { return cm_.awaiting_reply(); }
  int channel_fd() const { return verbs_ ? verbs_->channel_fd() : -1; }

 private:
  static constexpr int resolve_step_ms = 1000;
  void resolve();
  void fail(int err, const std::string& why);
  // The device's limits, the verbs (PD, CQs), the queue pair and the early receives.
  int make_qp();
  rdma_conn_param conn_param() const;
  void established(const CmEventCopy& e);
  void try_disconnect();

  RdmacmProvider& p_;
  mpa::Config cfg_;
  rdma_cm_id* id_ = nullptr;
  rdmacm::CmState cm_;
  rdmacm::DeviceLimits dev_;
  std::unique_ptr<rdmacm::IbVerbs> verbs_;
  mpa::Negotiated negotiated_;
  std::uint8_t peer_ird_ = 0, peer_ord_ = 0;  // responder: what the request offered
  std::string why_;
  sockaddr_in dst_{};
  int resolve_tries_left_ = 0;
  bool fin_wanted_ = false, disconnect_sent_ = false;
};

class RdmacmListener final : public ProviderListener, public CmTarget {
 public:
  RdmacmListener(RdmacmProvider& p, std::size_t backlog) : p_(p), backlog_(backlog) {}
  ~RdmacmListener() override;  // pending requests are rejected
  // 0, or an errno with *why.
  int listen(const sockaddr_in& local, std::string* why);

  bool pending() const override { return !requests_.empty(); }
  std::unique_ptr<ProviderConn> accept(const mpa::Config& cfg) override;
  int name(sockaddr* addr, socklen_t* len) const override;
  void on_cm_event(const CmEventCopy& e) override;

 private:
  struct Request {
    rdma_cm_id* id;
    std::vector<std::uint8_t> private_data;
    std::uint8_t initiator_depth, responder_resources;
  };
  void drop(rdma_cm_id* id, bool reject);

  RdmacmProvider& p_;
  std::size_t backlog_;
  rdma_cm_id* id_ = nullptr;
  std::deque<Request> requests_;  // bounded by the backlog (a peer cannot grow it)
};

class RdmacmProvider final : public Provider {
 public:
  explicit RdmacmProvider(const Config& c);
  ~RdmacmProvider() override;
  const char* name() const override { return "rdmacm"; }
  bool software_rnic() const override { return false; }
  bool own_stack() const override { return true; }
  bool kernel_addresses() const override { return true; }
  int start(std::string* why) override;
  std::unique_ptr<ProviderConn> connect(const sockaddr_in& dst, const mpa::Config& cfg, int* err,
                                        std::string* why) override;
  std::unique_ptr<ProviderListener> listen(const sockaddr_in& local, int backlog, int* err,
                                           std::string* why) override;
  bool poll_once() override;
  void poll_fds(std::vector<pollfd>* out) const override;
  void counters(std::vector<std::pair<std::string, std::uint64_t>>* out) const override;
  void stop() override;

  rdma_event_channel* channel() const { return channel_; }
  void attach(RdmacmConn* c) { conns_.push_back(c); }
  void detach(RdmacmConn* c) { std::erase(conns_, c); }
  struct Stats {
    std::uint64_t cm_events = 0, connect_requests = 0, requests_refused = 0;
    std::uint64_t connections_established = 0;
  };
  Stats& stats() { return stats_; }
  int timeout_ms() const { return timeout_ms_; }

 private:
  rdma_event_channel* channel_ = nullptr;
  std::vector<RdmacmConn*> conns_;
  Stats stats_;
  int timeout_ms_;
  bool stopped_ = false;
};

}  // namespace esock::sockets
