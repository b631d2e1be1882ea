// Numbers that stand for TCP connections but are AF_UNIX stream ends: the plain relays of an
// own stack (a peer without esock, utcp/plain_relay.h). The interposed calls that would show
// the difference ask here, so a program sees its TCP socket: getsockname/getpeername give
// the connection's IPv4 names; getsockopt/setsockopt at IPPROTO_TCP keep the values set and
// answer the others with a TCP socket's defaults; SO_DOMAIN and SO_PROTOCOL say AF_INET and
// TCP (asyncio, for one, sets TCP_NODELAY on every stream socket and fails otherwise).
//
// Keyed by the open file (its inode), so dup'd numbers and fork children find it and a
// number reused for another socket does not. Bounded: at `capacity` entries, those whose
// file this process no longer has open go (a look at /proc/self/fd, at most once per
// quarter of the capacity added); if that frees nothing, the oldest is forgotten (that
// number then shows as what it is). Pass-through calls pay nothing: they ask only after
// the kernel said AF_UNIX or refused a TCP option.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>

namespace esock::sockets {

inline constexpr std::size_t relayed_capacity = 4096;

// Registers the fork handlers that hold the table's lock across fork (so no child inherits it
// held); the runtime calls it before registering its own, whose prepare handler adds
// entries (fork.cc) and so must run first.
void relayed_names_init();
void relayed_add(int fd, const sockaddr_in& local, const sockaddr_in& peer);
bool relayed_any();  // one relaxed load: whether anything was ever added
bool relayed_is(int fd);
std::size_t relayed_count();  // entries held (tests)
// After the kernel's own call on fd: true (with the call's result in *ret, errno set) when
// fd is a relay's end and the answer is esock's.
bool relayed_name(int fd, bool peer, sockaddr* addr, socklen_t* len, int* ret);
bool relayed_getsockopt(int fd, int level, int name, void* val, socklen_t* len, int* ret);
bool relayed_setsockopt(int fd, int level, int name, const void* val, socklen_t len, int* ret);

}  // namespace esock::sockets
