#include "tcp/dev/pcap_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tcp/dev/mem_link.h"
#include "test_frames.h"

namespace esock::tcp {
namespace {

using test::to_vec;
using test::TxOf;

struct Record {
  std::uint32_t sec, nsec, incl, orig;
  std::vector<std::uint8_t> data;
};

std::uint32_t u32(const std::vector<std::uint8_t>& b, std::size_t at) {
  std::uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

// A minimal classic-pcap reader (host byte order, as our writer writes it).
bool read_pcap(const std::string& path, std::vector<std::uint8_t>* header,
               std::vector<Record>* out) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::uint8_t> b((std::istreambuf_iterator<char>(in)), {});
  if (b.size() < pcap::file_header_len) return false;
  header->assign(b.begin(), b.begin() + pcap::file_header_len);
  std::size_t at = pcap::file_header_len;
  while (at < b.size()) {
    if (b.size() - at < pcap::record_header_len) return false;
    Record r{u32(b, at), u32(b, at + 4), u32(b, at + 8), u32(b, at + 12), {}};
    at += pcap::record_header_len;
    if (b.size() - at < r.incl) return false;
    r.data.assign(b.begin() + static_cast<std::ptrdiff_t>(at),
                  b.begin() + static_cast<std::ptrdiff_t>(at + r.incl));
    at += r.incl;
    out->push_back(std::move(r));
  }
  return true;
}

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("esock-") + std::to_string(::getpid()) + "-" + name))
      .string();
}

class PcapWriterTest : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove(path); }
  std::string path = temp_path(::testing::UnitTest::GetInstance()->current_test_info()->name());
};

TEST_F(PcapWriterTest, RecordsBothDirectionsByteForByte) {
  MemLinkConfig lc;
  lc.caps.tx_ip_csum = lc.caps.tx_l4_csum = true;
  MemLink link(lc);
  ManualClock clock;
  clock.set(Instant{1'700'000'000'123'456'789});
  std::string err;
  auto w = PcapWriter::open(link.a(), clock, path, {}, &err);
  ASSERT_TRUE(w) << err;

  // tx: head + two payload pieces, checksums offloaded: the capture gets real ones.
  const auto off = test::tcp_frame(1, 1000, 5, true);
  std::array<TxPiece, 2> pieces{TxPiece{bytes_view(off).subspan(54, 300), {}},
                                TxPiece{bytes_view(off).subspan(354), {}}};
  TxFrame tf{bytes_view(off).first(54), pieces, {}};
  tf.offload.ip_csum = tf.offload.l4_csum = true;
  ASSERT_TRUE(w->tx(tf));
  w->tx_flush();
  // rx: what b sends arrives through the writer.
  clock.advance(std::chrono::microseconds(1500));
  const auto back = test::tcp_frame(2, 0);
  ASSERT_TRUE(link.b().tx(TxOf(back).frame));
  link.b().tx_flush();
  std::array<RxFrame, 2> rx;
  ASSERT_EQ(w->rx_burst(rx), 1u);
  EXPECT_EQ(to_vec(rx[0].data), back);
  EXPECT_EQ(w->records(), 2u);
  ASSERT_TRUE(w->flush());

  std::vector<std::uint8_t> hdr;
  std::vector<Record> recs;
  ASSERT_TRUE(read_pcap(path, &hdr, &recs));
  EXPECT_EQ(u32(hdr, 0), 0xa1b23c4du);
  EXPECT_EQ(hdr[4] | hdr[5] << 8, 2);  // version 2.4, little-endian host
  EXPECT_EQ(hdr[6] | hdr[7] << 8, 4);
  EXPECT_EQ(u32(hdr, 20), 1u);  // LINKTYPE_ETHERNET
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].sec, 1'700'000'000u);
  EXPECT_EQ(recs[0].nsec, 123'456'789u);
  EXPECT_EQ(recs[0].data, test::tcp_frame(1, 1000, 5, false));
  EXPECT_EQ(recs[0].orig, recs[0].incl);
  EXPECT_EQ(recs[1].sec, 1'700'000'000u);
  EXPECT_EQ(recs[1].nsec, 124'956'789u);
  EXPECT_EQ(recs[1].data, back);
}

TEST_F(PcapWriterTest, RawCaptureKeepsPseudoHeaderSumAndSnaplenTruncates) {
  MemLinkConfig lc;
  lc.caps.tx_ip_csum = lc.caps.tx_l4_csum = true;
  MemLink link(lc);
  ManualClock clock;
  PcapOptions o;
  o.fill_checksums = false;
  o.snaplen = 60;
  std::string err;
  auto w = PcapWriter::open(link.a(), clock, path, o, &err);
  ASSERT_TRUE(w) << err;
  const auto off = test::tcp_frame(1, 100, 0, true);
  TxOf t(off);
  t.frame.offload.ip_csum = t.frame.offload.l4_csum = true;
  ASSERT_TRUE(w->tx(t.frame));
  w.reset();  // the destructor flushes
  std::vector<std::uint8_t> hdr;
  std::vector<Record> recs;
  ASSERT_TRUE(read_pcap(path, &hdr, &recs));
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].incl, 60u);
  EXPECT_EQ(recs[0].orig, off.size());
  EXPECT_EQ(recs[0].data, std::vector<std::uint8_t>(off.begin(), off.begin() + 60));
}

TEST_F(PcapWriterTest, RefusedTxIsNotRecorded) {
  MemLinkConfig lc;
  lc.tx_queue = 1;
  MemLink link(lc);
  ManualClock clock;
  std::string err;
  auto w = PcapWriter::open(link.a(), clock, path, {}, &err);
  ASSERT_TRUE(w);
  const auto f = test::tcp_frame(1, 10);
  EXPECT_TRUE(w->tx(TxOf(f).frame));
  EXPECT_FALSE(w->tx(TxOf(f).frame));
  EXPECT_EQ(w->records(), 1u);
}

TEST(PcapWriter, OpenFailureIsAValue) {
  MemLink link;
  ManualClock clock;
  std::string err;
  auto w = PcapWriter::open(link.a(), clock, "/nonexistent-dir/x.pcap", {}, &err);
  EXPECT_FALSE(w);
  EXPECT_NE(err.find("/nonexistent-dir/x.pcap"), std::string::npos);
}

TEST_F(PcapWriterTest, TsharkReadsTheCapture) {
  if (std::system("command -v tshark >/dev/null 2>&1") != 0) GTEST_SKIP() << "no tshark";
  MemLink link;
  ManualClock clock;
  std::string err;
  auto w = PcapWriter::open(link.a(), clock, path, {}, &err);
  ASSERT_TRUE(w) << err;
  for (std::uint32_t i = 0; i < 5; ++i) {
    clock.advance(std::chrono::microseconds(10));
    ASSERT_TRUE(w->tx(TxOf(test::tcp_frame(1000 + i * 100, 100)).frame));
  }
  ASSERT_TRUE(w->flush());
  const std::string out = path + ".txt";
  const std::string cmd =
      "tshark -r '" + path +
      "' -o tcp.check_checksum:TRUE -o ip.check_checksum:TRUE -T fields -e tcp.len -e "
      "tcp.checksum.status -e ip.checksum.status > '" +
      out + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::filesystem::remove(out);
  // tshark prints checksum status 1 for "Good" (0 bad, 2 unverified) when checking is on.
  int lines = 0;
  for (std::size_t at = 0; (at = text.find("100\t1\t1", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 5) << text;
}

}  // namespace
}  // namespace esock::tcp
