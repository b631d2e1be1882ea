// RFC 7306's message bodies: layouts against octets written out by hand from the RFC's
// figures (section 5.2.1 Figure 4, 5.2.2 Figure 6), and round trips.
#include <gtest/gtest.h>

#include "ddp/wire_ext.h"
#include "harness.h"

namespace esock::ddp {
namespace {

using testing::Bytes;

TEST(DdpWireExt, AtomicRequestFieldsSitWhereFigure4PutsThem) {
  AtomicRequest r;
  r.op = static_cast<std::uint8_t>(AtomicOp::cmp_swap);
  r.req_id = 0x01020304;
  r.stag = 0x0a0b0c0d;
  r.to = 0x1011121314151617;
  r.add_swap = 0x2021222324252627;
  r.add_swap_mask = 0x3031323334353637;
  r.compare = 0x4041424344454647;
  r.compare_mask = 0x5051525354555657;
  Bytes b(atomic_request_len);
  ASSERT_EQ(emit(r, b), atomic_request_len);
  const Bytes want = {0x00, 0x00, 0x00, 0x02, 0x01, 0x02, 0x03, 0x04, 0x0a, 0x0b, 0x0c, 0x0d, 0x10,
                      0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25,
                      0x26, 0x27, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x40, 0x41, 0x42,
                      0x43, 0x44, 0x45, 0x46, 0x47, 0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57};
  EXPECT_EQ(b, want);
  AtomicRequest back;
  ASSERT_EQ(parse(b, back), WireError::ok);
  EXPECT_EQ(back, r);
}

TEST(DdpWireExt, TheReservedBitsOfTheOperationWordAreIgnored) {
  Bytes b(atomic_request_len, 0);
  b[0] = 0xff;
  b[3] = 0xf0;  // reserved bits set, operation 0 (FetchAdd)
  AtomicRequest r;
  ASSERT_EQ(parse(b, r), WireError::ok);
  EXPECT_EQ(r.op, 0);
  b[3] = 0x01;  // the reserved code is parsed as it is: the Qp refuses it
  ASSERT_EQ(parse(b, r), WireError::ok);
  EXPECT_EQ(r.op, 1);
  EXPECT_FALSE(atomic_op_known(1));
  EXPECT_TRUE(atomic_op_known(0));
  EXPECT_TRUE(atomic_op_known(2));
}

TEST(DdpWireExt, AtomicResponseIsTwelveOctets) {
  AtomicResponse r{0xdeadbeef, 0x8877665544332211};
  Bytes b(atomic_response_len);
  ASSERT_EQ(emit(r, b), atomic_response_len);
  const Bytes want = {0xde, 0xad, 0xbe, 0xef, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11};
  EXPECT_EQ(b, want);
  AtomicResponse back;
  ASSERT_EQ(parse(b, back), WireError::ok);
  EXPECT_EQ(back, r);
}

TEST(DdpWireExt, BodiesOfAnyOtherLengthAreRefused) {
  AtomicRequest r;
  AtomicResponse p;
  EXPECT_EQ(parse(Bytes(atomic_request_len - 1), r), WireError::truncated);
  EXPECT_EQ(parse(Bytes(atomic_request_len + 1), r), WireError::truncated);
  EXPECT_EQ(parse(Bytes(atomic_response_len - 1), p), WireError::truncated);
  EXPECT_EQ(parse(Bytes(atomic_response_len + 4), p), WireError::truncated);
  Bytes small(atomic_request_len - 1);
  EXPECT_EQ(emit(r, small), 0u);
}

}  // namespace
}  // namespace esock::ddp
