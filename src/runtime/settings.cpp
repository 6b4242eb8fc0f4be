#include "runtime/settings.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string_view>

namespace mxq {
namespace runtime {
namespace {

std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

EnvSettings read_env() {
  EnvSettings s;
  auto bad = [&](const char* name, const std::string& v, const char* valid) {
    if (s.error.empty()) s.error = std::string("environment ") + name + "='" + v + "' is not valid; valid: " + valid;
  };
  if (const std::string v = env_text("MXQ_BACKEND"); !v.empty()) {
    try {
      s.backend = parse_backend(v, "MXQ_BACKEND");
    } catch (const Error&) {
      bad("MXQ_BACKEND", v, "auto, cpu, cuda-aot, cuda-jit, cublaslt");
    }
  }
  if (const std::string v = env_text("MXQ_STRICT"); !v.empty()) {
    if (v == "0" || v == "1") s.strict = v == "1";
    else bad("MXQ_STRICT", v, "0, 1");
  }
  if (const std::string v = env_text("MXQ_LOG"); !v.empty()) {
    if (v == "off") s.log = LogLevel::off;
    else if (v == "warn") s.log = LogLevel::warn;
    else if (v == "info") s.log = LogLevel::info;
    else bad("MXQ_LOG", v, "off, warn, info");
  }
  if (const std::string v = env_text("MXQ_JIT"); !v.empty()) {
    if (v == "0" || v == "1") s.jit = v == "1";
    else bad("MXQ_JIT", v, "0, 1");
  }
  return s;
}

// Setter state: -1 = not set.
std::atomic<int> g_backend{-1};
std::atomic<int> g_strict{-1};

std::mutex g_log_mu;
std::function<void(const std::string&)> g_sink;
std::set<std::string> g_logged;

thread_local DispatchInfo t_last;

// A Backend value from C++ (an enum field or argument) out of range.
void check_backend(Backend b, const char* what) {
  if (int(b) > int(Backend::cublaslt))
    fail_arg(std::string(what) + "=" + std::to_string(int(b)) +
             " is not a backend; expected auto, cpu, cuda-aot, cuda-jit or cublaslt (0..4)");
}

}  // namespace

namespace {
// The environment as read once; never throws: the log uses it (an invalid MXQ_LOG reads as its
// default).
const EnvSettings& env_read() {
  static const EnvSettings s = read_env();
  return s;
}
}  // namespace

// An invalid MXQ_BACKEND, MXQ_STRICT, MXQ_LOG or MXQ_JIT is an error for every call that consults
// the settings, whatever else is set (a per-call backend or a setter included).
const EnvSettings& env_settings() {
  const EnvSettings& s = env_read();
  if (!s.error.empty()) fail_arg(s.error);
  return s;
}

Backend requested_backend(Backend per_call) {
  check_backend(per_call, "options.backend");
  const EnvSettings& e = env_settings();
  if (per_call != Backend::automatic) return per_call;
  const int set = g_backend.load(std::memory_order_relaxed);
  return set >= 0 ? Backend(set) : e.backend;
}

bool strict_mode() {
  const EnvSettings& e = env_settings();
  const int set = g_strict.load(std::memory_order_relaxed);
  return set >= 0 ? set == 1 : e.strict;
}

bool jit_enabled_by_env() { return env_settings().jit; }  // MXQ_JIT=off is an error, not "on"

void log(LogLevel level, const std::string& message) {
  if (int(level) > int(env_read().log)) return;
  std::lock_guard<std::mutex> lock(g_log_mu);
  if (g_sink) g_sink(message);
  else std::fprintf(stderr, "mxq: %s\n", message.c_str());
}

void log_once(LogLevel level, const std::string& key, const std::string& message) {
  if (int(level) > int(env_read().log)) return;
  {
    std::lock_guard<std::mutex> lock(g_log_mu);
    if (!g_logged.insert(key).second) return;
  }
  log(level, message);
}

void set_log_sink(std::function<void(const std::string&)> sink) {
  std::lock_guard<std::mutex> lock(g_log_mu);
  g_sink = std::move(sink);
  g_logged.clear();
}

void begin_dispatch() {  // clear() keeps the strings' storage: a warm call allocates nothing here
  t_last.op.clear();
  t_last.backend.clear();
  t_last.kernel.clear();
  t_last.fallback.clear();
}

void record_dispatch(const char* op, Backend b, const std::string& kernel) {
  t_last.op = op;
  t_last.backend = backend_name(b);
  t_last.kernel = kernel;
  if (int(env_read().log) >= int(LogLevel::info))  // no strings are built on the hot path otherwise
    log_once(LogLevel::info, std::string("backend/") + op + "/" + t_last.backend + "/" + kernel,
             std::string(op) + ": backend " + t_last.backend + ", kernel " + kernel);
}

void fallback(const char* op, const std::string& from, const std::string& to, const std::string& reason) {
  if (strict_mode())
    fail(ErrorCode::fallback_forbidden, std::string(op) + ": strict mode forbids the fallback from " + from + " to " +
                                            to + " (" + reason + "); unset MXQ_STRICT / mxq::set_strict(false) to allow it");
  t_last.fallback = from + " -> " + to + ": " + reason;
  log_once(LogLevel::info, std::string("fallback/") + op + "/" + reason,
           std::string(op) + ": fallback from " + from + " to " + to + " (" + reason + ")");
}

}  // namespace runtime

void set_default_backend(Backend b) {
  runtime::check_backend(b, "set_default_backend: backend");
  runtime::g_backend.store(b == Backend::automatic ? -1 : int(b));
}
Backend default_backend() {
  const runtime::EnvSettings& e = runtime::env_settings();
  const int set = runtime::g_backend.load();
  return set >= 0 ? Backend(set) : e.backend;
}
void set_strict(bool on) { runtime::g_strict.store(on ? 1 : 0); }
bool strict() { return runtime::strict_mode(); }
DispatchInfo last_dispatch() { return runtime::t_last; }

}  // namespace mxq
