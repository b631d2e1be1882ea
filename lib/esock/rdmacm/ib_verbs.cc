#include "esock/rdmacm/ib_verbs.h"

#include <fcntl.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "esock/rdmacm/wc_map.h"

namespace esock::rdmacm {

namespace {

// ESTP posts one SGE per receive and two per Send (header, payload); RAWMODE up to
// ESOCK_MAX_SGE (16). The queue gets what the device allows of that.
constexpr std::uint32_t wanted_sge = 16;
constexpr std::uint32_t wanted_send_wr = 1024;
constexpr std::uint32_t wanted_recv_wr = 1024;
constexpr std::uint32_t wanted_inline = 64;  // ESTP's control messages are 16 to 32 octets

// libibverbs' post calls return an errno, some providers' (rdma-core's siw) a negated one.
int errno_of(int rc) {
  return rc < 0 ? -rc : rc;
}

int access_flags(std::uint32_t access) {
  int f = 0;
  if (access & ddp::access_local_write) f |= IBV_ACCESS_LOCAL_WRITE;
  if (access & ddp::access_remote_read) f |= IBV_ACCESS_REMOTE_READ;
  // Verbs: remote write needs local write too.
  if (access & ddp::access_remote_write) f |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
  return f;
}

}  // namespace

QpSizes qp_sizes(const DeviceLimits& dev, std::uint32_t recv_buffers) {
  const auto cap = [](std::uint32_t want, int max) {
    return std::min<std::uint32_t>(want, static_cast<std::uint32_t>(std::max(max, 1)));
  };
  QpSizes s;
  const int max_wr = std::min(dev.max_qp_wr, dev.max_cqe);
  s.send_wr = cap(wanted_send_wr, max_wr);
  s.recv_wr = cap(std::max(wanted_recv_wr, recv_buffers), max_wr);
  s.send_sge = cap(wanted_sge, dev.max_sge);
  s.recv_sge = cap(wanted_sge, dev.max_sge);
  s.max_inline = wanted_inline;  // rdma_create_qp lowers it to what the device takes
  return s;
}

IbVerbs::~IbVerbs() {
  for (auto& [stag, mr] : mrs_) ibv_dereg_mr(mr);
  if (early_mr_ != nullptr) ibv_dereg_mr(early_mr_);
  if (send_cq_ != nullptr) ibv_destroy_cq(send_cq_);
  if (recv_cq_ != nullptr) ibv_destroy_cq(recv_cq_);
  if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
}

int IbVerbs::create(const QpSizes& sizes) {
  sizes_ = sizes;
  pd_ = ibv_alloc_pd(ctx_);
  if (pd_ == nullptr) return errno != 0 ? errno : ENOMEM;
  channel_ = ibv_create_comp_channel(ctx_);
  if (channel_ == nullptr) return errno != 0 ? errno : ENOMEM;
  const int fl = ::fcntl(channel_->fd, F_GETFL);
  if (fl < 0 || ::fcntl(channel_->fd, F_SETFL, fl | O_NONBLOCK) < 0) return errno;
  ::fcntl(channel_->fd, F_SETFD, FD_CLOEXEC);
  send_cq_ = ibv_create_cq(ctx_, static_cast<int>(sizes.send_wr), this, channel_, 0);
  recv_cq_ = ibv_create_cq(ctx_, static_cast<int>(sizes.recv_wr), this, channel_, 0);
  if (send_cq_ == nullptr || recv_cq_ == nullptr) return errno != 0 ? errno : ENOMEM;
  if (ibv_req_notify_cq(send_cq_, 0) != 0 || ibv_req_notify_cq(recv_cq_, 0) != 0) return EIO;
  return 0;
}

ibv_qp_init_attr IbVerbs::qp_init_attr() const {
  ibv_qp_init_attr a{};
  a.send_cq = send_cq_;
  a.recv_cq = recv_cq_;
  a.qp_type = IBV_QPT_RC;
  a.sq_sig_all = 1;  // every send completes: ESTP and RAWMODE count on it
  a.cap.max_send_wr = sizes_.send_wr;
  a.cap.max_recv_wr = sizes_.recv_wr;
  a.cap.max_send_sge = sizes_.send_sge;
  a.cap.max_recv_sge = sizes_.recv_sge;
  a.cap.max_inline_data = sizes_.max_inline;
  return a;
}

void IbVerbs::attach_qp(ibv_qp* qp, const ibv_qp_cap& cap) {
  qp_ = qp;
  sizes_.send_wr = cap.max_send_wr;
  sizes_.recv_wr = cap.max_recv_wr;
  sizes_.send_sge = std::min(sizes_.send_sge, cap.max_send_sge);
  sizes_.recv_sge = std::min(sizes_.recv_sge, cap.max_recv_sge);
  sizes_.max_inline = cap.max_inline_data;
}

int IbVerbs::post_early_receives(std::uint32_t count, std::uint32_t size) {
  if (count == 0 || count > sizes_.recv_wr || size == 0) return EINVAL;
  early_.start(count, size);
  early_.set_validator([this](const ddp::Sge& sge) {
    const auto it = mrs_.find(sge.lkey);
    if (it == mrs_.end()) return false;
    const auto* base = static_cast<const std::uint8_t*>(it->second->addr);
    return sge.addr >= base && sge.length <= it->second->length &&
           static_cast<std::size_t>(sge.addr - base) <= it->second->length - sge.length;
  });
  const int local_write = IBV_ACCESS_LOCAL_WRITE;  // an int: ibv_reg_mr's macro ORs in another enum
  early_mr_ = ibv_reg_mr(pd_, early_.memory().data(), early_.memory().size(), local_write);
  if (early_mr_ == nullptr) return errno != 0 ? errno : ENOMEM;
  for (std::uint32_t i = 0; i < count; ++i) {
    ibv_sge s{reinterpret_cast<std::uintptr_t>(early_.slot(i)), size, early_mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = i;
    wr.sg_list = &s;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (const int rc = ibv_post_recv(qp_, &wr, &bad); rc != 0) return errno_of(rc);
  }
  return 0;
}

int IbVerbs::channel_fd() const {
  return channel_ != nullptr ? channel_->fd : -1;
}

bool IbVerbs::take_channel_events() {
  if (channel_ == nullptr || send_cq_ == nullptr || recv_cq_ == nullptr)
    return false;  // create() failed
  bool any = false;
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  unsigned send_events = 0, recv_events = 0;
  while (ibv_get_cq_event(channel_, &cq, &ctx) == 0) {  // non-blocking: EAGAIN ends it
    (cq == send_cq_ ? send_events : recv_events)++;
    any = true;
  }
  if (send_events != 0) ibv_ack_cq_events(send_cq_, send_events);
  if (recv_events != 0) ibv_ack_cq_events(recv_cq_, recv_events);
  // Re-armed every round, before the CQs are polled (the runtime's service follows): a
  // completion after the arming wakes the channel, one before it is polled now.
  ibv_req_notify_cq(send_cq_, 0);
  ibv_req_notify_cq(recv_cq_, 0);
  return any;
}

int IbVerbs::to_ibv(std::span<const ddp::Sge> sg, std::uint32_t max, ibv_sge* out,
                    std::uint32_t* total) const {
  if (sg.size() > max) return EINVAL;  // the device's SGE limit (DeviceLimits::max_sge)
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < sg.size(); ++i) {
    const auto it = mrs_.find(sg[i].lkey);
    if (it == mrs_.end()) return EINVAL;
    out[i] = ibv_sge{reinterpret_cast<std::uintptr_t>(sg[i].addr), sg[i].length, it->second->lkey};
    sum += sg[i].length;
  }
  if (sum > UINT32_MAX) return EMSGSIZE;
  *total = static_cast<std::uint32_t>(sum);
  return 0;
}

int IbVerbs::post(ibv_wr_opcode op, ddp::Opcode posted, std::uint64_t wr_id,
                  std::span<const ddp::Sge> sg, ddp::stag_t rkey, std::uint64_t remote_to) {
  if (qp_ == nullptr) return ENOTCONN;
  std::array<ibv_sge, wanted_sge> sges;
  std::uint32_t total = 0;
  // An RDMA Read's sink may have fewer SGEs than a Send (max_sge_rd: often 1 on iWARP).
  std::uint32_t max_sge = std::min<std::uint32_t>(sizes_.send_sge, wanted_sge);
  if (op == IBV_WR_RDMA_READ && dev_.max_sge_rd > 0)
    max_sge = std::min(max_sge, static_cast<std::uint32_t>(dev_.max_sge_rd));
  if (const int rc = to_ibv(sg, max_sge, sges.data(), &total); rc != 0) return rc;
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = sges.data();
  wr.num_sge = static_cast<int>(sg.size());
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  // Small Sends and Writes go inline: the device copies them at post time.
  if (op != IBV_WR_RDMA_READ && total <= sizes_.max_inline) wr.send_flags |= IBV_SEND_INLINE;
  if (op != IBV_WR_SEND) {
    wr.wr.rdma.remote_addr = remote_to;
    wr.wr.rdma.rkey = rkey;
  }
  ibv_send_wr* bad = nullptr;
  if (const int rc = ibv_post_send(qp_, &wr, &bad); rc != 0) return errno_of(rc);
  posted_ops_.push_back(posted);
  return 0;
}

int IbVerbs::post_send(std::uint64_t wr_id, std::span<const ddp::Sge> sg) {
  return post(IBV_WR_SEND, ddp::Opcode::send, wr_id, sg, 0, 0);
}

int IbVerbs::post_read(std::uint64_t wr_id, std::span<const ddp::Sge> sink, ddp::stag_t rkey,
                       std::uint64_t remote_to) {
  return post(IBV_WR_RDMA_READ, ddp::Opcode::read, wr_id, sink, rkey, remote_to);
}

int IbVerbs::post_write(std::uint64_t wr_id, std::span<const ddp::Sge> sg, ddp::stag_t rkey,
                        std::uint64_t remote_to) {
  return post(IBV_WR_RDMA_WRITE, ddp::Opcode::write, wr_id, sg, rkey, remote_to);
}

int IbVerbs::post_recv(std::uint64_t wr_id, std::span<const ddp::Sge> sg) {
  if (qp_ == nullptr) return ENOTCONN;
  std::array<ibv_sge, wanted_sge> sges;
  std::uint32_t total = 0;
  if (const int rc =
          to_ibv(sg, std::min<std::uint32_t>(sizes_.recv_sge, wanted_sge), sges.data(), &total);
      rc != 0)
    return rc;
  if (early_.assign(wr_id, sg)) return 0;  // takes one of the slots posted before set-up
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = sges.data();
  wr.num_sge = static_cast<int>(sg.size());
  ibv_recv_wr* bad = nullptr;
  return errno_of(ibv_post_recv(qp_, &wr, &bad));
}

ddp::stag_t IbVerbs::reg_mr(void* addr, std::size_t len, std::uint32_t access) {
  if (len == 0 || len > dev_.max_mr_size || len > UINT32_MAX) return 0;
  ibv_mr* mr = ibv_reg_mr(pd_, addr, len, access_flags(access));
  if (mr == nullptr) return 0;
  // 0 means failure to the callers; a region that got rkey 0 (or one already in the table,
  // which a device would not hand out twice) is not used.
  if (mr->rkey == 0 || mrs_.contains(mr->rkey)) {
    ibv_dereg_mr(mr);
    return 0;
  }
  mrs_.emplace(mr->rkey, mr);
  return mr->rkey;
}

int IbVerbs::dereg_mr(ddp::stag_t stag) {
  const auto it = mrs_.find(stag);
  if (it == mrs_.end()) return EINVAL;
  // The device stops using the region before ibv_dereg_mr returns: a late RDMA Read or
  // Write from the peer then fails its STag check there (RFC 5040 section 7).
  const int rc = ibv_dereg_mr(it->second);
  mrs_.erase(it);
  return rc;
}

std::size_t IbVerbs::poll_send_cq(std::span<ddp::Completion> out) {
  std::array<ibv_wc, 32> wcs;
  const int want = static_cast<int>(std::min(out.size(), wcs.size()));
  const int n = send_cq_ != nullptr ? ibv_poll_cq(send_cq_, want, wcs.data()) : 0;
  for (int i = 0; i < n; ++i) {
    const ddp::Opcode posted = posted_ops_.empty() ? ddp::Opcode::send : posted_ops_.front();
    if (!posted_ops_.empty()) posted_ops_.pop_front();
    out[static_cast<std::size_t>(i)] = completion_of(wcs[static_cast<std::size_t>(i)], posted);
    const ibv_wc_status st = wcs[static_cast<std::size_t>(i)].status;
    if (st != IBV_WC_SUCCESS && st != IBV_WC_WR_FLUSH_ERR) failed_ = true;
  }
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

std::size_t IbVerbs::poll_recv_cq(std::span<ddp::Completion> out) {
  // Early slots' completions first: they precede anything posted to the device later.
  std::size_t n = early_.drain(out);
  for (std::size_t j = 0; j < n; ++j)
    if (out[j].status == ddp::Status::local_protection_error) failed_ = true;
  if (early_.has_ready() || n == out.size() || recv_cq_ == nullptr) return n;
  std::array<ibv_wc, 32> wcs;
  const int want = static_cast<int>(std::min(out.size() - n, wcs.size()));
  const int got = ibv_poll_cq(recv_cq_, want, wcs.data());
  for (int i = 0; i < got; ++i) {
    const ibv_wc& wc = wcs[static_cast<std::size_t>(i)];
    if (wc.status != IBV_WC_SUCCESS && wc.status != IBV_WC_WR_FLUSH_ERR) failed_ = true;
    if (early_.complete(status_of(wc.status), wc.byte_len)) {
      const std::size_t k = early_.drain(out.subspan(n));
      for (std::size_t j = n; j < n + k; ++j)
        if (out[j].status == ddp::Status::local_protection_error) failed_ = true;
      n += k;
      continue;
    }
    out[n++] = completion_of(wc, ddp::Opcode::recv);
  }
  if (early_mr_ != nullptr && early_.finished()) {  // every slot delivered: the buffer goes
    ibv_dereg_mr(early_mr_);
    early_mr_ = nullptr;
    early_.release();
  }
  return n;
}

}  // namespace esock::rdmacm
