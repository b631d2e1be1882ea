// Two software RNIC engines joined by an in-memory segment transport: each FPDU the engine
// hands over is one record with its stream position, as lib/tcp keeps them. The link
// delivers records in order, cut at seeded random points, or out of order the way TCP offers
// segments above a hole: place_out_of_order() first, then skip_placed() or feed() at the
// record's turn. No I/O, no clock.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "esock/rnic/engine.h"

namespace esock::rnic::testing {

// The transmit half: records what the engine sends, with knobs for the segment size and
// the room it reports.
class RecordingTransport final : public Transport {
 public:
  struct Record {
    std::vector<std::uint8_t> bytes;
    bool fpdu = false;         // an FPDU (else an MPA Request/Reply/Reject)
    std::uint64_t seg_id = 0;  // its DDP segment
  };

  bool send_frame(bytes_view frame) override {
    records.push_back({{frame.begin(), frame.end()}, false, 0});
    return true;
  }
  std::size_t max_fpdu(bool markers) const override {
    markers_seen = markers_seen || markers;
    return segment;
  }
  bool can_send(std::size_t fpdu_len) const override { return room >= fpdu_len; }
  bool send_fpdu(std::span<const mpa::FramePiece> pieces, std::uint64_t seg_id) override {
    Record r{{}, true, seg_id};
    for (const mpa::FramePiece& p : pieces)
      r.bytes.insert(r.bytes.end(), p.bytes.begin(), p.bytes.end());
    if (room != SIZE_MAX) room -= std::min(room, r.bytes.size());
    records.push_back(std::move(r));
    return true;
  }

  std::size_t segment = 1460;
  std::size_t room = SIZE_MAX;
  mutable bool markers_seen = false;
  std::deque<Record> records;
};

// One engine and its transport, with a context of its own or one shared with other sides
// (several connections of one process).
struct Side {
  explicit Side(EngineConfig cfg, Context* shared = nullptr)
      : ctx(shared != nullptr ? *shared : own), engine(std::move(cfg), ctx, tx) {}
  Context own;
  Context& ctx;
  RecordingTransport tx;
  Engine engine;
};

inline EngineConfig engine_config(bool initiator, mpa::Policy markers, mpa::Policy crc) {
  EngineConfig c;
  c.mpa.initiator = initiator;
  c.mpa.markers = markers;
  c.mpa.crc = crc;
  c.place_aligned_segments = true;
  c.out_of_order_placement = true;
  return c;
}

// Moves records from one side to the other. In order: fed whole, or cut at random points.
// Out of order: a window of records is shuffled; a record that arrives ahead of the next
// expected one is offered for placement and, at its turn, skipped if it was placed.
class Link {
 public:
  explicit Link(std::uint32_t seed) : rng(seed) {}

  // Everything `from` has sent so far, in order, each record cut in random pieces.
  void deliver_in_order(Side& from, Side& to, bool cut) {
    while (!from.tx.records.empty()) {
      RecordingTransport::Record r = std::move(from.tx.records.front());
      from.tx.records.pop_front();
      bytes_view v(r.bytes);
      while (!v.empty()) {
        const std::size_t n =
            cut ? std::uniform_int_distribution<std::size_t>(1, v.size())(rng) : v.size();
        feed_all(to, v.first(n));
        v = v.subspan(n);
      }
    }
  }

  // The FPDU records `from` has sent, in windows of `window` shuffled records.
  void deliver_shuffled(Side& from, Side& to, std::size_t window) {
    std::vector<RecordingTransport::Record> all(from.tx.records.begin(), from.tx.records.end());
    from.tx.records.clear();
    for (std::size_t at = 0; at < all.size(); at += window) {
      const std::size_t end = std::min(all.size(), at + window);
      std::vector<std::size_t> order(end - at);
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = at + i;
      std::shuffle(order.begin(), order.end(), rng);
      deliver_window(to, all, at, order);
    }
  }

  static void feed_all(Side& to, bytes_view v) {
    while (!v.empty()) {
      const std::size_t used = to.engine.feed(v);
      ASSERT_GT(used, 0u);
      v = v.subspan(used);
    }
  }

  std::mt19937 rng;

 private:
  // Records arrive in `order`; TCP's in-order point is `next`. A record ahead of it is offered
  // for early placement; when the point reaches a record, it is skipped (placed) or fed.
  void deliver_window(Side& to, const std::vector<RecordingTransport::Record>& all,
                      std::size_t next, const std::vector<std::size_t>& order) {
    std::vector<int> got(all.size(), -1);  // -1 not arrived, 0 arrived, 1 placed early
    std::vector<std::uint64_t> pos(all.size());
    std::uint64_t p = to.engine.rx_position();
    for (std::size_t i = next; i < all.size(); ++i) {
      pos[i] = p;
      p += all[i].bytes.size();
    }
    for (const std::size_t i : order) {
      if (i == next) {
        got[i] = 0;
      } else {
        got[i] = to.engine.place_out_of_order(pos[i], bytes_view(all[i].bytes)) ? 1 : 0;
      }
      while (next < all.size() && got[next] >= 0) {
        if (got[next] == 1) {
          ASSERT_TRUE(to.engine.skip_placed(static_cast<std::uint32_t>(all[next].bytes.size())));
        } else {
          feed_all(to, bytes_view(all[next].bytes));
        }
        ++next;
      }
    }
  }
};

}  // namespace esock::rnic::testing
