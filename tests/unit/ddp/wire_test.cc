#include "ddp/wire.h"

#include <gtest/gtest.h>

#include <vector>

namespace esock::ddp {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes hex(const char* s) {
  Bytes b;
  auto nib = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (; s[0] && s[1]; s += 2) b.push_back(static_cast<std::uint8_t>(nib(s[0]) * 16 + nib(s[1])));
  return b;
}

// Golden ULPDUs (MPA length and CRC stripped) from /work/shared/captures, real Linux siw
// traffic: `tshark -r siw-v2-crc.pcapng -Y frame.number==N -T fields -e tcp.payload`.
// Frame 8: Send, QN 0, MSN 1, 16-octet payload (rping's buffer advertisement).
const char* k_send =
    "41430000000000000000000000010000000000005605967"
    "6fe5025e45c0000000040";
// Frame 9: Read Request, QN 1, MSN 1.
const char* k_read_request =
    "414100000000000000010000000100000000dd1dde000000556884181b500000004025e45c0000005605"
    "9676fe50";
// Frame 10: Read Response header (first 14 octets of the ULPDU).
const char* k_read_response_hdr = "c142dd1dde000000556884181b50";
// Frame 13: RDMA Write header.
const char* k_write_hdr = "c140d5273e00000056059676cb50";
// siw-v2-p2p.pcapng frame 8: the zero-length Write RTR (STag 1, TO 0).
const char* k_write_rtr =
    "c14000000001"
    "0000000000000000";

TEST(DdpWire, GoldenSiwSend) {
  const Bytes b = hex(k_send);
  SegmentView v;
  ASSERT_EQ(SegmentView::make(b, v), WireError::ok);
  EXPECT_FALSE(v.hdr().tagged);
  EXPECT_TRUE(v.hdr().last);
  EXPECT_EQ(v.hdr().opcode, RdmapOpcode::send);
  EXPECT_EQ(v.hdr().qn, 0u);
  EXPECT_EQ(v.hdr().msn, 1u);
  EXPECT_EQ(v.hdr().mo, 0u);
  EXPECT_EQ(v.payload().size(), 16u);
  Bytes out(untagged_hdr_len);
  ASSERT_EQ(emit(v.hdr(), out), untagged_hdr_len);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), b.begin()));
}

TEST(DdpWire, GoldenSiwReadRequest) {
  const Bytes b = hex(k_read_request);
  ASSERT_EQ(b.size(), untagged_hdr_len + read_request_len);
  SegmentView v;
  ASSERT_EQ(SegmentView::make(b, v), WireError::ok);
  EXPECT_EQ(v.hdr().opcode, RdmapOpcode::read_request);
  EXPECT_EQ(v.hdr().qn, 1u);
  EXPECT_EQ(v.hdr().msn, 1u);
  ReadRequest rr;
  ASSERT_EQ(parse(v.payload(), rr), WireError::ok);
  EXPECT_EQ(rr.sink_stag, 0xdd1dde00u);
  EXPECT_EQ(rr.sink_to, 0x0000556884181b50u);
  EXPECT_EQ(rr.size, 64u);
  EXPECT_EQ(rr.src_stag, 0x25e45c00u);
  EXPECT_EQ(rr.src_to, 0x000056059676fe50u);
  Bytes out(read_request_len);
  ASSERT_EQ(emit(rr, out), read_request_len);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), b.begin() + untagged_hdr_len));
}

TEST(DdpWire, GoldenSiwTagged) {
  for (const char* s : {k_read_response_hdr, k_write_hdr, k_write_rtr}) {
    const Bytes b = hex(s);
    DdpHeader h;
    ASSERT_EQ(parse(b, h), WireError::ok) << s;
    EXPECT_TRUE(h.tagged);
    EXPECT_TRUE(h.last);
    Bytes out(tagged_hdr_len);
    ASSERT_EQ(emit(h, out), tagged_hdr_len);
    EXPECT_EQ(out, b);
  }
  DdpHeader h;
  ASSERT_EQ(parse(hex(k_read_response_hdr), h), WireError::ok);
  EXPECT_EQ(h.opcode, RdmapOpcode::read_response);
  EXPECT_EQ(h.stag, 0xdd1dde00u);
  EXPECT_EQ(h.to, 0x0000556884181b50u);
  ASSERT_EQ(parse(hex(k_write_rtr), h), WireError::ok);
  EXPECT_EQ(h.opcode, RdmapOpcode::write);
  EXPECT_EQ(h.stag, 1u);
  EXPECT_EQ(h.to, 0u);
}

TEST(DdpWire, RoundTripEveryOpcode) {
  for (int op = 0; op <= 7; ++op) {
    for (bool last : {false, true}) {
      DdpHeader h;
      h.opcode = static_cast<RdmapOpcode>(op);
      h.tagged = opcode_is_tagged(h.opcode);
      h.last = last;
      h.stag = 0x12345678;
      h.to = 0xfedcba9876543210;
      h.rsvd_ulp = 0xa1b2c3d4;
      h.qn = 2;
      h.msn = 0xffffffff;
      h.mo = 0x80000000;
      if (h.tagged)
        h.rsvd_ulp = h.qn = h.msn = h.mo = 0;
      else
        h.stag = 0, h.to = 0;
      Bytes b(h.length());
      ASSERT_EQ(emit(h, b), h.length());
      DdpHeader back;
      ASSERT_EQ(parse(b, back), WireError::ok);
      EXPECT_EQ(back, h);
    }
  }
}

TEST(DdpWire, EmitIntoShortBufferFails) {
  DdpHeader h;
  Bytes b(untagged_hdr_len - 1);
  EXPECT_EQ(emit(h, b), 0u);
  Bytes rr(read_request_len - 1);
  EXPECT_EQ(emit(ReadRequest{}, rr), 0u);
}

TEST(DdpWire, MalformedHeaders) {
  DdpHeader h;
  EXPECT_EQ(parse(Bytes{}, h), WireError::truncated);
  EXPECT_EQ(parse(Bytes{0x41}, h), WireError::truncated);
  // Untagged needs 18 octets, tagged 14.
  EXPECT_EQ(parse(Bytes(17, 0), h), WireError::bad_ddp_version);  // DV 0 checked first
  Bytes u = hex(k_send);
  EXPECT_EQ(parse(bytes_view(u).first(17), h), WireError::truncated);
  Bytes t = hex(k_write_hdr);
  EXPECT_EQ(parse(bytes_view(t).first(13), h), WireError::truncated);
  // DDP version: DV 0, 2, 3 (RFC 5041 section 6.1: must be 1).
  for (int dv : {0, 2, 3}) {
    Bytes b = u;
    b[0] = static_cast<std::uint8_t>((b[0] & ~3) | dv);
    EXPECT_EQ(parse(b, h), WireError::bad_ddp_version);
  }
  // RDMAP version: RV 0, 2, 3 (RFC 5040 section 4.2: must be 1).
  for (int rv : {0, 2, 3}) {
    Bytes b = u;
    b[1] = static_cast<std::uint8_t>((b[1] & 0x3f) | (rv << 6));
    EXPECT_EQ(parse(b, h), WireError::bad_rdmap_version);
  }
  // Opcodes 8..11 are RFC 7306's, untagged (its section 4.1); 12..15 are not assigned.
  for (std::uint8_t op = 8; op < 12; ++op) {
    Bytes b = u;
    b[1] = static_cast<std::uint8_t>(0x40 | op);
    EXPECT_EQ(parse(b, h), WireError::ok);
    EXPECT_EQ(static_cast<std::uint8_t>(h.opcode), op);
    b[0] |= 0x80;
    EXPECT_EQ(parse(b, h), WireError::opcode);
  }
  for (std::uint8_t op = 12; op < 16; ++op) {
    Bytes b = u;
    b[1] = static_cast<std::uint8_t>(0x40 | op);
    EXPECT_EQ(parse(b, h), WireError::opcode);
  }
  // A tagged Send and an untagged Write are wrong buffer models.
  Bytes b = u;
  b[0] |= 0x80;
  EXPECT_EQ(parse(b, h), WireError::opcode);
  b = t;
  b[0] &= 0x7f;
  b.resize(untagged_hdr_len);
  EXPECT_EQ(parse(b, h), WireError::opcode);
  // Reserved bits are ignored (RFC 5041 section 6.1).
  b = u;
  b[0] |= 0x3c;
  b[1] |= 0x30;
  EXPECT_EQ(parse(b, h), WireError::ok);
  ReadRequest rr;
  EXPECT_EQ(parse(Bytes(27, 0), rr), WireError::truncated);
}

Terminate sample(bool m, bool d, bool r, bool tagged) {
  Terminate t;
  t.cause = term::ddp_msn_no_buffer;
  t.m = m;
  t.d = d;
  t.r = r;
  t.ddp_seg_len = m || d ? 46 : 0;
  if (d) {
    t.ddp_hdr_len = tagged ? tagged_hdr_len : untagged_hdr_len;
    for (std::size_t i = 0; i < t.ddp_hdr_len; ++i) t.ddp_hdr[i] = static_cast<std::uint8_t>(i + 1);
    t.ddp_hdr[0] = tagged ? 0xc1 : 0x41;
  }
  if (r)
    for (std::size_t i = 0; i < read_request_len; ++i)
      t.rdma_hdr[i] = static_cast<std::uint8_t>(0x80 + i);
  return t;
}

TEST(DdpWire, TerminateRoundTrips) {
  const Terminate cases[] = {sample(false, false, false, false), sample(true, false, false, false),
                             sample(true, true, false, true), sample(true, true, false, false),
                             sample(true, true, true, false)};
  for (const Terminate& t : cases) {
    Bytes b(terminate_max_len);
    const std::size_t n = emit(t, b);
    ASSERT_EQ(n, t.length());
    b.resize(n);
    Terminate back;
    ASSERT_EQ(parse(b, back), WireError::ok);
    EXPECT_EQ(back, t);
  }
  // Every cause survives the 4-bit fields.
  Terminate t;
  t.cause = term::llp_no_matching_rtr;
  Bytes b(4);
  ASSERT_EQ(emit(t, b), 4u);
  EXPECT_EQ(b, (Bytes{0x20, 0x07, 0x00, 0x00}));
}

TEST(DdpWire, MalformedTerminate) {
  Terminate t;
  EXPECT_EQ(parse(Bytes{0x12, 0x02, 0x00}, t), WireError::truncated);
  EXPECT_EQ(parse(Bytes{0x30, 0x00, 0x00, 0x00}, t), WireError::terminate_layer);
  EXPECT_EQ(parse(Bytes{0x12, 0x02, 0x20, 0x00}, t), WireError::terminate_hdrct);  // R only
  EXPECT_EQ(parse(Bytes{0x12, 0x02, 0x80, 0x00, 0x00}, t), WireError::truncated);  // M, 1 of 2
  EXPECT_EQ(parse(Bytes{0x12, 0x02, 0x40, 0x00, 0x00, 0x10}, t), WireError::truncated);  // no hdr
  Bytes d = {0x12, 0x02, 0xc0, 0x00, 0x00, 0x20, 0x41};
  d.resize(6 + 17, 0);  // untagged header one octet short
  EXPECT_EQ(parse(d, t), WireError::truncated);
  d.resize(6 + 18, 0);
  EXPECT_EQ(parse(d, t), WireError::ok);
  d.push_back(0);  // trailing octet
  EXPECT_EQ(parse(d, t), WireError::terminate_hdrct);
  Bytes r(terminate_max_len);
  r.resize(emit(sample(true, true, true, false), r));
  r.pop_back();  // RDMA header one octet short
  EXPECT_EQ(parse(r, t), WireError::truncated);
  Bytes small(3);
  EXPECT_EQ(emit(sample(false, false, false, false), small), 0u);
}

}  // namespace
}  // namespace esock::ddp
