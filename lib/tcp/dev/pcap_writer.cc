#include "tcp/dev/pcap_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tcp/dev/frame_copy.h"
#include "tcp/dev/inet_csum.h"

namespace esock::tcp {
namespace {

// pcap headers are written in the writer's byte order; readers detect it from the magic.
template <typename T>
void put(std::uint8_t*& p, T v) {
  std::memcpy(p, &v, sizeof v);
  p += sizeof v;
}

}  // namespace

std::unique_ptr<PcapWriter> PcapWriter::open(Device& inner, const Clock& clock,
                                             const std::string& path, const PcapOptions& options,
                                             std::string* error) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    if (error) *error = "pcap: cannot create " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<PcapWriter> w(new PcapWriter(inner, clock, options, f));
  std::uint8_t h[pcap::file_header_len];
  std::uint8_t* p = h;
  put(p, pcap::magic_nsec);
  put(p, pcap::version_major);
  put(p, pcap::version_minor);
  put(p, std::int32_t{0});   // thiszone: timestamps are UTC
  put(p, std::uint32_t{0});  // sigfigs
  put(p, options.snaplen);
  put(p, pcap::linktype_ethernet);
  if (!w->write(h, sizeof h) || !w->flush()) {
    if (error) *error = w->error();
    return nullptr;
  }
  return w;
}

PcapWriter::PcapWriter(Device& inner, const Clock& clock, const PcapOptions& options,
                       std::FILE* file)
    : inner_(inner), clock_(clock), options_(options), file_(file) {}

PcapWriter::~PcapWriter() {
  if (file_) std::fclose(file_);
}

bool PcapWriter::write(const void* p, std::size_t n) {
  if (!error_.empty()) return false;
  if (std::fwrite(p, 1, n, file_) != n) {
    error_ = std::string("pcap: write failed: ") + std::strerror(errno);
    return false;
  }
  return true;
}

bool PcapWriter::flush() {
  if (!error_.empty()) return false;
  if (std::fflush(file_) != 0) {
    error_ = std::string("pcap: flush failed: ") + std::strerror(errno);
    return false;
  }
  return true;
}

void PcapWriter::record(bytes_view frame) {
  if (!error_.empty()) return;
  const std::int64_t ns = (clock_.now() + options_.ts_offset).ns;
  // Negative instants (a clock epoch after the offset) are clamped to the epoch.
  const std::uint64_t t = ns < 0 ? 0 : static_cast<std::uint64_t>(ns);
  const std::size_t incl = std::min<std::size_t>(frame.size(), options_.snaplen);
  std::uint8_t h[pcap::record_header_len];
  std::uint8_t* p = h;
  put(p, static_cast<std::uint32_t>(t / 1'000'000'000));
  put(p, static_cast<std::uint32_t>(t % 1'000'000'000));
  put(p, static_cast<std::uint32_t>(incl));
  put(p, static_cast<std::uint32_t>(frame.size()));
  if (write(h, sizeof h) && write(frame.data(), incl)) ++records_;
}

std::size_t PcapWriter::rx_burst(std::span<RxFrame> out) {
  const std::size_t n = inner_.rx_burst(out);
  if (options_.record_rx)
    for (std::size_t i = 0; i < n; ++i) record(out[i].data);
  return n;
}

bool PcapWriter::tx(const TxFrame& frame) {
  // Record only what the inner device accepted: a refused frame never reached the wire.
  if (!inner_.tx(frame)) return false;
  if (!options_.record_tx) return true;
  scratch_.resize(frame_length(frame));
  copy_frame(frame, scratch_);
  const TxOffload& o = frame.offload;
  if (options_.fill_checksums && (o.ip_csum || o.l4_csum))
    fill_checksums(scratch_, o.l2_len, o.ip_csum, o.l4_csum);
  record(scratch_);
  return true;
}

}  // namespace esock::tcp
