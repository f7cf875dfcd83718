// Status and StatusOr: how every Parallax module reports errors.
//
// Errors are values. A function that can fail returns Status (or StatusOr<T> when it
// also produces a value); nothing throws across module boundaries and no library calls
// exit(). Codes follow absl/TensorFlow: bad user input is kInvalidArgument, a missing
// file kNotFound, a broken internal invariant kInternal. The message is one line that
// names the file, node and field at fault; details may follow after a newline.
#ifndef PARALLAX_LIB_BASE_STATUS_H_
#define PARALLAX_LIB_BASE_STATUS_H_

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace parallax {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // bad user input: file, flag, graph, config
  kNotFound,           // a named file, node or op does not exist
  kAlreadyExists,      // an output that would be overwritten
  kFailedPrecondition, // the input is valid but cannot be handled in this state
  kUnimplemented,      // valid, but Parallax does not support it (yet)
  kResourceExhausted,  // a size limit was hit
  kAborted,            // a job or rank failed
  kDeadlineExceeded,   // a wait timed out
  kOutOfRange,         // the end of an input sequence (a dataset, a closed queue)
  kUnavailable,        // the machine could not do it: a full disk, an I/O error
  kInternal,           // a broken invariant: a Parallax bug
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "prefix: message", keeping the code. Used to add the file or pass that failed.
  Status WithPrefix(std::string_view prefix) const;

  // "INVALID_ARGUMENT: message", for logs and test failures.
  std::string ToString() const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename... Args>
Status InvalidArgumentError(fmt::format_string<Args...> format, Args&&... args) {
  return Status(StatusCode::kInvalidArgument, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
Status NotFoundError(fmt::format_string<Args...> format, Args&&... args) {
  return Status(StatusCode::kNotFound, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
Status AlreadyExistsError(fmt::format_string<Args...> format, Args&&... args) {
  return Status(StatusCode::kAlreadyExists, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
Status FailedPreconditionError(fmt::format_string<Args...> format, Args&&... args) {
  return Status(StatusCode::kFailedPrecondition,
                fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
Status UnimplementedError(fmt::format_string<Args...> format, Args&&... args) {
  return Status(StatusCode::kUnimplemented, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
Status ResourceExhaustedError(fmt::format_string<Args...> format, Args&&... args) {
  return Status(StatusCode::kResourceExhausted,
                fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
Status OutOfRangeError(fmt::format_string<Args...> format, Args&&... args) {
  return Status(StatusCode::kOutOfRange, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
Status UnavailableError(fmt::format_string<Args...> format, Args&&... args) {
  return Status(StatusCode::kUnavailable, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
Status InternalError(fmt::format_string<Args...> format, Args&&... args) {
  return Status(StatusCode::kInternal, fmt::format(format, std::forward<Args>(args)...));
}

// `text` (outside text quoted in a message: a parser's message, a key from a file) with
// control characters shown as '?', so that the message stays one line.
std::string WithControlsShown(std::string text);

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const T& value) : state_(value) {}             // NOLINT: implicit by design
  StatusOr(T&& value) : state_(std::move(value)) {}       // NOLINT
  StatusOr(Status status) : state_(std::move(status)) {   // NOLINT
    assert(!std::get<Status>(state_).ok() && "StatusOr built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  const Status& status() const& {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(state_);
  }
  // On a temporary (`F().status()`), a value: a reference would dangle once the
  // full-expression ends, e.g. inside PX_RETURN_IF_ERROR.
  Status status() && { return ok() ? Status() : std::get<Status>(std::move(state_)); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> state_;
};

namespace status_internal {
inline const Status& AsStatus(const Status& s) { return s; }
template <typename T>
const Status& AsStatus(const StatusOr<T>& s) { return s.status(); }
}  // namespace status_internal

}  // namespace parallax

#define PX_STATUS_CONCAT_INNER_(a, b) a##b
#define PX_STATUS_CONCAT_(a, b) PX_STATUS_CONCAT_INNER_(a, b)

// Returns the error of a Status or StatusOr expression from the enclosing function.
#define PX_RETURN_IF_ERROR(expr)                                                       \
  do {                                                                                 \
    auto&& px_status_ = (expr);                                                        \
    if (!::parallax::status_internal::AsStatus(px_status_).ok())                       \
      return ::parallax::status_internal::AsStatus(px_status_);                        \
  } while (0)

// `PX_ASSIGN_OR_RETURN(auto x, F());` declares x from F()'s value or returns its error.
#define PX_ASSIGN_OR_RETURN(lhs, expr) \
  PX_ASSIGN_OR_RETURN_IMPL_(PX_STATUS_CONCAT_(px_statusor_, __LINE__), lhs, expr)
#define PX_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

#endif  // PARALLAX_LIB_BASE_STATUS_H_
