#include "tcp/dev/memif_frames.h"

#include <gtest/gtest.h>

namespace esock::tcp {
namespace {

const std::string link = "net_memif0,role=server,socket=/tmp/x.sock,socket-abstract=no";

TEST(MemifFrames, AMemifLinkRunsJumboFramesByDefaultInBuffersThatHoldThem) {
  const MemifFrames f = memif_frames(link, 0);
  EXPECT_EQ(f.mtu, memif_default_mtu);
  EXPECT_EQ(f.devargs, link + ",bsize=16384");  // 16000 + 14 in whole KiB
}

TEST(MemifFrames, AConfiguredMtuSizesTheBuffers) {
  EXPECT_EQ(memif_frames(link, 9000).devargs, link + ",bsize=9216");
  EXPECT_EQ(memif_frames(link, 9000).mtu, 9000u);
  // The largest frame still fits the 16-bit buffer size.
  EXPECT_EQ(memif_frames(link, 65000).devargs, link + ",bsize=65535");
}

TEST(MemifFrames, TheStandardMtuKeepsTheDevargsAsGiven) {
  EXPECT_EQ(memif_frames(link, 1500).devargs, link);
  EXPECT_EQ(memif_frames(link, 1500).mtu, 1500u);
}

TEST(MemifFrames, ABufferSizeInTheDevargsCapsTheMtu) {
  const MemifFrames small = memif_frames(link + ",bsize=2048", 0);
  EXPECT_EQ(small.devargs, link + ",bsize=2048");
  EXPECT_EQ(small.mtu, 2034u);  // one frame per buffer: a spanning frame is corrupted
  EXPECT_EQ(memif_frames(link + ",bsize=1024", 9000).mtu, 1500u);  // never below the port's
  EXPECT_EQ(memif_frames(link + ",bsize=65535", 9000).mtu, 9000u);
}

TEST(MemifFrames, OtherDevicesAreLeftAlone) {
  const MemifFrames tap = memif_frames("net_tap0,iface=esock0", 0);
  EXPECT_EQ(tap.devargs, "net_tap0,iface=esock0");
  EXPECT_EQ(tap.mtu, 0u);
  EXPECT_EQ(memif_frames("net_tap0,iface=esock0", 9000).mtu, 9000u);
}

}  // namespace
}  // namespace esock::tcp
