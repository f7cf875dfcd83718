#include "lib/base/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace parallax {

namespace {

// Opens `path` for reading, after the checks every read makes (exists, not a directory,
// at most max_bytes); *size receives its size.
StatusOr<int> OpenForReading(const std::string& path, uint64_t max_bytes, uint64_t* size) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return NotFoundError("{}: no such file", path);
    return InvalidArgumentError("{}: cannot read: {}", path, std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return InvalidArgumentError("{}: is a directory, not a file", path);
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgumentError("{}: not a regular file (a FIFO, socket or device); give a "
                                "file",
                                path);
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return InvalidArgumentError("{}: file is {}, over the limit of {}", path,
                                HumanBytes(st.st_size), HumanBytes(max_bytes));
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InvalidArgumentError("{}: cannot open: {}", path, std::strerror(errno));
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

// Up to `length` bytes at `offset` of `fd` (fewer where the file ends); closes `fd`.
StatusOr<std::string> ReadAndClose(int fd, const std::string& path, uint64_t offset,
                                   uint64_t length) {
  std::string contents;
  contents.resize(static_cast<size_t>(length));
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::pread(fd, contents.data() + done, contents.size() - done,
                        static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return InvalidArgumentError("{}: read failed: {}", path, std::strerror(err));
    }
    if (n == 0) break;  // the end of the file (or it shrank while we read it)
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  contents.resize(done);
  return contents;
}

}  // namespace

StatusOr<std::string> ReadFileToString(const std::string& path, uint64_t max_bytes) {
  uint64_t size = 0;
  PX_ASSIGN_OR_RETURN(int fd, OpenForReading(path, max_bytes, &size));
  return ReadAndClose(fd, path, 0, size);
}

StatusOr<std::string> ReadFileRange(const std::string& path, uint64_t offset, uint64_t length) {
  uint64_t size = 0;
  PX_ASSIGN_OR_RETURN(int fd, OpenForReading(path, UINT64_MAX, &size));
  const uint64_t available = offset < size ? size - offset : 0;
  return ReadAndClose(fd, path, offset, std::min(length, available));
}

Status WriteError(std::string_view path, std::string_view what, int err) {
  const bool machine = err == ENOSPC || err == EDQUOT || err == EIO || err == EFBIG;
  return Status(machine ? StatusCode::kUnavailable : StatusCode::kInvalidArgument,
                fmt::format("{}: {}: {}", path, what, std::strerror(err)));
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return WriteError(path, "cannot create", errno);
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return WriteError(path, "write failed", err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return WriteError(path, "write failed", err);
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

StatusOr<TempDir> TempDir::Make(std::string_view prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = (std::filesystem::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") /
                         fmt::format("{}.XXXXXX", prefix))
                            .string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    return InternalError("cannot create a temporary directory {}: {}", pattern,
                         std::strerror(errno));
  }
  TempDir dir;
  dir.path_ = std::move(pattern);
  return dir;
}

StatusOr<TempDir> TempDir::Keep(const std::string& path, std::string_view what) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    return AlreadyExistsError("{} {}: exists; name a directory that does not", what, path);
  }
  if (!std::filesystem::create_directories(path, ec) || ec) {
    return InvalidArgumentError("{} {}: cannot create it: {}", what, path, ec.message());
  }
  TempDir dir;
  dir.path_ = path;
  dir.keep_ = true;
  return dir;
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)), keep_(other.keep_) {
  other.path_.clear();
}

TempDir::~TempDir() {
  if (path_.empty() || keep_) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Sub(std::string_view name) const {
  return (std::filesystem::path(path_) / name).string();
}

}  // namespace parallax
