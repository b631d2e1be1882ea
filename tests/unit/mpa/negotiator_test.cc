#include "mpa/negotiator.h"

#include <gtest/gtest.h>

#include "test_frames.h"

namespace esock::mpa {
namespace {

using State = Negotiator::State;

Config initiator(std::uint8_t rev = 2) {
  Config c;
  c.initiator = true;
  c.revision = rev;
  return c;
}
Config responder(std::uint8_t rev = 2) {
  Config c = initiator(rev);
  c.initiator = false;
  return c;
}

// Runs the exchange in memory, feeding each side's output to the other one octet at a time
// (so partial frames are exercised) and checking nothing past a frame is consumed.
void run(Negotiator& ini, Negotiator& res) {
  for (int round = 0; round < 4; ++round) {
    for (auto [from, to] : {std::pair{&ini, &res}, std::pair{&res, &ini}}) {
      const auto out = from->take_output();
      std::size_t used = 0;
      for (std::size_t i = 0; i < out.size(); ++i) used += to->feed(bytes_view(out).subspan(i, 1));
      if (to->state() == State::in_progress) {
        EXPECT_EQ(used, out.size());
      }
    }
  }
}

TEST(MpaNegotiator, V2DefaultsBothSides) {
  Config ic = initiator(), rc = responder();
  ic.private_data = {9, 8, 7};
  rc.private_data = {1, 2};
  ic.ird = 8;
  ic.ord = 4;
  rc.ird = 16;
  rc.ord = 16;
  Negotiator ini(ic), res(rc);
  run(ini, res);
  ASSERT_EQ(ini.state(), State::established) << ini.error();
  ASSERT_EQ(res.state(), State::established) << res.error();
  EXPECT_EQ(ini.result().revision, 2);
  EXPECT_TRUE(ini.result().crc);
  EXPECT_TRUE(res.result().crc);
  EXPECT_FALSE(ini.result().markers_tx || ini.result().markers_rx);
  // Responder: ORD <= initiator IRD (8), IRD = initiator ORD (4).
  EXPECT_EQ(res.result().ord, 8);
  EXPECT_EQ(res.result().ird, 4);
  EXPECT_EQ(ini.result().ird, 8);
  EXPECT_EQ(ini.result().ord, 4);
  EXPECT_EQ(res.result().peer_private_data, ic.private_data);
  EXPECT_EQ(ini.result().peer_private_data, rc.private_data);
  EXPECT_FALSE(ini.result().p2p);
  EXPECT_EQ(ini.result().rtr, Rtr::none);
}

TEST(MpaNegotiator, V1BothSides) {
  Config ic = initiator(1), rc = responder(1);
  ic.private_data = {1, 2, 3, 4, 5, 6};
  Negotiator ini(ic), res(rc);
  const auto req = ini.take_output();
  ASSERT_EQ(req.size(), 26u);  // no v2 block
  EXPECT_EQ(req[16], 0x40);    // C only, no 0x10 bit
  EXPECT_EQ(req[17], 1);
  EXPECT_EQ(res.feed(req), req.size());
  Negotiator ini2(ic);
  (void)ini2.take_output();
  EXPECT_EQ(ini2.feed(res.take_output()), 20u);
  EXPECT_EQ(ini2.state(), State::established);
  EXPECT_EQ(ini2.result().revision, 1);
  EXPECT_EQ(res.result().peer_private_data, ic.private_data);
  EXPECT_EQ(ini2.result().ird, 16);  // not negotiated in v1: our configuration
}

TEST(MpaNegotiator, V1InitiatorV2Responder) {
  Negotiator ini(initiator(1)), res(responder(2));
  run(ini, res);
  ASSERT_EQ(ini.state(), State::established) << ini.error();
  ASSERT_EQ(res.state(), State::established);
  EXPECT_EQ(res.result().revision, 1);
  EXPECT_EQ(ini.result().revision, 1);
}

TEST(MpaNegotiator, V2InitiatorV1Responder) {
  Config ic = initiator(2);
  ic.private_data = {0xaa};
  ic.p2p = true;
  Negotiator ini(ic), res(responder(1));
  run(ini, res);
  ASSERT_EQ(ini.state(), State::established) << ini.error();
  EXPECT_EQ(ini.result().revision, 1);
  EXPECT_FALSE(ini.result().p2p);  // no RTR without revision 2
  EXPECT_EQ(res.result().revision, 1);
  // A revision 1 responder does not know the block: it is opaque private data to it.
  ASSERT_EQ(res.result().peer_private_data.size(), 5u);
  EXPECT_EQ(res.result().peer_private_data[4], 0xaa);
}

TEST(MpaNegotiator, V1InitiatorFailsOnV2Reply) {
  Negotiator ini(initiator(1));
  (void)ini.take_output();
  ini.feed(test::siw_crc_reply());
  EXPECT_EQ(ini.state(), State::failed);
  EXPECT_EQ(ini.terminate().code, kLlpBadReqRep);
}

TEST(MpaNegotiator, MarkersPerDirection) {
  Config ic = initiator(), rc = responder();
  ic.markers = Policy::require;  // initiator wants markers on what it receives
  rc.markers = Policy::allow;
  Negotiator ini(ic), res(rc);
  run(ini, res);
  ASSERT_EQ(res.state(), State::established);
  EXPECT_TRUE(ini.result().markers_rx);
  EXPECT_FALSE(ini.result().markers_tx);
  EXPECT_TRUE(res.result().markers_tx);
  EXPECT_FALSE(res.result().markers_rx);

  rc.markers = Policy::require;
  ic.markers = Policy::allow;
  Negotiator ini2(ic), res2(rc);
  run(ini2, res2);
  ASSERT_EQ(ini2.state(), State::established);
  EXPECT_TRUE(ini2.result().markers_tx);
  EXPECT_TRUE(res2.result().markers_rx);
}

TEST(MpaNegotiator, ResponderRefusingMarkersRejects) {
  Config ic = initiator(), rc = responder();
  ic.markers = Policy::require;
  rc.markers = Policy::refuse;
  rc.private_data = {'n', 'o'};
  Negotiator ini(ic), res(rc);
  run(ini, res);
  EXPECT_EQ(res.state(), State::rejected);
  EXPECT_EQ(ini.state(), State::rejected);
  EXPECT_EQ(ini.result().peer_private_data, rc.private_data);  // reject with private data
}

TEST(MpaNegotiator, InitiatorRefusingMarkersFails) {
  Config ic = initiator(), rc = responder();
  ic.markers = Policy::refuse;
  rc.markers = Policy::require;
  Negotiator ini(ic), res(rc);
  run(ini, res);
  EXPECT_EQ(res.state(), State::established);
  EXPECT_EQ(ini.state(), State::failed);
}

TEST(MpaNegotiator, CrcRules) {
  struct Case {
    Policy i, r;
    State is, rs;
    bool crc;
  };
  const Case cases[] = {
      {Policy::require, Policy::require, State::established, State::established, true},
      {Policy::require, Policy::allow, State::established, State::established, true},
      {Policy::allow, Policy::require, State::established, State::established, true},
      {Policy::allow, Policy::allow, State::established, State::established, false},
      {Policy::refuse, Policy::allow, State::established, State::established, false},
      {Policy::require, Policy::refuse, State::rejected, State::rejected, false},
      {Policy::refuse, Policy::require, State::failed, State::established, true},
  };
  for (const Case& c : cases) {
    Config ic = initiator(), rc = responder();
    ic.crc = c.i;
    rc.crc = c.r;
    Negotiator ini(ic), res(rc);
    run(ini, res);
    EXPECT_EQ(ini.state(), c.is) << int(c.i) << int(c.r);
    EXPECT_EQ(res.state(), c.rs) << int(c.i) << int(c.r);
    if (c.is == State::established) {
      EXPECT_EQ(ini.result().crc, c.crc);
    }
    if (c.rs == State::established) {
      EXPECT_EQ(res.result().crc, c.crc);
    }
  }
}

TEST(MpaNegotiator, P2pResponderPicksWriteAndEchoes) {
  Config ic = initiator();
  ic.p2p = true;
  Negotiator ini(ic), res(responder());
  const auto req = ini.take_output();
  res.feed(req);
  const auto rep = res.take_output();
  FrameRepr f;
  ASSERT_EQ(parse_frame(rep, f), FrameError::none);
  ASSERT_TRUE(f.v2);
  EXPECT_TRUE(f.v2->p2p);
  EXPECT_TRUE(f.v2->rtr_write);
  EXPECT_FALSE(f.v2->rtr_read || f.v2->rtr_send);
  ini.feed(rep);
  ASSERT_EQ(ini.state(), State::established) << ini.error();
  EXPECT_TRUE(ini.result().p2p);
  EXPECT_EQ(ini.result().rtr, Rtr::write);
  EXPECT_EQ(res.result().rtr, Rtr::write);
}

TEST(MpaNegotiator, P2pRtrPreferenceAndNoMatch) {
  struct Case {
    bool is, iw, ir, rs, rw, rr;
    Rtr want;
  };
  const Case cases[] = {
      {true, true, true, true, true, true, Rtr::write},
      {true, false, true, true, true, true, Rtr::read},
      {true, false, false, true, true, true, Rtr::send},
      {true, true, true, true, false, false, Rtr::send},
      {false, true, false, true, false, true, Rtr::none},  // no match: reject
  };
  for (const Case& c : cases) {
    Config ic = initiator(), rc = responder();
    ic.p2p = true;
    ic.rtr_send = c.is, ic.rtr_write = c.iw, ic.rtr_read = c.ir;
    rc.rtr_send = c.rs, rc.rtr_write = c.rw, rc.rtr_read = c.rr;
    Negotiator ini(ic), res(rc);
    run(ini, res);
    if (c.want == Rtr::none) {
      EXPECT_EQ(res.state(), State::rejected);
      EXPECT_EQ(res.terminate().code, kLlpNoMatchingRtr);
      EXPECT_EQ(ini.state(), State::rejected);
    } else {
      ASSERT_EQ(ini.state(), State::established) << ini.error();
      EXPECT_EQ(ini.result().rtr, c.want);
      EXPECT_EQ(res.result().rtr, c.want);
    }
  }
}

TEST(MpaNegotiator, InitiatorChecksRtrAndIrd) {
  Config ic = initiator();
  ic.p2p = true;
  ic.rtr_write = false;  // offers send + read only
  ic.ird = 1;
  ic.ord = 1;
  {
    Negotiator ini(ic);
    (void)ini.take_output();
    ini.feed(test::siw_p2p_reply());  // picks Write, which we did not offer
    EXPECT_EQ(ini.state(), State::failed);
    EXPECT_EQ(ini.terminate().code, kLlpNoMatchingRtr);
  }
  {
    Config c2 = initiator();
    c2.ird = 1;
    Negotiator ini(c2);
    (void)ini.take_output();
    ini.feed(test::frame("MPA ID Rep Frame", 0x50, {0x00, 0x01, 0x00, 0x02}));  // ORD 2
    EXPECT_EQ(ini.state(), State::failed);
    EXPECT_EQ(ini.terminate().code, kLlpInsufficientIrd);
  }
}

TEST(MpaNegotiator, SiwFramesAsPeer) {
  {  // we respond to siw's CRC request
    Negotiator res(responder());
    const auto req = test::siw_crc_request();
    EXPECT_EQ(res.feed(req), req.size());
    ASSERT_EQ(res.state(), State::established);
    EXPECT_TRUE(res.result().crc);
    EXPECT_EQ(res.result().ird, 1);
    EXPECT_EQ(res.result().ord, 1);
    const auto rep = res.take_output();
    EXPECT_EQ(rep, test::siw_crc_reply());  // exactly what siw itself answered (rc.ird 16)
  }
  {  // we initiate like siw and get siw's reply
    Config ic = initiator();
    ic.ird = ic.ord = 1;
    Negotiator ini(ic);
    EXPECT_EQ(ini.take_output(), test::siw_crc_request());
    ini.feed(test::siw_crc_reply());
    ASSERT_EQ(ini.state(), State::established);
    EXPECT_TRUE(ini.result().crc);
  }
  {  // p2p request from siw: we pick Write, like siw did
    Config rc = responder();
    rc.crc = Policy::allow;
    Negotiator res(rc);
    res.feed(test::siw_p2p_request());
    ASSERT_EQ(res.state(), State::established);
    EXPECT_EQ(res.result().rtr, Rtr::write);
    EXPECT_FALSE(res.result().crc);
    EXPECT_EQ(res.take_output(), test::siw_p2p_reply());
  }
  {  // we initiate p2p like siw
    Config ic = initiator();
    ic.crc = Policy::allow;
    ic.ird = ic.ord = 1;
    ic.p2p = true;
    ic.rtr_send = false;
    Negotiator ini(ic);
    EXPECT_EQ(ini.take_output(), test::siw_p2p_request());
    ini.feed(test::siw_p2p_reply());
    ASSERT_EQ(ini.state(), State::established);
    EXPECT_EQ(ini.result().rtr, Rtr::write);
  }
}

TEST(MpaNegotiator, ConsumesOnlyTheFrame) {
  Negotiator res(responder());
  auto in = test::siw_crc_request();
  in.insert(in.end(), {0x00, 0x22, 0x41, 0x43});  // first FPDU octets
  EXPECT_EQ(res.feed(in), 24u);
  EXPECT_EQ(res.state(), State::established);
  EXPECT_EQ(res.feed(in), 0u);
}

TEST(MpaNegotiator, MalformedFramesFail) {
  auto bad_key = test::siw_crc_request();
  bad_key[0] = 'X';
  auto bad_rev = test::siw_crc_request();
  bad_rev[17] = 7;
  auto long_pd = test::siw_crc_request();
  long_pd[18] = 0x03;
  for (const auto& f : {bad_key, bad_rev, long_pd, test::siw_crc_reply()}) {
    Negotiator res(responder());
    res.feed(f);
    EXPECT_EQ(res.state(), State::failed);
    EXPECT_FALSE(res.error().empty());
    EXPECT_TRUE(res.take_output().empty());  // RFC 5044 7.1: close, no Reply
  }
  Negotiator ini(initiator());
  (void)ini.take_output();
  ini.feed(test::siw_crc_request());  // a Request where a Reply is due
  EXPECT_EQ(ini.state(), State::failed);
}

TEST(MpaNegotiator, TruncatedFrame) {
  Negotiator res(responder());
  const auto req = test::siw_crc_request();
  EXPECT_EQ(res.feed(bytes_view(req).first(22)), 22u);
  EXPECT_EQ(res.state(), State::in_progress);
  res.peer_closed();
  EXPECT_EQ(res.state(), State::failed);
  EXPECT_NE(res.error().find("truncated"), std::string::npos);
}

TEST(MpaNegotiator, BadConfig) {
  Config c = initiator();
  c.private_data.assign(509, 0);  // + 4 octets of v2 block > 512
  Negotiator n(c);
  EXPECT_EQ(n.state(), State::failed);
  EXPECT_TRUE(n.take_output().empty());
  c.revision = 1;  // 509 fits without the block
  Negotiator n1(c);
  EXPECT_EQ(n1.state(), State::in_progress);
}

}  // namespace
}  // namespace esock::mpa
