#include "esock/rnic/rdmap_start.h"

namespace esock::rnic {

bool start_rdmap(const mpa::Negotiated& n, bool initiator, ddp::Qp& qp) {
  qp.set_ird_ord(n.ird, n.ord);
  qp.rts();
  if (n.rtr == mpa::Rtr::none) return !initiator;
  const ddp::RtrOp rtr = n.rtr == mpa::Rtr::send    ? ddp::RtrOp::send
                         : n.rtr == mpa::Rtr::write ? ddp::RtrOp::write
                                                    : ddp::RtrOp::read;
  if (initiator) {
    qp.send_rtr(rtr);
  } else {
    qp.expect_rtr(rtr);
  }
  return false;
}

}  // namespace esock::rnic
