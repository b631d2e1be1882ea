// What a dpdk-provider process leaves on the host, and its removal (issue 14, item 6): the
// memif server's socket file and EAL's runtime directory (/var/run/dpdk/esock-PID-N). An
// orderly exit removes both (DpdkProvider::stop). A process killed by a signal ran no exit
// handler, so the next start found "Address already in use" and directories piled up.
#pragma once

#include <string>

namespace esock::sockets {

// Where EAL keeps its runtime directories: /var/run/dpdk for root, else
// $XDG_RUNTIME_DIR/dpdk (EAL's own rule).
std::string eal_runtime_root();

// Before bring-up: a memif socket file nobody listens on (connect refused) is removed, and
// so is every esock-PID-N runtime directory whose process is gone. Returns one line per
// thing removed (for the debug log).
std::string remove_stale_debris(const std::string& memif_socket);

// Before bring-up (the memif socket appears during it), and again after with EAL's
// directory: SIGINT, SIGTERM and SIGHUP, where the program left them at their default
// (terminate), first remove the memif socket and the runtime directory, then terminate as
// before (the signal is raised again). A handler the program installs replaces ours; a
// fork child's signal removes nothing (the files are its parent's).
void remove_debris_on_signals(const std::string& memif_socket, const std::string& eal_dir);

}  // namespace esock::sockets
