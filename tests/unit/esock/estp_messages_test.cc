// Every ESTP message the engine sends and receives, field by field, against a scripted peer
// (estp_fake_verbs.h): start-up, DATA, CREDIT (piggybacked and standalone), SRCAVAIL and
// the pulls it causes, RDMADONE, SINKAVAIL/SINKCANCEL (ignored in version 1), FIN, MSGMODE.
// Errors are in estp_errors_test.cc.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <numeric>

#include "estp_fake_verbs.h"

namespace esock::estp::testing {
namespace {

Message data_msg(std::uint32_t credits = 0, std::uint16_t flags = 0) {
  return Message{.type = Type::data, .flags = flags, .credits = credits};
}

// ---------------------------------------------------------------- wire, every type

TEST(EstpWire, EveryMessageTypeRoundTripsEveryField) {
  for (std::uint8_t t = 0x01; t <= 0x08; ++t) {
    const auto type = static_cast<Type>(t);
    const bool adv = type == Type::srcavail || type == Type::sinkavail;
    const bool done = type == Type::rdmadone || type == Type::writedone || type == Type::sinkcancel;
    const bool zero_len = type == Type::credit || type == Type::fin || type == Type::sinkcancel;
    const auto payload = bytes(type == Type::data ? 7 : 0);
    Message m{.type = type,
              .flags = flag_eom,
              .credits = 0xa1b2c3d4,
              .length = zero_len ? 0u : 0x01020304u,
              .stag = adv ? 0x0badcafeu : 0u,
              .to = adv ? 0x1122334455667788u : 0u,
              .id = adv || done ? 0xfeedf00du : 0u};
    const auto w = wire(m, payload);
    EXPECT_EQ(w.size(), adv ? adv_len : done ? done_len : hdr_len + payload.size()) << int(t);
    const auto p = parse(w);
    ASSERT_TRUE(p) << int(t);
    EXPECT_EQ(p->type, type);
    EXPECT_EQ(p->flags, flag_eom);
    EXPECT_EQ(p->credits, 0xa1b2c3d4u);
    EXPECT_EQ(p->length, type == Type::data ? 7u : m.length);
    EXPECT_EQ(p->stag, m.stag);
    EXPECT_EQ(p->to, m.to);
    EXPECT_EQ(p->id, m.id);
    EXPECT_TRUE(std::equal(p->payload.begin(), p->payload.end(), payload.begin(), payload.end()));
  }
}

TEST(EstpWire, RdmadoneGoldenOctets) {
  const auto w = wire(Message{.type = Type::rdmadone, .credits = 2, .length = 0x100000, .id = 1});
  const std::vector<std::uint8_t> golden = {0x45, 0x53, 0x54, 0x50, 1, 4, 0, 0, 0, 0,
                                            0,    2,    0,    0x10, 0, 0, 0, 0, 0, 1};
  EXPECT_EQ(w, golden);
}

TEST(EstpWire, DataWithNoPayloadParses) {
  const auto p = parse(wire(data_msg(0, flag_eom)));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->length, 0u);
  EXPECT_TRUE(p->payload.empty());
}

TEST(EstpWire, EmitRefusesABufferShorterThanTheBody) {
  std::uint8_t buf[adv_len - 1];
  EXPECT_EQ(emit_header(Message{.type = Type::srcavail}, buf), 0u);
  EXPECT_EQ(emit_header(Message{.type = Type::rdmadone}, mut_bytes(buf).first(done_len - 1)), 0u);
  EXPECT_EQ(emit_header(Message{.type = Type::fin}, mut_bytes(buf).first(hdr_len - 1)), 0u);
  EXPECT_EQ(emit_header(Message{.type = Type::writedone}, mut_bytes(buf)), done_len);
}

TEST(EstpWire, HelloCarriesMsgmodeAndRawFlags) {
  for (const bool msg : {false, true})
    for (const bool raw : {false, true}) {
      const auto v = emit_hello(Hello{msg, 5, 300, raw});
      EXPECT_EQ(v[5], (msg ? 1 : 0) | (raw ? 2 : 0));
      const auto h = parse_hello(v);
      ASSERT_TRUE(h);
      EXPECT_EQ(h->msgmode, msg);
      EXPECT_EQ(h->raw, raw);
      EXPECT_EQ(h->recv_buffers, 5u);
      EXPECT_EQ(h->recv_buffer_size, 300u);
    }
}

TEST(EstpWire, HelloReservedOctetsAreIgnored) {
  auto v = emit_hello(Hello{false, 4, 4096});
  v[6] = 0xff;
  v[7] = 0x01;
  EXPECT_TRUE(parse_hello(v));
}

TEST(EstpWire, HelloAtTheMinimumBufferSizeIsAccepted) {
  EXPECT_TRUE(parse_hello(emit_hello(Hello{false, 1, min_buffer_size})));
}

TEST(EstpWire, HelloOfParamsAnnouncesRAndBAndMsgmode) {
  const Hello h = hello_of(Params{7, 2048, 99, true});
  EXPECT_EQ(h.recv_buffers, 7u);
  EXPECT_EQ(h.recv_buffer_size, 2048u);
  EXPECT_TRUE(h.msgmode);
  EXPECT_FALSE(h.raw);
}

// ---------------------------------------------------------------- start-up (section 3)

TEST(EstpStart, InitiatorPostsRReceivesOfBOctetsThenSendsCreditOfZero) {
  Lone e(local(6, 512), Hello{false, 4, 4096}, /*initiator=*/true);
  ASSERT_EQ(e.start_rc, 0);
  ASSERT_EQ(e.v.recvs.size(), 6u);
  for (const auto& r : e.v.recvs) EXPECT_EQ(r.len, 512u);
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, Type::credit);
  EXPECT_EQ(m[0].credits, 0u);
  EXPECT_EQ(m[0].length, 0u);
  EXPECT_EQ(e.s().send_credits(), 3u);  // the CREDIT used one of the responder's 4
}

TEST(EstpStart, ResponderSendsNothingBeforeThePeerSpeaks) {
  Lone e(local(), Hello{false, 4, 4096}, /*initiator=*/false);
  ASSERT_EQ(e.start_rc, 0);
  e.s().progress();
  EXPECT_TRUE(e.v.sends.empty());
  EXPECT_EQ(e.v.recvs.size(), 4u);
  EXPECT_EQ(e.s().send_credits(), 4u);
  EXPECT_TRUE(e.s().writable());
  EXPECT_FALSE(e.s().readable());
  EXPECT_TRUE(e.s().tx_idle());
}

TEST(EstpStart, ReceiveBuffersAreNotRemotelyAccessible) {
  Lone e(local());
  for (const auto& r : e.v.recvs) EXPECT_EQ(e.v.mrs.at(r.lkey).access, ddp::access_local_write);
}

// ---------------------------------------------------------------- DATA out (sections 5, 6)

TEST(EstpTx, WriteSendsDataWithThePayloadAndSpendsOneCredit) {
  Lone e(local());
  const std::uint8_t hello[] = {'h', 'e', 'l', 'l', 'o'};
  ASSERT_EQ(e.s().write(hello, false), 5);
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, Type::data);
  EXPECT_EQ(m[0].length, 5u);
  EXPECT_EQ(m[0].flags, 0u);
  EXPECT_EQ(m[0].credits, 0u);
  EXPECT_TRUE(std::equal(m[0].payload.begin(), m[0].payload.end(), hello, hello + 5));
  EXPECT_EQ(e.s().send_credits(), 3u);
  EXPECT_EQ(e.s().stats().data_tx, 1u);
}

TEST(EstpTx, WriteSplitsIntoDataOfAtMostPeerBufferSizeLessHeader) {
  Lone e(local(), Hello{false, 8, 256});
  const auto d = bytes(600);
  ASSERT_EQ(e.s().write(d, false), 600);
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].length, 240u);
  EXPECT_EQ(m[1].length, 240u);
  EXPECT_EQ(m[2].length, 120u);
  std::vector<std::uint8_t> joined;
  for (const auto& x : m) joined.insert(joined.end(), x.payload.begin(), x.payload.end());
  EXPECT_EQ(joined, d);
}

TEST(EstpTx, DataIsCappedAt256KiBEvenWhenThePeerBuffersAreLarger) {
  Lone e(local(), Hello{false, 4, 1u << 20});
  const auto d = bytes(300000);
  ASSERT_GT(e.s().write(d, false), 0);
  const auto m = e.sent();
  ASSERT_GE(m.size(), 2u);
  EXPECT_EQ(m[0].length, 256u * 1024 - hdr_len);
}

TEST(EstpTx, WriteTakesOnlyWhatCreditsAllowKeepingTheLastCredit) {
  Lone e(local(), Hello{false, 4, 256});
  const auto d = bytes(2000);
  EXPECT_EQ(e.s().write(d, false), 3 * 240);  // 4 credits: the last only carries a grant
  EXPECT_EQ(e.s().send_credits(), 1u);
  EXPECT_FALSE(e.s().writable());
  EXPECT_EQ(e.s().write(d, false), -EAGAIN);
  EXPECT_EQ(e.sent().size(), 3u);
}

// The last credit is for control messages only (section 6): a DATA spent there could sit
// in a peer that does not read, and the grants made after it could never be sent.
TEST(EstpTx, TheLastCreditNeverCarriesDataOnlyACreditThatReturnsGrants) {
  Lone e(local(2, 1024, false), Hello{false, 4, 256});  // half of 2 buffers: 1 grant is due
  const auto d = bytes(2000);
  ASSERT_EQ(e.s().write(d, false), 720);
  ASSERT_EQ(e.sent().size(), 3u);
  e.from_peer(data_msg(), bytes(10));
  std::vector<std::uint8_t> buf;
  ASSERT_EQ(e.read(buf, 100).n, 10u);  // the buffer is re-posted: one grant, due at once
  EXPECT_FALSE(e.s().writable());
  EXPECT_EQ(e.s().write(d, false), -EAGAIN);
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m.back().type, Type::credit);
  EXPECT_EQ(m.back().credits, 1u);
  EXPECT_EQ(e.s().send_credits(), 0u);
}

// SIOCOUTQ (tcp(7)): what was written and the peer has not taken yet.
TEST(EstpTx, UnsentOctetsCountDataUntilItsSendCompletes) {
  Lone e(local(), Hello{false, 8, 256});
  EXPECT_EQ(e.s().unsent_octets(), 0u);
  ASSERT_EQ(e.s().write(bytes(500), false), 500);  // three DATA messages
  EXPECT_EQ(e.s().unsent_octets(), 500u);
  e.v.complete_sends();
  e.s().progress();
  EXPECT_EQ(e.s().unsent_octets(), 0u);
}

TEST(EstpTx, PeerGrantsAddToSendCredits) {
  Lone e(local(), Hello{false, 4, 256});
  const auto d = bytes(2000);
  ASSERT_EQ(e.s().write(d, false), 720);
  e.from_peer(Message{.type = Type::credit, .credits = 3});
  EXPECT_EQ(e.s().send_credits(), 4u);
  EXPECT_TRUE(e.s().writable());
  e.from_peer(data_msg(2), bytes(1));  // any message type returns credits
  EXPECT_EQ(e.s().send_credits(), 6u);
}

TEST(EstpTx, SendBuffersComeBackOnlyWhenTheVerbsCompleteTheSend) {
  // 100 credits but at most 64 send buffers: the 65th DATA waits for a Send completion.
  Lone e(local(), Hello{false, 100, 256});
  const auto d = bytes(240 * 70);
  EXPECT_EQ(e.s().write(d, false), 240 * 64);
  EXPECT_FALSE(e.s().writable());
  EXPECT_FALSE(e.s().tx_idle());
  e.v.complete_sends();
  e.s().progress();
  EXPECT_TRUE(e.s().writable());
  EXPECT_TRUE(e.s().tx_idle());
  EXPECT_EQ(e.s().write({d.data(), 240}, false), 240);
}

TEST(EstpTx, EmptyWriteInStreamModeSendsNothing) {
  Lone e(local());
  EXPECT_EQ(e.s().write({}, true), 0);
  EXPECT_TRUE(e.v.sends.empty());
}

TEST(EstpTx, EomIsNeverSetInStreamMode) {
  Lone e(local());
  ASSERT_EQ(e.s().write(bytes(10), true), 10);
  EXPECT_EQ(e.sent().at(0).flags, 0u);
}

TEST(EstpTx, MsgmodeSetsEomOnTheLastPieceOnly) {
  Lone e(local(4, 1024, true), Hello{true, 8, 256});
  ASSERT_EQ(e.s().write(bytes(500), true), 500);
  ASSERT_EQ(e.s().write(bytes(10), false), 10);  // a piece of a message still open
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].flags, 0u);
  EXPECT_EQ(m[1].flags, 0u);
  EXPECT_EQ(m[2].flags, flag_eom);
  EXPECT_EQ(m[2].length, 20u);
  EXPECT_EQ(m[3].flags, 0u);
}

TEST(EstpTx, MsgmodeEmptyWriteSendsZeroLengthDataWithEom) {
  Lone e(local(4, 1024, true), Hello{true, 4, 256});
  EXPECT_EQ(e.s().write({}, true), 0);
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, Type::data);
  EXPECT_EQ(m[0].length, 0u);
  EXPECT_EQ(m[0].flags, flag_eom);
}

TEST(EstpTx, CanWriteWholeCountsPiecesAgainstCreditsAndTheLastCreditRule) {
  Lone e(local(4, 1024, true), Hello{true, 4, 256});  // 4 credits, 240 octets per piece
  EXPECT_TRUE(e.s().can_write_whole(0));
  EXPECT_TRUE(e.s().can_write_whole(3 * 240));  // 3 pieces + the kept credit
  EXPECT_FALSE(e.s().can_write_whole(3 * 240 + 1));
  ASSERT_EQ(e.s().write(bytes(480), true), 480);  // 2 credits left
  EXPECT_TRUE(e.s().can_write_whole(240));
  EXPECT_FALSE(e.s().can_write_whole(241));
  ASSERT_EQ(e.s().write(bytes(1), true), 1);  // 1 credit left, no grant to carry
  EXPECT_FALSE(e.s().can_write_whole(1));
  EXPECT_FALSE(e.s().can_write_whole(0));
  e.from_peer(data_msg(0, flag_eom), bytes(3));
  std::vector<std::uint8_t> buf;
  ASSERT_EQ(e.read(buf, 10).n, 3u);  // a grant to return: still no DATA on the last credit
  EXPECT_FALSE(e.s().can_write_whole(1));
  e.from_peer(Message{.type = Type::credit, .credits = 2});  // (our grant may go meanwhile)
  e.v.complete_sends();
  e.s().progress();
  const std::size_t spare = e.s().send_credits() - 1;  // all but the last
  ASSERT_GE(spare, 1u);
  EXPECT_TRUE(e.s().can_write_whole(spare * 240));
  EXPECT_FALSE(e.s().can_write_whole(spare * 240 + 1));
}

// ---------------------------------------------------------------- CREDIT (section 6)

TEST(EstpCredit, ConsumedDataReturnsItsBufferOnTheNextOutgoingMessage) {
  Lone e(local(8, 1024));
  e.from_peer(data_msg(), bytes(10));
  EXPECT_EQ(e.v.recvs.size(), 7u);  // held until the application reads
  std::vector<std::uint8_t> buf;
  ASSERT_EQ(e.read(buf, 4).n, 4u);
  EXPECT_EQ(e.v.recvs.size(), 7u);  // partly read: still held
  ASSERT_EQ(e.read(buf, 100).n, 6u);
  EXPECT_EQ(e.v.recvs.size(), 8u);
  EXPECT_TRUE(e.sent().empty());  // one grant, peer not starving: it waits for a ride
  ASSERT_EQ(e.s().write(bytes(1), false), 1);
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].credits, 1u);
  ASSERT_EQ(e.s().write(bytes(1), false), 1);
  EXPECT_EQ(e.sent().at(0).credits, 0u);  // each grant is returned once
}

TEST(EstpCredit, PeekNeitherConsumesNorReturnsTheBuffer) {
  Lone e(local());
  e.from_peer(data_msg(), bytes(10));
  std::vector<std::uint8_t> buf;
  const ReadOut r = e.read(buf, 100, /*peek=*/true);
  EXPECT_EQ(r.n, 10u);
  EXPECT_EQ(buf[0], 1);
  EXPECT_EQ(e.v.recvs.size(), 3u);
  EXPECT_TRUE(e.s().readable());
  EXPECT_EQ(e.read(buf, 100).n, 10u);
  EXPECT_EQ(e.v.recvs.size(), 4u);
}

TEST(EstpCredit, StandaloneCreditWhenLoudGrantsReachHalfOfR) {
  Lone e(local(4, 1024));
  e.from_peer(data_msg(), bytes(5));
  e.from_peer(data_msg(), bytes(5));
  std::vector<std::uint8_t> buf;
  ASSERT_EQ(e.read(buf, 5).n, 5u);
  EXPECT_TRUE(e.sent().empty());  // 1 < R/2 and the peer still has 2 credits
  ASSERT_EQ(e.read(buf, 5).n, 5u);
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, Type::credit);
  EXPECT_EQ(m[0].credits, 2u);
  EXPECT_EQ(m[0].length, 0u);
  EXPECT_EQ(e.s().stats().credit_tx, 1u);
}

TEST(EstpCredit, StandaloneCreditAtOnceWhenThePeerMayBeStarving) {
  Lone e(local(8, 1024));                                         // R/2 = 4
  for (int i = 0; i < 7; ++i) e.from_peer(data_msg(), bytes(1));  // peer has 1 credit left
  std::vector<std::uint8_t> buf;
  ASSERT_EQ(e.read(buf, 1).n, 1u);
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, Type::credit);
  EXPECT_EQ(m[0].credits, 1u);
}

TEST(EstpCredit, ControlMessagesReturnTheirBufferAtOnce) {
  Lone e(local(4, 1024));
  for (const Type t : {Type::credit, Type::rdmadone, Type::sinkavail, Type::sinkcancel}) {
    const std::uint32_t len = t == Type::sinkavail ? 4096 : 0;  // a sink has a capacity
    e.from_peer(Message{.type = t, .length = len, .id = 77});
    EXPECT_EQ(e.v.recvs.size(), 4u) << int(t);
  }
  EXPECT_EQ(e.s().error(), 0);
}

TEST(EstpCredit, QuietGrantsGoBackOnlyInBulkToAStarvingPeer) {
  Lone e(local(4, 1024));
  e.from_peer(Message{.type = Type::credit});
  e.from_peer(Message{.type = Type::credit});
  EXPECT_TRUE(e.sent().empty());  // 2 quiet grants but the peer still has 2 credits
  e.from_peer(Message{.type = Type::credit});
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, Type::credit);
  EXPECT_EQ(m[0].credits, 3u);
}

TEST(EstpCredit, ALoneQuietGrantIsHeldBackSoIdleEndsDoNotPingPong) {
  Lone e(local(2, 1024));
  e.from_peer(Message{.type = Type::credit});  // the peer has 1 credit left
  e.s().progress();
  EXPECT_TRUE(e.sent().empty());
  ASSERT_EQ(e.s().write(bytes(1), false), 1);  // it rides on the next real message
  EXPECT_EQ(e.sent().at(0).credits, 1u);
}

TEST(EstpCredit, PostedReceivesNeverExceedR) {
  Lone e(local(4, 1024));
  for (int round = 0; round < 20; ++round) {
    e.from_peer(data_msg(1), bytes(3));
    e.from_peer(Message{.type = Type::credit, .credits = 1});
    std::vector<std::uint8_t> buf;
    ASSERT_EQ(e.read(buf, 10).n, 3u);
    e.v.complete_sends();
    e.s().progress();
    EXPECT_EQ(e.v.recvs.size(), 4u);
  }
}

// ---------------------------------------------------------------- DATA in

TEST(EstpRx, DataIsDeliveredInOrderAcrossMessagesAndIovecs) {
  Lone e(local());
  const auto a = bytes(30, 1), b = bytes(20, 100);
  e.from_peer(data_msg(), a);
  e.from_peer(data_msg(), b);
  EXPECT_TRUE(e.s().readable());
  std::vector<std::uint8_t> x(7), y(100);
  const mut_bytes dst[2] = {x, y};
  const ReadOut r = e.s().read(dst, false);
  EXPECT_EQ(r.n, 50u);
  EXPECT_EQ(r.err, 0);
  EXPECT_FALSE(r.eom);
  std::vector<std::uint8_t> got(x);
  got.insert(got.end(), y.begin(), y.begin() + 43);
  std::vector<std::uint8_t> want(a);
  want.insert(want.end(), b.begin(), b.end());
  EXPECT_EQ(got, want);
  EXPECT_FALSE(e.s().readable());
  EXPECT_EQ(e.read(y, 10).err, EAGAIN);
  EXPECT_EQ(e.s().stats().data_rx, 2u);
}

TEST(EstpRx, ZeroLengthDataInStreamModeDeliversNothingAndReturnsItsBuffer) {
  Lone e(local());
  e.from_peer(data_msg());
  EXPECT_FALSE(e.s().readable());
  std::vector<std::uint8_t> buf;
  EXPECT_EQ(e.read(buf, 10).err, EAGAIN);
  EXPECT_EQ(e.v.recvs.size(), 4u);
  EXPECT_EQ(e.s().error(), 0);
}

TEST(EstpRx, EomIsIgnoredInStreamMode) {
  Lone e(local());
  e.from_peer(data_msg(0, flag_eom), bytes(3));
  e.from_peer(data_msg(0, flag_eom), bytes(4));
  std::vector<std::uint8_t> buf;
  const ReadOut r = e.read(buf, 100);
  EXPECT_EQ(r.n, 7u);
  EXPECT_FALSE(r.eom);
  EXPECT_FALSE(r.truncated);
}

// ---------------------------------------------------------------- SINKAVAIL / SINKCANCEL

TEST(EstpRx, SinkavailIsNeverWrittenAndTheStreamGoesOn) {
  Lone e(local(8, 1024));
  e.from_peer(
      Message{.type = Type::sinkavail, .length = 1 << 20, .stag = 9, .to = 0x1000, .id = 1});
  e.from_peer(Message{.type = Type::sinkcancel, .id = 1});
  ASSERT_EQ(e.s().write(bytes(100), false), 100);
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, Type::data);  // the sink goes void: data is copied, not written
  EXPECT_EQ(e.s().error(), 0);
  EXPECT_FALSE(e.s().readable());
}

// ---------------------------------------------------------------- FIN (section 8)

TEST(EstpFin, ShutdownWriteSendsFinAfterEverythingWritten) {
  Lone e(local());
  ASSERT_EQ(e.s().write(bytes(10), false), 10);
  e.s().shutdown_write();
  EXPECT_TRUE(e.s().write_shut());
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[1].type, Type::fin);
  EXPECT_EQ(m[1].length, 0u);
  EXPECT_EQ(e.s().write(bytes(1), false), -EPIPE);
  EXPECT_EQ(e.s().write({}, true), -EPIPE);
  EXPECT_TRUE(e.s().writable());  // a write fails at once
  e.s().shutdown_write();
  e.s().progress();
  EXPECT_TRUE(e.sent().empty());  // FIN goes once
}

TEST(EstpFin, FinMayUseTheLastCredit) {
  Lone e(local(), Hello{false, 4, 256});
  ASSERT_EQ(e.s().write(bytes(2000), false), 720);
  ASSERT_EQ(e.s().send_credits(), 1u);
  e.s().shutdown_write();
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m.back().type, Type::fin);
  EXPECT_EQ(e.s().send_credits(), 0u);
}

TEST(EstpFin, FinWaitsForCreditAndTxIdleWaitsForFin) {
  Lone e(local(), Hello{false, 4, 256});
  ASSERT_EQ(e.s().write(bytes(2000), false), 720);
  e.s().shutdown_write();  // takes the last credit
  e.v.complete_sends();
  e.s().progress();
  EXPECT_TRUE(e.s().tx_idle());

  Lone f(local(2, 1024, false), Hello{false, 2, 256});
  ASSERT_EQ(f.s().write(bytes(1), false), 1);  // 1 credit left
  f.from_peer(data_msg(), bytes(1));           // no grant returned by the peer
  std::vector<std::uint8_t> buf;
  ASSERT_EQ(f.read(buf, 10).n, 1u);  // one grant pending: a CREDIT takes the last credit
  ASSERT_EQ(f.s().send_credits(), 0u);
  f.sent();
  f.s().shutdown_write();
  f.v.complete_sends();
  f.s().progress();
  EXPECT_TRUE(f.sent().empty());
  EXPECT_FALSE(f.s().tx_idle());  // close must wait: FIN not handed to the verbs yet
  f.from_peer(Message{.type = Type::credit, .credits = 1});
  const auto m = f.sent();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, Type::fin);
  f.v.complete_sends();
  f.s().progress();
  EXPECT_TRUE(f.s().tx_idle());
}

TEST(EstpFin, PeerFinEndsTheStreamAfterItsData) {
  Lone e(local());
  e.from_peer(data_msg(), bytes(5));
  e.from_peer(Message{.type = Type::fin});
  EXPECT_TRUE(e.s().peer_fin());
  std::vector<std::uint8_t> buf;
  ReadOut r = e.read(buf, 100);
  EXPECT_EQ(r.n, 5u);
  EXPECT_TRUE(e.s().readable());
  r = e.read(buf, 100);
  EXPECT_EQ(r.n, 0u);
  EXPECT_EQ(r.err, 0);  // end of stream, again and again
  EXPECT_EQ(e.read(buf, 100).err, 0);
  ASSERT_EQ(e.s().write(bytes(3), false), 3);  // half close: the other way still works
  EXPECT_EQ(e.s().error(), 0);
}

TEST(EstpFin, GrantsAndRdmadoneStillArriveAfterPeerFin) {
  Lone e(local(), Hello{false, 4, 256});
  const auto src = bytes(100);
  ASSERT_EQ(e.s().start_rndv(src), 0);
  e.from_peer(Message{.type = Type::fin});
  e.from_peer(Message{.type = Type::credit, .credits = 1});
  e.from_peer(Message{.type = Type::rdmadone, .length = 100, .id = 1});
  EXPECT_EQ(e.s().error(), 0);
  EXPECT_EQ(e.s().rndv_finished(), std::optional<std::size_t>(100));
}

// Copy-on-write (AZ-SDP): an outstanding source moves to a copy; its old memory is the
// application's once the verbs read none of it, while the rendezvous goes on from the copy.
TEST(EstpRndv, AMovedSourceIsReadFromTheCopyUntilItsRdmadone) {
  Lone e(local(), Hello{false, 4, 256});
  const auto src = bytes(100);
  std::uint32_t id = 0;
  ASSERT_EQ(e.s().start_rndv(src, &id), 0);
  const ddp::stag_t stag = e.v.mrs.rbegin()->first;
  EXPECT_TRUE(e.s().rndv_reads_old(id)) << "not moved: the source is read";
  e.v.reading.insert(stag);  // a Read Response from the source is in flight
  std::vector<std::uint8_t> copy(src.begin(), src.end());
  ASSERT_EQ(e.s().move_rndv(id, copy.data()), 0);
  EXPECT_EQ(e.v.mrs.at(stag).addr, copy.data());
  EXPECT_TRUE(e.s().rndv_reads_old(id));
  e.v.reading_old.erase(stag);  // TCP released what it sent from the source
  EXPECT_FALSE(e.s().rndv_reads_old(id));
  EXPECT_EQ(e.s().move_rndv(id, copy.data()), 0) << "moved once only";
  EXPECT_EQ(e.s().move_rndv(id + 1, copy.data()), ENOENT);
  e.from_peer(Message{.type = Type::rdmadone, .length = 100, .id = id});
  EXPECT_FALSE(e.s().rndv_finished()) << "the copy is still read";
  e.v.reading.erase(stag);
  EXPECT_EQ(e.s().rndv_finished(), std::optional<std::size_t>(100));
  EXPECT_TRUE(e.s().rndv_reads_old(id)) << "no longer outstanding: not known";
}

TEST(EstpRndv, APulledOrUnmovableSourceIsNotMoved) {
  Lone e(local(), Hello{false, 4, 256});
  const auto src = bytes(100);
  std::uint32_t id = 0;
  ASSERT_EQ(e.s().start_rndv(src, &id), 0);
  std::vector<std::uint8_t> copy(src.begin(), src.end());
  e.v.move_error = EOPNOTSUPP;  // an RNIC reads the memory itself
  EXPECT_EQ(e.s().move_rndv(id, copy.data()), EOPNOTSUPP);
  EXPECT_TRUE(e.s().rndv_reads_old(id));
  e.v.move_error = 0;
  e.v.reading.insert(e.v.mrs.rbegin()->first);
  e.from_peer(Message{.type = Type::rdmadone, .length = 100, .id = id});
  EXPECT_EQ(e.s().move_rndv(id, copy.data()), ENOENT) << "pulled: nothing new reads it";
}

// Section 6: after the peer's FIN every loud grant goes back at once (before it, one waits
// for more or for a starving peer): the peer's close over rdmacm waits for them.
TEST(EstpFin, AfterThePeersFinEveryGrantGoesBackAtOnce) {
  Lone e(local(8, 1024));
  e.sent();
  e.from_peer(data_msg(), bytes(5));
  e.from_peer(data_msg(), bytes(6));
  std::vector<std::uint8_t> buf;
  ASSERT_EQ(e.read(buf, 5).n, 5u);
  e.s().progress();
  EXPECT_TRUE(e.sent().empty());  // 1 of 8 buffers and the peer has credit: held
  e.from_peer(Message{.type = Type::fin});
  EXPECT_TRUE(e.sent().empty());  // 6 octets before the FIN are unread: still held
  ASSERT_EQ(e.read(buf, 100).n, 6u);
  e.s().progress();
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, Type::credit);
  EXPECT_EQ(m[0].credits, 3u);  // both DATA buffers and the FIN's, at once
  e.from_peer(Message{.type = Type::credit, .credits = 1});  // a quiet grant: still held
  EXPECT_TRUE(e.sent().empty());
}

// Section 8: a close over rdmacm waits until the peer granted back every message up to
// our FIN; grants for messages after it cannot count for it.
TEST(EstpFin, TheFinIsDeliveredOnceThePeerGrantedEverythingUpToIt) {
  Lone e(local(), Hello{false, 4, 256});
  e.sent();
  ASSERT_EQ(e.s().write(bytes(10), false), 10);
  EXPECT_FALSE(e.s().fin_delivered());  // no FIN yet
  e.s().shutdown_write();
  ASSERT_EQ(e.sent().size(), 2u);
  EXPECT_FALSE(e.s().fin_delivered());
  e.from_peer(Message{.type = Type::credit, .credits = 1});  // the DATA's
  EXPECT_FALSE(e.s().fin_delivered());
  e.from_peer(Message{.type = Type::credit, .credits = 1});  // the FIN's
  EXPECT_TRUE(e.s().fin_delivered());

  // A message of ours after the FIN (a CREDIT for what we read: R = 2 grants each at once)
  // is not the FIN's: its grant does not count for it.
  Lone g(local(2, 1024), Hello{false, 4, 256});
  g.sent();
  ASSERT_EQ(g.s().write(bytes(10), false), 10);
  g.s().shutdown_write();
  g.from_peer(data_msg(), bytes(1));
  std::vector<std::uint8_t> buf;
  ASSERT_EQ(g.read(buf, 10).n, 1u);
  g.s().progress();
  const auto m = g.sent();
  ASSERT_EQ(m.size(), 3u);  // DATA, FIN, then a CREDIT
  EXPECT_EQ(m[2].type, Type::credit);
  g.from_peer(Message{.type = Type::credit, .credits = 1});
  EXPECT_FALSE(g.s().fin_delivered());
  g.from_peer(Message{.type = Type::credit, .credits = 1});  // DATA and FIN granted
  EXPECT_TRUE(g.s().fin_delivered());

  Lone f(local(), Hello{false, 4, 256});
  f.s().shutdown_write();
  f.from_peer(Message{.type = Type::data, .length = 1}, bytes(1));
  EXPECT_FALSE(f.s().fin_delivered());
  f.from_peer_raw(bytes(3));  // malformed: the stream failed, nothing to wait for
  EXPECT_NE(f.s().error(), 0);
  EXPECT_TRUE(f.s().fin_delivered());
}

// Issue 14, item 1: the peer's socket is closed (its TCP FIN arrived): nothing written can
// be read any more, so writes fail with EPIPE as on TCP (they waited for credits forever,
// or a non-blocking writer spun on EAGAIN); what arrived before is still read, then EOF.
TEST(EstpFin, WritesAfterThePeerClosedFailWithEpipeAndReadsStillDrain) {
  Lone e(local(), Hello{false, 4, 256});
  e.from_peer(Message{.type = Type::data}, bytes(10));
  e.from_peer(Message{.type = Type::fin});
  e.s().peer_closed();
  EXPECT_TRUE(e.s().peer_gone());
  EXPECT_EQ(e.s().write(bytes(5), false), -EPIPE);
  EXPECT_EQ(e.s().start_rndv(bytes(5000)), EPIPE);
  EXPECT_TRUE(e.s().writable());  // a poller wakes and gets the error
  EXPECT_TRUE(e.s().can_write_whole(100));
  std::vector<std::uint8_t> buf;
  EXPECT_EQ(e.read(buf, 100).n, 10u);
  const ReadOut eof = e.read(buf, 100);
  EXPECT_EQ(eof.n, 0u);
  EXPECT_EQ(eof.err, 0);
}

TEST(EstpFin, FlushedReceivesAfterPeerFinAreAnOrderlyClose) {
  Lone e(local());
  e.from_peer(Message{.type = Type::fin});
  e.v.flush_recvs();
  e.s().progress();
  EXPECT_EQ(e.s().error(), 0);
  std::vector<std::uint8_t> buf;
  EXPECT_EQ(e.read(buf, 10).err, 0);
}

// ---------------------------------------------------------------- SRCAVAIL out (6.1)

TEST(EstpRndv, SrcavailAdvertisesTheSourceRegisteredForRemoteRead) {
  Lone e(local());
  const auto src = bytes(5000);
  ASSERT_EQ(e.s().start_rndv(src), 0);
  EXPECT_TRUE(e.s().rndv_active());
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, Type::srcavail);
  EXPECT_EQ(m[0].length, 5000u);
  EXPECT_EQ(m[0].id, 1u);
  EXPECT_EQ(m[0].flags, 0u);
  EXPECT_EQ(m[0].to, reinterpret_cast<std::uintptr_t>(src.data()));
  ASSERT_TRUE(e.v.registered(m[0].stag));
  const auto& mr = e.v.mrs.at(m[0].stag);
  EXPECT_EQ(mr.addr, src.data());
  EXPECT_EQ(mr.len, 5000u);
  EXPECT_EQ(mr.access, ddp::access_remote_read);
  EXPECT_EQ(e.s().stats().srcavail_tx, 1u);
  EXPECT_FALSE(e.s().writable());  // one rendezvous at a time
  EXPECT_EQ(e.s().rndv_finished(), std::nullopt);
}

TEST(EstpRndv, RdmadoneEndsTheRendezvousAndReleasesTheSource) {
  Lone e(local());
  const auto src = bytes(5000);
  ASSERT_EQ(e.s().start_rndv(src), 0);
  const Message adv = e.sent().at(0);
  e.from_peer(Message{.type = Type::rdmadone, .length = 5000, .id = adv.id});
  EXPECT_EQ(e.s().rndv_finished(), std::optional<std::size_t>(5000));
  EXPECT_FALSE(e.v.registered(adv.stag));
  EXPECT_FALSE(e.s().rndv_active());
  EXPECT_TRUE(e.s().writable());
  EXPECT_EQ(e.s().rndv_finished(), std::nullopt);
  ASSERT_EQ(e.s().start_rndv(src), 0);
  EXPECT_EQ(e.sent().at(0).id, 2u);  // ids count up by one per rendezvous
}

TEST(EstpRndv, RdmadoneForAnotherIdIsIgnored) {
  Lone e(local());
  const auto src = bytes(5000);
  ASSERT_EQ(e.s().start_rndv(src), 0);
  e.from_peer(Message{.type = Type::rdmadone, .length = 5000, .id = 2});
  EXPECT_EQ(e.s().rndv_finished(), std::nullopt);
  EXPECT_TRUE(e.s().rndv_active());
  EXPECT_EQ(e.s().error(), 0);
}

TEST(EstpRndv, RdmadoneWithoutARendezvousIsIgnored) {
  Lone e(local());
  e.from_peer(Message{.type = Type::rdmadone, .length = 5, .id = 1});
  EXPECT_EQ(e.s().error(), 0);
  EXPECT_EQ(e.s().rndv_finished(), std::nullopt);
}

TEST(EstpRndv, MsgmodeSrcavailAlwaysCarriesEomAndALengthShortReaderEndsIt) {
  Lone e(local(4, 1024, true), Hello{true, 4, 4096});
  const auto src = bytes(5000);
  ASSERT_EQ(e.s().start_rndv(src), 0);
  const Message adv = e.sent().at(0);
  EXPECT_EQ(adv.flags, flag_eom);
  // A truncating reader pulled 100 of the 5000: the message is sent all the same.
  e.from_peer(Message{.type = Type::rdmadone, .length = 100, .id = adv.id});
  EXPECT_EQ(e.s().rndv_finished(), std::optional<std::size_t>(100));
}

// Issue 20, item 1: RDMADONE while the source is still read (a hostile peer's early one,
// or octets TCP may retransmit): the source is deregistered at once, so no new Read
// Response segment is sourced from it, but the writer is released only once nothing reads it.
TEST(EstpRndv, RdmadoneWhileTheSourceIsStillReadDeregistersItButHoldsTheWriter) {
  Lone e(local());
  const auto src = bytes(5000);
  ASSERT_EQ(e.s().start_rndv(src), 0);
  const Message adv = e.sent().at(0);
  e.v.reading.insert(adv.stag);
  EXPECT_FALSE(e.s().rndv_pulled());
  e.from_peer(Message{.type = Type::rdmadone, .length = 5000, .id = adv.id});
  EXPECT_TRUE(e.s().rndv_pulled());  // delivered: a later reset does not fail the write
  EXPECT_EQ(e.s().rndv_finished(), std::nullopt);
  EXPECT_FALSE(e.v.registered(adv.stag));
  EXPECT_TRUE(e.s().rndv_active());
  EXPECT_FALSE(e.s().writable());
  EXPECT_EQ(e.s().rndv_finished(), std::nullopt);
  EXPECT_EQ(e.v.deregistered.size(), 1u);  // once
  e.v.reading.clear();
  EXPECT_EQ(e.s().rndv_finished(), std::optional<std::size_t>(5000));
  EXPECT_FALSE(e.s().rndv_active());
}

TEST(EstpRndv, RdmadoneClaimingMoreThanTheOfferCountsTheOffer) {
  Lone e(local());
  const auto src = bytes(5000);
  ASSERT_EQ(e.s().start_rndv(src), 0);
  const Message adv = e.sent().at(0);
  e.from_peer(Message{.type = Type::rdmadone, .length = 0xffffffff, .id = adv.id});
  EXPECT_EQ(e.s().rndv_finished(), std::optional<std::size_t>(5000));
  EXPECT_EQ(e.s().stats().rdmadone_clamped, 1u);
}

TEST(EstpRndv, ACancelledRendezvousIsReleasedOnlyWhenNothingReadsTheBuffer) {
  Lone e(local());
  const auto src = bytes(5000);
  EXPECT_TRUE(e.s().rndv_released());
  ASSERT_EQ(e.s().start_rndv(src), 0);
  EXPECT_FALSE(e.s().rndv_released());
  const Message adv = e.sent().at(0);
  e.v.reading.insert(adv.stag);
  e.s().cancel_rndv();
  EXPECT_FALSE(e.v.registered(adv.stag));
  EXPECT_FALSE(e.s().rndv_released());
  e.v.reading.clear();
  EXPECT_TRUE(e.s().rndv_released());
}

TEST(EstpRndv, CancelRndvDeregistersAtOnceAndALateRdmadoneIsIgnored) {
  Lone e(local());
  const auto src = bytes(5000);
  ASSERT_EQ(e.s().start_rndv(src), 0);
  const Message adv = e.sent().at(0);
  e.s().cancel_rndv();
  EXPECT_FALSE(e.v.registered(adv.stag));  // a late Read Request fails its STag check
  EXPECT_FALSE(e.s().rndv_active());
  e.from_peer(Message{.type = Type::rdmadone, .length = 5000, .id = adv.id});
  EXPECT_EQ(e.s().rndv_finished(), std::nullopt);
  EXPECT_EQ(e.s().error(), 0);
  e.s().cancel_rndv();  // nothing active: a no-op
  EXPECT_EQ(e.v.deregistered.size(), 1u);
}

TEST(EstpRndv, DestroyingTheStreamReleasesEveryRegistration) {
  const auto src = bytes(5000);
  FakeVerbs v;
  {
    Stream s(v, local(), Hello{false, 4, 4096});
    ASSERT_EQ(s.start(true), 0);
    ASSERT_EQ(s.start_rndv(src), 0);
  }
  EXPECT_TRUE(v.mrs.empty());
}

// ---------------------------------------------------------------- SRCAVAIL in: pulls

struct Src {
  std::vector<std::uint8_t> data;
  Message adv;
};
Src offer(Lone& e, std::size_t n, std::uint32_t id = 1, std::uint16_t flags = 0) {
  Src s{bytes(n, 7), {}};
  s.adv = Message{.type = Type::srcavail,
                  .flags = flags,
                  .length = static_cast<std::uint32_t>(n),
                  .stag = 0x5151,
                  .to = 0x7f0000001000,
                  .id = id};
  e.from_peer(s.adv);
  return s;
}

TEST(EstpPull, SrcavailWaitsForAReaderToPull) {
  Lone e(local());
  offer(e, 3000);
  EXPECT_FALSE(e.s().readable());
  EXPECT_TRUE(e.s().pull_needed());
  EXPECT_TRUE(e.s().prefetch_needed());
  std::vector<std::uint8_t> buf;
  EXPECT_EQ(e.read(buf, 100).err, EAGAIN);
  EXPECT_TRUE(e.v.reads.empty());   // nothing is read before somebody pulls
  EXPECT_EQ(e.v.recvs.size(), 4u);  // the descriptor was copied out
  EXPECT_EQ(e.s().stats().srcavail_rx, 1u);
}

TEST(EstpPull, ZeroCopyPullReadsTheAdvertisedSourceIntoTheCallersBuffer) {
  Lone e(local());
  const Src src = offer(e, 3000);
  std::vector<std::uint8_t> dst(4000);
  ASSERT_EQ(e.s().pull(dst), 0);
  EXPECT_TRUE(e.s().pulling());
  ASSERT_EQ(e.v.reads.size(), 1u);
  const auto& rd = e.v.reads[0];
  EXPECT_EQ(rd.rkey, src.adv.stag);
  EXPECT_EQ(rd.remote_to, src.adv.to);
  EXPECT_EQ(rd.len, 3000u);
  EXPECT_EQ(rd.addr, dst.data());
  EXPECT_EQ(e.v.mrs.at(rd.lkey).access, ddp::access_local_write);
  EXPECT_EQ(e.s().pull_result(), std::nullopt);
  e.v.complete_read(src.data);
  e.s().progress();
  EXPECT_FALSE(e.v.registered(rd.lkey));  // registered for the duration only
  EXPECT_TRUE(e.s().readable());
  const auto r = e.s().pull_result();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->n, 3000u);
  EXPECT_EQ(r->err, 0);
  EXPECT_TRUE(std::equal(src.data.begin(), src.data.end(), dst.begin()));
  EXPECT_EQ(e.s().stats().zero_copy_pulls, 1u);
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, Type::rdmadone);
  EXPECT_EQ(m[0].id, 1u);
  EXPECT_EQ(m[0].length, 3000u);
  EXPECT_FALSE(e.s().readable());
}

TEST(EstpPull, ASmallReaderPullsInPiecesFromToPlusAlreadyPulled) {
  Lone e(local());
  const Src src = offer(e, 3000);
  std::vector<std::uint8_t> got;
  std::vector<std::uint8_t> dst(1000);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(e.s().pull(dst), 0);
    EXPECT_EQ(e.v.reads.back().remote_to, src.adv.to + 1000u * static_cast<unsigned>(i));
    e.v.complete_read({src.data.data() + 1000 * i, 1000});
    e.s().progress();
    const auto r = e.s().pull_result();
    ASSERT_TRUE(r);
    got.insert(got.end(), dst.begin(), dst.begin() + static_cast<long>(r->n));
    // RDMADONE only once all `length` octets are pulled.
    EXPECT_EQ(e.sent().size(), i == 2 ? 1u : 0u);
  }
  EXPECT_EQ(got, src.data);
}

TEST(EstpPull, BouncePullReadsLikeDataAndReleasesTheWriter) {
  Lone e(local());
  const Src src = offer(e, 3000);
  ASSERT_EQ(e.s().pull_bounce(), 0);
  EXPECT_EQ(e.v.reads.at(0).len, 3000u);
  EXPECT_FALSE(e.s().prefetch_needed());  // one pull at a time
  e.v.complete_read(src.data);
  e.s().progress();
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, Type::rdmadone);  // the writer is released before anybody reads
  EXPECT_EQ(m[0].length, 3000u);
  EXPECT_TRUE(e.s().readable());
  std::vector<std::uint8_t> buf;
  const ReadOut r = e.read(buf, 5000);
  ASSERT_EQ(r.n, 3000u);
  buf.resize(3000);
  EXPECT_EQ(buf, src.data);
  EXPECT_EQ(e.s().stats().bounce_pulls, 1u);
}

TEST(EstpPull, DataAfterASrcavailIsReadOnlyAfterTheSourcesOctets) {
  Lone e(local());
  e.from_peer(data_msg(), bytes(10, 200));
  const Src src = offer(e, 50);
  e.from_peer(data_msg(), bytes(10, 100));
  std::vector<std::uint8_t> buf;
  EXPECT_EQ(e.read(buf, 100).n, 10u);  // stops before the unpulled source
  EXPECT_EQ(e.read(buf, 100).err, EAGAIN);
  EXPECT_TRUE(e.s().pull_needed());
  ASSERT_EQ(e.s().pull_bounce(), 0);
  e.v.complete_read(src.data);
  e.s().progress();
  const ReadOut r = e.read(buf, 100);
  ASSERT_EQ(r.n, 60u);
  EXPECT_TRUE(std::equal(src.data.begin(), src.data.end(), buf.begin()));
  EXPECT_EQ(buf[50], 100);
}

TEST(EstpPull, PrefetchFetchesASourceBehindQueuedData) {
  Lone e(local());
  e.from_peer(data_msg(), bytes(10));
  const Src src = offer(e, 50);
  EXPECT_FALSE(e.s().pull_needed());  // data comes first
  EXPECT_TRUE(e.s().prefetch_needed());
  ASSERT_EQ(e.s().pull_bounce(), 0);
  e.v.complete_read(src.data);
  e.s().progress();
  std::vector<std::uint8_t> buf;
  EXPECT_EQ(e.read(buf, 100).n, 60u);
}

TEST(EstpPull, PrefetchStopsAtFourMiBBuffered) {
  Lone e(local());
  const std::size_t mib4 = 4u << 20;
  const Src src = offer(e, mib4 + 1000);
  ASSERT_EQ(e.s().pull_bounce(), 0);
  EXPECT_EQ(e.v.reads.at(0).len, mib4);
  e.v.complete_read({src.data.data(), mib4});
  e.s().progress();
  EXPECT_TRUE(e.sent().empty());  // 1000 octets still unpulled
  EXPECT_FALSE(e.s().prefetch_needed());
  EXPECT_EQ(e.s().pull_bounce(), EINVAL);
  std::vector<std::uint8_t> buf;
  ASSERT_EQ(e.read(buf, 100).n, 100u);  // reading makes room
  EXPECT_TRUE(e.s().prefetch_needed());
}

// ---------------------------------------------------------------- MSGMODE (section 7)

TEST(EstpMsgmode, AMessageIsReadOnlyOnceItsLastPieceArrived) {
  Lone e(local(8, 1024, true), Hello{true, 4, 4096});
  e.from_peer(data_msg(), bytes(10, 1));
  EXPECT_FALSE(e.s().readable());
  std::vector<std::uint8_t> buf;
  EXPECT_EQ(e.read(buf, 100).err, EAGAIN);
  e.from_peer(data_msg(0, flag_eom), bytes(5, 11));
  e.from_peer(data_msg(0, flag_eom), bytes(3, 50));
  const ReadOut r = e.read(buf, 100);
  EXPECT_EQ(r.n, 15u);
  EXPECT_TRUE(r.eom);
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(buf[14], 15);
  const ReadOut r2 = e.read(buf, 100);  // one message per read
  EXPECT_EQ(r2.n, 3u);
  EXPECT_TRUE(r2.eom);
}

TEST(EstpMsgmode, AShortReadTruncatesAndDiscardsTheRestOfTheMessage) {
  Lone e(local(8, 1024, true), Hello{true, 4, 4096});
  e.from_peer(data_msg(), bytes(10, 1));
  e.from_peer(data_msg(0, flag_eom), bytes(10, 11));
  e.from_peer(data_msg(0, flag_eom), bytes(4, 90));
  std::vector<std::uint8_t> buf;
  ReadOut r = e.read(buf, 12);
  EXPECT_EQ(r.n, 12u);
  EXPECT_TRUE(r.truncated);
  EXPECT_TRUE(r.eom);
  r = e.read(buf, 100);
  EXPECT_EQ(r.n, 4u);
  EXPECT_EQ(buf[0], 90);
  EXPECT_EQ(e.v.recvs.size(), 8u);  // the discarded pieces' buffers went back
}

TEST(EstpMsgmode, TruncationDiscardsEveryPieceOfTheMessageOnly) {
  Lone e(local(8, 1024, true), Hello{true, 4, 4096});
  e.from_peer(data_msg(), bytes(10, 1));
  std::vector<std::uint8_t> buf;
  // The first piece alone is not a message yet.
  EXPECT_EQ(e.read(buf, 5).err, EAGAIN);
  e.from_peer(data_msg(), bytes(10, 11));
  e.from_peer(data_msg(0, flag_eom), bytes(10, 21));
  ReadOut r = e.read(buf, 15);
  EXPECT_EQ(r.n, 15u);
  EXPECT_TRUE(r.truncated);
  e.from_peer(data_msg(0, flag_eom), bytes(2, 77));
  r = e.read(buf, 100);
  EXPECT_EQ(r.n, 2u);
  EXPECT_EQ(buf[0], 77);
}

TEST(EstpMsgmode, AZeroLengthMessageReadsAsEomNotEof) {
  Lone e(local(4, 1024, true), Hello{true, 4, 4096});
  e.from_peer(data_msg(0, flag_eom));
  EXPECT_TRUE(e.s().readable());
  std::vector<std::uint8_t> buf;
  const ReadOut r = e.read(buf, 10);
  EXPECT_EQ(r.n, 0u);
  EXPECT_TRUE(r.eom);
  EXPECT_EQ(r.err, 0);
  EXPECT_EQ(e.read(buf, 10).err, EAGAIN);
}

TEST(EstpMsgmode, AShortZeroCopyPullTruncatesAndReportsWhatWasPulled) {
  Lone e(local(4, 1024, true), Hello{true, 4, 4096});
  const Src src = offer(e, 3000, 1, flag_eom);
  std::vector<std::uint8_t> dst(1000);
  ASSERT_EQ(e.s().pull(dst), 0);
  e.v.complete_read({src.data.data(), 1000});
  e.s().progress();
  const auto r = e.s().pull_result();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->n, 1000u);
  EXPECT_TRUE(r->eom);
  EXPECT_TRUE(r->truncated);
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, Type::rdmadone);
  EXPECT_EQ(m[0].length, 1000u);  // octets pulled, not offered
  EXPECT_FALSE(e.s().pull_needed());
}

TEST(EstpMsgmode, ABouncePullFetchesTheWholeMessageWithinTheBound) {
  Lone e(local(4, 1024, true), Hello{true, 4, 4096});
  const Src src = offer(e, 3u << 20, 1, flag_eom);
  EXPECT_TRUE(e.s().prefetch_needed());
  ASSERT_EQ(e.s().pull_bounce(), 0);
  EXPECT_EQ(e.v.reads.at(0).len, 3u << 20);
  e.v.complete_read(src.data);
  e.s().progress();
  std::vector<std::uint8_t> buf;
  const ReadOut r = e.read(buf, 100);
  EXPECT_EQ(r.n, 100u);
  EXPECT_TRUE(r.truncated);
  EXPECT_TRUE(r.eom);
}

TEST(EstpMsgmode, AMessageBeyondFourMiBIsNotPrefetchedButANonBlockingReaderGetsItWhole) {
  Lone e(local(4, 1024, true), Hello{true, 4, 4096});
  const Src src = offer(e, 6u << 20, 1, flag_eom);
  EXPECT_FALSE(e.s().prefetch_needed());  // left for a reader
  EXPECT_EQ(e.s().pull_bounce(), EINVAL);
  ASSERT_EQ(e.s().pull_bounce(8u << 20), 0);  // a reader whose buffer holds it
  EXPECT_EQ(e.v.reads.at(0).len, 6u << 20);
  e.v.complete_read(src.data);
  e.s().progress();
  std::vector<std::uint8_t> buf;
  const ReadOut r = e.read(buf, 8u << 20);
  EXPECT_EQ(r.n, 6u << 20);
  EXPECT_FALSE(r.truncated);
  EXPECT_TRUE(r.eom);
}

// Hardening (issue 20): a hostile peer's advertised length does not size our allocation.
// An SRCAVAIL of 4 GiB - 1 made the bounce pull allocate all of it (found by
// fuzz_estp_stream: libFuzzer's malloc limit).
TEST(EstpMsgmode, AHostileFourGiBAdvertisementAllocatesAtMostFourMiB) {
  Lone e(local(4, 1024, true), Hello{true, 4, 4096});
  e.from_peer(Message{.type = Type::srcavail,
                      .flags = flag_eom,
                      .length = 0xffffffffu,
                      .stag = 0x5151,
                      .to = 0x1000,
                      .id = 1});
  EXPECT_FALSE(e.s().prefetch_needed());
  ASSERT_EQ(e.s().pull_bounce(100), 0);  // a small non-blocking reader
  EXPECT_EQ(e.v.reads.at(0).len, 4u << 20);
  e.v.complete_read(bytes(4u << 20));
  e.s().progress();
  std::vector<std::uint8_t> buf;
  const ReadOut r = e.read(buf, 100);
  EXPECT_EQ(r.n, 100u);
  EXPECT_TRUE(r.truncated);  // the rest of the message is not delivered
  EXPECT_TRUE(r.eom);
  const auto m = e.sent();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, Type::rdmadone);
  EXPECT_EQ(m[0].length, 4u << 20);  // octets pulled, not offered
}

TEST(EstpPull, AHostileFourGiBAdvertisementInStreamModeIsFetchedFourMiBAtATime) {
  Lone e(local());
  e.from_peer(Message{
      .type = Type::srcavail, .length = 0xffffffffu, .stag = 0x5151, .to = 0x1000, .id = 1});
  ASSERT_EQ(e.s().pull_bounce(), 0);
  EXPECT_EQ(e.v.reads.at(0).len, 4u << 20);
}

// FIONREAD's figure (issue 14): what a read could return, advertised sources included;
// MSGMODE: the next whole message only.
TEST(EstpRx, ReadableOctetsCountsDataAndSourcesAndWholeMessagesOnly) {
  Lone e(local());
  EXPECT_EQ(e.s().readable_octets(), 0u);
  e.from_peer(data_msg(), bytes(10));
  offer(e, 50);
  EXPECT_EQ(e.s().readable_octets(), 60u);
  std::vector<std::uint8_t> buf;
  ASSERT_EQ(e.read(buf, 4).n, 4u);
  EXPECT_EQ(e.s().readable_octets(), 56u);

  Lone m(local(8, 1024, true), Hello{true, 4, 4096});
  m.from_peer(data_msg(), bytes(10));
  EXPECT_EQ(m.s().readable_octets(), 0u);  // not whole yet
  m.from_peer(data_msg(0, flag_eom), bytes(5));
  m.from_peer(data_msg(0, flag_eom), bytes(7));
  EXPECT_EQ(m.s().readable_octets(), 15u);  // the first message only
}

// Hardening (issue 20): the peer's Hello does not size our memory. R = B = 2^32 - 1 made
// the engine register 16 MiB of send buffers per connection.
TEST(EstpHardening, AHostileHelloGetsAtMostFourMiBOfSendBuffers) {
  Lone e(local(), Hello{false, 0xffffffffu, 0xffffffffu});
  ASSERT_EQ(e.start_rc, 0);
  std::size_t registered = 0;
  for (const auto& [stag, mr] : e.v.mrs) registered += mr.len;
  // Ours: local()'s R receive buffers of B octets, plus the send buffers the peer sized.
  const std::size_t receive = std::size_t{local().recv_buffers} * local().recv_buffer_size;
  EXPECT_LE(registered - receive, 4u << 20);
  EXPECT_GT(registered - receive, 0u);
  EXPECT_EQ(e.s().stats().hello_clamped, 1u);
  Lone fair(local(), Hello{false, 4, 65536});
  EXPECT_EQ(fair.s().stats().hello_clamped, 0u);
}

// Hardening (issue 20): SRCAVAILs queued without a reader cost memory, not the peer;
// 2,000,000 of them held 174 MiB. Past 64 queued the stream fails (EPROTO).
TEST(EstpHardening, AFloodOfUnpulledSrcavailsFailsTheStream) {
  Lone e(local());
  for (std::uint32_t i = 1; i <= 64; ++i) {
    e.from_peer(Message{.type = Type::srcavail, .length = 100, .stag = 7, .to = 0x1000, .id = i});
    ASSERT_EQ(e.s().error(), 0) << i;
  }
  e.from_peer(Message{.type = Type::srcavail, .length = 100, .stag = 7, .to = 0x1000, .id = 65});
  EXPECT_EQ(e.s().error(), EPROTO);
}

}  // namespace
}  // namespace esock::estp::testing
