#include "tcp/net/arp_cache.h"

#include <iterator>

namespace esock::tcp {

std::optional<MacAddr> ArpCache::lookup(Ipv4Addr ip, Instant now) const {
  const auto it = map_.find(ip.v);
  if (it == map_.end() || !it->second.resolved || it->second.deadline <= now) return std::nullopt;
  return it->second.mac;
}

bool ArpCache::resolving(Ipv4Addr ip) const {
  const auto it = map_.find(ip.v);
  return it != map_.end() && !it->second.resolved;
}

bool ArpCache::merge(Ipv4Addr ip, const MacAddr& mac, Instant now,
                     std::vector<PendingFrame>* released) {
  const auto it = map_.find(ip.v);
  if (it == map_.end()) return false;
  Entry& e = it->second;
  e.resolved = true;
  e.mac = mac;
  e.deadline = now + cfg_.timeout;
  e.retries = 0;
  released->insert(released->end(), std::make_move_iterator(e.pending.begin()),
                   std::make_move_iterator(e.pending.end()));
  e.pending.clear();
  e.pending.shrink_to_fit();
  return true;
}

// Frees the table of expired entries when it is full. Resolving entries stay: they hold
// frames and are bounded by their own retry limit.
bool ArpCache::make_room(Instant now) {
  if (map_.size() < cfg_.max_entries) return true;
  for (auto it = map_.begin(); it != map_.end();) {
    if (it->second.resolved && it->second.deadline <= now)
      it = map_.erase(it);
    else
      ++it;
  }
  return map_.size() < cfg_.max_entries;
}

bool ArpCache::insert(Ipv4Addr ip, const MacAddr& mac, Instant now) {
  if (map_.count(ip.v) == 0 && !make_room(now)) return false;
  Entry& e = map_[ip.v];
  e.resolved = true;
  e.mac = mac;
  e.deadline = now + cfg_.timeout;
  e.retries = 0;
  return true;
}

ArpCache::Enqueue ArpCache::enqueue(Ipv4Addr ip, PendingFrame&& frame, Instant now) {
  if (cfg_.pending_max == 0) return Enqueue::full;
  auto it = map_.find(ip.v);
  if (it != map_.end() && !it->second.resolved) {
    if (it->second.pending.size() >= cfg_.pending_max) return Enqueue::full;
    it->second.pending.push_back(std::move(frame));
    return Enqueue::queued;
  }
  // No entry, or an expired one (a valid one would have been used): resolve afresh.
  if (it == map_.end()) {
    if (!make_room(now)) return Enqueue::full;
    it = map_.try_emplace(ip.v).first;
  }
  Entry& e = it->second;
  e = Entry{};
  e.deadline = now + cfg_.retry;
  e.pending.push_back(std::move(frame));
  return Enqueue::queued_new;
}

void ArpCache::on_timer(Instant now, std::vector<Ipv4Addr>* retry, std::size_t* dropped) {
  for (auto it = map_.begin(); it != map_.end();) {
    Entry& e = it->second;
    if (e.deadline > now) {
      ++it;
    } else if (e.resolved) {
      it = map_.erase(it);  // expired: the next send resolves again
    } else if (e.retries >= cfg_.max_retries) {
      // RFC 1122 2.3.2.1: give up on an unresponsive neighbour rather than flood; the
      // frames it held are lost (TCP retransmits).
      *dropped += e.pending.size();
      it = map_.erase(it);
    } else {
      ++e.retries;
      e.deadline = now + cfg_.retry;
      retry->push_back(Ipv4Addr{it->first});
      ++it;
    }
  }
}

}  // namespace esock::tcp
