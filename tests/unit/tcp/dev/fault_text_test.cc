// ESOCK_DPDK_FAULTS' text (tcp/dev/fault_text.h): every item parsed, both directions the
// same, bad items refused with the reason, and only frames with TCP payload eligible.
#include "tcp/dev/fault_text.h"

#include <gtest/gtest.h>

#include "test_frames.h"

namespace esock::tcp {
namespace {

TEST(FaultText, EveryItemAppliesToBothDirections) {
  std::string why;
  const auto c = parse_fault_text("loss=0.01,reorder=0.5,duplicate=1,corrupt=0.001,seed=42", &why);
  ASSERT_TRUE(c) << why;
  EXPECT_EQ(c->seed, 42u);
  for (const FaultSpec* s : {&c->tx, &c->rx}) {
    EXPECT_DOUBLE_EQ(s->loss, 0.01);
    EXPECT_DOUBLE_EQ(s->reorder, 0.5);
    EXPECT_DOUBLE_EQ(s->duplicate, 1.0);
    EXPECT_DOUBLE_EQ(s->corrupt, 0.001);
    EXPECT_TRUE(s->corrupt_payload_only);
    EXPECT_FALSE(s->corrupt_keeps_checksum) << "TCP's checksum catches it, as on a link";
    EXPECT_TRUE(s->filter);
  }
  const auto d = parse_fault_text("loss=0", &why);
  ASSERT_TRUE(d) << why;
  EXPECT_EQ(d->seed, 1u);
}

TEST(FaultText, BadItemsAreRefusedWithTheReason) {
  for (const char* bad : {"", "loss", "loss=", "loss=2", "loss=-0.1", "loss=0.1x", "loss=nan",
                          "seed=-1", "seed=", "loss=0.1,,reorder=0.1", "reorder=1e9", "loss=0.1,",
                          ",loss=0.1", "loss=0.1,loss=0.2"}) {
    std::string why;
    EXPECT_FALSE(parse_fault_text(bad, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
  std::string why;
  EXPECT_FALSE(parse_fault_text("loss=0.1,latency=5", &why));
  EXPECT_NE(why.find("unknown fault 'latency'"), std::string::npos) << why;
}

TEST(FaultText, OnlyFramesWithTcpPayloadAreEligible) {
  const auto data = test::tcp_frame(1, 100);
  EXPECT_TRUE(carries_tcp_payload({bytes_view(data), data.size(), 0}));
  const auto ack = test::tcp_frame(2, 0);
  EXPECT_FALSE(carries_tcp_payload({bytes_view(ack), ack.size(), 0}));
  // A pure ACK padded to Ethernet's 60 octets: the padding is not payload.
  auto padded = ack;
  padded.resize(60, 0);
  EXPECT_FALSE(carries_tcp_payload({bytes_view(padded), padded.size(), 0}));
  // tx sees the headers only (TxFrame::head) and the whole length.
  EXPECT_TRUE(carries_tcp_payload({bytes_view(data).first(test::hdr_len), data.size(), 0}));
  auto arp = data;
  arp[12] = 0x08;
  arp[13] = 0x06;
  EXPECT_FALSE(carries_tcp_payload({bytes_view(arp), arp.size(), 0}));
  EXPECT_FALSE(carries_tcp_payload({bytes_view(data).first(20), data.size(), 0}));
}

}  // namespace
}  // namespace esock::tcp
