// Shared plumbing for the rdma_tools examples (esock_rping, esock_perftest): command-line
// options for the connection (MPA revision, RTR, CRC, Markers, transport), connecting with
// the retries rdma_cm tools rely on, and blocking one-message helpers over a Conn.
// These programs talk to rdma-core's rping and perftest's ib_*_bw/_lat -R running on a
// real iWARP device (Linux siw, an RNIC), so the wire behaviour mirrors those tools.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "conn.h"

namespace esock::tools {

// How to answer a peer that has no Markers (siw rejects M=1, RFC 5044 section 7.1):
// off = never ask; require = ask and fail on rejection; prefer = ask, and on rejection
// connect again without asking.
enum class MarkerMode { off, require, prefer };

struct ConnArgs {
  mpa::Config mpa;         // initiator/responder and Markers are set per connection
  ddp::QpConfig qp;        // pd is taken from the transport's context
  int timeout_ms = 20000;  // TCP connect/accept and MPA negotiation; the tools' waits
  std::size_t cq_depth = 4096;
  MarkerMode markers = MarkerMode::off;
  std::string transport = "ksock";  // ksock (kernel TCP socket) or dpdk (lib/tcp, utcp)
  // dpdk: one DPDK virtual device, esock's own address on it (A.B.C.D/NN), the lcore to
  // poll on and the EAL runtime directory name (empty: unique per process).
  std::string vdev;
  std::string ip;
  unsigned core = 0;
  std::string file_prefix;
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
std::unique_ptr<Conn> connect(Transport& t, const std::string& host, std::uint16_t port,
                              const ConnArgs& a, int refused_retries, std::string* why);
// The next connection on t's listening port (Transport::listen first).
std::unique_ptr<Conn> accept(Transport& t, const ConnArgs& a, std::string* why);
void print_negotiated(const char* tool, const char* role, const Conn& c);

// Waits for the next completion on the send queue and checks it: false (and a message on
// stderr naming `what`) on timeout or error status.
bool wait_send_ok(Conn& c, const char* what, int timeout_ms);
bool wait_recv_ok(Conn& c, const char* what, int timeout_ms, ddp::Completion* out = nullptr);
// For the last message of an exchange, to which the peer answers by closing the connection
// (rping's go-ahead after the Write, perftest's closing handshake): a completion flushed
// by the peer's orderly close also counts, since the peer can only have closed in answer
// to the message. A transport that completes a Send when the peer ACKs it (utcp) may see
// the FIN before it completes the ACKed Send (see the note in tests/interop/siw).
bool wait_last_send_ok(Conn& c, const char* what, int timeout_ms);
// A flushed completion on a connection the peer closed in order (no error).
bool flushed_by_peer_close(const Conn& c, const ddp::Completion& done);
const char* to_string(ddp::Status s);

}  // namespace esock::tools
