// File helpers shared by every command: whole-file reads with clear errors, atomic
// writes (write a temporary sibling, then rename it into place), so that a failed
// command never leaves a half-written file behind, and scratch directories removed with
// everything in them when the command is done.
#ifndef PARALLAX_LIB_BASE_FILE_H_
#define PARALLAX_LIB_BASE_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/base/status.h"

namespace parallax {

// Reads the whole file. Errors name the path: missing, a directory or anything else that
// is not a regular file (a FIFO would block the read forever), unreadable, or larger than
// max_bytes (checked before reading).
StatusOr<std::string> ReadFileToString(const std::string& path,
                                       uint64_t max_bytes = UINT64_MAX);

// Reads `length` bytes at `offset`, fewer where the file ends first (none past its end).
// The same errors as ReadFileToString.
StatusOr<std::string> ReadFileRange(const std::string& path, uint64_t offset, uint64_t length);

// Writes contents to path.tmp.<pid>, flushes it, then renames it over path. The
// temporary file is removed on any error.
Status WriteFileAtomically(const std::string& path, std::string_view contents);

// The error for a failed write of `path` with errno `err` ("write failed", "cannot
// create"): Unavailable when the machine is at fault (a full disk or quota, an I/O
// error), InvalidArgument when the path is (missing folder, no permission).
Status WriteError(std::string_view path, std::string_view what, int err);

// "1.5 GiB", "320 KiB", "17 B".
std::string HumanBytes(uint64_t bytes);

// A scratch directory: made by Make under $TMPDIR (else /tmp) as PREFIX.XXXXXX, or by
// Keep at a path the user names (which must not exist yet); removed with everything in it
// when the TempDir goes, unless kept.
class TempDir {
 public:
  static StatusOr<TempDir> Make(std::string_view prefix);
  // Errors: `path` exists (AlreadyExists), or cannot be made (InvalidArgument); both
  // name `what` ("--keep DIR").
  static StatusOr<TempDir> Keep(const std::string& path, std::string_view what);
  TempDir() = default;
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir();

  const std::string& path() const { return path_; }
  // path/name.
  std::string Sub(std::string_view name) const;
  bool kept() const { return keep_; }

 private:
  std::string path_;
  bool keep_ = false;
};

}  // namespace parallax

#endif  // PARALLAX_LIB_BASE_FILE_H_
