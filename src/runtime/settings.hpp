// Process-wide runtime switches, logging and fallback reporting.
//
// Precedence of the backend: the per-call option, else the process-wide setter
// (mxq::set_default_backend / mxq_set_default_backend), else MXQ_BACKEND, read once at first use.
// MXQ_STRICT=1 (or mxq::set_strict) turns every fallback into an error. MXQ_LOG=info reports
// the backend chosen and each fallback reason once per (op, reason); warnings are on by
// default, MXQ_LOG=off silences them. MXQ_JIT=0 turns the JIT off.
#pragma once

#include <functional>
#include <string>

#include "mxq/api.hpp"

namespace mxq::runtime {

enum class LogLevel : int { off = 0, warn = 1, info = 2 };

struct EnvSettings {
  Backend backend = Backend::automatic;
  bool strict = false;
  LogLevel log = LogLevel::warn;
  bool jit = true;
  std::string error;  // an invalid value: reported by every call until fixed
};
// The environment, read once (thread-safe).
const EnvSettings& env_settings();

Backend requested_backend(Backend per_call);  // applies the precedence; throws on a bad MXQ_BACKEND
bool strict_mode();
bool jit_enabled_by_env();

void log(LogLevel level, const std::string& message);
// Logs `message` the first time `key` is seen at this level or above.
void log_once(LogLevel level, const std::string& key, const std::string& message);
// Tests capture the log through this (nullptr: stderr again).
void set_log_sink(std::function<void(const std::string&)> sink);

// The calling thread's last dispatch (mxq::last_dispatch()): cleared when an op starts.
void begin_dispatch();
void record_dispatch(const char* op, Backend b, const std::string& kernel);
// A fallback from `from` to `to` because of `reason`: an error in strict mode, otherwise
// logged once per (op, reason) at info and recorded for last_dispatch().
void fallback(const char* op, const std::string& from, const std::string& to, const std::string& reason);

}  // namespace mxq::runtime
