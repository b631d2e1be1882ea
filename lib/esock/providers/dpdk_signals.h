// DPDK's net_tap PMD puts O_ASYNC on its queue descriptors: the kernel raises a signal in
// the process for every frame the TAP queues, and the PMD's handler counts them; its
// receive burst reads nothing unless the count moved. Process-directed, that signal lands
// in whichever application thread does not block it and interrupts the system call it is
// in (poll, select, epoll_wait return EINTR whatever SA_RESTART says), so an unmodified
// program such as nc quits ("polling error: Interrupted system call").
#pragma once

namespace esock::sockets {

// Called by the thread that is to take those signals (the runtime's progress thread, which
// blocks every other signal): each TAP descriptor of this process with O_ASYNC signals
// that thread alone from now on (F_SETOWN_EX, F_OWNER_TID), and the thread unblocks the
// signal it raises (F_GETSIG, SIGIO when none). Descriptors of anything else are left alone.
void take_tap_signals();

}  // namespace esock::sockets
