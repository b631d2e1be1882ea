#include "esock/process/config_parse.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <map>
#include <sstream>
#include <type_traits>

namespace esock::sockets {

namespace {

// Applies `value` to its field, or returns what was expected instead (the field keeps its
// default then).
using Apply = std::string (*)(Config&, const std::string& value);

struct Setting {
  const char* key;
  Apply apply;
};

// Decimal digits, optionally followed by K, M or G (binary multiples: sizes are in octets).
// No octal or hexadecimal, no sign: "010" is ten, "-1" is an error.
bool parse_count(const std::string& v, unsigned long long* out) {
  if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0]))) return false;
  unsigned long long x = 0;
  std::size_t i = 0;
  for (; i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])); ++i) {
    if (x > (ULLONG_MAX - 9) / 10) return false;
    x = x * 10 + static_cast<unsigned>(v[i] - '0');
  }
  if (i + 1 == v.size()) {
    const int shift = v[i] == 'K' || v[i] == 'k'   ? 10
                      : v[i] == 'M' || v[i] == 'm' ? 20
                      : v[i] == 'G' || v[i] == 'g' ? 30
                                                   : -1;
    if (shift < 0 || x > (ULLONG_MAX >> shift)) return false;
    x <<= shift;
    ++i;
  }
  if (i != v.size()) return false;
  *out = x;
  return true;
}

template <auto Field, unsigned long long Min, unsigned long long Max>
std::string count(Config& c, const std::string& v) {
  unsigned long long x = 0;
  if (!parse_count(v, &x)) return "a whole number is expected (digits, then optionally K, M or G)";
  if (x < Min || x > Max)
    return "must be " + std::to_string(Min) + ".." + std::to_string(Max) + ", not " + v;
  using T = std::remove_reference_t<decltype(c.*Field)>;
  c.*Field = static_cast<T>(x);
  return {};
}

template <auto Field>
std::string flag(Config& c, const std::string& v) {
  std::string l = v;
  for (char& ch : l) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (l == "1" || l == "yes" || l == "true" || l == "on") {
    c.*Field = true;
  } else if (l == "0" || l == "no" || l == "false" || l == "off") {
    c.*Field = false;
  } else {
    return "must be 1, yes, true or on, or 0, no, false or off, not '" + v + "'";
  }
  return {};
}

template <auto Field>
std::string text(Config& c, const std::string& v) {
  c.*Field = v;
  return {};
}

// One of `choices`, stored as given.
std::string one_of(const std::string& v, std::initializer_list<const char*> choices,
                   std::string* out) {
  std::string list;
  for (const char* ch : choices) {
    if (v == ch) {
      *out = v;
      return {};
    }
    list += std::string(list.empty() ? "" : ", ") + ch;
  }
  return "must be one of " + list + ", not '" + v + "'";
}

std::string policy(const std::string& v, mpa::Policy* out) {
  std::string s;
  std::string why = one_of(v, {"refuse", "allow", "require"}, &s);
  if (why.empty())
    *out = s == "refuse"  ? mpa::Policy::refuse
           : s == "allow" ? mpa::Policy::allow
                          : mpa::Policy::require;
  return why;
}

bool ipv4(const std::string& v) {
  in_addr a{};
  return ::inet_pton(AF_INET, v.c_str(), &a) == 1;
}

// "a,b,c" (spaces around items allowed) -> items; false when an item is empty.
bool items(const std::string& v, std::vector<std::string>* out) {
  std::size_t from = 0;
  for (;;) {
    const std::size_t comma = v.find(',', from);
    std::string item =
        v.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b == std::string::npos) return false;
    out->push_back(item.substr(b, e - b + 1));
    if (comma == std::string::npos) return true;
    from = comma + 1;
  }
}

std::string ports(Config& c, const std::string& v) {
  std::vector<std::string> list;
  std::vector<std::pair<std::uint16_t, std::uint16_t>> ranges;
  const std::string what = "must be ports or ranges (80,443,5000-5100), not '" + v + "'";
  if (!items(v, &list)) return what;
  for (const std::string& it : list) {
    const auto dash = it.find('-');
    unsigned long long lo = 0, hi = 0;
    if (!parse_count(it.substr(0, dash), &lo) ||
        !parse_count(dash == std::string::npos ? it.substr(0, dash) : it.substr(dash + 1), &hi) ||
        lo < 1 || hi > 65535 || lo > hi)
      return what;
    ranges.emplace_back(static_cast<std::uint16_t>(lo), static_cast<std::uint16_t>(hi));
  }
  c.ddpmode_ports = std::move(ranges);
  return {};
}

std::string peers(Config& c, const std::string& v) {
  std::vector<std::string> list;
  std::vector<std::pair<std::uint32_t, int>> nets;
  const std::string what =
      "must be IPv4 addresses or networks (10.0.0.0/8,192.0.2.7), not '" + v + "'";
  if (!items(v, &list)) return what;
  for (const std::string& it : list) {
    const auto slash = it.find('/');
    unsigned long long len = 32;
    in_addr a{};
    if (::inet_pton(AF_INET, it.substr(0, slash).c_str(), &a) != 1 ||
        (slash != std::string::npos && (!parse_count(it.substr(slash + 1), &len) || len > 32)))
      return what;
    nets.emplace_back(ntohl(a.s_addr), static_cast<int>(len));
  }
  c.ddpmode_peers = std::move(nets);
  return {};
}

std::string programs(Config& c, const std::string& v) {
  std::vector<std::string> list;
  if (!items(v, &list)) return "must be program names (nginx,redis-server), not '" + v + "'";
  c.ddpmode_programs = std::move(list);
  return {};
}

const Setting settings[] = {
    {"provider",
     [](Config& c, const std::string& v) -> std::string {
       // Whether it exists is for the loader (esockrun checks it first); here only the name.
       const bool name = !v.empty() && std::all_of(v.begin(), v.end(), [](char ch) {
         return std::islower(static_cast<unsigned char>(ch)) ||
                std::isdigit(static_cast<unsigned char>(ch)) || ch == '_';
       });
       if (!name) return "must be a provider name (lower case letters, digits, _), not '" + v + "'";
       c.provider = v;
       return {};
     }},
    {"ddpmode_all", flag<&Config::ddpmode_all>},
    {"ddpmode_programs", programs},
    {"ddpmode_ports", ports},
    {"ddpmode_peers", peers},
    {"config", nullptr},  // ESOCK_CONFIG names the file; not a key inside it
    {"recv_buffers", count<&Config::recv_buffers, 4, 1024>},  // stream-protocol.md 6: R >= 4
    {"recv_buffer_size", count<&Config::recv_buffer_size, 256, 1u << 24>},
    {"sink_threshold", count<&Config::sink_threshold, 0, 1u << 30>},
    {"rndv_threshold", count<&Config::rndv_threshold, 0, 1u << 30>},
    {"async_read_threshold", count<&Config::async_read_threshold, 0, 1u << 30>},
    {"prefetch_us", count<&Config::prefetch_us, 0, 10'000'000>},
    {"zcopy",
     [](Config& c, const std::string& v) {
       return one_of(v, {"copy", "sync", "async", "async-cow"}, &c.zcopy);
     }},
    {"mpa_revision", count<&Config::mpa_revision, 1, 2>},
    {"mpa_markers", [](Config& c, const std::string& v) { return policy(v, &c.mpa_markers); }},
    {"mpa_crc", [](Config& c, const std::string& v) { return policy(v, &c.mpa_crc); }},
    {"timeout_ms", count<&Config::timeout_ms, 1, 3'600'000>},
    {"fallback",
     [](Config& c, const std::string& v) {
       return one_of(v, {"auto", "fallback", "fail"}, &c.fallback);
     }},
    {"fallback_ms", count<&Config::fallback_ms, 1, 3'600'000>},
    {"log",
     [](Config& c, const std::string& v) {
       return one_of(v, {"error", "warn", "info", "debug"}, &c.log);
     }},
    {"debug", flag<&Config::debug>},
    {"progress",
     [](Config& c, const std::string& v) {
       return one_of(v, {"auto", "inline", "thread"}, &c.progress);
     }},
    {"spin_us", count<&Config::spin_us, 0, 1'000'000>},
    {"dpdk_vdev", text<&Config::dpdk_vdev>},
    {"dpdk_ip",
     [](Config& c, const std::string& v) -> std::string {
       const auto slash = v.find('/');
       unsigned long long len = 0;
       if (slash == std::string::npos || !ipv4(v.substr(0, slash)) ||
           !parse_count(v.substr(slash + 1), &len) || len < 1 || len > 32)
         return "must be the stack's address as A.B.C.D/NN, not '" + v + "'";
       c.dpdk_ip = v;
       return {};
     }},
    {"dpdk_gateway",
     [](Config& c, const std::string& v) -> std::string {
       if (!v.empty() && !ipv4(v)) return "must be an IPv4 address A.B.C.D, not '" + v + "'";
       c.dpdk_gateway = v;
       return {};
     }},
    {"dpdk_core", count<&Config::dpdk_core, 0, 1023>},
    {"dpdk_memory_mb", count<&Config::dpdk_memory_mb, 64, 1u << 20>},
    {"dpdk_file_prefix", text<&Config::dpdk_file_prefix>},
    {"dpdk_pcap", text<&Config::dpdk_pcap>},
    {"dpdk_faults", text<&Config::dpdk_faults>},  // checked by the provider (fault_text.h)
    {"dpdk_mtu",
     [](Config& c, const std::string& v) -> std::string {
       // 65000: the frame plus DPDK's headroom still fits an mbuf's 16-bit data room.
       unsigned long long x = 0;
       if (!parse_count(v, &x) || (x != 0 && (x < 576 || x > 65000)))
         return "must be 576..65000, or 0 for automatic, not '" + v + "'";
       c.dpdk_mtu = static_cast<unsigned>(x);
       return {};
     }},
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  const auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
}

const Setting* find(const std::string& key) {
  for (const Setting& s : settings)
    if (key == s.key) return &s;
  return nullptr;
}

std::string env_name(const char* key) {
  std::string n = "ESOCK_";
  for (const char* c = key; *c; ++c) n += static_cast<char>(std::toupper(*c));
  return n;
}

// Optimal string alignment distance (Damerau-Levenshtein without repeated edits of one
// substring): a transposition counts one, as in ESOCK_PROVDIER.
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// The setting `name` was probably meant as (keys or ESOCK_ names), or nullptr. Names of
// other tools' and tests' variables (ESOCK_SOURCE_DIR, ...) are too far from every setting
// to be taken for one.
const char* closest(const std::string& name, bool env) {
  const char* best = nullptr;
  std::size_t best_d = 3;  // at most two edits
  for (const Setting& s : settings) {
    const std::size_t d = distance(name, env ? env_name(s.key) : std::string(s.key));
    if (d < best_d) {
      best_d = d;
      best = s.key;
    }
  }
  return best;
}

void add(std::vector<ConfigIssue>* issues, bool error, std::string text) {
  issues->push_back({error, std::move(text)});
}

}  // namespace

std::vector<std::string> config_keys() {
  std::vector<std::string> keys;
  for (const Setting& s : settings)
    if (s.apply != nullptr) keys.emplace_back(s.key);
  return keys;
}

Config parse_config(const ConfigFile* file, const std::vector<std::string>& env,
                    std::vector<ConfigIssue>* issues) {
  Config c;
  bool log_set = false;
  if (file != nullptr) {
    std::istringstream in(file->text);
    std::map<std::string, int> seen;  // key -> line
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      line = trim(line.substr(0, line.find('#')));
      if (line.empty()) continue;
      const std::string at = file->name + ":" + std::to_string(n) + ": ";
      const auto eq = line.find('=');
      if (eq == std::string::npos) {
        add(issues, true, at + "expected 'key = value', got '" + line + "'");
        continue;
      }
      const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
      const Setting* s = find(key);
      if (s == nullptr || s->apply == nullptr) {
        const char* near = closest(key, false);
        add(issues, true,
            at + "unknown setting '" + key + "'" +
                (near ? std::string(" (did you mean '") + near + "'?)" : std::string()));
        continue;
      }
      if (auto it = seen.find(key); it != seen.end())
        add(issues, false,
            at + "'" + key + "' again (line " + std::to_string(it->second) + "): this one counts");
      seen[key] = n;
      if (const std::string why = s->apply(c, value); !why.empty())
        add(issues, true, at + key + ": " + why);
      log_set = log_set || key == "log";
    }
  }
  for (const std::string& kv : env) {
    if (kv.compare(0, 6, "ESOCK_") != 0) continue;
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = kv.substr(0, eq), value = kv.substr(eq + 1);
    std::string key;
    for (std::size_t i = 6; i < name.size(); ++i)
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
    const Setting* s = find(key);
    if (s == nullptr || name != env_name(s->key)) {
      if (const char* near = closest(name, true); near != nullptr)
        add(issues, false,
            name + " is not an esock setting (did you mean " + env_name(near) + "?): ignored");
      continue;
    }
    if (s->apply == nullptr) continue;  // ESOCK_CONFIG
    if (const std::string why = s->apply(c, value); !why.empty())
      add(issues, true, name + ": " + why);
    log_set = log_set || key == "log";
  }
  // ESOCK_DEBUG=1 is the older spelling of ESOCK_LOG=debug; an explicit log level wins.
  if (c.debug && !log_set) c.log = "debug";
  c.debug = c.log == "debug";
  // A silent peer is given fallback_ms of the set-up's timeout, never more (its default,
  // 500 ms, would exceed a timeout_ms set below it).
  c.fallback_ms = std::min(c.fallback_ms, c.timeout_ms);
  return c;
}

}  // namespace esock::sockets
