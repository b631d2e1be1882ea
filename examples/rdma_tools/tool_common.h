// Shared plumbing for the rdma_tools examples (esock_rping, esock_perftest): command-line
// options for the connection (MPA revision, RTR, CRC, Markers, transport), connecting with
// the retries rdma_cm tools rely on, and blocking one-message helpers over an Endpoint.
// These programs talk to rdma-core's rping and perftest's ib_*_bw/_lat -R running on a
// real iWARP device (Linux siw, an RNIC), so the wire behaviour mirrors those tools.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "esock/ksock/endpoint.h"

namespace esock::tools {

// How to answer a peer that has no Markers (siw rejects M=1, RFC 5044 section 7.1):
// off = never ask; require = ask and fail on rejection; prefer = ask, and on rejection
// connect again without asking.
enum class MarkerMode { off, require, prefer };

struct ConnArgs {
  ksock::Options opts;
  MarkerMode markers = MarkerMode::off;
  std::string transport = "ksock";  // the only transport so far (DPDK comes later)
  // Initiator only: wait this long after the MPA Reply before the first FPDU. A workaround
  // for stock Linux siw 6.1, which sends its Reply before it starts reading the socket, so
  // an FPDU arriving in between sits unread (tests/interop/harness/README.md).
  int first_fpdu_delay_ms = 0;
};

ConnArgs default_conn_args();
// Consumes argv[i] (and its value) when it is a connection option; false otherwise.
// Exits with a usage message on a malformed value.
bool parse_conn_arg(int& i, int argc, char** argv, ConnArgs& a);
const char* conn_usage();

// Connects as the MPA initiator. A refused TCP connection is retried `refused_retries`
// times, 100 ms apart (perftest's client does the same while its server re-listens).
std::unique_ptr<ksock::Endpoint> connect(ksock::Context& ctx, const std::string& host,
                                         std::uint16_t port, const ConnArgs& a, int refused_retries,
                                         std::string* why);
std::unique_ptr<ksock::Endpoint> accept(ksock::Listener& l, ksock::Context& ctx, const ConnArgs& a,
                                        std::string* why);
void print_negotiated(const char* tool, const char* role, const ksock::Endpoint& ep);

// Waits for the next completion on the send queue and checks it: false (and a message on
// stderr naming `what`) on timeout or error status.
bool wait_send_ok(ksock::Endpoint& ep, const char* what, int timeout_ms);
bool wait_recv_ok(ksock::Endpoint& ep, const char* what, int timeout_ms,
                  ddp::Completion* out = nullptr);
const char* to_string(ddp::Status s);

}  // namespace esock::tools
