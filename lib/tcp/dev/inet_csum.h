// Completes or verifies the IPv4 header and TCP/UDP checksums of a whole Ethernet frame in
// place. Devices need this to emulate checksum offload (MemLink, FaultInjector) and to make
// pcap captures of offloaded frames readable (PcapWriter); the sums themselves are the wire
// layer's (tcp/wire/checksum.h).
#pragma once

#include <cstdint>

#include "base/bytes.h"

namespace esock::tcp {

// Completes checksums in an Ethernet II frame carrying IPv4 (l2_len: Ethernet header bytes,
// usually 14): the IPv4 header checksum when `ip`, and the TCP or UDP checksum (RFC 9293
// section 3.1, RFC 768: pseudo-header + segment) when `l4`. Frames that are not IPv4, are
// fragments, or are truncated are left alone; returns whether anything was written.
bool fill_checksums(mut_bytes frame, std::size_t l2_len, bool ip, bool l4);

// Verifies what fill_checksums computes (tests, pcap sanity checks): true when the IPv4
// header checksum and the TCP/UDP checksum (if present) are both correct.
bool checksums_ok(bytes_view frame, std::size_t l2_len);

}  // namespace esock::tcp
