// This process's statistics region (stats_layout.h): created at the first publish, rewritten
// by publish() (the runtime calls it from its rounds, at most every 100 ms), removed at exit.
// A fork child gets a region of its own at its first publish.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "esock/runtime/stats_layout.h"

namespace esock::sockets {

class StatsRegion {
 public:
  // /dev/shm/esock-stat.<pid>, or nullptr (and nothing published) when it cannot be made.
  static StatsRegion* create(const char* provider);
  ~StatsRegion();
  StatsRegion(const StatsRegion&) = delete;
  StatsRegion& operator=(const StatsRegion&) = delete;

  pid_t pid() const { return pid_; }
  // Writes one snapshot: fill() gets the region's connection array to fill (at most
  // max_conns) and returns how many there are in all; counters are the provider's.
  template <typename Fill>
  void publish(const std::vector<std::pair<std::string, std::uint64_t>>& counters, Fill fill) {
    begin();
    set_counters(counters);
    region_->conns_seen = fill(region_->conn, &region_->nconns);
    end();
  }

 private:
  StatsRegion(stats::Region* r, pid_t pid) : region_(r), pid_(pid) {}
  void begin();
  void end();
  void set_counters(const std::vector<std::pair<std::string, std::uint64_t>>& counters);

  stats::Region* region_;
  pid_t pid_;
};

}  // namespace esock::sockets
