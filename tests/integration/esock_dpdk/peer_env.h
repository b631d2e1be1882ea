// The test process's side of dpdk_fd_test: a GoogleTest Environment that starts the peer
// (dpdk_peer, memif role=server at 10.99.0.1) once, then configures this process as the
// memif client at 10.99.0.2 before its first DDPMODE connect. One DPDK EAL per process, so
// the whole suite runs in one process as one CTest test.
//
// External peer: with ESOCK_FD_TEST_PEER="A.B.C.D PORT MSGPORT" (and ESOCK_FD_TEST_OWN_IP,
// this process's address) the suite runs against a dpdk_peer someone else started, over
// whatever provider ESOCK_PROVIDER names: tests/interop/rdmacm runs it on siw in one guest
// against a peer in the other. Tests of the dpdk stack's own addresses are skipped then.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace esock_dpdk_test {

inline constexpr const char* kMemifPeerIp = "10.99.0.1";
inline constexpr const char* kMemifOwnIp = "10.99.0.2";

class PeerEnv : public ::testing::Environment {
 public:
  void SetUp() override;
  void TearDown() override;

  static std::uint16_t port() { return port_; }
  static const char* peer_ip() { return peer_ip_.c_str(); }
  static const char* own_ip() { return own_ip_.c_str(); }
  // Run against a peer started elsewhere (ESOCK_FD_TEST_PEER), on any provider.
  static bool external() { return external_; }
  // The peer's MSGMODE listener: echoes each message as one message.
  static std::uint16_t msgport() { return msgport_; }
  // A DDPMODE connection to the peer (blocking connect) that asked for cmd; -1 on failure.
  static int open(const std::string& cmd);
  static sockaddr_in peer_addr(std::uint16_t port);

 private:
  static inline std::uint16_t port_ = 0;
  static inline std::uint16_t msgport_ = 0;
  static inline std::string peer_ip_ = kMemifPeerIp, own_ip_ = kMemifOwnIp;
  static inline bool external_ = false;
  std::string dir_;
  pid_t pid_ = -1;
  int to_peer_ = -1;
};

// Bounded wait for readiness (no sleeps): true when fd polls one of events within ms.
bool wait_for(int fd, short events, int ms = 10000);

}  // namespace esock_dpdk_test
