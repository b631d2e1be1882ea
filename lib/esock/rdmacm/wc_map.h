// libibverbs work completions as the completions ESTP and RAWMODE read (ddp::Completion,
// the software RNIC's): what rnic::Verbs promises whatever the provider.
#pragma once

#include <infiniband/verbs.h>

#include "ddp/cq.h"

namespace esock::rdmacm {

// ibv_wc_status to the verbs status the software RNIC reports for the same cause (ddp/cq.h).
ddp::Status status_of(ibv_wc_status s);

// One completion. `posted` is the opcode the work request was posted with: a completion
// in error (a flushed one above all) has no valid opcode of its own (ibv_poll_cq(3)).
ddp::Completion completion_of(const ibv_wc& wc, ddp::Opcode posted);

}  // namespace esock::rdmacm
