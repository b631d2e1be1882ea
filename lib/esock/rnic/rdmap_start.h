// What both transports do once MPA is established: the step from MPA negotiation to RDMAP
// streaming mode, shared so the kernel-socket and lib/tcp endpoints cannot drift apart.
#pragma once

#include "ddp/qp.h"
#include "mpa/negotiator.h"

namespace esock::rnic {

// Sets IRD/ORD from the exchange (RFC 6581 section 5), moves the queue pair to RTS and
// arranges the RTR (RFC 6581 section 3): the initiator's first FPDU is the RTR and the
// responder expects it. Returns true when the responder must send nothing before it has
// received the initiator's first FPDU (RFC 5044 section 7.1, no RTR negotiated).
bool start_rdmap(const mpa::Negotiated& n, bool initiator, ddp::Qp& qp);

}  // namespace esock::rnic
