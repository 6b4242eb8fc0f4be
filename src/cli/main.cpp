// The mxq command. Results go to stdout, progress and errors to stderr.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>

#include "cli/bench_gemm.hpp"
#include "cli/demo.hpp"
#include "mxq/gemm_plan.hpp"
#include "mxq/mxq.hpp"
#include "runtime/backends.hpp"
#include "runtime/memory.hpp"

namespace {

using json = nlohmann::json;

// Digits only, a value in [min, max], else "NAME: VALUE is not a positive (non-negative) integer"
// and the bound where it is past it (CLI11's PositiveNumber names a range up to the largest
// double, and its integer parse clamps 99999999999999999999 and wraps -1 for an unsigned option).
CLI::Validator integer_in(uint64_t min, uint64_t max) {
  const char* kind = min > 0 ? "a positive integer" : "a non-negative integer";
  return CLI::Validator(
      [min, max, kind](std::string& text) -> std::string {
        uint64_t v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (text.empty() || ec == std::errc::invalid_argument || end != text.data() + text.size() || v < min)
          return text + " is not " + kind;
        if (ec == std::errc::result_out_of_range || v > max) return text + " is not " + kind + " up to " + std::to_string(max);
        return {};
      },
      min > 0 ? "POSITIVE" : "NON-NEGATIVE");
}
const CLI::Validator kPositive = integer_in(1, std::numeric_limits<int64_t>::max());
const CLI::Validator kCount = integer_in(0, std::numeric_limits<int64_t>::max());
const CLI::Validator kUint64 = integer_in(0, std::numeric_limits<uint64_t>::max());  // the demo's seed
const CLI::Validator kPositiveInt = integer_in(1, std::numeric_limits<int>::max());

void print_demo(const std::vector<mxq::cli::DemoRow>& rows, bool as_json) {
  if (as_json) {
    json j = json::array();
    for (const auto& r : rows)
      j.push_back({{"tensor", r.tensor}, {"recipe", r.recipe}, {"backend", r.backend},
                   {"bits_per_element", r.bits_per_element}, {"sqnr_db", r.sqnr_db},
                   {"max_rel_err", r.max_rel_err}, {"ms", r.ms}, {"gb_per_s", r.gbps}});
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("%-10s %-46s %-8s %9s %9s %11s %9s %9s\n", "tensor", "recipe", "backend", "bits/elem", "SQNR dB",
              "max rel err", "ms", "GB/s");
  for (const auto& r : rows)
    std::printf("%-10s %-46s %-8s %9.3f %9.2f %11.4f %9.3f %9.2f\n", r.tensor.c_str(), r.recipe.c_str(),
                r.backend.c_str(), r.bits_per_element, r.sqnr_db, r.max_rel_err, r.ms, r.gbps);
  std::printf("bits/elem counts scales; max rel err over |x| >= 0.01 rms(x); GB/s = (input + output bytes) / time\n");
}

int run_info(bool as_json) {
  const auto st = mxq::backend_status();
  if (as_json) {
    json b = json::array();
    for (const auto& s : st)
      b.push_back({{"backend", mxq::backend_name(s.backend)}, {"available", s.available}, {"detail", s.detail}});
    std::cout << json{{"version", mxq::version()}, {"build", mxq::build_info()}, {"backends", b}, {"recipes", mxq::Recipe::preset_names()},
                      {"dtypes", mxq::supported_dtype_names()}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::printf("mxq %s\nbuild: %s\n", mxq::version().c_str(), mxq::build_info().c_str());
  std::printf("backends:\n");
  for (const auto& s : st)
    std::printf("  %-9s %-13s %s\n", mxq::backend_name(s.backend), s.available ? "available" : "unavailable",
                s.detail.c_str());
  std::printf("recipes: %s\n", mxq::Recipe::preset_names().c_str());
  std::printf("dtypes:  %s\n", mxq::supported_dtype_names().c_str());
  return 0;
}

int run_bench_gemm(const std::vector<std::string>& shape_texts, const std::string& backend_list, int promote_k,
                   const std::vector<int>& block_ms, const std::string& kind_text, bool as_json) {
  const mxq::GemmKind kind = kind_text == "1d1d" ? mxq::GemmKind::d1d1 : mxq::GemmKind::d1d2;
  std::vector<std::array<int64_t, 3>> shapes;
  for (const auto& t : shape_texts) shapes.push_back(mxq::cli::parse_gemm_shape(t));
  if (shapes.empty()) shapes = mxq::cli::gemm_bench_shapes();
  std::vector<mxq::cli::GemmBenchRun> backends;
  for (size_t at = 0; at <= backend_list.size();) {
    const size_t end = std::min(backend_list.find(',', at), backend_list.size());
    const mxq::Backend b = mxq::parse_backend(backend_list.substr(at, end - at), "--backends");
    if (b == mxq::Backend::cpu) mxq::fail_arg("--backends: cpu is the fp64 reference, not a GPU backend to time");
    for (const int bm : block_ms) {  // cuBLASLt has no tile option: once
      backends.push_back({b, promote_k, b == mxq::Backend::cublaslt ? 0 : bm});
      if (b == mxq::Backend::cublaslt) break;
    }
    at = end + 1;
  }
  if (mxq::runtime::cuda_device_count() == 0)
    mxq::fail(mxq::ErrorCode::backend_unavailable,
              "mxq bench gemm: no usable CUDA device (" + mxq::backend_status()[1].detail + ")");
  const auto rows = mxq::cli::bench_gemm(shapes, backends, kind);
  if (!as_json) {
    std::fputs(mxq::cli::gemm_bench_table(rows, kind).c_str(), stdout);
    return 0;
  }
  json j = json::array();
  for (const auto& r : rows)
    j.push_back({{"m", r.m}, {"n", r.n}, {"k", r.k}, {"backend", r.backend}, {"block_m", r.block_m}, {"ran", r.kernel},
                 {"error", r.error}, {"us", r.us}, {"tflops", r.tflops}, {"peak_pct", r.peak_pct},
                 {"weight_gbps", r.weight_gbps}, {"vs_cublaslt", r.vs_cublaslt}, {"b_copies", r.b_copies},
                 {"chain_us", r.chain_us}});
  std::cout << j.dump(2) << "\n";
  return 0;
}

int run_cache(const std::string& action, const std::vector<std::string>& recipes, int arch, int threads,
              bool as_json) {
  if (action != "warmup" && !recipes.empty())
    throw mxq::Error(mxq::ErrorCode::invalid_argument, "cache " + action + " takes no recipes, got '" + recipes[0] +
                                                           "'; recipes are for cache warmup");
  if (action == "ls") {
    const auto c = mxq::jit_cache_info();
    if (as_json) {
      json e = json::array();
      for (const auto& x : c.entries)
        e.push_back({{"file", x.file}, {"config", x.config}, {"bytes", x.bytes}, {"mtime_ns", x.mtime_ns}});
      std::cout << json{{"jit_available", c.jit_available}, {"detail", c.detail}, {"dir", c.dir}, {"entries", e}}.dump(2)
                << "\n";
      return 0;
    }
    std::printf("jit: %s\ncache: %s (%zu entries)\n", c.detail.c_str(), c.dir.empty() ? "memory only" : c.dir.c_str(),
                c.entries.size());
    for (const auto& x : c.entries) std::printf("  %s %9llu  %s\n", x.file.c_str(), (unsigned long long)x.bytes, x.config.c_str());
    return 0;
  }
  if (action == "clear") {
    const uint64_t n = mxq::jit_cache_clear();
    if (as_json) std::cout << json{{"removed", n}}.dump() << "\n";
    else std::printf("removed %llu entries\n", (unsigned long long)n);
    return 0;
  }
  const auto r = mxq::jit_warmup(recipes, arch, threads);
  if (as_json) {
    std::cout << json{{"configs", r.configs}, {"failures", r.failures}}.dump(2) << "\n";
  } else {
    std::printf("compiled or found %d kernel configurations\n", r.configs);
    for (const auto& f : r.failures) std::printf("  failed: %s\n", f.c_str());
  }
  return r.failures.empty() ? 0 : 1;
}

}  // namespace

static int run(int argc, char** argv) {
  CLI::App app{"mxq: low-precision quantization (FP8, MXFP8, MXFP4, NVFP4) for NVIDIA GPUs"};
  app.require_subcommand(1);
  bool as_json = false;
  app.add_flag("--json", as_json, "machine-readable output");

  auto* demo = app.add_subcommand("demo", "quantize activation- and weight-like tensors in every recipe");
  mxq::cli::DemoOptions dopt;
  std::string backend = "auto";
  demo->add_option("--rows", dopt.act_rows, "activation rows")->check(kPositive);
  demo->add_option("--weight-rows", dopt.weight_rows, "weight rows")->check(kPositive);
  demo->add_option("--cols", dopt.cols, "columns (hidden size)")->check(kPositive);
  demo->add_option("--seed", dopt.seed, "random seed")->check(kUint64);
  demo->add_option("--repeats", dopt.repeats, "timed repetitions")->check(kPositiveInt);
  demo->add_option("--recipe", dopt.recipes, "recipes to run (default: all)");
  demo->add_option("--backend", backend,
                   "auto, cpu, cuda-aot or cuda-jit (the demo quantizes: cublaslt, a GEMM backend, is refused)");
  demo->add_flag("--json", as_json, "machine-readable output");

  auto* info = app.add_subcommand("info", "build, backends and why unavailable ones are");
  info->add_flag("--json", as_json, "machine-readable output");

  auto* recipe = app.add_subcommand("recipe", "parse a recipe and print its output layout for a shape");
  std::string recipe_text;
  int64_t rows = 128, cols = 128;
  recipe->add_option("recipe", recipe_text, "e.g. mxfp8:dir=both")->required();
  recipe->add_option("--rows", rows, "input rows")->check(kCount);
  recipe->add_option("--cols", cols, "input columns")->check(kCount);
  recipe->add_flag("--json", as_json, "machine-readable output");

  auto* cache = app.add_subcommand("cache", "the JIT kernel cache: ls, clear, warmup [RECIPES...]");
  std::string cache_action;
  std::vector<std::string> warm_recipes;
  int warm_arch = 0, warm_threads = 0;
  cache->add_option("action", cache_action, "ls, clear or warmup")->required()->check(CLI::IsMember({"ls", "clear", "warmup"}));
  cache->add_option("recipes", warm_recipes, "warmup: recipes to compile, RECIPE[+ACT][+dACT][+dbias] for a fused kernel, gemm:N=..,K=..[,promote_k=..][,block_m=..][,kind=1d1d] for the GEMM kernel specialised on N and K (both tile heights without block_m; kind: the recipe, 1d2d by default) (default: every quantize preset and option)");
  CLI::Option* warm_arch_opt = cache->add_option("--arch", warm_arch, "warmup: compute capability, e.g. 90 (default: this GPU's, else 90)");
  CLI::Option* warm_threads_opt = cache->add_option("--threads", warm_threads, "warmup: compiler threads (default 0: one per core)")
      ->check(CLI::Range(0, 4096));
  cache->add_flag("--json", as_json, "machine-readable output");

  auto* gplan = app.add_subcommand("gemm-plan", "how the Hopper FP8 GEMM will run a shape (path, tiles, stages)");
  int64_t gm = 0, gn = 0, gk = 0;
  std::string gkind = "1d2d", gout = "bfloat16";
  int gsms = 132;
  gplan->add_option("M", gm, "rows of A and D")->required()->check(kPositive);
  gplan->add_option("N", gn, "rows of B, columns of D")->required()->check(kPositive);
  gplan->add_option("K", gk, "the reduction length")->required()->check(kPositive);
  gplan->add_option("--kind", gkind, "1d2d (B 128x128 scales) or 1d1d")->check(CLI::IsMember({"1d2d", "1d1d"}));
  gplan->add_option("--out", gout, "D dtype: bfloat16 or float32")->check(CLI::IsMember({"bfloat16", "float32"}));
  gplan->add_option("--sms", gsms, "SM count of the target (default: the H200's 132)")->check(kPositiveInt);
  int gpromote = mxq::GemmOptions{}.promote_k;
  gplan->add_option("--promote-k", gpromote,
                    "GemmOptions::promote_k of the call: 0 (by --out: 128 for bfloat16, 32 for float32), 32, 64 or 128")
      ->check(CLI::IsMember({0, 32, 64, 128}));
  gplan->add_flag("--json", as_json, "machine-readable output");

  auto* bench = app.add_subcommand("bench", "benchmarks on the GPU: bench gemm [MxNxK ...]");
  auto* bgemm = bench->add_subcommand("gemm", "the block-scaled FP8 GEMM through mxq::gemm, each backend timed");
  bench->require_subcommand(1);
  std::vector<std::string> bshapes;
  std::string bbackends = "cublaslt,cuda-aot";
  bgemm->add_option("shapes", bshapes, "MxNxK shapes (default: issue 6's DeepSeek V3 shapes and 8192^3)");
  bgemm->add_option("--backends", bbackends, "comma-separated: cublaslt, cuda-aot (ours), cuda-jit (ours, JIT), auto");
  int bpromote = mxq::GemmOptions{}.promote_k;
  bgemm->add_option("--promote-k", bpromote,
                    "GemmOptions::promote_k of our wgmma kernel: 0 (D's dtype's: 128 for the bench's bfloat16 D), 32, 64 "
                    "or 128")
      ->check(CLI::IsMember({0, 32, 64, 128}));
  std::vector<int> bblock_m{0};
  bgemm
      ->add_option("--block-m", bblock_m,
                   "GemmOptions::block_m of our wgmma kernel, one run each: 0 (the plan's choice), 128, 256")
      ->delimiter(',')
      ->allow_extra_args(false)  // one argument, comma-separated: "--block-m 128 256x512x512" leaves the shape
      ->check(CLI::IsMember({0, 128, 256}));
  std::string bkind = "1d2d";
  bgemm->add_option("--kind", bkind, "1d2d (B 128x128 scales) or 1d1d (B 1x128, a weight gradient's)")
      ->check(CLI::IsMember({"1d2d", "1d1d"}));
  bgemm->add_flag("--json", as_json, "machine-readable output");

  // "mxq bogus": CLI11 would say only that a subcommand is required (the top level's only option
  // is the --json flag, so the first argument that is not an option names the command)
  int first = 1;
  while (first < argc && argv[first][0] == '-') ++first;
  if (first < argc) {
    std::string known;
    bool found = false;
    for (const CLI::App* sc : app.get_subcommands([](CLI::App*) { return true; })) {
      known += (known.empty() ? "" : ", ") + sc->get_name();
      found = found || sc->get_name() == argv[first];
    }
    if (!found) {
      std::fprintf(stderr, "mxq: error: unknown command '%s'; expected one of %s (mxq --help)\n", argv[first],
                   known.c_str());
      return 2;
    }
  }
  CLI11_PARSE(app, argc, argv);
  try {
    if (*demo) {
      dopt.backend = mxq::parse_backend(backend, "--backend");
      if (dopt.backend == mxq::Backend::cublaslt)
        mxq::fail_arg(
            "--backend=cublaslt runs GEMMs only; the demo quantizes: expected auto, cpu, cuda-aot or cuda-jit");
      for (auto [flag, n] : {std::pair{"--rows", dopt.act_rows}, std::pair{"--weight-rows", dopt.weight_rows}})
        if (!mxq::fits_elements(n, dopt.cols))
          throw mxq::Error(mxq::ErrorCode::invalid_argument,
                           std::string(flag) + "=" + std::to_string(n) + " x --cols=" + std::to_string(dopt.cols) +
                               " is too large; expected at most 2^48 elements");
      std::fprintf(stderr, "mxq demo: activation %lldx%lld and weight %lldx%lld bf16 ...\n", (long long)dopt.act_rows,
                   (long long)dopt.cols, (long long)dopt.weight_rows, (long long)dopt.cols);
      print_demo(mxq::cli::run_demo(dopt), as_json);
      return 0;
    }
    if (*info) return run_info(as_json);
    if (*gplan) {
      const mxq::ArchDesc arch = mxq::ArchDesc::sm90(gsms);
      const mxq::GemmPlan p = mxq::plan_gemm(gm, gn, gk, gkind == "1d2d" ? mxq::GemmKind::d1d2 : mxq::GemmKind::d1d1,
                                             mxq::parse_dtype(gout), arch, gpromote);
      if (as_json) {
        std::cout << json{{"path", p.path},     {"why", p.why},         {"block_m", p.block_m}, {"block_n", p.block_n},
                          {"block_k", p.block_k}, {"stages", p.stages}, {"cluster", p.cluster}, {"split_k", p.split_k},
                          {"tiles", p.tiles},   {"ctas_per_sm", p.ctas_per_sm}, {"waves", p.waves},
                          {"last_wave", p.last_wave},
                          {"smem_bytes", p.smem_bytes},
                          {"early_launch", p.early_launch}, {"promote_k", p.promote_k}}
                         .dump(2)
                  << "\n";
      } else {
        std::printf("%s\n", mxq::to_string(p).c_str());
      }
      return 0;
    }
    if (*cache) {
      for (const CLI::Option* o : {warm_arch_opt, warm_threads_opt})
        if (cache_action != "warmup" && o->count() > 0)
          throw mxq::Error(mxq::ErrorCode::invalid_argument,
                           "cache " + cache_action + " takes no " + o->get_name() + "; it is for cache warmup");
      return run_cache(cache_action, warm_recipes, warm_arch, warm_threads, as_json);
    }
    if (*bgemm) return run_bench_gemm(bshapes, bbackends, bpromote, bblock_m, bkind, as_json);
    if (*recipe) {
      const auto r = mxq::Recipe::parse(recipe_text);
      const auto L = mxq::plan(r, rows, cols);
      auto spec = [](const mxq::BufferSpec& s) {
        return json{{"dtype", mxq::dtype_name(s.dtype)}, {"shape", {s.rows, s.cols}}, {"bytes", s.bytes}};
      };
      json j{{"recipe", r.name()}, {"rows", rows}, {"cols", cols}};
      if (L.data.planned) j["data"] = spec(L.data);
      if (L.scales.planned) j["scales"] = spec(L.scales);
      if (L.col_data.planned) j["col_data"] = spec(L.col_data);
      if (L.col_scales.planned) j["col_scales"] = spec(L.col_scales);
      if (L.global_scale.planned) j["global_scale"] = spec(L.global_scale);
      if (L.amax.planned) j["amax"] = spec(L.amax);
      j["total_bytes"] = L.total_bytes();
      if (as_json) {
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      std::printf("%s on %lld x %lld: %lld bytes\n", r.name().c_str(), (long long)rows, (long long)cols,
                  (long long)L.total_bytes());
      for (auto [name, s] : {std::pair<const char*, const mxq::BufferSpec*>{"data", &L.data},
                             {"scales", &L.scales},
                             {"col_data", &L.col_data},
                             {"col_scales", &L.col_scales},
                             {"global_scale", &L.global_scale},
                             {"amax", &L.amax}})
        if (s->planned)
          std::printf("  %-12s %-15s %lld x %lld, %lld bytes\n", name, mxq::dtype_name(s->dtype), (long long)s->rows,
                      (long long)s->cols, (long long)s->bytes);
      return 0;
    }
  } catch (const mxq::Error& e) {
    std::fprintf(stderr, "mxq: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "mxq: error: out of host memory for the tensors of this command; try smaller sizes\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mxq: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}

// A command whose output could not be written (a full disk) has failed (a closed pipe ends the
// process with SIGPIPE before this).
int main(int argc, char** argv) {
  const int rc = run(argc, argv);
  std::cout.flush();
  if (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout) {
    std::fprintf(stderr, "mxq: error: writing the output failed: %s\n", std::strerror(errno));
    return rc != 0 ? rc : 2;
  }
  return rc;
}
