#include "eal_env.h"

#include <gtest/gtest.h>

#include <memory>

namespace esock::tcp::dpdk::test {
namespace {

std::unique_ptr<Eal>& holder() {
  static std::unique_ptr<Eal> e;
  return e;
}

// Cleans up EAL (and its runtime directory) after every test of the process has run.
class EalEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { holder().reset(); }
};
[[maybe_unused]] auto* const env = ::testing::AddGlobalTestEnvironment(new EalEnvironment);

}  // namespace

Eal& eal() {
  auto& e = holder();
  if (!e) {
    std::string err;
    EalOptions o;
    o.core = 0;
    e = Eal::init(o, &err);
    if (!e) {
      ADD_FAILURE() << err;
      std::abort();
    }
  }
  return *e;
}

}  // namespace esock::tcp::dpdk::test
