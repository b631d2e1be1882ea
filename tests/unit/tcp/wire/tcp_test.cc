#include <gtest/gtest.h>

#include <vector>

#include "base/endian.h"
#include "hex.h"
#include "tcp/wire/tcp.h"

namespace esock::tcp {
namespace {

using test::from_hex;

// Linux's SYN from the loopback capture (TCP header only): MSS 65495, SACK-permitted,
// timestamps, NOP, window scale 10, in Linux's own option order.
constexpr const char* kLinuxSyn =
    "8ac8b8139dbb5a2500000000a002ffd7fe300000"
    "0204ffd7 0402 080a41ce441100000000 01 03030a";
// The PSH|ACK carrying "hello": NOP NOP timestamps.
constexpr const char* kLinuxData =
    "8ac8b8139dbb5a26e528927780180040fe2d0000"
    "0101080a41ce4411bc9f61c0 68656c6c6f";

TEST(Tcp, GoldenLinuxSyn) {
  const auto s = from_hex(kLinuxSyn);
  TcpRepr r;
  bytes_view payload;
  ASSERT_EQ(parse_tcp(s, &r, &payload), TcpParseError::none);
  EXPECT_EQ(r.src_port, 35528);
  EXPECT_EQ(r.dst_port, 47123);
  EXPECT_EQ(r.seq, 0x9dbb5a25u);
  EXPECT_EQ(r.ack, 0u);
  EXPECT_EQ(r.flags, tcp_flag::syn);
  EXPECT_EQ(r.window, 65495);
  EXPECT_EQ(r.options.mss, 65495);
  EXPECT_TRUE(r.options.sack_permitted);
  EXPECT_EQ(r.options.timestamps, (TcpTimestamps{0x41ce4411, 0}));
  EXPECT_EQ(r.options.wscale, 10);
  EXPECT_EQ(r.options.sack_count, 0);
  EXPECT_TRUE(payload.empty());
}

TEST(Tcp, GoldenLinuxData) {
  const auto s = from_hex(kLinuxData);
  TcpRepr r;
  bytes_view payload;
  ASSERT_EQ(parse_tcp(s, &r, &payload), TcpParseError::none);
  EXPECT_EQ(r.flags, tcp_flag::psh | tcp_flag::ack);
  EXPECT_EQ(r.ack, 0xe5289277u);
  EXPECT_EQ(r.window, 64);
  EXPECT_EQ(r.options.timestamps, (TcpTimestamps{0x41ce4411, 0xbc9f61c0}));
  ASSERT_EQ(payload.size(), 5u);
  EXPECT_EQ(payload[0], 'h');
  // Emitting the parsed header gives the same octets (checksum field zero).
  std::vector<std::uint8_t> out(tcp_header_len(r));
  ASSERT_EQ(out.size(), 32u);
  emit_tcp(r, out);
  auto expect = std::vector<std::uint8_t>(s.begin(), s.begin() + 32);
  store_be16(expect.data() + 16, 0);
  EXPECT_EQ(out, expect);
}

TEST(Tcp, EmitSynLayout) {
  TcpRepr r;
  r.src_port = 1;
  r.dst_port = 2;
  r.seq = 0x01020304;
  r.flags = tcp_flag::syn;
  r.window = 0xffff;
  r.options.mss = 1460;
  r.options.sack_permitted = true;
  r.options.wscale = 7;
  r.options.timestamps = TcpTimestamps{0x11223344, 0};
  ASSERT_EQ(tcp_header_len(r), 44u);
  std::vector<std::uint8_t> out(44);
  emit_tcp(r, out);
  EXPECT_EQ(out, from_hex("0001 0002 01020304 00000000 b002 ffff 0000 0000"
                          "020405b4 01010402 01030307 0101080a1122334400000000"));
  TcpRepr back;
  bytes_view payload;
  ASSERT_EQ(parse_tcp(out, &back, &payload), TcpParseError::none);
  EXPECT_EQ(back, r);
}

TcpRepr with_sacks(int n, bool ts) {
  TcpRepr r;
  r.flags = tcp_flag::ack;
  if (ts) r.options.timestamps = TcpTimestamps{7, 8};
  r.options.sack_count = static_cast<std::uint8_t>(n);
  for (int i = 0; i < n; ++i)
    r.options.sacks[static_cast<std::size_t>(i)] = {
        1000u * static_cast<std::uint32_t>(i + 1), 1000u * static_cast<std::uint32_t>(i + 1) + 500};
  return r;
}

TEST(Tcp, SackBlocksThatFit) {
  // RFC 2018 section 3: with timestamps at most 3 blocks fit in 40 octets, else 4.
  for (int n = 0; n <= 4; ++n) {
    for (bool ts : {false, true}) {
      const TcpRepr r = with_sacks(n, ts);
      const int fit = std::min(n, ts ? 3 : 4);
      const std::size_t want = 20 + (ts ? 12 : 0) + (fit ? 4 + 8 * fit : 0);
      ASSERT_EQ(tcp_header_len(r), want) << n << ts;
      ASSERT_LE(tcp_header_len(r), tcp_max_header);
      std::vector<std::uint8_t> out(tcp_header_len(r));
      emit_tcp(r, out);
      TcpRepr back;
      bytes_view payload;
      ASSERT_EQ(parse_tcp(out, &back, &payload), TcpParseError::none);
      EXPECT_EQ(back.options.sack_count, fit);
      for (int i = 0; i < fit; ++i)
        EXPECT_EQ(back.options.sacks[static_cast<std::size_t>(i)],
                  r.options.sacks[static_cast<std::size_t>(i)]);
      EXPECT_EQ(back.options.timestamps, r.options.timestamps);
    }
  }
}

TEST(Tcp, FullRoundTrip) {
  TcpRepr r;
  r.src_port = 0xfedc;
  r.dst_port = 80;
  r.seq = 0xffffffff;
  r.ack = 0x80000000;
  r.flags =
      tcp_flag::fin | tcp_flag::psh | tcp_flag::ack | tcp_flag::urg | tcp_flag::ece | tcp_flag::cwr;
  r.window = 1234;
  r.urgent = 99;
  r.options.wscale = 14;
  std::vector<std::uint8_t> out(tcp_header_len(r) + 3, 0x5a);
  emit_tcp(r, out);
  TcpRepr back;
  bytes_view payload;
  ASSERT_EQ(parse_tcp(out, &back, &payload), TcpParseError::none);
  EXPECT_EQ(back, r);
  EXPECT_EQ(payload.size(), 3u);
}

std::vector<std::uint8_t> header_with_options(std::vector<std::uint8_t> opts) {
  while (opts.size() % 4) opts.push_back(0);
  std::vector<std::uint8_t> h(20, 0);
  h[12] = static_cast<std::uint8_t>(((20 + opts.size()) / 4) << 4);
  h.insert(h.end(), opts.begin(), opts.end());
  return h;
}

TcpParseError parse_opts(std::vector<std::uint8_t> opts, TcpRepr* r = nullptr) {
  TcpRepr tmp;
  bytes_view payload;
  return parse_tcp(header_with_options(std::move(opts)), r ? r : &tmp, &payload);
}

TEST(Tcp, UnknownOptionsSkippedEolStops) {
  TcpRepr r;
  // Kind 30 (MPTCP) of length 4, then MSS, then EOL followed by garbage.
  ASSERT_EQ(parse_opts({30, 4, 0xaa, 0xbb, 2, 4, 0x05, 0xb4, 0, 0xff, 0xff}, &r),
            TcpParseError::none);
  EXPECT_EQ(r.options.mss, 1460);
}

TEST(Tcp, Rejects) {
  TcpRepr r;
  bytes_view payload;
  const auto good = from_hex(kLinuxSyn);
  EXPECT_EQ(parse_tcp(bytes_view(good).first(19), &r, &payload), TcpParseError::truncated);
  EXPECT_EQ(parse_tcp(bytes_view(good).first(39), &r, &payload), TcpParseError::truncated);
  auto m = good;
  m[12] = 0x40;
  EXPECT_EQ(parse_tcp(m, &r, &payload), TcpParseError::bad_data_offset);

  EXPECT_EQ(parse_opts({2, 3, 5, 1}), TcpParseError::bad_option);  // MSS len 3
  EXPECT_EQ(parse_opts({3, 4, 7, 1}), TcpParseError::bad_option);  // WS len 4
  EXPECT_EQ(parse_opts({4, 3, 0, 1}), TcpParseError::bad_option);  // SACKOK len 3
  EXPECT_EQ(parse_opts({8, 9, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1}), TcpParseError::bad_option);
  EXPECT_EQ(parse_opts({5, 2, 1, 1}), TcpParseError::bad_option);  // SACK no block
  EXPECT_EQ(parse_opts({5, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}), TcpParseError::bad_option);
  EXPECT_EQ(parse_opts({30, 1, 1, 1}), TcpParseError::bad_option);  // length < 2
  EXPECT_EQ(parse_opts({30, 0, 1, 1}), TcpParseError::bad_option);  // length 0
  EXPECT_EQ(parse_opts({1, 1, 1, 30}), TcpParseError::bad_option);  // no length octet
  EXPECT_EQ(parse_opts({30, 5, 1, 1}), TcpParseError::bad_option);  // past the header
  EXPECT_EQ(parse_opts({1, 2, 4, 0}), TcpParseError::bad_option);   // MSS cut by the header end
}

}  // namespace
}  // namespace esock::tcp
