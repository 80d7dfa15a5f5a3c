// Errors as values. Every fallible call at a module boundary returns a Status
// or a Result<T>; no exception crosses the public API.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_STATUS_H_
#define COMPACTOR_INCLUDE_COMPACTOR_STATUS_H_

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace compactor {

// The closed set of error codes. Each maps to a documented CLI exit code
// (see docs/cli.md and docs/errors.md): kOk -> 0, kInvalidArgument -> 2,
// kResourceExhausted -> 4, everything else -> 1.
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad usage: unknown option value, unknown --leaf id, bad settings
  kNotFound,         // a file or entry that does not exist
  kIoError,          // read/write/rename/fsync failed
  kCorruption,       // the input is not a valid pi session (bad header, invalid JSON in --strict)
  kUnsupported,      // a valid input this build cannot handle
  kFailedPrecondition,  // the operation does not apply in the current state
  kCancelled,           // stopped by a hook or by the caller
  kUnavailable,         // a remote service did not answer usefully (retryable)
  kInternal,            // a bug in Compactor
  // Out of memory (or another resource of this process): never a property of
  // the input, so never reported as a malformed line; nothing was written.
  kResourceExhausted,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status ResourceExhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "<code name>: <message>", or "OK".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

std::string_view StatusCodeName(StatusCode code);

// A value or an error. REQUIRES: value() only when ok(); status() is OK when a value is held.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace compactor

#define COMPACTOR_CONCAT_INNER_(a, b) a##b
#define COMPACTOR_CONCAT_(a, b) COMPACTOR_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` (a Status) is not OK.
#define COMPACTOR_RETURN_IF_ERROR(expr) \
  do {                                  \
    ::compactor::Status _st = (expr);   \
    if (!_st.ok()) return _st;          \
  } while (0)

// Evaluates `rexpr` (a Result<T>); on error returns its Status, otherwise moves
// the value into `lhs` (which may be a declaration such as `auto x`).
#define COMPACTOR_ASSIGN_OR_RETURN(lhs, rexpr) \
  COMPACTOR_ASSIGN_OR_RETURN_IMPL_(COMPACTOR_CONCAT_(_res_, __LINE__), lhs, rexpr)
#define COMPACTOR_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                     \
  if (!tmp.ok()) return tmp.status();                     \
  lhs = std::move(tmp).value()

#endif  // COMPACTOR_INCLUDE_COMPACTOR_STATUS_H_
