#include "ddp/tripwire.h"

#include <algorithm>
#include <cerrno>

namespace esock::ddp {

std::uint32_t TripwireSet::arm(stag_t stag, std::uint64_t to, std::uint64_t len,
                               std::uint64_t cookie, bool persistent) {
  if (arms_.size() >= max_armed || len == 0 || to > UINT64_MAX - len) return 0;
  // Ids count 1..max_id and wrap (the C API returns them as an int); a live one is skipped.
  const auto after = [](std::uint32_t i) { return i >= max_id ? 1u : i + 1; };
  std::uint32_t id = next_id_;
  while (find(id) != nullptr) id = after(id);
  next_id_ = after(id);
  Arm a;
  a.id = id;
  a.stag = stag;
  a.to = to;
  a.end = to + len;
  a.cookie = cookie;
  a.persistent = persistent;
  arms_.push_back(a);
  return id;
}

TripwireSet::Arm* TripwireSet::find(std::uint32_t id) {
  for (Arm& a : arms_)
    if (a.id == id) return &a;
  return nullptr;
}

void TripwireSet::drop(std::uint32_t id) {
  std::erase_if(arms_, [id](const Arm& a) { return a.id == id; });
  std::erase(fired_, id);
  std::erase(staged_, id);
}

int TripwireSet::disarm(std::uint32_t id) {
  if (find(id) == nullptr) return EINVAL;
  drop(id);
  return 0;
}

void TripwireSet::disarm_region(stag_t stag) {
  std::vector<std::uint32_t> ids;
  for (const Arm& a : arms_)
    if (a.stag == stag) ids.push_back(a.id);
  for (std::uint32_t id : ids) drop(id);
}

void TripwireSet::on_write_segment(stag_t stag, std::uint64_t to, std::uint64_t len, bool last) {
  const std::uint64_t end = to > UINT64_MAX - len ? UINT64_MAX : to + len;
  // A zero-length segment places nothing: it touches no range (its Last bit still ends
  // the message below).
  for (Arm& a : len == 0 ? std::span<Arm>{} : std::span<Arm>{arms_}) {
    if (a.stag != stag || a.spent || end <= a.to || to >= a.end) continue;
    const std::uint64_t lo = std::max(to, a.to), hi = std::min(end, a.end);
    if (!a.staged) {
      a.staged = true;
      a.stage_lo = lo;
      a.stage_hi = hi;
      staged_.push_back(a.id);
    } else {
      a.stage_lo = std::min(a.stage_lo, lo);
      a.stage_hi = std::max(a.stage_hi, hi);
    }
  }
  if (!last) return;
  // The Write message is delivered: what it hit fires, in the order its octets reached them.
  for (std::uint32_t id : staged_) {
    Arm* a = find(id);
    if (a == nullptr) continue;
    a->staged = false;
    if (a->landings == 0) {
      a->lo = a->stage_lo;
      a->hi = a->stage_hi;
      fired_.push_back(id);
    } else {
      a->lo = std::min(a->lo, a->stage_lo);
      a->hi = std::max(a->hi, a->stage_hi);
    }
    ++a->landings;
    if (!a->persistent) a->spent = true;
  }
  staged_.clear();
}

void TripwireSet::abort_message() {
  for (std::uint32_t id : staged_)
    if (Arm* a = find(id)) a->staged = false;
  staged_.clear();
}

std::size_t TripwireSet::poll(std::span<TripwireEvent> out) {
  std::size_t n = 0;
  while (n < out.size() && !fired_.empty()) {
    const std::uint32_t id = fired_.front();
    fired_.pop_front();
    Arm* a = find(id);
    if (a == nullptr) continue;
    TripwireEvent& e = out[n++];
    e.id = id;
    e.cookie = a->cookie;
    e.to = a->lo;
    e.length = a->hi - a->lo;
    e.landings = a->landings;
    e.disarmed = a->spent;
    a->landings = 0;
    if (a->spent) drop(id);
  }
  return n;
}

}  // namespace esock::ddp
