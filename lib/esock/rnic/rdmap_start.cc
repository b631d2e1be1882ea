#include "esock/rnic/rdmap_start.h"

namespace esock::rnic {

bool start_rdmap(const mpa::Negotiated& n, bool initiator, ddp::Qp& qp) {
  qp.set_ird_ord(n.ird, n.ord);
  qp.rts();
  if (n.rtr == mpa::Rtr::none) return !initiator;
  const ddp::Rtr rtr = n.rtr == mpa::Rtr::send    ? ddp::Rtr::send
                       : n.rtr == mpa::Rtr::write ? ddp::Rtr::write
                                                  : ddp::Rtr::read;
  if (initiator) {
    qp.send_rtr(rtr);
  } else {
    qp.expect_rtr(rtr);
  }
  return false;
}

}  // namespace esock::rnic
