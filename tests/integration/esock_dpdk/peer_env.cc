#include "peer_env.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ddp_helpers.h"

extern char** environ;

namespace esock_dpdk_test {

namespace {

std::string vdev(const char* role, const std::string& sock) {
  return std::string("net_memif0,role=") + role + ",socket=" + sock + ",socket-abstract=no";
}

// The peer's first line, "port N msgport M", read with a deadline.
bool read_ports(int fd, std::uint16_t* port, std::uint16_t* msgport) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (line.find('\n') == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline || !wait_for(fd, POLLIN, 1000)) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      continue;
    }
    char b[64];
    const ssize_t r = ::read(fd, b, sizeof b);
    if (r <= 0) return false;
    line.append(b, static_cast<std::size_t>(r));
  }
  int p = 0, m = 0;
  if (std::sscanf(line.c_str(), "port %d msgport %d", &p, &m) != 2 || p <= 0 || p > 65535 ||
      m <= 0 || m > 65535)
    return false;
  *port = static_cast<std::uint16_t>(p);
  *msgport = static_cast<std::uint16_t>(m);
  return true;
}

}  // namespace

bool wait_for(int fd, short events, int ms) {
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, ms) == 1 && (p.revents & events) != 0;
}

void PeerEnv::SetUp() {
  ::signal(SIGPIPE, SIG_IGN);
  if (const char* ext = std::getenv("ESOCK_FD_TEST_PEER")) {
    char ip[64] = "";
    int p = 0, m = 0;
    const char* own = std::getenv("ESOCK_FD_TEST_OWN_IP");
    ASSERT_EQ(std::sscanf(ext, "%63s %d %d", ip, &p, &m), 3) << "ESOCK_FD_TEST_PEER: " << ext;
    ASSERT_NE(own, nullptr) << "ESOCK_FD_TEST_OWN_IP is not set";
    peer_ip_ = ip;
    own_ip_ = own;
    port_ = static_cast<std::uint16_t>(p);
    msgport_ = static_cast<std::uint16_t>(m);
    external_ = true;
    return;
  }
  char tmpl[] = "/tmp/esock-dpdk-fd-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  dir_ = tmpl;
  const std::string sock = dir_ + "/memif.sock";
  const char* peer = std::getenv("ESOCK_DPDK_PEER");
  const std::string prog = peer != nullptr ? peer : ESOCK_DPDK_PEER;

  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "ESOCK_", 6) != 0) env.emplace_back(*e);
  env.push_back("ESOCK_PROVIDER=dpdk");
  env.push_back("ESOCK_DPDK_VDEV=" + vdev("server", sock));
  env.push_back(std::string("ESOCK_DPDK_IP=") + kMemifPeerIp + "/24");
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);

  int in[2], out[2];
  ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  char* argv[] = {const_cast<char*>(prog.c_str()), nullptr};
  const int rc = ::posix_spawn(&pid_, prog.c_str(), &fa, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  to_peer_ = in[1];
  ASSERT_EQ(rc, 0) << "posix_spawn " << prog << ": " << std::strerror(rc);
  const bool got = read_ports(out[0], &port_, &msgport_);
  ::close(out[0]);
  ASSERT_TRUE(got) << "the peer did not report its port";

  // This process: the memif client. Read at its first DDPMODE connect/listen/bind.
  ::setenv("ESOCK_PROVIDER", "dpdk", 1);
  ::setenv("ESOCK_DPDK_VDEV", vdev("client", sock).c_str(), 1);
  ::setenv("ESOCK_DPDK_IP", (std::string(kMemifOwnIp) + "/24").c_str(), 1);
}

void PeerEnv::TearDown() {
  if (to_peer_ >= 0) ::close(to_peer_);  // the peer's stdin EOF: it exits once idle
  if (pid_ > 0) {
    int status = 0;
    pid_t r = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while ((r = ::waitpid(pid_, &status, WNOHANG)) == 0 &&
           std::chrono::steady_clock::now() < deadline)
      ::poll(nullptr, 0, 10);
    if (r == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      ADD_FAILURE() << "the peer did not exit";
    } else {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << "the peer's status: " << status << " (see its stderr)";
    }
  }
  if (!dir_.empty()) {
    ::unlink((dir_ + "/memif.sock").c_str());
    ::rmdir(dir_.c_str());
  }
}

sockaddr_in PeerEnv::peer_addr(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, peer_ip_.c_str(), &a.sin_addr);
  a.sin_port = htons(port);
  return a;
}

int PeerEnv::open(const std::string& cmd) {
  const int fd = esock_test::ddp_socket();
  const sockaddr_in a = peer_addr(port_);
  if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  const std::string line = cmd + "\n";
  if (!esock_test::write_all(fd, reinterpret_cast<const std::uint8_t*>(line.data()), line.size())) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace esock_dpdk_test
