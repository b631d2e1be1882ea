#include "tcp/runtime/host_isn_key.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace esock::tcp {

namespace {

// Reads the key if `path` is a regular file of exactly the key's size, owned by us and
// readable by nobody else.
std::optional<IsnGenerator::Key> read_key(const std::string& path, std::string* why) {
  // O_NONBLOCK: a FIFO another user put there must not hang the open (the type is checked
  // next, before any read).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno != ENOENT) *why = path + ": " + std::strerror(errno) + ": a random key instead";
    return std::nullopt;
  }
  IsnGenerator::Key key{};
  struct stat st {};
  const bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
                  (st.st_mode & 077) == 0 && static_cast<std::size_t>(st.st_size) == key.size() &&
                  ::read(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size());
  ::close(fd);
  if (!ok) {
    *why = path + " is not a key this user made (owner, mode or size): a random key instead";
    return std::nullopt;
  }
  return key;
}

}  // namespace

std::optional<IsnGenerator::Key> host_isn_key(std::string* why, const std::string& given) {
  const std::string path =
      given.empty() ? "/dev/shm/esock-isn-key." + std::to_string(::geteuid()) : given;
  why->clear();  // read_key says why only when the file is there but not to be used
  if (auto k = read_key(path, why)) return k;
  if (!why->empty()) return std::nullopt;
  // Made whole under a name of our own, then linked in: a racing process either links first
  // (ours is dropped, theirs read) or reads ours complete.
  const IsnGenerator::Key key = IsnGenerator::random_key();
  std::string tmp = path + ".tmp.XXXXXX";  // mkostemp: a fresh name, mode 0600, O_EXCL
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    *why = "cannot make " + tmp + ": " + std::strerror(errno);
    return std::nullopt;
  }
  const bool written = ::write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size());
  ::close(fd);
  const bool linked = written && ::link(tmp.c_str(), path.c_str()) == 0;
  const int err = errno;
  ::unlink(tmp.c_str());
  if (linked) return key;
  if (written && err == EEXIST) return read_key(path, why);
  *why = "cannot make " + path + ": " + std::strerror(err);
  return std::nullopt;
}

}  // namespace esock::tcp
