// Real MPA frames from the Linux siw captures in ../shared/captures (copied octet for octet
// so the negotiator tests run without the files).
#pragma once

#include <cstdint>
#include <vector>

namespace esock::mpa::test {

inline std::vector<std::uint8_t> frame(const char (&key)[17], std::uint8_t flags,
                                       std::vector<std::uint8_t> pd) {
  std::vector<std::uint8_t> f(key, key + 16);
  f.push_back(flags);
  f.push_back(2);
  f.push_back(static_cast<std::uint8_t>(pd.size() >> 8));
  f.push_back(static_cast<std::uint8_t>(pd.size()));
  f.insert(f.end(), pd.begin(), pd.end());
  return f;
}
// siw-v2-crc.pcapng frames 4 and 6: Rev 2, C=1, the 0x10 bit, IRD=ORD=1.
inline std::vector<std::uint8_t> siw_crc_request() {
  return frame("MPA ID Req Frame", 0x50, {0x00, 0x01, 0x00, 0x01});
}
inline std::vector<std::uint8_t> siw_crc_reply() {
  return frame("MPA ID Rep Frame", 0x50, {0x00, 0x01, 0x00, 0x01});
}
// siw-v2-p2p.pcapng frames 4 and 6: Rev 2, C=0, P2P with Write+Read RTR offered, Write
// picked.
inline std::vector<std::uint8_t> siw_p2p_request() {
  return frame("MPA ID Req Frame", 0x10, {0x80, 0x01, 0xc0, 0x01});
}
inline std::vector<std::uint8_t> siw_p2p_reply() {
  return frame("MPA ID Rep Frame", 0x10, {0x80, 0x01, 0x80, 0x01});
}

}  // namespace esock::mpa::test
