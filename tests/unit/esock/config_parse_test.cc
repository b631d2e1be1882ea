// The configuration's parser and validator (lib/esock/process/config_parse.h): what a file and
// an environment give, and every kind of problem with where it is.
#include "esock/process/config_parse.h"
#include "esock/process/rules.h"

#include <gtest/gtest.h>

namespace esock::sockets {
namespace {

struct Parsed {
  Config c;
  std::vector<ConfigIssue> issues;
  std::string text() const {
    std::string s;
    for (const ConfigIssue& i : issues) s += (i.error ? "E " : "W ") + i.text + "\n";
    return s;
  }
  int errors() const {
    int n = 0;
    for (const ConfigIssue& i : issues) n += i.error ? 1 : 0;
    return n;
  }
};

Parsed parse(const std::string& file, std::vector<std::string> env = {}) {
  Parsed p;
  const ConfigFile f{"esock.conf", file};
  p.c = parse_config(file.empty() ? nullptr : &f, env, &p.issues);
  return p;
}

TEST(ConfigParse, DefaultsWithoutFileOrEnvironment) {
  const Parsed p = parse("");
  EXPECT_TRUE(p.issues.empty()) << p.text();
  EXPECT_EQ(p.c.provider, "ksock");
  EXPECT_EQ(p.c.recv_buffers, 16u);
  EXPECT_EQ(p.c.log, "warn");
  EXPECT_FALSE(p.c.debug);
}

TEST(ConfigParse, FileValuesCommentsAndSizes) {
  const Parsed p = parse(
      "# a comment\n"
      "provider = dpdk   # trailing comment\n"
      "\n"
      "  sink_threshold=64K\n"
      "async_read_threshold = 2M\n"
      "prefetch_us = 250000\n"
      "rndv_threshold = 1M\n"
      "mpa_crc = allow\n"
      "ddpmode_all = yes\n"
      "dpdk_ip = 10.1.2.3/24\n"
      "dpdk_mtu = 0\n");
  EXPECT_TRUE(p.issues.empty()) << p.text();
  EXPECT_EQ(p.c.provider, "dpdk");
  EXPECT_EQ(p.c.sink_threshold, 65536u);
  EXPECT_EQ(p.c.async_read_threshold, 2097152u);
  EXPECT_EQ(p.c.prefetch_us, 250000u);
  EXPECT_EQ(p.c.rndv_threshold, 1u << 20);
  EXPECT_EQ(p.c.mpa_crc, mpa::Policy::allow);
  EXPECT_TRUE(p.c.ddpmode_all);
  EXPECT_EQ(p.c.dpdk_ip, "10.1.2.3/24");
}

TEST(ConfigParse, EnvironmentOverridesTheFile) {
  const Parsed p = parse("recv_buffers = 32\n", {"ESOCK_RECV_BUFFERS=64", "PATH=/bin"});
  EXPECT_TRUE(p.issues.empty()) << p.text();
  EXPECT_EQ(p.c.recv_buffers, 64u);
}

TEST(ConfigParse, EveryFileProblemHasItsLine) {
  const Parsed p = parse(
      "mpa_crc = sometimes\n"  // 1: bad choice
      "provder = dpdk\n"       // 2: unknown key, near one
      "recv_buffers = 2\n"     // 3: out of range
      "just words\n"           // 4: no '='
      "timeout_ms = 010x\n"    // 5: not a number
      "frobnicate = 1\n");     // 6: unknown, near nothing
  ASSERT_EQ(p.errors(), 6) << p.text();
  EXPECT_EQ(p.issues[0].text,
            "esock.conf:1: mpa_crc: must be one of refuse, allow, require, not 'sometimes'");
  EXPECT_EQ(p.issues[1].text, "esock.conf:2: unknown setting 'provder' (did you mean 'provider'?)");
  EXPECT_EQ(p.issues[2].text, "esock.conf:3: recv_buffers: must be 4..1024, not 2");
  EXPECT_EQ(p.issues[3].text, "esock.conf:4: expected 'key = value', got 'just words'");
  EXPECT_NE(p.issues[4].text.find("esock.conf:5: timeout_ms: a whole number"), std::string::npos);
  EXPECT_EQ(p.issues[5].text, "esock.conf:6: unknown setting 'frobnicate'");
  // Settings in error keep their defaults.
  EXPECT_EQ(p.c.mpa_crc, mpa::Policy::require);
  EXPECT_EQ(p.c.recv_buffers, 16u);
}

TEST(ConfigParse, EnvironmentValuesAreValidatedToo) {
  const Parsed p = parse("", {"ESOCK_RNDV_THRESHOLD=-1", "ESOCK_PROGRESS=sometimes",
                              "ESOCK_DPDK_IP=10.0.0.1", "ESOCK_DPDK_MTU=70000"});
  ASSERT_EQ(p.errors(), 4) << p.text();
  EXPECT_EQ(p.issues[1].text,
            "ESOCK_PROGRESS: must be one of auto, inline, thread, not 'sometimes'");
  EXPECT_EQ(p.issues[2].text,
            "ESOCK_DPDK_IP: must be the stack's address as A.B.C.D/NN, not '10.0.0.1'");
}

TEST(ConfigParse, NumbersAreDecimalWithoutSignOrOctal) {
  EXPECT_EQ(parse("spin_us = 010\n").c.spin_us, 10u);
  EXPECT_EQ(parse("spin_us = 0x10\n").errors(), 1);
  EXPECT_EQ(parse("spin_us = +5\n").errors(), 1);
  EXPECT_EQ(parse("spin_us = 99999999999999999999999\n").errors(), 1);
  EXPECT_EQ(parse("mpa_revision = 258\n").errors(), 1);  // no truncation into 8 bits
}

TEST(ConfigParse, AMisspeltVariableWarnsAndOthersAreLeftAlone) {
  const Parsed p = parse("", {"ESOCK_PROVDER=dpdk", "ESOCK_SOURCE_DIR=/src", "ESOCK_SHARED_DIR=/x",
                              "ESOCK_CONFIG_CHECKED=1", "ESOCK_PROVIDERS=x"});
  ASSERT_EQ(p.issues.size(), 2u) << p.text();
  EXPECT_FALSE(p.issues[0].error);
  EXPECT_EQ(p.issues[0].text,
            "ESOCK_PROVDER is not an esock setting (did you mean ESOCK_PROVIDER?): ignored");
  EXPECT_NE(p.issues[1].text.find("ESOCK_PROVIDERS is not an esock setting"), std::string::npos);
  EXPECT_EQ(p.c.provider, "ksock");
}

TEST(ConfigParse, AKeyGivenTwiceWarnsAndTheLastCounts) {
  const Parsed p = parse("spin_us = 1\nspin_us = 2\n");
  ASSERT_EQ(p.issues.size(), 1u) << p.text();
  EXPECT_FALSE(p.issues[0].error);
  EXPECT_EQ(p.issues[0].text, "esock.conf:2: 'spin_us' again (line 1): this one counts");
  EXPECT_EQ(p.c.spin_us, 2u);
}

TEST(ConfigParse, DebugIsTheOlderSpellingOfLogDebug) {
  EXPECT_EQ(parse("", {"ESOCK_DEBUG=1"}).c.log, "debug");
  EXPECT_TRUE(parse("", {"ESOCK_DEBUG=1"}).c.debug);
  EXPECT_EQ(parse("", {"ESOCK_DEBUG=1", "ESOCK_LOG=error"}).c.log, "error");
  EXPECT_FALSE(parse("", {"ESOCK_DEBUG=1", "ESOCK_LOG=error"}).c.debug);
  EXPECT_TRUE(parse("log = debug\n").c.debug);
  EXPECT_EQ(parse("", {"ESOCK_LOG=loud"}).errors(), 1);
}

TEST(ConfigParse, ConfigIsNoKeyInsideTheFile) {
  EXPECT_EQ(parse("config = /etc/other.conf\n").errors(), 1);
  EXPECT_TRUE(parse("", {"ESOCK_CONFIG=/x"}).issues.empty());
}

TEST(ConfigParse, FallbackNeverExceedsTheTimeout) {
  EXPECT_EQ(parse("timeout_ms = 100\n").c.fallback_ms, 100);
  EXPECT_EQ(parse("").c.fallback_ms, 500);
}

TEST(ConfigParse, EveryDocumentedKeyIsKnown) {
  for (const std::string& k : config_keys()) {
    const Parsed p = parse(k + " = \n");  // empty values: an error of kind, never "unknown"
    for (const ConfigIssue& i : p.issues)
      EXPECT_EQ(i.text.find("unknown setting"), std::string::npos) << i.text;
  }
  EXPECT_EQ(config_keys().size(), 31u);
}

TEST(ConfigParse, ZcopyIsOneOfFourModes) {
  EXPECT_EQ(parse("").c.zcopy, "sync");
  EXPECT_EQ(parse("", {"ESOCK_ZCOPY=async"}).c.zcopy, "async");
  EXPECT_EQ(parse("", {"ESOCK_ZCOPY=async-cow"}).c.zcopy, "async-cow");
  EXPECT_EQ(parse("zcopy = copy\n").c.zcopy, "copy");
  EXPECT_EQ(parse("", {"ESOCK_ZCOPY=fast"}).errors(), 1);
}

TEST(ConfigRules, ParsedAndApplied) {
  const Parsed p = parse(
      "ddpmode_programs = nginx, redis-server\n"
      "ddpmode_ports = 80,5000-5100\n"
      "ddpmode_peers = 10.0.0.0/8, 192.0.2.7\n");
  ASSERT_TRUE(p.issues.empty()) << p.text();
  EXPECT_TRUE(rules_allow_program(p.c, "redis-server"));
  EXPECT_FALSE(rules_allow_program(p.c, "curl"));
  EXPECT_TRUE(rules_allow_port(p.c, 80));
  EXPECT_TRUE(rules_allow_port(p.c, 5000));
  EXPECT_TRUE(rules_allow_port(p.c, 5100));
  EXPECT_FALSE(rules_allow_port(p.c, 5101));
  EXPECT_FALSE(rules_allow_port(p.c, 443));
  EXPECT_TRUE(rules_allow_peer(p.c, 0x0a010203));   // 10.1.2.3
  EXPECT_TRUE(rules_allow_peer(p.c, 0xc0000207));   // 192.0.2.7
  EXPECT_FALSE(rules_allow_peer(p.c, 0xc0000208));  // 192.0.2.8
  EXPECT_FALSE(rules_allow_peer(p.c, 0x0b000001));  // 11.0.0.1
}

TEST(ConfigRules, AProgramNameLongerThanTheCommMatchesOnItsFirst15Characters) {
  const Parsed p = parse("ddpmode_programs = prometheus-node-exporter\n");
  EXPECT_TRUE(rules_allow_program(p.c, "prometheus-node"));  // what /proc/self/comm holds
  EXPECT_FALSE(rules_allow_program(p.c, "prometheus"));
  EXPECT_FALSE(rules_allow_program(p.c, "prometheus-nodX"));
}

TEST(ConfigRules, EmptyRulesAllowEverything) {
  const Parsed p = parse("");
  EXPECT_TRUE(rules_allow_program(p.c, "anything"));
  EXPECT_TRUE(rules_allow_port(p.c, 1));
  EXPECT_TRUE(rules_allow_peer(p.c, 0x7f000001));
  const Parsed all = parse("ddpmode_peers = 0.0.0.0/0\n");
  EXPECT_TRUE(rules_allow_peer(all.c, 0xffffffff));
}

TEST(ConfigRules, BadRulesAreErrors) {
  EXPECT_EQ(parse("ddpmode_ports = 0\n").errors(), 1);
  EXPECT_EQ(parse("ddpmode_ports = 70000\n").errors(), 1);
  EXPECT_EQ(parse("ddpmode_ports = 90-80\n").errors(), 1);
  EXPECT_EQ(parse("ddpmode_ports = 80,,81\n").errors(), 1);
  EXPECT_EQ(parse("ddpmode_peers = 10.0.0.0/33\n").errors(), 1);
  EXPECT_EQ(parse("ddpmode_peers = example.org\n").errors(), 1);
  EXPECT_EQ(parse("ddpmode_programs = \n").errors(), 1);
  EXPECT_EQ(parse("", {"ESOCK_DDPMODE_PORTS=http"}).issues[0].text,
            "ESOCK_DDPMODE_PORTS: must be ports or ranges (80,443,5000-5100), not 'http'");
}

}  // namespace
}  // namespace esock::sockets
