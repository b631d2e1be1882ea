// The Terminate a Data Source sends when a Read Request's source fails its STag check
// (RFC 5040 section 7, Remote Protection Error codes): when the request arrives, and again
// for every Read Response segment (the region may be deregistered mid-response).
#pragma once

#include "ddp/stag.h"
#include "ddp/terminate.h"

namespace esock::ddp {

inline TerminateCause source_cause(StagTable::Check c) {
  using Check = StagTable::Check;
  switch (c) {
    case Check::invalid_stag:
      return term::rdmap_invalid_stag;
    case Check::wrong_pd:
      return term::rdmap_stag_not_associated;
    case Check::access:
      return term::rdmap_access_rights;
    case Check::to_wrap:
      return term::rdmap_to_wrap;
    default:
      return term::rdmap_base_bounds;
  }
}

}  // namespace esock::ddp
