#include "lib/base/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace parallax {

StatusOr<std::string> ReadFileToString(const std::string& path, uint64_t max_bytes) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return NotFoundError("{}: no such file", path);
    return InvalidArgumentError("{}: cannot read: {}", path, std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return InvalidArgumentError("{}: is a directory, not a file", path);
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return InvalidArgumentError("{}: file is {}, over the limit of {}", path,
                                HumanBytes(st.st_size), HumanBytes(max_bytes));
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InvalidArgumentError("{}: cannot open: {}", path, std::strerror(errno));
  std::string contents;
  contents.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::read(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return InvalidArgumentError("{}: read failed: {}", path, std::strerror(err));
    }
    if (n == 0) break;  // the file shrank while we read it
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  contents.resize(done);
  return contents;
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return InvalidArgumentError("{}: cannot create: {}", path, std::strerror(errno));
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return InvalidArgumentError("{}: write failed: {}", path, std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return InvalidArgumentError("{}: write failed: {}", path, std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return InvalidArgumentError("{}: cannot rename into place: {}", path, std::strerror(err));
  }
  return Status::Ok();
}

std::string HumanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

}  // namespace parallax
