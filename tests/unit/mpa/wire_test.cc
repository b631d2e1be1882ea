#include "mpa/wire.h"

#include <gtest/gtest.h>

#include "test_frames.h"

namespace esock::mpa {
namespace {

TEST(MpaWire, ParsesSiwCrcRequest) {
  const auto bytes = test::siw_crc_request();
  FrameRepr f;
  std::size_t used = 0;
  ASSERT_EQ(parse_frame(bytes, f, &used), FrameError::none);
  EXPECT_EQ(used, 24u);
  EXPECT_TRUE(f.request);
  EXPECT_FALSE(f.markers);
  EXPECT_TRUE(f.crc);
  EXPECT_FALSE(f.reject);
  EXPECT_TRUE(f.enhanced);
  EXPECT_EQ(f.revision, 2);
  ASSERT_TRUE(f.v2);
  EXPECT_EQ(f.v2->ird, 1);
  EXPECT_EQ(f.v2->ord, 1);
  EXPECT_FALSE(f.v2->p2p);
  EXPECT_TRUE(f.private_data.empty());
}

TEST(MpaWire, ParsesSiwP2pFrames) {
  FrameRepr req, rep;
  ASSERT_EQ(parse_frame(test::siw_p2p_request(), req), FrameError::none);
  ASSERT_EQ(parse_frame(test::siw_p2p_reply(), rep), FrameError::none);
  EXPECT_FALSE(req.crc);
  EXPECT_TRUE(req.v2->p2p);
  EXPECT_FALSE(req.v2->rtr_send);
  EXPECT_TRUE(req.v2->rtr_write);
  EXPECT_TRUE(req.v2->rtr_read);
  EXPECT_FALSE(rep.request);
  EXPECT_TRUE(rep.v2->p2p);
  EXPECT_TRUE(rep.v2->rtr_write);
  EXPECT_FALSE(rep.v2->rtr_read);
  EXPECT_EQ(rep.v2->ird, 1);
  EXPECT_EQ(rep.v2->ord, 1);
}

TEST(MpaWire, EmitReproducesSiwOctets) {
  for (const auto& bytes : {test::siw_crc_request(), test::siw_crc_reply(), test::siw_p2p_request(),
                            test::siw_p2p_reply()}) {
    FrameRepr f;
    ASSERT_EQ(parse_frame(bytes, f), FrameError::none);
    std::vector<std::uint8_t> out;
    f.emit(out);
    EXPECT_EQ(out, bytes);
  }
}

TEST(MpaWire, RoundTripWithPrivateData) {
  FrameRepr f;
  f.request = false;
  f.markers = true;
  f.crc = true;
  f.reject = true;
  f.revision = 1;
  f.private_data = {1, 2, 3, 4, 5};
  std::vector<std::uint8_t> out;
  f.emit(out);
  ASSERT_EQ(out.size(), 25u);
  EXPECT_EQ(out[16], 0xe0);
  FrameRepr g;
  ASSERT_EQ(parse_frame(out, g), FrameError::none);
  EXPECT_EQ(g.private_data, f.private_data);
  EXPECT_TRUE(g.markers && g.crc && g.reject && !g.request && !g.v2);
  // Every proper prefix is "truncated", never an error or a frame.
  for (std::size_t n = 0; n < out.size(); ++n)
    EXPECT_EQ(parse_frame(bytes_view(out).first(n), g), FrameError::truncated) << n;
}

TEST(MpaWire, Errors) {
  FrameRepr f;
  auto bytes = test::siw_crc_request();
  auto bad = bytes;
  bad[3] = 'x';
  EXPECT_EQ(parse_frame(bad, f), FrameError::bad_key);
  EXPECT_EQ(parse_frame(bytes_view(bad).first(4), f), FrameError::bad_key);  // early
  bad = bytes;
  bad[17] = 3;
  EXPECT_EQ(parse_frame(bad, f), FrameError::bad_revision);
  bad[17] = 0;
  EXPECT_EQ(parse_frame(bad, f), FrameError::bad_revision);
  bad = bytes;
  bad[18] = 0x02;  // PD_Length 513
  bad[19] = 0x01;
  EXPECT_EQ(parse_frame(bad, f), FrameError::pd_too_long);
  bad = test::frame("MPA ID Req Frame", 0x50, {0x00, 0x01});
  EXPECT_EQ(parse_frame(bad, f), FrameError::missing_v2_block);
  bad = test::frame("MPA ID Req Frame", 0x70, {0x00, 0x01, 0x00, 0x01});
  EXPECT_EQ(parse_frame(bad, f), FrameError::reject_in_request);
  bad = test::frame("MPA ID Rep Frame", 0x30, {});  // a Rev 2 Reject may omit the block
  EXPECT_EQ(parse_frame(bad, f), FrameError::none);
  EXPECT_TRUE(f.reject);
  EXPECT_FALSE(f.v2);
}

TEST(MpaWire, MaxPrivateDataAccepted) {
  FrameRepr f;
  f.revision = 2;
  f.v2 = V2Block{};
  f.private_data.assign(kMaxPrivateData - kV2BlockLen, 0xab);
  std::vector<std::uint8_t> out;
  f.emit(out);
  FrameRepr g;
  ASSERT_EQ(parse_frame(out, g), FrameError::none);
  EXPECT_EQ(g.private_data.size(), kMaxPrivateData - kV2BlockLen);
}

TEST(MpaWire, V2BlockBits) {
  V2Block b;
  b.p2p = b.rtr_send = b.rtr_read = true;
  b.ird = 0x3fff;
  b.ord = 5;
  std::uint8_t o[4];
  b.emit(o);
  EXPECT_EQ(o[0], 0xff);
  EXPECT_EQ(o[1], 0xff);
  EXPECT_EQ(o[2], 0x40);
  EXPECT_EQ(o[3], 0x05);
  EXPECT_EQ(V2Block::parse(o), b);
}

}  // namespace
}  // namespace esock::mpa
