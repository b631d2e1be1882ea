#include "tcp/net/ipv4_reassembly.h"

#include <cstring>
#include <iterator>

namespace esock::tcp {

namespace {
// Bookkeeping charged against max_bytes besides the data, so that many tiny fragments or
// many dead datagrams cannot hold unbounded memory either.
constexpr std::size_t entry_cost = 128;
constexpr std::size_t fragment_cost = 64;
}  // namespace

Ipv4Reassembly::Outcome Ipv4Reassembly::kill(Entry& e) {
  used_ -= e.charged - entry_cost;
  e.charged = entry_cost;  // the tombstone stays charged until its lifetime ends
  e.frags.clear();
  e.received = 0;
  e.dead = true;
  return Outcome::dropped;
}

bool Ipv4Reassembly::overlaps(const Entry& e, std::size_t off, std::size_t len,
                              bool* duplicate) const {
  *duplicate = false;
  auto next = e.frags.lower_bound(off);
  if (next != e.frags.end() && next->first == off && next->second.size() == len) {
    *duplicate = true;
    return false;
  }
  if (next != e.frags.end() && next->first < off + len) return true;
  if (next != e.frags.begin()) {
    const auto prev = std::prev(next);
    if (prev->first + prev->second.size() > off) return true;
  }
  return false;
}

Ipv4Reassembly::Outcome Ipv4Reassembly::add(const Ipv4View& frag, Instant now, Datagram* out) {
  const bytes_view data = frag.payload();
  const std::size_t off = frag.frag_offset();
  const std::size_t len = data.size();
  const std::size_t end = off + len;      // <= 65515: Ipv4View::check bounds it
  if (len == 0) return Outcome::dropped;  // carries nothing; RFC 791 never sends it

  const Key key{frag.src().v, frag.dst().v, frag.id(), frag.protocol()};
  auto it = map_.find(key);
  if (it == map_.end()) {
    if (used_ > max_bytes_ || entry_cost > max_bytes_ - used_) return Outcome::dropped;
    it = map_.try_emplace(key).first;
    it->second.deadline = now + timeout_;
    it->second.charged = entry_cost;
    used_ += entry_cost;
  }
  Entry& e = it->second;
  if (e.dead) return Outcome::dropped;

  // RFC 791 3.2: every fragment but the last carries a multiple of 8 octets; the last one
  // fixes the length, which no other fragment may contradict.
  if (frag.more_frags()) {
    if (len % 8 != 0 || (e.total && end >= *e.total)) return kill(e);
  } else {
    if (e.total && *e.total != end) return kill(e);
    if (!e.frags.empty()) {
      const auto& last = *e.frags.rbegin();
      if (last.first + last.second.size() > end) return kill(e);
    }
    e.total = end;
  }
  bool duplicate = false;
  if (overlaps(e, off, len, &duplicate)) return kill(e);
  if (duplicate) return Outcome::pending;

  const std::size_t cost = len + fragment_cost;
  if (cost > max_bytes_ - used_) return kill(e);  // over budget: give this datagram up
  e.frags.emplace(off, std::vector<std::uint8_t>(data.begin(), data.end()));
  e.received += len;
  e.charged += cost;
  used_ += cost;
  if (!e.total || e.received != *e.total) return Outcome::pending;

  std::uint8_t* p = nullptr;
  out->ref = HeapBuf::make(*e.total, &p);
  for (const auto& [o, bytes] : e.frags) std::memcpy(p + o, bytes.data(), bytes.size());
  out->payload = bytes_view(p, *e.total);
  used_ -= e.charged;
  map_.erase(it);
  return Outcome::complete;
}

std::size_t Ipv4Reassembly::expire(Instant now) {
  std::size_t given_up = 0;
  for (auto it = map_.begin(); it != map_.end();) {
    if (it->second.deadline <= now) {
      if (!it->second.dead) ++given_up;
      used_ -= it->second.charged;
      it = map_.erase(it);
    } else {
      ++it;
    }
  }
  return given_up;
}

}  // namespace esock::tcp
