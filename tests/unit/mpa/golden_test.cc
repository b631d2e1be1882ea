// Golden tests against real Linux siw traffic (../shared/captures, see its README): parse
// the MPA Request/Reply, answer siw's Request as siw did, and deframe every FPDU of both
// directions with CRC checking.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "mpa/deframer.h"
#include "mpa/fpdu.h"
#include "mpa/negotiator.h"
#include "mpa/wire.h"
#include "pcapng.h"

namespace esock::mpa {
namespace {

using Bytes = std::vector<std::uint8_t>;

std::string capture(const char* name) {
  const char* dir = std::getenv("ESOCK_SHARED_DIR");
  const std::string base = dir && *dir ? dir : "/work/main/../shared";
  return base + "/captures/" + name;
}

struct Conversation {
  Bytes initiator, responder;  // each direction's TCP stream
  std::vector<test::TcpSegment> segments;
};

// Returns false (and the test skips) when the capture is absent.
bool load(const char* name, Conversation& c) {
  const std::string path = capture(name);
  if (!std::filesystem::exists(path)) return false;
  auto segs = test::read_pcapng_tcp(path);
  EXPECT_TRUE(segs.has_value()) << path;
  if (!segs) return false;
  for (auto& [dir, bytes] : test::reassemble_tcp(*segs)) {
    if (bytes.size() >= kKeyLen && std::equal(kKeyReq, kKeyReq + kKeyLen, bytes.begin()))
      c.initiator = bytes;
    else if (bytes.size() >= kKeyLen && std::equal(kKeyRep, kKeyRep + kKeyLen, bytes.begin()))
      c.responder = bytes;
  }
  c.segments = std::move(*segs);
  EXPECT_FALSE(c.initiator.empty());
  EXPECT_FALSE(c.responder.empty());
  return true;
}

// Deframes a direction after its MPA frame; checks each ULPDU against the FPDU lengths seen
// on the wire (siw sends one FPDU per segment here) and returns the ULPDUs.
std::vector<Bytes> deframe_after_frame(const Bytes& stream, bool crc, std::size_t* frame_len) {
  FrameRepr f;
  EXPECT_EQ(parse_frame(stream, f, frame_len), FrameError::none);
  Deframer d(false, crc, kMaxUlpdu);
  std::vector<Bytes> out;
  const Error e = d.feed(bytes_view(stream).subspan(*frame_len),
                         [&](bytes_view u) { out.emplace_back(u.begin(), u.end()); });
  EXPECT_EQ(e, Error::none) << to_string(e);
  EXPECT_TRUE(d.at_boundary());
  return out;
}

TEST(MpaGolden, SiwV2CrcCapture) {
  Conversation c;
  if (!load("siw-v2-crc.pcapng", c))
    GTEST_SKIP() << "capture not found: " << capture("siw-v2-crc.pcapng")
                 << " (set ESOCK_SHARED_DIR)";
  FrameRepr req, rep;
  ASSERT_EQ(parse_frame(c.initiator, req), FrameError::none);
  ASSERT_EQ(parse_frame(c.responder, rep), FrameError::none);
  EXPECT_TRUE(req.request);
  EXPECT_FALSE(rep.request);
  for (const FrameRepr* f : {&req, &rep}) {
    EXPECT_EQ(f->revision, 2);
    EXPECT_TRUE(f->crc);
    EXPECT_FALSE(f->markers);
    EXPECT_FALSE(f->reject);
    EXPECT_TRUE(f->enhanced);
    ASSERT_TRUE(f->v2);
    EXPECT_EQ(f->v2->ird, 1);
    EXPECT_EQ(f->v2->ord, 1);
    EXPECT_FALSE(f->v2->p2p);
  }
  // Our responder answers siw's Request exactly as siw's responder did.
  Config rc;
  rc.initiator = false;
  Negotiator res(rc);
  EXPECT_EQ(res.feed(c.initiator), 24u);  // stops at the end of the Request
  ASSERT_EQ(res.state(), Negotiator::State::established);
  EXPECT_EQ(res.take_output(), Bytes(c.responder.begin(), c.responder.begin() + 24));

  // Every FPDU in both directions passes the CRC (C=1), octets in wire order.
  std::size_t n_req = 0, n_rep = 0;
  const auto ini = deframe_after_frame(c.initiator, true, &n_req);
  const auto resp = deframe_after_frame(c.responder, true, &n_rep);
  EXPECT_EQ(ini.size(), 9u);
  EXPECT_EQ(resp.size(), 12u);
  // Cross-check ULPDU lengths with the segments: one FPDU per data segment after the frame.
  std::vector<std::size_t> seg_lengths;
  for (const auto& s : c.segments)
    if (s.payload.size() > 24 || (s.payload.size() > 0 && s.payload[0] != 'M'))
      seg_lengths.push_back(s.payload.size());
  std::size_t total = 0;
  for (const auto* v : {&ini, &resp})
    for (const Bytes& u : *v) total += fpdu_len(u.size());
  std::size_t seg_total = 0;
  for (std::size_t n : seg_lengths) seg_total += n;
  EXPECT_EQ(total, seg_total);
  EXPECT_EQ(ini[0].size(), 34u);   // frame 8: Send, ULPDU length 34
  EXPECT_EQ(resp[0].size(), 46u);  // frame 9: Read Request, 46
  EXPECT_EQ(ini[1].size(), 78u);   // frame 10: Read Response, 78

  // A flipped bit anywhere in an FPDU is caught.
  Bytes bad = c.initiator;
  bad[n_req + 20] ^= 0x01;
  Deframer d(false, true, kMaxUlpdu);
  EXPECT_EQ(d.feed(bytes_view(bad).subspan(n_req), [](bytes_view) {}), Error::crc);
}

TEST(MpaGolden, SiwV2P2pCapture) {
  Conversation c;
  if (!load("siw-v2-p2p.pcapng", c))
    GTEST_SKIP() << "capture not found: " << capture("siw-v2-p2p.pcapng")
                 << " (set ESOCK_SHARED_DIR)";
  FrameRepr req, rep;
  ASSERT_EQ(parse_frame(c.initiator, req), FrameError::none);
  ASSERT_EQ(parse_frame(c.responder, rep), FrameError::none);
  EXPECT_EQ(req.revision, 2);
  EXPECT_FALSE(req.crc);
  EXPECT_TRUE(req.enhanced);
  ASSERT_TRUE(req.v2 && rep.v2);
  EXPECT_TRUE(req.v2->p2p);
  EXPECT_TRUE(req.v2->rtr_write);
  EXPECT_TRUE(req.v2->rtr_read);
  EXPECT_FALSE(req.v2->rtr_send);
  EXPECT_TRUE(rep.v2->p2p);
  EXPECT_TRUE(rep.v2->rtr_write);
  EXPECT_FALSE(rep.v2->rtr_read || rep.v2->rtr_send);
  EXPECT_EQ(rep.v2->ird, 1);
  EXPECT_EQ(rep.v2->ord, 1);

  Config rc;
  rc.initiator = false;
  rc.crc = Policy::allow;  // siw asked for no CRC
  Negotiator res(rc);
  res.feed(c.initiator);
  ASSERT_EQ(res.state(), Negotiator::State::established);
  EXPECT_EQ(res.result().rtr, Rtr::write);
  EXPECT_EQ(res.take_output(), Bytes(c.responder.begin(), c.responder.begin() + 24));

  // Our initiator accepts siw's Reply and expects to send a Write RTR.
  Config ic;
  ic.crc = Policy::allow;
  ic.p2p = true;
  ic.ird = ic.ord = 1;
  Negotiator ini(ic);
  EXPECT_EQ(ini.feed(c.responder), 24u);
  ASSERT_EQ(ini.state(), Negotiator::State::established) << ini.error();
  EXPECT_EQ(ini.result().rtr, Rtr::write);

  std::size_t n = 0;
  const auto ulpdus = deframe_after_frame(c.initiator, false, &n);
  ASSERT_FALSE(ulpdus.empty());
  // The first FPDU is the RTR: a zero-length tagged RDMA Write, STag 1, TO 0.
  const Bytes rtr = {0xc1, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(ulpdus[0], rtr);
  deframe_after_frame(c.responder, false, &n);
}

}  // namespace
}  // namespace esock::mpa
