#include "esock/providers/rdmacm_conn.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "esock/estp/wire.h"
#include "esock/process/addr_text.h"

namespace esock::sockets {

namespace {

using rdmacm::CmAction;
using rdmacm::CmEvent;

std::optional<CmEvent> cm_event_of(rdma_cm_event_type t) {
  switch (t) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      return CmEvent::addr_resolved;
    case RDMA_CM_EVENT_ADDR_ERROR:
      return CmEvent::addr_error;
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
      return CmEvent::route_resolved;
    case RDMA_CM_EVENT_ROUTE_ERROR:
      return CmEvent::route_error;
    case RDMA_CM_EVENT_ESTABLISHED:
      return CmEvent::established;
    case RDMA_CM_EVENT_REJECTED:
      return CmEvent::rejected;
    case RDMA_CM_EVENT_UNREACHABLE:
      return CmEvent::unreachable;
    case RDMA_CM_EVENT_CONNECT_ERROR:
      return CmEvent::connect_error;
    case RDMA_CM_EVENT_DISCONNECTED:
      return CmEvent::disconnected;
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      return CmEvent::device_removal;
    case RDMA_CM_EVENT_TIMEWAIT_EXIT:
      return CmEvent::timewait_exit;
    default:
      return std::nullopt;  // address changes, multicast: nothing for a connection
  }
}

std::string address_text(const sockaddr_in& a) {
  sockaddr_storage ss{};
  std::memcpy(&ss, &a, sizeof a);
  return sockets::address_text(ss);
}

// The receives posted before set-up (early_recvs.h): R buffers of B octets as our own Hello
// announces them (docs/stream-protocol.md section 2); RAWMODE's Hello carries the defaults.
void early_receives(const mpa::Config& cfg, std::uint32_t* count, std::uint32_t* size) {
  const auto h = estp::parse_hello(cfg.private_data);
  *count = h ? h->recv_buffers : 16;
  *size = h ? h->recv_buffer_size : 65536 + 16;
}

}  // namespace

RdmacmConn::RdmacmConn(RdmacmProvider& p, const mpa::Config& cfg)
    : p_(p), cfg_(cfg), cm_(rdmacm::CmState::initiator()) {
  p_.attach(this);
}

RdmacmConn::RdmacmConn(RdmacmProvider& p, const mpa::Config& cfg, rdma_cm_id* id,
                       std::vector<std::uint8_t> peer_pd, std::uint8_t peer_ird,
                       std::uint8_t peer_ord)
    : p_(p),
      cfg_(cfg),
      id_(id),
      cm_(rdmacm::CmState::responder()),
      peer_ird_(peer_ird),
      peer_ord_(peer_ord) {
  id_->context = static_cast<CmTarget*>(this);
  negotiated_.peer_private_data = std::move(peer_pd);
  p_.attach(this);
}

RdmacmConn::~RdmacmConn() {
  p_.detach(this);
  if (id_ == nullptr) return;
  if (cm_.stage() == rdmacm::CmStage::established && !disconnect_sent_) rdma_disconnect(id_);
  if (id_->qp != nullptr) rdma_destroy_qp(id_);
  verbs_.reset();  // the CQs and the PD after the queue pair
  rdma_destroy_id(id_);
}

void RdmacmConn::fail(int err, const std::string& why) {
  if (why_.empty()) why_ = why;
  cm_.fail(err);
}

void RdmacmConn::connect(const sockaddr_in& dst, int timeout_ms) {
  if (rdma_create_id(p_.channel(), &id_, static_cast<CmTarget*>(this), RDMA_PS_TCP) != 0) {
    id_ = nullptr;
    fail(errno, std::string("rdma_create_id: ") + std::strerror(errno));
    return;
  }
  dst_ = dst;
  // Resolution in steps of at most resolve_step_ms, retried until timeout_ms: the kernel
  // (drivers/infiniband/core/addr.c, 6.1) re-examines a request that waits for ARP only
  // when a neighbour update is announced or at its deadline, and a reply it misses leaves
  // the first connection to a new neighbour waiting for the whole timeout (seen: 20 s on
  // the first connection between two siw guests).
  resolve_tries_left_ = std::max(1, timeout_ms / resolve_step_ms);
  resolve();
}

void RdmacmConn::resolve() {
  --resolve_tries_left_;
  sockaddr_in d = dst_;
  if (rdma_resolve_addr(id_, nullptr, reinterpret_cast<sockaddr*>(&d), resolve_step_ms) != 0) {
    // No route at all is what TCP says too (ENETUNREACH, EHOSTUNREACH); a route through an
    // interface no RDMA device serves is ENODEV, anything else EADDRNOTAVAIL.
    const int err = errno;
    const bool kept = err == ENODEV || err == ENETUNREACH || err == EHOSTUNREACH;
    fail(kept ? err : EADDRNOTAVAIL, "no RDMA device reaches " + address_text(dst_) + " (" +
                                         std::strerror(err) + "); " + rdmacm::rdma_links_text());
  }
}

int RdmacmConn::make_qp() {
  if (id_->verbs == nullptr) return ENODEV;
  if (const int rc = rdmacm::query_limits(id_->verbs, &dev_); rc != 0) return rc;
  std::uint32_t count = 0, size = 0;
  early_receives(cfg_, &count, &size);
  verbs_ = std::make_unique<rdmacm::IbVerbs>(id_->verbs, dev_);
  if (const int rc = verbs_->create(rdmacm::qp_sizes(dev_, count)); rc != 0) return rc;
  ibv_qp_init_attr attr = verbs_->qp_init_attr();
  if (rdma_create_qp(id_, verbs_->pd(), &attr) != 0) {
    const int err = errno != 0 ? errno : ENOMEM;
    verbs_.reset();  // nothing half-made is polled
    return err;
  }
  verbs_->attach_qp(id_->qp, attr.cap);
  return verbs_->post_early_receives(count, size);
}

rdma_conn_param RdmacmConn::conn_param() const {
  rdma_conn_param c{};
  c.private_data = cfg_.private_data.data();
  c.private_data_len =
      static_cast<std::uint8_t>(std::min<std::size_t>(cfg_.private_data.size(), 255));
  // IRD/ORD (RFC 6581 section 6): what we ask, within the device's limits; a responder
  // within what the request offered too (rdma_accept(3)).
  int ird = std::min({int{cfg_.ird}, dev_.max_qp_rd_atom, 255});
  int ord = std::min({int{cfg_.ord}, dev_.max_qp_init_rd_atom, 255});
  if (!cfg_.initiator) {
    ird = std::min(ird, int{peer_ord_});
    ord = std::min(ord, int{peer_ird_});
  }
  c.responder_resources = static_cast<std::uint8_t>(std::max(ird, 0));
  c.initiator_depth = static_cast<std::uint8_t>(std::max(ord, 0));
  return c;
}

void RdmacmConn::accept() {
  if (const int rc = make_qp(); rc != 0) {
    fail(rc, std::string("queue pair for the connection request: ") + std::strerror(rc));
    rdma_reject(id_, nullptr, 0);
    return;
  }
  const rdma_conn_param c = conn_param();
  negotiated_.ird = c.responder_resources;
  negotiated_.ord = c.initiator_depth;
  if (rdma_accept(id_, const_cast<rdma_conn_param*>(&c)) != 0)
    fail(errno, std::string("rdma_accept: ") + std::strerror(errno));
}

void RdmacmConn::on_cm_event(const CmEventCopy& e) {
  const auto ev = cm_event_of(e.type);
  if (!ev) return;
  if (*ev == CmEvent::addr_error && e.status == -ETIMEDOUT && resolve_tries_left_ > 0 &&
      cm_.stage() == rdmacm::CmStage::resolving_addr) {
    resolve();  // one step of the resolution timed out: the next (see connect)
    return;
  }
  const int before = cm_.setup_state();
  const CmAction act = cm_.on_event(*ev, e.status);
  if (before == EINPROGRESS && cm_.setup_state() != EINPROGRESS && cm_.setup_state() != 0 &&
      why_.empty()) {
    why_ = std::string(rdma_event_str(e.type));
    if (*ev == CmEvent::addr_error)
      why_ += ": no RDMA device reaches the address; " + rdmacm::rdma_links_text();
    else if (e.status != 0 && *ev != CmEvent::rejected)
      why_ += std::string(" (") + std::strerror(e.status < 0 ? -e.status : e.status) + ")";
  }
  switch (act) {
    case CmAction::resolve_route:
      if (rdma_resolve_route(id_, p_.timeout_ms()) != 0)
        fail(errno, std::string("rdma_resolve_route: ") + std::strerror(errno));
      break;
    case CmAction::connect: {
      if (const int rc = make_qp(); rc != 0) {
        fail(rc, std::string("queue pair: ") + std::strerror(rc));
        break;
      }
      rdma_conn_param c = conn_param();
      negotiated_.ird = c.responder_resources;
      negotiated_.ord = c.initiator_depth;
      if (rdma_connect(id_, &c) != 0)
        fail(errno, std::string("rdma_connect: ") + std::strerror(errno));
      break;
    }
    case CmAction::none:
      if (*ev == CmEvent::established) established(e);
      break;
    case CmAction::release:
      break;
  }
}

void RdmacmConn::established(const CmEventCopy& e) {
  ++p_.stats().connections_established;
  // The initiator learns the responder's Hello from the MPA Reply (the event's private
  // data); the responder had the initiator's in the request.
  if (cfg_.initiator) negotiated_.peer_private_data = e.private_data;
  // The RNIC negotiated MPA itself and does not say how (revision, CRC, Markers): they
  // stay 0 here (esock_query_mpa documents it); IRD/ORD are what we asked within limits.
  negotiated_.revision = 0;
}

ConnCounters RdmacmConn::counters() const {
  ConnCounters c;
  c.terminated = cm_.broken() || (verbs_ && verbs_->failed());
  return c;
}

TransportState RdmacmConn::transport_state() const {
  if (cm_.broken() || (verbs_ && verbs_->failed())) return TransportState::broken;
  if (cm_.ended()) return TransportState::ended;
  return TransportState::open;
}

void RdmacmConn::try_disconnect() {
  if (!fin_wanted_ || disconnect_sent_ || id_ == nullptr) return;
  if (cm_.stage() != rdmacm::CmStage::established) return;
  // RFC 5040 section 5 leaves the close to the LLP: rdma_disconnect closes the queue pair
  // (and the TCP connection under it), so it waits until every posted Send has completed
  // (a Send completes once its octets are the LLP's).
  if (verbs_ && verbs_->sends_outstanding() > 0) return;
  cm_.closing();
  disconnect_sent_ = true;
  rdma_disconnect(id_);
}

void RdmacmConn::shutdown() {
  fin_wanted_ = true;
  try_disconnect();
}

void RdmacmConn::abort() {
  if (id_ == nullptr || disconnect_sent_ || cm_.stage() != rdmacm::CmStage::established) return;
  cm_.closing();
  disconnect_sent_ = true;
  rdma_disconnect(id_);
}

bool RdmacmConn::progress() {
  const bool did = verbs_ && verbs_->take_channel_events();
  try_disconnect();
  return did;
}

int RdmacmConn::name(bool peer, sockaddr* addr, socklen_t* len) const {
  if (id_ == nullptr) {
    errno = ENOTCONN;
    return -1;
  }
  const sockaddr* a = peer ? rdma_get_peer_addr(id_) : rdma_get_local_addr(id_);
  if (a == nullptr || a->sa_family != AF_INET) {
    errno = ENOTCONN;
    return -1;
  }
  sockaddr_in in;
  std::memcpy(&in, a, sizeof in);
  return copy_sockaddr(in, addr, len);
}

RdmacmListener::~RdmacmListener() {
  for (const Request& r : requests_) {
    rdma_reject(r.id, nullptr, 0);
    rdma_destroy_id(r.id);
  }
  if (id_ != nullptr) rdma_destroy_id(id_);
}

int RdmacmListener::listen(const sockaddr_in& local, std::string* why) {
  if (rdma_create_id(p_.channel(), &id_, static_cast<CmTarget*>(this), RDMA_PS_TCP) != 0) {
    id_ = nullptr;
    *why = std::string("rdma_create_id: ") + std::strerror(errno);
    return errno;
  }
  sockaddr_in a = local;
  if (rdma_bind_addr(id_, reinterpret_cast<sockaddr*>(&a)) != 0) {
    const int err = errno;
    if (err == EADDRINUSE || err == EACCES) {  // another listener has it, a privileged port
      *why = "rdma_bind_addr " + address_text(local) + ": " + std::strerror(err);
      return err;
    }
    *why = "rdma_bind_addr " + address_text(local) + ": " + std::strerror(err) +
           " (no RDMA device serves that address?); " + rdmacm::rdma_links_text();
    return err == ENODEV ? ENODEV : EADDRNOTAVAIL;
  }
  if (rdma_listen(id_, static_cast<int>(backlog_)) != 0) {
    const int err = errno;
    *why = "rdma_listen " + address_text(local) + ": " + std::strerror(err);
    return err;
  }
  return 0;
}

void RdmacmListener::drop(rdma_cm_id* id, bool reject) {
  if (reject) rdma_reject(id, nullptr, 0);
  rdma_destroy_id(id);
}

void RdmacmListener::on_cm_event(const CmEventCopy& e) {
  if (e.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
    ++p_.stats().connect_requests;
    // The accept queue is bounded by the backlog: a peer's requests beyond it are refused,
    // not queued (ARCHITECTURE.md, peer-controlled allocations).
    if (requests_.size() >= backlog_) {
      ++p_.stats().requests_refused;
      drop(e.id, true);
      return;
    }
    requests_.push_back(Request{e.id, e.private_data, e.initiator_depth, e.responder_resources});
    return;
  }
  // An event of a request still queued (its peer gave up): it goes.
  const auto it = std::find_if(requests_.begin(), requests_.end(),
                               [&](const Request& r) { return r.id == e.id; });
  if (it != requests_.end() && e.id != id_) {
    drop(it->id, false);
    requests_.erase(it);
  }
}

std::unique_ptr<ProviderConn> RdmacmListener::accept(const mpa::Config& cfg) {
  if (requests_.empty()) return nullptr;
  // A request's IRD/ORD are the local view of the peer's (the kernel's iw_conn_req_handler):
  // initiator_depth is the peer's IRD, responder_resources its ORD.
  Request r = std::move(requests_.front());
  requests_.pop_front();
  auto c = std::make_unique<RdmacmConn>(p_, cfg, r.id, std::move(r.private_data), r.initiator_depth,
                                        r.responder_resources);
  c->accept();
  return c;
}

int RdmacmListener::name(sockaddr* addr, socklen_t* len) const {
  const sockaddr* a = rdma_get_local_addr(id_);
  sockaddr_in in{};
  if (a != nullptr && a->sa_family == AF_INET) std::memcpy(&in, a, sizeof in);
  in.sin_family = AF_INET;
  return copy_sockaddr(in, addr, len);
}

}  // namespace esock::sockets
