// The rdmacm provider (the plugin libesock_rdmacm.so, docs/sockets.md "Providers"): DDPMODE,
// MSGMODE and RAWMODE sockets on the kernel's verbs (an iWARP RNIC, or siw) through
// librdmacm and libibverbs, interoperating with esock's own stacks on the wire. rdma_cm
// sets connections up (rdmacm_conn.h); one event channel for the process, one completion
// channel per connection, both in the progress thread's poll set; every call comes under
// the runtime lock.
//
// A plugin rather than part of libesock.so: programs that never choose it do not load
// librdmacm and libibverbs (and their providers' constructors).
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "esock/process/config.h"
#include "esock/providers/rdmacm_conn.h"

namespace esock::sockets {

RdmacmProvider::RdmacmProvider(const Config& c) : timeout_ms_(c.timeout_ms) {}

RdmacmProvider::~RdmacmProvider() {
  if (channel_ != nullptr && !stopped_) rdma_destroy_event_channel(channel_);
}

int RdmacmProvider::start(std::string* why) {
  if (channel_ != nullptr) return 0;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list != nullptr) ibv_free_device_list(list);
  if (n == 0) {
    *why = "the rdmacm provider needs an RDMA device: " + rdmacm::rdma_links_text();
    return ENODEV;
  }
  // Registered memory and fork (docs/sockets.md, "fork"): where the kernel does not copy
  // pinned pages on fork itself, libibverbs must be told before the first registration.
  if (ibv_is_fork_initialized() == IBV_FORK_DISABLED) ibv_fork_init();
  channel_ = rdma_create_event_channel();
  if (channel_ == nullptr) {
    const int err = errno;
    *why = std::string("rdma_create_event_channel: ") + std::strerror(err) +
           " (is rdma_ucm loaded? /dev/infiniband/rdma_cm)";
    return err != 0 ? err : ENODEV;
  }
  const int fl = ::fcntl(channel_->fd, F_GETFL);
  ::fcntl(channel_->fd, F_SETFL, fl | O_NONBLOCK);
  ::fcntl(channel_->fd, F_SETFD, FD_CLOEXEC);
  return 0;
}

std::unique_ptr<ProviderConn> RdmacmProvider::connect(const sockaddr_in& dst,
                                                      const mpa::Config& cfg, int* err,
                                                      std::string* why) {
  if (dst.sin_family != AF_INET) {
    *err = EAFNOSUPPORT;
    *why = "the rdmacm provider carries IPv4 only";
    return nullptr;
  }
  if (dst.sin_port == 0 || dst.sin_addr.s_addr == htonl(INADDR_ANY)) {
    *err = EADDRNOTAVAIL;
    *why = "no destination port or address";
    return nullptr;
  }
  auto c = std::make_unique<RdmacmConn>(*this, cfg);
  c->connect(dst, timeout_ms_);  // a failure shows in setup_state, with its reason
  return c;
}

std::unique_ptr<ProviderListener> RdmacmProvider::listen(const sockaddr_in& local, int backlog,
                                                         int* err, std::string* why) {
  auto l = std::make_unique<RdmacmListener>(*this,
                                            static_cast<std::size_t>(std::clamp(backlog, 1, 4096)));
  if (const int rc = l->listen(local, why); rc != 0) {
    *err = rc;
    return nullptr;
  }
  return l;
}

bool RdmacmProvider::poll_once() {
  bool did = false;
  rdma_cm_event* ev = nullptr;
  while (channel_ != nullptr && rdma_get_cm_event(channel_, &ev) == 0) {  // EAGAIN ends it
    ++stats_.cm_events;
    CmEventCopy e;
    e.type = ev->event;
    e.status = ev->status;
    e.id = ev->id;
    e.listen_id = ev->listen_id;
    if (ev->param.conn.private_data != nullptr && ev->param.conn.private_data_len > 0) {
      const auto* pd = static_cast<const std::uint8_t*>(ev->param.conn.private_data);
      e.private_data.assign(pd, pd + ev->param.conn.private_data_len);
    }
    e.initiator_depth = ev->param.conn.initiator_depth;
    e.responder_resources = ev->param.conn.responder_resources;
    rdma_ack_cm_event(ev);
    // A request names the listener through its own id's inherited context.
    rdma_cm_id* owner = e.type == RDMA_CM_EVENT_CONNECT_REQUEST ? e.listen_id : e.id;
    if (owner != nullptr && owner->context != nullptr)
      static_cast<CmTarget*>(owner->context)->on_cm_event(e);
    did = true;
  }
  for (RdmacmConn* c : conns_) did |= c->progress();
  return did;
}

void RdmacmProvider::poll_fds(std::vector<pollfd>* out) const {
  if (channel_ != nullptr) out->push_back(pollfd{channel_->fd, POLLIN, 0});
  for (const RdmacmConn* c : conns_)
    if (c->channel_fd() >= 0) out->push_back(pollfd{c->channel_fd(), POLLIN, 0});
}

void RdmacmProvider::counters(std::vector<std::pair<std::string, std::uint64_t>>* out) const {
  out->emplace_back("rdmacm.cm_events", stats_.cm_events);
  out->emplace_back("rdmacm.connect_requests", stats_.connect_requests);
  out->emplace_back("rdmacm.requests_refused", stats_.requests_refused);
  out->emplace_back("rdmacm.connections_established", stats_.connections_established);
}

void RdmacmProvider::stop() {
  // Process exit: connections still open are the runtime's to close (it released what it
  // could); the kernel tears down what is left with the process's descriptors.
  stopped_ = true;
}

}  // namespace esock::sockets

extern "C" __attribute__((visibility("default"))) esock::sockets::Provider* esock_provider_create(
    const esock::sockets::Config& cfg, std::string* why) {
  (void)why;
  return new esock::sockets::RdmacmProvider(cfg);
}
