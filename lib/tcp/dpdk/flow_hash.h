// Which queue of a multi-queue port carries a TCP/IPv4 flow (issue 18: one stack per
// queue). Receive side scaling (Microsoft's RSS specification, which NICs and DPDK follow)
// computes a Toeplitz hash of the 4-tuple with a 40-octet key and picks the queue from a
// redirection table. With the key that repeats 0x6d5a (Woo and Park, "Scalable TCP Session
// Monitoring with Symmetric Receive-side Scaling", 2012) the hash is the same for both
// directions of a flow, so the queue that receives a flow is also the one its stack sends
// it on. memif and net_ring do not hash: a frame arrives on the queue index its sender
// used, so both ends computing this same function agree on the queue without any NIC.
// Includes no DPDK header; the hash is DPDK's (rte_softrss).
#pragma once

#include <cstdint>
#include <span>

#include "tcp/wire/addr.h"

namespace esock::tcp::dpdk {

// The symmetric key (40 octets), as DpdkDevice configures a hashing PMD with.
std::span<const std::uint8_t> symmetric_rss_key();

// The Toeplitz hash of the flow with that key; equal for the tuple seen from either end.
std::uint32_t flow_hash(const FourTuple& t);

// The queue of `queues` that carries the flow: the hash modulo the count, which is what a
// PMD's default redirection table gives for a power-of-two count.
unsigned flow_queue(const FourTuple& t, unsigned queues);

}  // namespace esock::tcp::dpdk
