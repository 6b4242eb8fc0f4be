// mxq::Error: the one exception type of the C++ API. Messages name the argument, the value
// and what was expected; the C ABI turns them into status codes plus a thread-local message.
#pragma once

#include <stdexcept>
#include <string>

namespace mxq {

enum class ErrorCode : int {
  invalid_argument = 1,     // bad pointer, shape, dtype, size or option value
  unsupported = 2,          // valid request that this build, backend or device cannot serve
  backend_unavailable = 3,  // a backend that was asked for cannot run here
  fallback_forbidden = 4,   // strict mode refused a fallback
  device_error = 5,         // a CUDA call failed
  internal = 6,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

[[noreturn]] inline void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }
[[noreturn]] inline void fail_arg(const std::string& message) { fail(ErrorCode::invalid_argument, message); }

}  // namespace mxq
