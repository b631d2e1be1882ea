#include "stream.h"

namespace esock::tcp::tool {

std::string Digest::hex() const {
  crypto_hash_sha256_state copy = state_;
  unsigned char out[crypto_hash_sha256_BYTES];
  crypto_hash_sha256_final(&copy, out);
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (unsigned char c : out) {
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

// splitmix64 (Steele, Lea, Flood 2014): tiny, seedable, good enough to make every segment
// differ so a misplaced segment changes the digest.
std::uint64_t Generator::next_word() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void Generator::fill(mut_bytes out) {
  for (auto& b : out) {
    if (pattern_ == Pattern::counter) {
      b = static_cast<std::uint8_t>(pos_);
    } else {
      if ((pos_ & 7) == 0) word_ = next_word();
      b = static_cast<std::uint8_t>(word_ >> ((pos_ & 7) * 8));
    }
    ++pos_;
  }
}

}  // namespace esock::tcp::tool
