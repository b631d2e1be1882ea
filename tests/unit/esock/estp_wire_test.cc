// ESTP wire format: Hello and message round trips, golden octets, every parse rejection.
#include <gtest/gtest.h>

#include <vector>

#include "esock/estp/wire.h"

namespace esock::estp {
namespace {

TEST(EstpWire, HelloGoldenOctetsAndRoundTrip) {
  const auto v = emit_hello(Hello{true, 16, 65536});
  const std::vector<std::uint8_t> golden = {0x45, 0x53, 0x54, 0x50, 1, 1, 0, 0,
                                            0,    0,    0,    16,   0, 1, 0, 0};
  EXPECT_EQ(v, golden);
  const auto h = parse_hello(v);
  ASSERT_TRUE(h);
  EXPECT_TRUE(h->msgmode);
  EXPECT_EQ(h->recv_buffers, 16u);
  EXPECT_EQ(h->recv_buffer_size, 65536u);
}

TEST(EstpWire, TheRdmapExtensionsFlagIsBitThree) {
  Hello raw{false, 4, 256, true};
  raw.rdmap_ext = true;
  const auto v = emit_hello(raw);
  EXPECT_EQ(v[5], hello_flag_raw | hello_flag_rdmap_ext);
  EXPECT_EQ(v[5], 0x0a);
  const auto h = parse_hello(v);
  ASSERT_TRUE(h);
  EXPECT_TRUE(h->rdmap_ext);
  EXPECT_TRUE(h->raw);
  raw.rdmap_ext = false;
  EXPECT_FALSE(parse_hello(emit_hello(raw))->rdmap_ext);
}

TEST(EstpWire, HelloRejections) {
  auto ok = emit_hello(Hello{false, 4, 256});
  EXPECT_TRUE(parse_hello(ok));
  EXPECT_FALSE(parse_hello(bytes_view(ok).first(15)));
  auto bad = ok;
  bad[0] ^= 1;  // magic
  EXPECT_FALSE(parse_hello(bad));
  bad = ok;
  bad[4] = 2;  // version
  EXPECT_FALSE(parse_hello(bad));
  EXPECT_FALSE(parse_hello(emit_hello(Hello{false, 0, 4096})));  // R == 0
  EXPECT_FALSE(parse_hello(emit_hello(Hello{false, 4, 255})));   // B < 256
  ok.push_back(7);  // trailing private data of a later version is ignored
  EXPECT_TRUE(parse_hello(ok));
}

TEST(EstpWire, SrcavailGoldenOctets) {
  Message m{.type = Type::srcavail,
            .flags = flag_eom,
            .credits = 3,
            .length = 0x100000,
            .stag = 0x101,
            .to = 0x7f0011223344,
            .id = 9};
  std::uint8_t buf[adv_len];
  ASSERT_EQ(emit_header(m, buf), adv_len);
  const std::vector<std::uint8_t> golden = {0x45, 0x53, 0x54, 0x50, 1,    3,    0, 1, 0, 0, 0,
                                            3,    0,    0x10, 0,    0,    0,    0, 1, 1, 0, 0,
                                            0x7f, 0,    0x11, 0x22, 0x33, 0x44, 0, 0, 0, 9};
  EXPECT_EQ(std::vector<std::uint8_t>(buf, buf + adv_len), golden);
  const auto p = parse(buf);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->type, Type::srcavail);
  EXPECT_EQ(p->stag, 0x101u);
  EXPECT_EQ(p->to, 0x7f0011223344u);
  EXPECT_EQ(p->id, 9u);
  EXPECT_EQ(p->credits, 3u);
  EXPECT_EQ(wire_size(m), adv_len);
}

TEST(EstpWire, DataCarriesPayload) {
  std::vector<std::uint8_t> buf(hdr_len + 5);
  Message m{.type = Type::data, .length = 5};
  ASSERT_EQ(emit_header(m, buf), hdr_len);
  std::copy_n("hello", 5, buf.begin() + hdr_len);
  const auto p = parse(buf);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->payload.size(), 5u);
  EXPECT_EQ(p->payload[0], 'h');
}

TEST(EstpWire, ParseRejections) {
  std::uint8_t buf[done_len];
  ASSERT_EQ(emit_header(Message{.type = Type::rdmadone, .length = 10, .id = 1}, buf), done_len);
  EXPECT_TRUE(parse(buf));
  EXPECT_FALSE(parse(bytes_view(buf).first(15)));  // short
  EXPECT_FALSE(parse(bytes_view(buf).first(16)));  // body missing
  std::uint8_t t[hdr_len];
  ASSERT_EQ(emit_header(Message{.type = Type::credit}, t), hdr_len);
  EXPECT_TRUE(parse(t));
  t[5] = 0;  // type 0
  EXPECT_FALSE(parse(t));
  t[5] = 9;  // unknown type
  EXPECT_FALSE(parse(t));
  t[5] = 2;
  t[15] = 1;  // CREDIT with a length
  EXPECT_FALSE(parse(t));
  t[15] = 0;
  t[4] = 0;  // version
  EXPECT_FALSE(parse(t));
  t[4] = 1;
  t[1] = 0;  // magic
  EXPECT_FALSE(parse(t));
  std::vector<std::uint8_t> d(hdr_len + 4);
  ASSERT_EQ(emit_header(Message{.type = Type::data, .length = 5}, d), hdr_len);
  EXPECT_FALSE(parse(d));  // length says 5, 4 follow
  std::uint8_t small[8];
  EXPECT_EQ(emit_header(Message{.type = Type::fin}, small), 0u);
}

}  // namespace
}  // namespace esock::estp
