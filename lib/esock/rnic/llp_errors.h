// Maps MPA (LLP) failures to the DDP Terminate the queue pair sends for them.
#pragma once

#include "ddp/terminate.h"
#include "mpa/deframer.h"

namespace esock::rnic {

// RFC 5044 section 8: layer 2 (LLP), error type 0 (MPA), the code for the deframing error.
ddp::TerminateCause llp_terminate_cause(mpa::Error err);
// The TCP stream broke underneath MPA (RFC 5044 section 8, code 0x01).
ddp::TerminateCause llp_connection_lost();
const char* mpa_error_name(mpa::Error err);

}  // namespace esock::rnic
