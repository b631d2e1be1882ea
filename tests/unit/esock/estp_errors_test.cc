// Every place the ESTP engine detects an error or refuses, against a scripted peer and
// verbs (estp_fake_verbs.h): malformed and unexpected messages (section 4, 5), messages
// after FIN, failed verbs (posts, registrations, completions), failed RDMA Reads, bad calls,
// fail(errno), and what the application then sees (section 8).
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <cerrno>
#include <numeric>
#include <string>

#include "base/endian.h"
#include "estp_fake_verbs.h"

namespace esock::estp::testing {
namespace {

Message data_msg(std::uint16_t flags = 0) {
  return Message{.type = Type::data, .flags = flags};
}

// What a failed stream looks like to the application (section 4: "the socket fails with
// EPROTO"; section 8: queued data first, then the error; writes fail at once).
void expect_failed(Lone& e, int err) {
  EXPECT_EQ(e.s().error(), err);
  EXPECT_TRUE(e.s().readable());
  EXPECT_TRUE(e.s().writable());
  EXPECT_TRUE(e.s().tx_idle());  // close need not wait for anything
  std::vector<std::uint8_t> buf;
  EXPECT_EQ(e.read(buf, 100).err, err);
  EXPECT_EQ(e.s().write(bytes(10), false), -err);
  EXPECT_EQ(e.s().start_rndv(bytes(10)), err);
}

// ---------------------------------------------------------------- malformed Sends (sec. 4)

struct Malformed {
  std::string name;
  std::vector<std::uint8_t> octets;
};
std::vector<std::uint8_t> with(std::vector<std::uint8_t> v, std::size_t off, std::uint8_t x) {
  v.at(off) = x;
  return v;
}
std::vector<std::uint8_t> resized(std::vector<std::uint8_t> v, std::size_t n) {
  v.resize(n, 0);
  return v;
}
std::vector<std::uint8_t> with_len(std::vector<std::uint8_t> v, std::uint32_t len) {
  store_be32(v.data() + 12, len);
  return v;
}
std::vector<Malformed> malformed_cases() {
  const auto credit = wire(Message{.type = Type::credit});
  const auto data5 = wire(data_msg(), bytes(5));
  const auto adv = wire(Message{.type = Type::srcavail, .length = 10, .stag = 1, .to = 2, .id = 1});
  const auto done = wire(Message{.type = Type::rdmadone, .length = 10, .id = 1});
  const auto sinkadv = wire(Message{.type = Type::sinkavail, .length = 10, .stag = 1, .id = 1});
  const auto wdone = wire(Message{.type = Type::writedone, .length = 10, .id = 1});
  const auto cancel = wire(Message{.type = Type::sinkcancel, .id = 1});
  const auto fin = wire(Message{.type = Type::fin});
  return {
      {"Empty", {}},
      {"ShorterThanTheHeader", resized(credit, hdr_len - 1)},
      {"WrongMagic", with(credit, 0, 0x46)},
      {"WrongVersion", with(credit, 4, 2)},
      {"VersionZero", with(credit, 4, 0)},
      {"TypeZero", with(credit, 5, 0)},
      {"UnknownType9", with(credit, 5, 9)},
      {"UnknownType255", with(credit, 5, 0xff)},
      {"DataLengthBeyondThePayload", with_len(data5, 6)},
      {"DataLengthShortOfThePayload", with_len(data5, 4)},
      {"DataHeaderOnlyClaimingPayload", resized(data5, hdr_len)},
      {"CreditWithLength", with_len(credit, 1)},
      {"CreditWithBody", resized(credit, hdr_len + 4)},
      {"FinWithLength", with_len(fin, 1)},
      {"FinWithBody", resized(fin, hdr_len + 1)},
      {"SrcavailWithoutBody", resized(adv, hdr_len)},
      {"SrcavailBodyTruncated", resized(adv, adv_len - 1)},
      {"SrcavailBodyTooLong", resized(adv, adv_len + 1)},
      {"RdmadoneWithoutId", resized(done, hdr_len)},
      {"RdmadoneBodyTooLong", resized(done, done_len + 1)},
      {"SinkavailBodyTruncated", resized(sinkadv, adv_len - 1)},
      {"WritedoneBodyTooLong", resized(wdone, done_len + 4)},
      {"SinkcancelWithLength", with_len(cancel, 1)},
      {"SinkcancelWithoutId", resized(cancel, hdr_len)},
  };
}

class EstpMalformedSend : public ::testing::TestWithParam<Malformed> {};

TEST_P(EstpMalformedSend, IsRejectedByTheParser) {
  EXPECT_FALSE(parse(GetParam().octets));
}

TEST_P(EstpMalformedSend, FailsTheStreamWithEPROTOAfterDeliveringEarlierData) {
  Lone e(local());
  e.from_peer(data_msg(), bytes(7));
  e.v.deliver(GetParam().octets);
  e.s().progress();
  EXPECT_EQ(e.s().error(), EPROTO);
  std::vector<std::uint8_t> buf;
  EXPECT_EQ(e.read(buf, 100).n, 7u);  // data before the bad message is still delivered
  expect_failed(e, EPROTO);
  EXPECT_TRUE(e.v.sends.empty());  // nothing more goes on the wire
  EXPECT_EQ(e.v.recv_posts, 4u);   // and no buffer is re-posted
}

INSTANTIATE_TEST_SUITE_P(Estp, EstpMalformedSend, ::testing::ValuesIn(malformed_cases()),
                         [](const auto& param_info) { return param_info.param.name; });

// ---------------------------------------------------------------- unexpected messages

TEST(EstpRx, SrcavailWithZeroLengthIsProtocolError) {
  Lone e(local());
  e.from_peer(Message{.type = Type::srcavail, .length = 0, .stag = 1, .to = 2, .id = 1});
  expect_failed(e, EPROTO);
  EXPECT_FALSE(e.s().pull_needed());
}

TEST(EstpRx, WritedoneIsProtocolErrorSinceNoSinkIsEverAdvertised) {
  Lone e(local());
  e.from_peer(Message{.type = Type::writedone, .length = 10, .id = 1});
  expect_failed(e, EPROTO);
}

TEST(EstpRx, DataAfterFinIsProtocolError) {
  Lone e(local());
  e.from_peer(Message{.type = Type::fin});
  e.from_peer(data_msg(), bytes(3));
  EXPECT_EQ(e.s().error(), EPROTO);
  std::vector<std::uint8_t> buf;
  EXPECT_EQ(e.read(buf, 10).n, 0u);
  expect_failed(e, EPROTO);
}

TEST(EstpRx, EmptyDataAfterFinIsProtocolError) {
  Lone e(local());
  e.from_peer(Message{.type = Type::fin});
  e.from_peer(data_msg());
  expect_failed(e, EPROTO);
}

TEST(EstpRx, SrcavailAfterFinIsProtocolError) {
  Lone e(local());
  e.from_peer(Message{.type = Type::fin});
  e.from_peer(Message{.type = Type::srcavail, .length = 100, .stag = 1, .to = 2, .id = 1});
  expect_failed(e, EPROTO);
}

TEST(EstpRx, ASecondFinIsProtocolError) {
  Lone e(local());
  e.from_peer(Message{.type = Type::fin});
  e.from_peer(Message{.type = Type::fin});
  expect_failed(e, EPROTO);
}

// ---------------------------------------------------------------- receive completions

TEST(EstpRx, ASendLargerThanTheReceiveBufferIsProtocolError) {
  // The verbs report a receive too small for the incoming Send (the peer ignored B).
  Lone e(local(4, 256));
  e.v.deliver(wire(data_msg(), bytes(300)), ddp::Status::local_length_error);
  e.s().progress();
  expect_failed(e, EPROTO);
}

TEST(EstpRx, ReceiveCompletionBeyondTheBufferSizeIsProtocolError) {
  Lone e(local(4, 256));
  const auto w = wire(data_msg(), bytes(10));
  e.v.deliver(w);
  e.v.rcq.back().byte_len = 257;  // a provider that lies about the length
  e.s().progress();
  expect_failed(e, EPROTO);
}

TEST(EstpRx, ReceiveCompletionForAnUnknownBufferIsProtocolError) {
  Lone e(local(4, 256));
  e.v.complete_recv_raw(ddp::Completion{.wr_id = 4, .opcode = ddp::Opcode::recv, .byte_len = 16});
  e.s().progress();
  expect_failed(e, EPROTO);
}

TEST(EstpRx, AFailedReceiveIsProtocolError) {
  for (const ddp::Status st : {ddp::Status::local_protection_error,
                               ddp::Status::remote_operation_error, ddp::Status::general_error}) {
    Lone e(local());
    e.v.deliver(wire(Message{.type = Type::credit}), st);
    e.s().progress();
    expect_failed(e, EPROTO);
  }
}

TEST(EstpRx, FlushedReceivesBeforeFinAreAReset) {
  Lone e(local());
  e.from_peer(data_msg(), bytes(9));
  e.v.flush_recvs();  // the queue pair left RTS: reset, MPA/DDP error or Terminate
  e.s().progress();
  EXPECT_EQ(e.s().error(), ECONNRESET);
  std::vector<std::uint8_t> buf;
  EXPECT_EQ(e.read(buf, 100).n, 9u);  // reads first return the data already received
  expect_failed(e, ECONNRESET);
}

// ---------------------------------------------------------------- send side verbs errors

TEST(EstpTx, AFailedSendCompletionIsAReset) {
  Lone e(local());
  ASSERT_EQ(e.s().write(bytes(10), false), 10);
  e.v.complete_sends(ddp::Status::flushed);
  e.s().progress();
  expect_failed(e, ECONNRESET);
}

// tcp_reset's CLOSE-WAIT case: once the peer closed its socket (TCP FIN), the reset that a
// write then draws is EPIPE, not ECONNRESET.
TEST(EstpTx, AResetAfterThePeersFinIsEpipe) {
  Lone e(local());
  e.s().peer_closed();
  ASSERT_EQ(e.s().write(bytes(10), false), -EPIPE);
  e.s().fail(ECONNRESET);
  EXPECT_EQ(e.s().error(), EPIPE);
}

TEST(EstpTx, AFailedPostSendFailsTheWriteWithReset) {
  Lone e(local());
  e.v.send_error = EINVAL;  // the queue pair is no longer in RTS
  EXPECT_EQ(e.s().write(bytes(10), false), -ECONNRESET);
  EXPECT_TRUE(e.v.sends.empty());
  expect_failed(e, ECONNRESET);
}

TEST(EstpTx, AFailedPostSendFailsAnEmptyMsgmodeWriteWithReset) {
  Lone e(local(4, 1024, true), Hello{true, 4, 4096});
  e.v.send_error = EINVAL;
  EXPECT_EQ(e.s().write({}, true), -ECONNRESET);
  EXPECT_EQ(e.s().error(), ECONNRESET);
}

TEST(EstpTx, AFailedPostSendOfSrcavailFailsAndReleasesTheSource) {
  Lone e(local());
  e.v.send_error = EINVAL;
  const auto src = bytes(5000);
  EXPECT_EQ(e.s().start_rndv(src), ECONNRESET);
  EXPECT_FALSE(e.s().rndv_active());
  EXPECT_TRUE(e.v.mrs.size() == 2u);  // only the engine's own receive and send buffers
  expect_failed(e, ECONNRESET);
}

TEST(EstpTx, AFailedRepostIsAReset) {
  Lone e(local());
  e.from_peer(data_msg(), bytes(4));
  e.v.recv_error = EINVAL;
  std::vector<std::uint8_t> buf;
  EXPECT_EQ(e.read(buf, 10).n, 4u);  // the data is delivered; its buffer cannot go back
  expect_failed(e, ECONNRESET);
}

TEST(EstpTx, AFailedRepostOfAControlBufferIsAReset) {
  Lone e(local());
  e.v.recv_error = EINVAL;
  e.from_peer(Message{.type = Type::credit, .credits = 1});
  expect_failed(e, ECONNRESET);
}

TEST(EstpTx, NoMessageWithoutCreditOrWithOnlyTheLastOne) {
  Lone e(local(), Hello{false, 2, 256});
  ASSERT_EQ(e.s().write(bytes(500), false), 240);  // 2 credits: 1 DATA + the kept one
  EXPECT_EQ(e.s().write(bytes(1), false), -EAGAIN);
  EXPECT_EQ(e.s().start_rndv(bytes(1)), EAGAIN);
  EXPECT_EQ(e.v.mrs.size(), 2u);  // the refused source was not left registered
  EXPECT_FALSE(e.s().writable());
  EXPECT_EQ(e.s().error(), 0);
}

// ---------------------------------------------------------------- start-up refusals

TEST(EstpStart, RefusesInvalidParametersWithEINVAL) {
  EXPECT_EQ(Lone(local(0, 1024)).start_rc, EINVAL);
  EXPECT_EQ(Lone(local(4, 255)).start_rc, EINVAL);
  EXPECT_EQ(Lone(local(), Hello{false, 0, 4096}).start_rc, EINVAL);
  EXPECT_EQ(Lone(local(), Hello{false, 4, 255}).start_rc, EINVAL);
}

TEST(EstpStart, FailsWithENOMEMWhenBuffersCannotBeRegistered) {
  for (const int budget : {0, 1}) {
    FakeVerbs v;
    v.reg_budget = budget;
    {
      Stream s(v, local(), Hello{false, 4, 4096});
      EXPECT_EQ(s.start(true), ENOMEM);
      EXPECT_TRUE(v.sends.empty());
    }
    EXPECT_TRUE(v.mrs.empty()) << budget;  // nothing leaks
  }
}

TEST(EstpStart, ReturnsTheVerbsErrorWhenAReceiveCannotBePosted) {
  FakeVerbs v;
  v.recv_error = ENOSPC;
  Stream s(v, local(), Hello{false, 4, 4096});
  EXPECT_EQ(s.start(true), ENOSPC);
  EXPECT_TRUE(v.sends.empty());
}

TEST(EstpStart, InitiatorFailsWhenItsFirstCreditCannotBePosted) {
  FakeVerbs v;
  v.send_error = EINVAL;
  Stream s(v, local(), Hello{false, 4, 4096});
  EXPECT_NE(s.start(true), 0);
  EXPECT_EQ(s.error(), ECONNRESET);
}

TEST(EstpStart, InitiatorCannotStartFacingAPeerWithOneBuffer) {
  // The first CREDIT carries no grant, so the last-credit rule forbids it (section 6): a
  // peer announcing R == 1 cannot be talked to (the spec says R >= 4 SHOULD be used).
  EXPECT_EQ(Lone(local(), Hello{false, 1, 4096}, true).start_rc, ENOBUFS);
}

// ---------------------------------------------------------------- rendezvous refusals

TEST(EstpRndv, StartRndvRefusals) {
  Lone e(local());
  EXPECT_EQ(e.s().start_rndv({}), EINVAL);
  const auto src = bytes(100);
  ASSERT_EQ(e.s().start_rndv(src), 0);
  EXPECT_EQ(e.s().start_rndv(src), EBUSY);
  EXPECT_EQ(e.sent().size(), 1u);
  e.s().shutdown_write();
  EXPECT_EQ(e.s().start_rndv(src), EPIPE);
}

TEST(EstpRndv, StartRndvRefusesMoreThanOneGiB) {
  const std::size_t n = (std::size_t{1} << 30) + 1;
  void* p = ::mmap(nullptr, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  Lone e(local());
  EXPECT_EQ(e.s().start_rndv({static_cast<const std::uint8_t*>(p), n}), EINVAL);
  EXPECT_TRUE(e.v.sends.empty());
  ::munmap(p, n);
}

TEST(EstpRndv, StartRndvFailsWithENOMEMWhenTheSourceCannotBeRegistered) {
  Lone e(local());
  e.v.reg_budget = 0;
  EXPECT_EQ(e.s().start_rndv(bytes(100)), ENOMEM);
  EXPECT_TRUE(e.v.sends.empty());
  EXPECT_EQ(e.s().error(), 0);
}

// ---------------------------------------------------------------- pulls: refusals, failures

Message adv(std::uint32_t len, std::uint32_t id = 1) {
  return Message{.type = Type::srcavail, .length = len, .stag = 0x77, .to = 0x9000, .id = id};
}

TEST(EstpPull, PullRefusals) {
  Lone e(local());
  std::vector<std::uint8_t> dst(100);
  EXPECT_EQ(e.s().pull(dst), EINVAL);  // nothing advertised
  EXPECT_EQ(e.s().pull_bounce(), EINVAL);
  e.from_peer(adv(500));
  EXPECT_EQ(e.s().pull({}), EINVAL);  // nowhere to put it
  ASSERT_EQ(e.s().pull(dst), 0);
  EXPECT_EQ(e.s().pull(dst), EINVAL);  // one pull at a time
  EXPECT_EQ(e.s().pull_bounce(), EINVAL);
  EXPECT_EQ(e.v.reads.size(), 1u);
  EXPECT_EQ(e.s().error(), 0);
}

TEST(EstpPull, PullWaitsBehindQueuedData) {
  Lone e(local());
  e.from_peer(data_msg(), bytes(3));
  e.from_peer(adv(500));
  std::vector<std::uint8_t> dst(100);
  EXPECT_EQ(e.s().pull(dst), EINVAL);  // the data must be read first
}

TEST(EstpPull, PullReportsRegistrationAndPostFailuresAndTheSourceStaysPullable) {
  Lone e(local());
  e.from_peer(adv(500));
  std::vector<std::uint8_t> dst(100);
  e.v.reg_budget = 0;
  EXPECT_EQ(e.s().pull(dst), ENOMEM);
  EXPECT_EQ(e.s().pull_bounce(), ENOMEM);
  e.v.reg_budget = -1;
  e.v.read_error = EINVAL;
  EXPECT_EQ(e.s().pull(dst), EINVAL);
  EXPECT_EQ(e.s().pull_bounce(), EINVAL);
  EXPECT_EQ(e.v.mrs.size(), 2u);  // no sink left registered
  EXPECT_EQ(e.s().error(), 0);
  EXPECT_TRUE(e.s().pull_needed());
  e.v.read_error = 0;
  EXPECT_EQ(e.s().pull(dst), 0);
}

TEST(EstpPull, AFailedZeroCopyReadIsAReset) {
  Lone e(local());
  e.from_peer(adv(500));
  std::vector<std::uint8_t> dst(500);
  ASSERT_EQ(e.s().pull(dst), 0);
  // The peer's STag was bad (or withdrawn): its RNIC answers with a Terminate.
  e.v.complete_read({}, ddp::Status::remote_access_error);
  e.s().progress();
  const auto r = e.s().pull_result();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->n, 0u);
  EXPECT_EQ(r->err, ECONNRESET);
  EXPECT_TRUE(e.sent().empty());  // no RDMADONE for octets never read
  EXPECT_EQ(e.v.mrs.size(), 2u);
  expect_failed(e, ECONNRESET);
}

TEST(EstpPull, AFailedBounceReadIsAReset) {
  Lone e(local());
  e.from_peer(adv(500));
  ASSERT_EQ(e.s().pull_bounce(), 0);
  e.v.complete_read({}, ddp::Status::flushed);
  e.s().progress();
  EXPECT_EQ(e.s().pull_result(), std::nullopt);  // nobody waits on a bounce pull
  EXPECT_TRUE(e.sent().empty());
  expect_failed(e, ECONNRESET);
}

TEST(EstpPull, CancelPullReleasesTheSinkAndIgnoresALateCompletion) {
  Lone e(local());
  e.from_peer(adv(500));
  std::vector<std::uint8_t> dst(500);
  ASSERT_EQ(e.s().pull(dst), 0);
  const ddp::stag_t sink = e.v.reads.at(0).lkey;
  e.s().cancel_pull();
  EXPECT_FALSE(e.s().pulling());
  EXPECT_FALSE(e.v.registered(sink));  // a late Read Response fails its STag check
  e.v.reads.at(0).completed = true;    // it arrives anyway (the sink is gone)
  e.v.scq.push_back(ddp::Completion{.wr_id = e.v.reads.at(0).wr_id, .opcode = ddp::Opcode::read});
  e.s().progress();
  EXPECT_EQ(e.s().pull_result(), std::nullopt);
  EXPECT_EQ(e.s().error(), 0);
  EXPECT_TRUE(e.sent().empty());
  // The source is untouched: a later reader pulls it from the start.
  EXPECT_TRUE(e.s().pull_needed());
  ASSERT_EQ(e.s().pull(dst), 0);
  EXPECT_EQ(e.v.reads.back().remote_to, 0x9000u);
  EXPECT_EQ(e.v.reads.back().len, 500u);
}

TEST(EstpPull, CancelPullDropsAFinishedResult) {
  Lone e(local());
  e.from_peer(adv(500));
  std::vector<std::uint8_t> dst(500);
  ASSERT_EQ(e.s().pull(dst), 0);
  e.v.complete_read(bytes(500));
  e.s().progress();
  e.s().cancel_pull();
  EXPECT_EQ(e.s().pull_result(), std::nullopt);
  EXPECT_EQ(e.sent().size(), 1u);  // the octets were pulled: the RDMADONE still went
}

// ---------------------------------------------------------------- fail(errno)

TEST(EstpFail, FailIsStickyAndTheFirstErrorWins) {
  Lone e(local());
  e.s().fail(ECONNRESET);
  e.s().fail(EPROTO);
  e.from_peer(Message{.type = Type::writedone, .id = 1});
  expect_failed(e, ECONNRESET);
}

TEST(EstpFail, AfterFailureNothingMoreGoesOnTheWire) {
  Lone e(local(4, 1024));
  const auto src = bytes(100);
  ASSERT_EQ(e.s().start_rndv(src), 0);  // an RDMADONE would be due after a pull
  e.from_peer(adv(50));
  ASSERT_EQ(e.s().pull_bounce(), 0);
  for (int i = 0; i < 2; ++i) e.from_peer(data_msg(), bytes(1));
  const std::size_t before = e.sent().size();  // the SRCAVAIL, a CREDIT to a starving peer
  e.s().fail(ECONNRESET);
  e.v.complete_read(bytes(50));
  e.s().progress();
  e.s().shutdown_write();
  std::vector<std::uint8_t> buf;
  e.read(buf, 1000);  // consumed data would return grants
  e.s().progress();
  EXPECT_EQ(before, 2u);
  EXPECT_TRUE(e.sent().empty());  // no RDMADONE, FIN or CREDIT after the failure
  expect_failed(e, ECONNRESET);
}

TEST(EstpFail, ReadsReturnQueuedDataThenTheError) {
  Lone e(local());
  e.from_peer(data_msg(), bytes(6));
  e.s().fail(ECONNRESET);
  std::vector<std::uint8_t> buf;
  ReadOut r = e.read(buf, 4);
  EXPECT_EQ(r.n, 4u);
  r = e.read(buf, 4);
  EXPECT_EQ(r.n, 2u);
  EXPECT_EQ(r.err, 0);
  expect_failed(e, ECONNRESET);
}

TEST(EstpFail, AnUnpulledSourceDoesNotHideTheError) {
  // A read must not answer EAGAIN forever: the source can no longer be pulled.
  Lone e(local());
  e.from_peer(data_msg(), bytes(6));
  e.from_peer(adv(500));
  e.s().fail(ECONNRESET);
  std::vector<std::uint8_t> buf;
  EXPECT_EQ(e.read(buf, 100).n, 6u);
  EXPECT_FALSE(e.s().pull_needed());
  EXPECT_FALSE(e.s().prefetch_needed());
  std::vector<std::uint8_t> dst(100);
  EXPECT_EQ(e.s().pull(dst), ECONNRESET);
  EXPECT_EQ(e.s().pull_bounce(), ECONNRESET);
  expect_failed(e, ECONNRESET);
}

TEST(EstpFail, AMsgmodeReadOfAnIncompleteMessageReportsTheError) {
  Lone e(local(4, 1024, true), Hello{true, 4, 4096});
  e.from_peer(data_msg(), bytes(6));  // no EOM: it will never complete
  e.s().fail(ECONNRESET);
  expect_failed(e, ECONNRESET);
}

TEST(EstpFail, AMsgmodeReadAfterATruncationReportsTheError) {
  Lone e(local(4, 1024, true), Hello{true, 4, 4096});
  e.from_peer(data_msg(), bytes(6));
  e.from_peer(data_msg(flag_eom), bytes(6));
  std::vector<std::uint8_t> buf;
  // Complete, read short, the rest discarded; then a new message starts and never ends.
  ASSERT_TRUE(e.read(buf, 3).truncated);
  e.from_peer(data_msg(), bytes(6));
  e.s().fail(EPROTO);
  expect_failed(e, EPROTO);
}

TEST(EstpFail, APendingZeroCopyPullEndsWithTheTransportError) {
  Lone e(local());
  e.from_peer(adv(500));
  std::vector<std::uint8_t> dst(500);
  ASSERT_EQ(e.s().pull(dst), 0);
  e.s().fail(ECONNRESET);
  e.v.complete_read({}, ddp::Status::flushed);
  e.s().progress();
  const auto r = e.s().pull_result();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->err, ECONNRESET);
}

TEST(EstpFail, ACancelledRendezvousStaysCancelledAfterFailure) {
  Lone e(local());
  const auto src = bytes(100);
  ASSERT_EQ(e.s().start_rndv(src), 0);
  e.s().fail(ECONNRESET);
  EXPECT_EQ(e.s().rndv_finished(), std::nullopt);
  EXPECT_TRUE(e.s().writable());  // a write fails at once
  e.s().cancel_rndv();
  EXPECT_FALSE(e.s().rndv_active());
  EXPECT_EQ(e.v.mrs.size(), 2u);
}

}  // namespace
}  // namespace esock::estp::testing
