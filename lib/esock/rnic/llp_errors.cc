#include "esock/rnic/llp_errors.h"

namespace esock::rnic {

ddp::TerminateCause llp_terminate_cause(mpa::Error err) {
  const mpa::TerminateCode t = mpa::terminate_code(err);
  return ddp::TerminateCause{t.layer, t.type, t.code};
}

ddp::TerminateCause llp_connection_lost() {
  return ddp::term::llp_connection_lost;
}

const char* mpa_error_name(mpa::Error err) {
  return mpa::to_string(err);
}

}  // namespace esock::rnic
