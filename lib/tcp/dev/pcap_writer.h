// A Device wrapper that records every frame it passes, both directions, to a classic pcap
// file (LINKTYPE_ETHERNET, nanosecond timestamps: magic 0xa1b23c4d) that tshark and
// Wireshark read. Timestamps come from an injected Clock (a ManualClock in tests gives
// byte-identical captures; Instant 0 is written as the Unix epoch plus ts_offset).
//
// Checksum offload: a frame the stack sent with ip_csum/l4_csum set carries a zero IPv4
// checksum and only the pseudo-header sum in the TCP checksum (device.h); the NIC finishes
// them after we have seen the frame. By default the captured copy gets the real checksums
// so Wireshark does not flag every segment (fill_checksums = false records what the stack
// handed over, which is what a capture on the host side of a NIC shows).
//
// I/O errors never reach the data path: the first one stops recording and is kept in
// error(); traffic keeps flowing through the inner device.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/time.h"
#include "tcp/dev/device.h"

namespace esock::tcp {

struct PcapOptions {
  bool fill_checksums = true;
  std::uint32_t snaplen = 262144;  // longer frames are truncated (orig_len keeps the truth)
  Duration ts_offset{0};           // added to the clock's Instant for the record times
  bool record_rx = true;
  bool record_tx = true;
};

// File-format constants (the pcap format as libpcap writes it).
namespace pcap {
inline constexpr std::uint32_t magic_nsec = 0xa1b23c4d;
inline constexpr std::uint16_t version_major = 2;
inline constexpr std::uint16_t version_minor = 4;
inline constexpr std::uint32_t linktype_ethernet = 1;
inline constexpr std::size_t file_header_len = 24;
inline constexpr std::size_t record_header_len = 16;
}  // namespace pcap

class PcapWriter final : public Device {
 public:
  // Creates (truncates) `path` and writes the file header. nullptr with *error set when the
  // file cannot be opened or written. `inner` and `clock` must outlive the writer.
  static std::unique_ptr<PcapWriter> open(Device& inner, const Clock& clock,
                                          const std::string& path, const PcapOptions& options,
                                          std::string* error);
  ~PcapWriter() override;  // flushes and closes

  MacAddr mac() const override { return inner_.mac(); }
  DeviceCaps caps() const override { return inner_.caps(); }
  std::size_t rx_burst(std::span<RxFrame> out) override;
  bool tx(const TxFrame& frame) override;
  void tx_flush() override { inner_.tx_flush(); }
  DeviceStats stats() const override { return inner_.stats(); }

  // Pushes buffered records to the file (e.g. before another process reads it).
  bool flush();
  std::uint64_t records() const { return records_; }
  // Empty while all is well; otherwise what stopped the recording.
  const std::string& error() const { return error_; }

 private:
  PcapWriter(Device& inner, const Clock& clock, const PcapOptions& options, std::FILE* file);
  void record(bytes_view frame);
  bool write(const void* p, std::size_t n);

  Device& inner_;
  const Clock& clock_;
  PcapOptions options_;
  std::FILE* file_;
  std::vector<std::uint8_t> scratch_;  // a tx frame flattened for the capture
  std::uint64_t records_ = 0;
  std::string error_;
};

}  // namespace esock::tcp
