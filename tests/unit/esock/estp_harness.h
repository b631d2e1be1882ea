// Two ESTP engines over two software RNIC engines (rnic::ByteStreamEngine) joined in memory (as
// tests/pipe does): the Hello travels in the MPA private data, octets move in seeded random pieces.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "esock/estp/stream.h"
#include "esock/rnic/byte_stream_engine.h"
#include "esock/rnic/engine_verbs.h"

namespace esock::estp::testing {

struct Side {
  Side(bool initiator, Params p) : params(p) {
    rnic::ByteStreamConfig c;
    c.engine.mpa.initiator = initiator;
    c.engine.mpa.private_data = emit_hello(hello_of(p));
    conn = std::make_unique<rnic::ByteStreamEngine>(c, ctx);
    verbs = std::make_unique<rnic::EngineVerbs>(conn->engine());
  }
  Params params;
  rnic::Context ctx;
  std::unique_ptr<rnic::ByteStreamEngine> conn;
  std::unique_ptr<rnic::EngineVerbs> verbs;
  std::unique_ptr<Stream> stream;
};

class Pair {
 public:
  Pair(Params pa, Params pb, std::uint32_t seed) : a(true, pa), b(false, pb), rng(seed) {}

  // MPA negotiation, then each side reads the peer's Hello and starts its engine.
  bool connect() {
    run_bytes();
    for (Side* s : {&a, &b}) {
      if (s->conn->state() != rnic::Engine::State::established) return false;
      const auto peer = parse_hello(s->conn->negotiated().peer_private_data);
      if (!peer) return false;
      s->stream = std::make_unique<Stream>(*s->verbs, s->params, *peer);
      if (s->stream->start(s == &a) != 0) return false;
    }
    run();
    return true;
  }

  // One round: frame, move a random piece each way, let both engines react.
  bool step() {
    const bool ab = move(a, b);
    const bool ba = move(b, a);
    if (a.stream) a.stream->progress();
    if (b.stream) b.stream->progress();
    return ab || ba;
  }
  // Until nothing moves (a quiet pair must not keep exchanging messages: no credit ping-pong).
  void run() {
    int idle = 0;
    for (int guard = 0; guard < 200000; ++guard) {
      if (step()) {
        idle = 0;
      } else if (++idle >= 2) {
        return;
      }
    }
    ADD_FAILURE() << "pair never went quiet";
  }

  std::mt19937& random() { return rng; }
  Side a, b;

 private:
  void run_bytes() {
    for (int guard = 0; guard < 10000; ++guard)
      if (!move(a, b) && !move(b, a)) return;
  }
  bool move(Side& from, Side& to) {
    from.conn->pump();
    const bytes_view out = from.conn->output();
    if (out.empty()) return false;
    const std::size_t n = std::min<std::size_t>(out.size(), 1 + rng() % 4000);
    std::vector<std::uint8_t> piece(out.begin(), out.begin() + static_cast<long>(n));
    from.conn->consume(n);
    to.conn->on_bytes(piece);
    return true;
  }
  std::mt19937 rng;
};

inline std::vector<std::uint8_t> pattern(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint8_t> v(n);
  std::mt19937 r(seed);
  for (auto& x : v) x = static_cast<std::uint8_t>(r());
  return v;
}

}  // namespace esock::estp::testing
