// The ISN key this user's stacks share until reboot (tcp/runtime/host_isn_key.h).
#include "tcp/runtime/host_isn_key.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace esock::tcp {
namespace {

std::string scratch(const char* name) {
  return ::testing::TempDir() + "/" + name + "." + std::to_string(::getpid());
}

TEST(HostIsnKey, TheFirstStackMakesItPrivateAndTheNextReadsTheSame) {
  const std::string path = scratch("isn-key");
  std::remove(path.c_str());
  std::string why;
  const auto first = host_isn_key(&why, path);
  ASSERT_TRUE(first) << why;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(static_cast<std::size_t>(st.st_size), first->size());
  const auto second = host_isn_key(&why, path);
  ASSERT_TRUE(second) << why;
  EXPECT_EQ(*first, *second);
  // So one 4-tuple's ISN and timestamp offset are the same function in both processes.
  const FourTuple t{Ipv4Addr::from_octets(10, 0, 0, 2), Ipv4Addr::from_octets(10, 0, 0, 1), 40000,
                    80};
  EXPECT_EQ(IsnGenerator(*first).ts_offset(t), IsnGenerator(*second).ts_offset(t));
  std::remove(path.c_str());
}

TEST(HostIsnKey, AFileOthersCanReadIsNotTrusted) {
  const std::string path = scratch("isn-key-open");
  {
    std::ofstream f(path, std::ios::binary);
    f << std::string(16, 'k');
  }
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  std::string why;
  EXPECT_FALSE(host_isn_key(&why, path));
  EXPECT_NE(why.find("not a key this user made"), std::string::npos) << why;
  std::remove(path.c_str());
}

TEST(HostIsnKey, AFileOfAnotherSizeIsNotTrusted) {
  const std::string path = scratch("isn-key-short");
  {
    std::ofstream f(path, std::ios::binary);
    f << "short";
  }
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  std::string why;
  EXPECT_FALSE(host_isn_key(&why, path));
  std::remove(path.c_str());
}

// Another user's FIFO in the key's place must not hang the stack's start (nor be read).
TEST(HostIsnKey, AFifoInItsPlaceIsRefusedWithoutWaiting) {
  const std::string path = scratch("isn-key-fifo");
  std::remove(path.c_str());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::string why;
  EXPECT_FALSE(host_isn_key(&why, path));
  EXPECT_FALSE(why.empty());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace esock::tcp
