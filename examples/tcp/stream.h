// The byte streams esock_tcp sends and checks: a deterministic generator (a seeded
// splitmix64 stream, or a byte counter) and a running SHA-256 (libsodium), so that the two
// ends of a transfer can compare digests instead of data.
#pragma once

#include <sodium.h>

#include <cstdint>
#include <string>

#include "base/bytes.h"
#include "options.h"

namespace esock::tcp::tool {

class Digest {
 public:
  Digest() { crypto_hash_sha256_init(&state_); }
  void update(bytes_view b) {
    crypto_hash_sha256_update(&state_, b.data(), b.size());
    bytes_ += b.size();
  }
  std::uint64_t bytes() const { return bytes_; }
  // Hex of the digest of everything so far (the state is not consumed).
  std::string hex() const;

 private:
  crypto_hash_sha256_state state_;
  std::uint64_t bytes_ = 0;
};

// Produces the stream in order, any chunk size; the same (pattern, seed) gives the same
// bytes however it is chunked.
class Generator {
 public:
  Generator(Pattern p, std::uint64_t seed) : pattern_(p), state_(seed) {}
  void fill(mut_bytes out);

 private:
  std::uint64_t next_word();
  Pattern pattern_;
  std::uint64_t state_;
  std::uint64_t pos_ = 0;   // bytes produced so far
  std::uint64_t word_ = 0;  // prng: current 8-byte word, consumed low byte first
};

}  // namespace esock::tcp::tool
