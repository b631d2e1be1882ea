// The Internet checksum (RFC 1071) and a helper that completes the IPv4 header and
// TCP/UDP checksums of an Ethernet frame in place.
//
// Why this lives here and not in tcp/wire: the devices need it to emulate checksum offload
// (MemLink) and to make pcap captures of offloaded frames readable (PcapWriter), which is
// a device-layer concern; the wire layer has its own checksum for the stack's data path.
#pragma once

#include <cstdint>

#include "base/bytes.h"

namespace esock::tcp {

// One's-complement sum of `data` (RFC 1071 section 4.1) added to `sum`, not folded. An odd
// trailing octet is padded with zero on the right, so sums of consecutive pieces are only
// correct when every piece but the last has even length.
std::uint32_t inet_sum(bytes_view data, std::uint32_t sum = 0);

// Folds carries back in and complements: the value to store in a checksum field.
std::uint16_t inet_fold(std::uint32_t sum);

// Completes checksums in an Ethernet II frame carrying IPv4 (l2_len: Ethernet header bytes,
// usually 14): the IPv4 header checksum when `ip`, and the TCP or UDP checksum (RFC 9293
// section 3.1, RFC 768: pseudo-header + segment) when `l4`. Frames that are not IPv4, are
// fragments, or are truncated are left alone; returns whether anything was written.
bool fill_checksums(mut_bytes frame, std::size_t l2_len, bool ip, bool l4);

// Verifies what fill_checksums computes (tests, pcap sanity checks): true when the IPv4
// header checksum and the TCP/UDP checksum (if present) are both correct.
bool checksums_ok(bytes_view frame, std::size_t l2_len);

}  // namespace esock::tcp
