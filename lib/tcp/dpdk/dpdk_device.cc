#include "tcp/dpdk/dpdk_device.h"

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "base/steady_clock.h"
#include "tcp/dpdk/flow_hash.h"
#include "tcp/dpdk/mbuf_slot.h"

namespace esock::tcp::dpdk {
namespace {

std::atomic<unsigned> pool_seq{0};
// A jumbo-frame pool's ceiling: 8191 mbufs of a 16000-octet MTU's room fit; larger rooms
// get fewer mbufs rather than outgrow EAL memory (RuntimeConfig::memory_mb, 256 MB).
constexpr std::uint64_t pool_bytes_max = 128u << 20;

std::string err_text(const std::string& what, int err) {
  return what + ": " + rte_strerror(err < 0 ? -err : err);
}

std::uint8_t rx_verdict(std::uint64_t ol) {
  std::uint8_t v = 0;
  switch (ol & RTE_MBUF_F_RX_IP_CKSUM_MASK) {
    case RTE_MBUF_F_RX_IP_CKSUM_GOOD:
      v |= rx_csum::ip_good;
      break;
    case RTE_MBUF_F_RX_IP_CKSUM_BAD:
      v |= rx_csum::ip_bad;
      break;
    default:
      break;  // unknown or none: the stack verifies in software
  }
  switch (ol & RTE_MBUF_F_RX_L4_CKSUM_MASK) {
    case RTE_MBUF_F_RX_L4_CKSUM_GOOD:
      v |= rx_csum::l4_good;
      break;
    case RTE_MBUF_F_RX_L4_CKSUM_BAD:
      v |= rx_csum::l4_bad;
      break;
    default:
      break;
  }
  return v;
}

}  // namespace

struct DpdkDevice::Port {
  std::uint16_t id = 0;
  bool started = false;
  std::vector<rte_mempool*> pools;
  ~Port() {
    if (started) {
      rte_eth_dev_stop(id);
      rte_eth_dev_close(id);
    }
    // Freeing a pool with mbufs still out would let them be freed into released memory.
    for (rte_mempool* p : pools)
      if (rte_mempool_full(p)) rte_mempool_free(p);
  }
};

std::unique_ptr<DpdkDevice> DpdkDevice::open(std::uint16_t port, const DpdkDeviceConfig& config,
                                             std::string* error) {
  DpdkDeviceConfig one = config;
  one.queues = 1;
  auto devs = open_queues(port, one, error);
  return devs.empty() ? nullptr : std::move(devs[0]);
}

std::vector<std::unique_ptr<DpdkDevice>> DpdkDevice::open_queues(std::uint16_t port,
                                                                 const DpdkDeviceConfig& config,
                                                                 std::string* error) {
  std::vector<std::unique_ptr<DpdkDevice>> devs;
  std::unique_ptr<DpdkDevice> first(new DpdkDevice());
  if (!first->setup(port, config, error)) return devs;
  devs.push_back(std::move(first));
  for (std::uint16_t q = 1; q < std::max<std::uint16_t>(config.queues, 1); ++q) {
    std::unique_ptr<DpdkDevice> d(new DpdkDevice());
    d->share_port(*devs[0], q);
    devs.push_back(std::move(d));
  }
  return devs;
}

void DpdkDevice::share_port(const DpdkDevice& first, std::uint16_t queue) {
  port_ = first.port_;
  queue_ = queue;
  shared_ = first.shared_;
  pool_ = shared_->pools[queue];
  mac_ = first.mac_;
  caps_ = first.caps_;
  attach_ = first.attach_;
  multi_seg_ = first.multi_seg_;
  rx_csum_ = first.rx_csum_;
  copy_below_ = first.copy_below_;
  tx_batch_ = first.tx_batch_;
  pending_ = std::make_unique<rte_mbuf*[]>(tx_batch_);
}

bool DpdkDevice::setup(std::uint16_t port, const DpdkDeviceConfig& c, std::string* error) {
  auto fail = [&](const std::string& what, int err) {
    if (error) *error = err_text("port " + std::to_string(port) + ": " + what, err);
    return false;
  };
  if (!rte_eth_dev_is_valid_port(port)) return fail("no such port", ENODEV);
  port_ = port;
  shared_ = std::make_shared<Port>();
  shared_->id = port;
  const std::uint16_t queues = std::max<std::uint16_t>(c.queues, 1);
  copy_below_ = c.copy_below;
  tx_batch_ = std::max<std::uint16_t>(c.tx_batch, 1);
  pending_ = std::make_unique<rte_mbuf*[]>(tx_batch_);

  rte_eth_dev_info info{};
  if (int r = rte_eth_dev_info_get(port, &info); r != 0) return fail("dev_info", r);
  int socket = rte_eth_dev_socket_id(port);
  if (socket < 0) socket = SOCKET_ID_ANY;
  // One frame per mbuf: a received chain costs a copy (rx_copied).
  std::uint16_t room = c.data_room ? c.data_room : RTE_MBUF_DEFAULT_BUF_SIZE;
  if (c.data_room == 0 && c.mtu > 1500)
    room = static_cast<std::uint16_t>(
        std::min<std::size_t>(UINT16_MAX, std::size_t{c.mtu} + 14 + RTE_PKTMBUF_HEADROOM));
  // Jumbo rooms shrink the pool so that it stays within pool_bytes_max (2^n - 1 mbufs).
  unsigned mbufs = c.pool_mbufs;
  while (mbufs > 1023 && std::uint64_t{mbufs} * room > pool_bytes_max) mbufs /= 2;
  // priv_size = our slot: that is what makes rx zero-allocation (mbuf_slot.h).
  // A per-lcore cache only pays off for big pools (rte_mempool wants n >= 1.5 x cache).
  const unsigned cache = mbufs >= 1024 ? 256 : 0;
  for (std::uint16_t q = 0; q < queues; ++q) {
    const std::string name = "esock_p" + std::to_string(port) + "_" + std::to_string(pool_seq++);
    rte_mempool* p =
        rte_pktmbuf_pool_create(name.c_str(), mbufs, cache, mbuf_slot_size, room, socket);
    if (!p) return fail("rte_pktmbuf_pool_create", rte_errno);
    shared_->pools.push_back(p);
  }
  pool_ = shared_->pools[0];

  rte_eth_conf conf{};
  const std::uint64_t txo = info.tx_offload_capa, rxo = info.rx_offload_capa;
  multi_seg_ = (txo & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0;
  if (multi_seg_) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  if (c.offloads) {
    caps_.tx_ip_csum = (txo & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) != 0;
    caps_.tx_l4_csum = (txo & RTE_ETH_TX_OFFLOAD_TCP_CKSUM) != 0;
    caps_.tso = multi_seg_ && (txo & RTE_ETH_TX_OFFLOAD_TCP_TSO) != 0;
    rx_csum_ = (rxo & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) && (rxo & RTE_ETH_RX_OFFLOAD_TCP_CKSUM);
    if (caps_.tx_ip_csum) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
    if (caps_.tx_l4_csum) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_TCP_CKSUM;
    if (caps_.tso) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_TCP_TSO;
    if (rx_csum_)
      conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_TCP_CKSUM;
  }
  caps_.rx_csum = rx_csum_;
  // ethdev checks the frame (MTU + Ethernet header + CRC) against max_rx_pktlen.
  const bool port_takes_mtu =
      info.max_mtu >= c.mtu &&
      info.max_rx_pktlen >= std::uint32_t{c.mtu} + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
  const bool forced_mtu = c.mtu != 0 && c.mtu_beyond_port && !port_takes_mtu;
  if (c.mtu && !forced_mtu) conf.rxmode.mtu = c.mtu;
  if (queues > 1 && info.flow_type_rss_offloads != 0) {
    // A PMD that hashes: with flow_hash.h's symmetric key, over the TCP/IPv4 4-tuple.
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_key = const_cast<std::uint8_t*>(symmetric_rss_key().data());
    conf.rx_adv_conf.rss_conf.rss_key_len = static_cast<std::uint8_t>(symmetric_rss_key().size());
    conf.rx_adv_conf.rss_conf.rss_hf = RTE_ETH_RSS_NONFRAG_IPV4_TCP & info.flow_type_rss_offloads;
  }
  if (int r = rte_eth_dev_configure(port, queues, queues, &conf); r != 0)
    return fail("configure " + std::to_string(queues) + " queue pairs", r);
  std::uint16_t nrx = c.rx_desc, ntx = c.tx_desc;
  if (int r = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx); r != 0)
    return fail("adjust descriptors", r);
  for (std::uint16_t q = 0; q < queues; ++q) {
    if (int r = rte_eth_rx_queue_setup(port, q, nrx, static_cast<unsigned>(socket), nullptr,
                                       shared_->pools[q]);
        r != 0)
      return fail("rx queue " + std::to_string(q), r);
    if (int r = rte_eth_tx_queue_setup(port, q, ntx, static_cast<unsigned>(socket), nullptr);
        r != 0)
      return fail("tx queue " + std::to_string(q), r);
  }
  if (int r = rte_eth_dev_start(port); r != 0) return fail("start", r);
  shared_->started = true;
  if (c.promiscuous) rte_eth_promiscuous_enable(port);

  std::uint16_t mtu = 1500;
  if (rte_eth_dev_get_mtu(port, &mtu) == 0) caps_.mtu = mtu;
  if (forced_mtu) caps_.mtu = c.mtu;
  // A frame must fit in one mbuf's room when the PMD cannot take chains.
  if (!multi_seg_) {
    const std::size_t fit = std::size_t{room} - RTE_PKTMBUF_HEADROOM - 14;
    caps_.mtu = static_cast<std::uint16_t>(std::min<std::size_t>(caps_.mtu, fit));
  }
  // Head + pieces (a long piece may need several 64 KiB external segments).
  const std::uint16_t seg_max = info.tx_desc_lim.nb_seg_max ? info.tx_desc_lim.nb_seg_max : 64;
  caps_.max_tx_pieces = multi_seg_ ? std::min<std::uint16_t>(16, seg_max - 1) : 8;
  const bool va = rte_eal_iova_mode() == RTE_IOVA_VA;
  attach_ = c.attach == Attach::always || (c.attach == Attach::automatic && multi_seg_ && va);

  rte_ether_addr a{};
  rte_eth_macaddr_get(port, &a);
  std::memcpy(mac_.b.data(), a.addr_bytes, 6);
  if (c.mac != MacAddr{}) {
    std::memcpy(a.addr_bytes, c.mac.b.data(), 6);
    const int r = rte_eth_dev_default_mac_addr_set(port, &a);
    // A PMD without an address to set (net_ring) filters nothing either: the address is
    // then only the one we send from and answer ARP for.
    if (r != 0 && r != -ENOTSUP) return fail("set MAC address", r);
    mac_ = c.mac;
  }
  return true;
}

DpdkDevice::~DpdkDevice() {
  for (std::uint16_t i = 0; i < n_pending_; ++i) rte_pktmbuf_free(pending_[i]);
  n_pending_ = 0;
  // (The last device of the port stops it and frees the pools: Port's destructor.)
}

bool DpdkDevice::link_up() const {
  rte_eth_link link{};
  return rte_eth_link_get_nowait(port_, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

bool DpdkDevice::wait_link_up(Duration timeout) const {
  SteadyClock clock;
  const Instant end = clock.now() + timeout;
  while (!link_up()) {
    if (clock.now() >= end) return false;
    ::usleep(10'000);
  }
  return true;
}

unsigned DpdkDevice::pool_available() const {
  return rte_mempool_avail_count(pool_);
}
unsigned DpdkDevice::pool_size() const {
  return pool_->size;
}

std::size_t DpdkDevice::rx_burst(std::span<RxFrame> out) {
  rte_mbuf* m[64];
  const auto want = static_cast<std::uint16_t>(std::min<std::size_t>(out.size(), 64));
  const std::uint16_t n = rte_eth_rx_burst(port_, queue_, m, want);
  for (std::uint16_t i = 0; i < n; ++i) {
    RxFrame& f = out[i];
    f.csum = rx_csum_ ? rx_verdict(m[i]->ol_flags) : 0;
    MbufSlot* s = m[i]->nb_segs == 1 ? slot_of(m[i]) : nullptr;
    if (s) {
      f.data = bytes_view(rte_pktmbuf_mtod(m[i], const std::uint8_t*), m[i]->data_len);
      f.ref = rx_ref(s);
      continue;
    }
    // A chain (or a foreign mbuf): one copy into a HeapBuf, then the mbuf goes back.
    std::uint8_t* data = nullptr;
    f.ref = HeapBuf::make(m[i]->pkt_len, &data);
    const void* p = rte_pktmbuf_read(m[i], 0, m[i]->pkt_len, data);
    if (p != data) std::memcpy(data, p, m[i]->pkt_len);
    f.data = bytes_view(data, m[i]->pkt_len);
    rte_pktmbuf_free(m[i]);
    ++dstats_.rx_copied;
  }
  stats_.rx_frames += n;
  return n;
}

}  // namespace esock::tcp::dpdk
