// Backend selection and the runtime switches: the precedence per-call > set_default_backend >
// MXQ_BACKEND, unknown values, strict mode, MXQ_LOG=info once per (op, reason), and
// last_dispatch(). The environment is read once per process, so each environment case runs in
// a child process (this binary again) with the variables set. (tests/gpu shows each value running its own backend.)
#include <unistd.h>

#include <cstdio>
#include <map>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "runtime/settings.hpp"
#include "test_support.hpp"

namespace mxq::test {
namespace {

std::vector<float> small_input() { return random_matrix(4, 64, 7); }

// Quantizes a CPU tensor with `opt`; "" on success, else the error message.
std::string try_quantize(const QuantizeOptions& opt = {}) {
  std::vector<float> x = small_input();
  Outputs out("mxfp8", 4, 64);
  try {
    quantize(f32_matrix(x, 4, 64), out.view(), opt);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// "<error message>|<backend that ran>".
std::string quantize_and_report() {
  const std::string err = try_quantize();
  return err + "|" + last_dispatch().backend;
}

// Actions a child process runs (the environment is read once per process, so every
// environment case runs this test binary again with the variables set).
const std::map<std::string, std::function<std::string()>>& actions();

std::string in_child(const std::vector<std::pair<const char*, const char*>>& env, const std::string& action) {
  std::string cmd;
  for (const auto& [k, v] : env) cmd += std::string(k) + "='" + v + "' ";
  cmd += "MXQ_DISPATCH_CHILD=" + action + " /proc/" + std::to_string(getpid()) +
         "/exe --gtest_also_run_disabled_tests --gtest_filter=DispatchChild.DISABLED_Run 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return "popen failed";
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  pclose(f);
  const size_t at = out.find("RESULT<<"), end = out.find(">>END");
  return at == std::string::npos || end == std::string::npos ? "no result: " + out : out.substr(at + 8, end - at - 8);
}

// Runs only as a child (MXQ_DISPATCH_CHILD names the action); disabled in normal runs.
TEST(DispatchChild, DISABLED_Run) {
  const char* a = std::getenv("MXQ_DISPATCH_CHILD");
  if (!a) GTEST_SKIP() << "runs as a child of the Dispatch tests";
  const auto it = actions().find(a);
  ASSERT_NE(it, actions().end()) << a;
  std::printf("RESULT<<%s>>END\n", it->second().c_str());
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Dispatch, CpuTensorsRunTheReferenceAndSayIt) {
  ASSERT_EQ(try_quantize(), "");
  const DispatchInfo d = last_dispatch();
  EXPECT_EQ(d.op, "quantize");
  EXPECT_EQ(d.backend, "cpu");
  EXPECT_EQ(d.kernel, "reference");
  EXPECT_EQ(d.fallback, "");
}

// A call refused by its checks ran nothing: last_dispatch() says so, not what the call before ran.
TEST(Dispatch, RefusedCallLeavesNoRecord) {
  ASSERT_EQ(try_quantize(), "");
  ASSERT_EQ(last_dispatch().backend, "cpu");
  QuantizeOptions o;
  const float misaligned[2] = {};
  o.noop = reinterpret_cast<const float*>(reinterpret_cast<const char*>(misaligned) + 1);
  EXPECT_NE(try_quantize(o), "");
  EXPECT_EQ(last_dispatch().backend, "");
  EXPECT_EQ(last_dispatch().kernel, "");
}

TEST(Dispatch, SetterSwitchesAndPerCallOptionWins) {
  set_default_backend(Backend::cuda_aot);
  EXPECT_EQ(default_backend(), Backend::cuda_aot);
  // the setter really selects: cuda-aot cannot take CPU tensors
  EXPECT_TRUE(has(try_quantize(), "backend cuda-aot needs tensors on a CUDA device")) << try_quantize();
  QuantizeOptions o;
  o.backend = Backend::cpu;  // the per-call option beats the setter
  EXPECT_EQ(try_quantize(o), "");
  EXPECT_EQ(last_dispatch().backend, "cpu");
  set_default_backend(Backend::automatic);  // cleared: auto again
  EXPECT_EQ(try_quantize(), "");
}

TEST(Dispatch, EnvironmentSelectsTheBackend) {
  // each value changes what runs: cpu runs, the CUDA ones refuse CPU tensors by name
  EXPECT_EQ(in_child({{"MXQ_BACKEND", "cpu"}}, "quantize_backend"), "|cpu");
  EXPECT_EQ(in_child({{"MXQ_BACKEND", "auto"}}, "quantize_backend"), "|cpu");
  const std::string aot = in_child({{"MXQ_BACKEND", "cuda-aot"}}, "quantize_backend");
  EXPECT_TRUE(has(aot, "backend cuda-aot needs tensors on a CUDA device")) << aot;
  const std::string jit = in_child({{"MXQ_BACKEND", "cuda-jit"}}, "quantize_backend");
  EXPECT_TRUE(has(jit, "backend cuda-jit needs tensors on a CUDA device")) << jit;
  const std::string lt = in_child({{"MXQ_BACKEND", "cublaslt"}}, "quantize_backend");
  EXPECT_TRUE(has(lt, "backend cublaslt needs tensors on a CUDA device")) << lt;
}

TEST(Dispatch, SetterBeatsTheEnvironment) {
  EXPECT_EQ(in_child({{"MXQ_BACKEND", "cuda-aot"}}, "setter_cpu"), "|cpu");
}

TEST(Dispatch, UnknownValuesAreErrorsListingTheValidOnes) {
  struct Case {
    const char *name, *value, *action, *valid;
  };
  // a quantize; then whatever else is set: a per-call backend, the setter, a query of the default
  for (const Case& c : {Case{"MXQ_BACKEND", "cuda", "quantize_backend", "auto, cpu, cuda-aot, cuda-jit, cublaslt"},
                        Case{"MXQ_STRICT", "yes", "quantize_backend", "0, 1"},
                        Case{"MXQ_LOG", "debug", "quantize_backend", "off, warn, info"},
                        Case{"MXQ_STRICT", "yes", "per_call_cpu", "0, 1"}, Case{"MXQ_JIT", "2", "setter_cpu", "0, 1"},
                        Case{"MXQ_BACKEND", "bogus", "default_backend", "cublaslt"}}) {
    const std::string got = in_child({{c.name, c.value}}, c.action);
    EXPECT_TRUE(has(got, std::string(c.name) + "='" + c.value + "'") && has(got, c.valid)) << c.action << ": " << got;
  }
  EXPECT_THROW(parse_backend("gpu"), Error);
  EXPECT_EQ(in_child({{"MXQ_BACKEND", "cpu"}}, "default_backend"), "cpu");
}

// Backend values out of the enum's range (C++ callers) are errors, not some backend.
TEST(Dispatch, BackendOutOfRangeIsAnError) {
  QuantizeOptions o;
  o.backend = Backend(9);
  EXPECT_TRUE(has(try_quantize(o), "options.backend=9 is not a backend")) << try_quantize(o);
  EXPECT_THROW(set_default_backend(Backend(9)), Error);
  EXPECT_EQ(try_quantize(), "");  // the setter refused it: auto still
}

TEST(Dispatch, StrictModeFromEnvironmentAndSetter) {
  EXPECT_EQ(in_child({{"MXQ_STRICT", "1"}}, "strict"), "on");
  EXPECT_EQ(in_child({{"MXQ_STRICT", "1"}}, "strict_after_setter"), "off");
  set_strict(true);
  EXPECT_TRUE(strict());
  EXPECT_EQ(try_quantize(), "");  // the CPU reference takes no fallback
  set_strict(false);
}

TEST(Dispatch, StrictModeTurnsAFallbackIntoAnError) {
  set_strict(true);
  try {
    runtime::fallback("quantize", "cuda-aot specialised kernel", "cuda-aot generic tile kernel", "odd width");
    ADD_FAILURE() << "strict mode let a fallback through";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::fallback_forbidden);
    EXPECT_TRUE(has(e.what(), "odd width") && has(e.what(), "generic tile kernel")) << e.what();
  }
  set_strict(false);
  runtime::begin_dispatch();
  runtime::fallback("quantize", "a", "b", "odd width");
  EXPECT_EQ(last_dispatch().fallback, "a -> b: odd width");
}

TEST(Dispatch, LogInfoReportsBackendAndFallbacksOncePerReason) {
  EXPECT_EQ(in_child({{"MXQ_LOG", "info"}}, "log"),
            "quantize: backend cpu, kernel reference\n"
            "quantize: fallback from x to y (reason one)\n"
            "quantize: fallback from x to y (reason two)\n");
  // default level (warn): nothing at info
  const std::string quiet = in_child({}, "log");
  EXPECT_EQ(quiet, "");
}

const std::map<std::string, std::function<std::string()>>& actions() {
  static const std::map<std::string, std::function<std::string()>> a = {
      {"quantize_backend", [] { return quantize_and_report(); }},
      {"setter_cpu",
       [] {
         set_default_backend(Backend::cpu);
         return quantize_and_report();
       }},
      {"per_call_cpu",
       [] {
         QuantizeOptions o;
         o.backend = Backend::cpu;
         return try_quantize(o) + "|" + last_dispatch().backend;
       }},
      {"default_backend",
       [] {
         try {
           return std::string(backend_name(default_backend()));
         } catch (const Error& e) {
           return std::string(e.what());
         }
       }},
      {"strict", [] { return std::string(strict() ? "on" : "off"); }},
      {"strict_after_setter",
       [] {
         set_strict(false);
         return std::string(strict() ? "on" : "off");
       }},
      {"log",
       [] {
         std::string lines;
         runtime::set_log_sink([&](const std::string& m) { lines += m + "\n"; });
         try_quantize();
         try_quantize();
         runtime::fallback("quantize", "x", "y", "reason one");
         runtime::fallback("quantize", "x", "y", "reason one");
         runtime::fallback("quantize", "x", "y", "reason two");
         runtime::set_log_sink(nullptr);
         return lines;
       }},
  };
  return a;
}

}  // namespace
}  // namespace mxq::test
