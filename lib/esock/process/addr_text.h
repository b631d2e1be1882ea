// "A.B.C.D port N" (or an IPv6 address) for messages and esock-stat; "" for other families.
#pragma once

#include <sys/socket.h>

#include <string>

namespace esock::sockets {

std::string address_text(const sockaddr_storage& a);

}  // namespace esock::sockets
