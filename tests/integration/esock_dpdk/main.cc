// One process, one DPDK EAL: the tests run in order in this process (not discovered one per
// CTest test), after PeerEnv started the peer.
#include <gtest/gtest.h>

#include "peer_env.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new esock_dpdk_test::PeerEnv);
  return RUN_ALL_TESTS();
}
