// rdmacm::EarlyRecvs (lib/esock/rdmacm/early_recvs.h): the receives posted before set-up
// handed to the ULP's receives in order, whichever comes first: its post or the data.
#include "esock/rdmacm/early_recvs.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace esock::rdmacm {
namespace {

// Puts `text` into slot i as the device would have, and reports its completion.
void arrive(EarlyRecvs& e, std::uint32_t i, const std::string& text) {
  std::memcpy(e.slot(i), text.data(), text.size());
  ASSERT_TRUE(e.complete(ddp::Status::success, static_cast<std::uint32_t>(text.size())));
}

std::vector<ddp::Completion> drain(EarlyRecvs& e) {
  std::array<ddp::Completion, 16> out{};
  const std::size_t n = e.drain(out);
  return {out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n)};
}

TEST(EarlyRecvs, DataBeforeThePostWaitsThenGoesIntoTheUlpsBuffer) {
  EarlyRecvs e;
  e.start(2, 64);
  arrive(e, 0, "first");
  EXPECT_FALSE(e.has_ready());  // nobody posted yet
  std::array<std::uint8_t, 64> buf{};
  const ddp::Sge sg{buf.data(), 64, 7};
  ASSERT_TRUE(e.assign(100, {&sg, 1}));
  const auto c = drain(e);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].wr_id, 100u);
  EXPECT_EQ(c[0].opcode, ddp::Opcode::recv);
  EXPECT_EQ(c[0].status, ddp::Status::success);
  EXPECT_EQ(c[0].byte_len, 5u);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf.data()), 5), "first");
}

TEST(EarlyRecvs, PostsBeforeTheDataMatchInOrder) {
  EarlyRecvs e;
  e.start(3, 32);
  std::array<std::array<std::uint8_t, 32>, 3> bufs{};
  for (std::uint32_t i = 0; i < 3; ++i) {
    const ddp::Sge sg{bufs[i].data(), 32, 1};
    ASSERT_TRUE(e.assign(10 + i, {&sg, 1}));
  }
  arrive(e, 0, "a");
  arrive(e, 1, "bb");
  const auto first = drain(e);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].wr_id, 10u);
  EXPECT_EQ(first[1].wr_id, 11u);
  EXPECT_EQ(bufs[1][1], 'b');
  EXPECT_FALSE(e.finished());
  arrive(e, 2, "ccc");
  const auto last = drain(e);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].byte_len, 3u);
  EXPECT_TRUE(e.finished());
}

TEST(EarlyRecvs, OnlyTheFirstCountPostsAndCompletionsAreEarly) {
  EarlyRecvs e;
  e.start(1, 16);
  std::array<std::uint8_t, 16> buf{};
  const ddp::Sge sg{buf.data(), 16, 1};
  EXPECT_TRUE(e.assign(1, {&sg, 1}));
  EXPECT_FALSE(e.assign(2, {&sg, 1}));  // goes to the device
  arrive(e, 0, "x");
  EXPECT_FALSE(e.complete(ddp::Status::success, 4));  // the device's own receive
  EXPECT_EQ(drain(e).size(), 1u);
}

TEST(EarlyRecvs, DataScattersOverTheUlpsSges) {
  EarlyRecvs e;
  e.start(1, 16);
  std::array<std::uint8_t, 3> a{};
  std::array<std::uint8_t, 8> b{};
  const std::array<ddp::Sge, 2> sg{ddp::Sge{a.data(), 3, 1}, ddp::Sge{b.data(), 8, 1}};
  ASSERT_TRUE(e.assign(5, sg));
  arrive(e, 0, "abcdefg");
  const auto c = drain(e);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].byte_len, 7u);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(a.data()), 3), "abc");
  EXPECT_EQ(std::string(reinterpret_cast<char*>(b.data()), 4), "defg");
}

TEST(EarlyRecvs, AMessageLargerThanTheUlpsBufferIsALocalLengthError) {
  EarlyRecvs e;
  e.start(1, 64);
  std::array<std::uint8_t, 4> small{};
  const ddp::Sge sg{small.data(), 4, 1};
  ASSERT_TRUE(e.assign(9, {&sg, 1}));
  arrive(e, 0, "too long for it");
  const auto c = drain(e);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, ddp::Status::local_length_error);
  EXPECT_EQ(small, (std::array<std::uint8_t, 4>{}));  // nothing written
}

TEST(EarlyRecvs, FlushedSlotsCompleteTheUlpsReceivesFlushed) {
  EarlyRecvs e;
  e.start(2, 16);
  ASSERT_TRUE(e.complete(ddp::Status::flushed, 0));
  ASSERT_TRUE(e.complete(ddp::Status::flushed, 0));
  std::array<std::uint8_t, 16> buf{};
  const ddp::Sge sg{buf.data(), 16, 1};
  e.assign(1, {&sg, 1});
  e.assign(2, {&sg, 1});
  const auto c = drain(e);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].status, ddp::Status::flushed);
  EXPECT_EQ(c[1].wr_id, 2u);
  EXPECT_TRUE(e.finished());
}

TEST(EarlyRecvs, ABufferDeregisteredSinceItsPostGetsNothing) {
  // RAWMODE: receive posted, region deregistered (and perhaps freed), then the peer's Send
  // arrives into the slot: nothing is written, the completion is a protection error.
  EarlyRecvs e;
  e.start(2, 16);
  bool registered = true;
  e.set_validator([&](const ddp::Sge&) { return registered; });
  std::array<std::uint8_t, 16> buf{};
  const ddp::Sge sg{buf.data(), 16, 3};
  e.assign(1, {&sg, 1});
  e.assign(2, {&sg, 1});
  arrive(e, 0, "fine");
  registered = false;
  arrive(e, 1, "late");
  const auto c = drain(e);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].status, ddp::Status::success);
  EXPECT_EQ(c[1].status, ddp::Status::local_protection_error);
  EXPECT_EQ(c[1].byte_len, 0u);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf.data()), 4), "fine");  // not "late"
}

TEST(EarlyRecvs, DrainRespectsTheRoomItIsGiven) {
  EarlyRecvs e;
  e.start(3, 8);
  std::array<std::uint8_t, 8> buf{};
  const ddp::Sge sg{buf.data(), 8, 1};
  for (int i = 0; i < 3; ++i) {
    e.assign(static_cast<std::uint64_t>(i), {&sg, 1});
    arrive(e, static_cast<std::uint32_t>(i), "m");
  }
  std::array<ddp::Completion, 2> out{};
  EXPECT_EQ(e.drain(out), 2u);
  EXPECT_EQ(out[1].wr_id, 1u);
  EXPECT_TRUE(e.has_ready());
  EXPECT_EQ(e.drain(out), 1u);
  EXPECT_EQ(out[0].wr_id, 2u);
}

}  // namespace
}  // namespace esock::rdmacm
