#include "tcp/runtime/runtime.h"

#include "tcp/runtime/host_isn_key.h"

#include <time.h>

#include <filesystem>
#include <system_error>

#include "tcp/dev/pcap_writer.h"
#include "tcp/dpdk/dpdk_device.h"
#include "tcp/dpdk/eal.h"

namespace esock::tcp {

struct Runtime::Dpdk {
  std::unique_ptr<dpdk::Eal> eal;
  std::unique_ptr<dpdk::DpdkDevice> dev;
  ~Dpdk() {
    dev.reset();  // the port goes before EAL cleanup
    eal.reset();
  }
};

Runtime::~Runtime() {
  stack_.reset();  // drops every rx ref before the device goes
  pcap_.reset();
  faults_.reset();
  dpdk_.reset();
}

std::unique_ptr<Runtime> Runtime::create(const RuntimeConfig& cfg, std::string* error) {
  std::unique_ptr<Runtime> rt(new Runtime());
  rt->backoff_ = IdleBackoff(cfg.idle);
  rt->dpdk_ = std::make_unique<Dpdk>();
  dpdk::EalOptions eo;
  eo.core = cfg.core;
  eo.memory_mb = cfg.memory_mb;
  eo.file_prefix = cfg.file_prefix;
  rt->dpdk_->eal = dpdk::Eal::init(eo, error);
  if (!rt->dpdk_->eal) return nullptr;
  int port = rt->dpdk_->eal->add_vdev(cfg.vdev, error);
  if (port < 0) return nullptr;
  dpdk::DpdkDeviceConfig dc;
  dc.mtu = cfg.mtu;
  dc.mtu_beyond_port = cfg.mtu_beyond_port;
  rt->dpdk_->dev = dpdk::DpdkDevice::open(static_cast<std::uint16_t>(port), dc, error);
  if (!rt->dpdk_->dev) return nullptr;
  if (cfg.link_timeout > Duration{} && !rt->dpdk_->dev->wait_link_up(cfg.link_timeout)) {
    if (error) *error = "link of " + cfg.vdev + " did not come up (is the peer running?)";
    return nullptr;
  }
  rt->top_ = rt->dpdk_->dev.get();
  if (cfg.faults) {
    rt->faults_ = std::make_unique<FaultInjector>(*rt->top_, rt->clock_, *cfg.faults);
    rt->top_ = rt->faults_.get();
  }
  if (!cfg.pcap_path.empty()) {
    // Record times in wall-clock time (the steady clock's epoch is boot).
    timespec wall{};
    clock_gettime(CLOCK_REALTIME, &wall);
    PcapOptions po;
    if (cfg.pcap_snaplen != 0) po.snaplen = cfg.pcap_snaplen;
    po.ts_offset =
        Duration(std::int64_t{wall.tv_sec} * 1'000'000'000 + wall.tv_nsec - rt->clock_.now().ns);
    auto w = PcapWriter::open(*rt->top_, rt->clock_, cfg.pcap_path, po, error);
    if (!w) return nullptr;
    rt->top_ = w.get();
    rt->pcap_ = std::move(w);
  }
  StackConfig sc = cfg.stack;
  if (!sc.isn_key) {
    // This user's stacks on this host share one key (host_isn_key.h: RFC 6528's key per
    // boot), so a client's new incarnation of a 4-tuple passes RFC 6191 at the server.
    std::string unused;
    sc.isn_key = host_isn_key(&unused);
  }
  rt->stack_ = std::make_unique<Stack>(*rt->top_, sc, rt->clock_.now());
  return rt;
}

Device& Runtime::device() {
  return *top_;
}

void Runtime::abandon_at_exit() {
  if (dpdk_ && dpdk_->eal) {
    std::error_code ec;
    std::filesystem::remove_all(dpdk_->eal->runtime_dir(), ec);
  }
  // Leaked on purpose: the process ends, and their destructors would call into DPDK.
  (void)stack_.release();
  (void)pcap_.release();
  (void)faults_.release();
  (void)dpdk_.release();
}

std::string Runtime::eal_runtime_dir() const {
  return dpdk_ && dpdk_->eal ? dpdk_->eal->runtime_dir() : std::string{};
}

bool Runtime::link_up() const {
  return dpdk_->dev->link_up();
}

}  // namespace esock::tcp
