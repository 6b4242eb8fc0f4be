// Quantize bandwidth on the GPU against the device-to-device copy measured in the same run,
// and microseconds per call for decode-sized shapes, all under CUDA-graph replay (device time);
// the eager column adds the host's cost of one call.
// Prints a table and, with --json FILE, writes the rows for the summary script.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "cli/demo.hpp"
#include "cli/host_tensor.hpp"
#include "mxq/mxq.hpp"
#include "mxq/numerics/formats.h"

cudaError_t launch_empty_kernel(cudaStream_t s);  // empty_kernel.cu

namespace {

using namespace mxq;

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Wall time per call of f, enqueued kCalls times back to back after a warm-up (the GPU work of
// each is a few microseconds at most, so the host is what is timed).
template <class F>
double host_us_per_call(F&& f, cudaStream_t s) {
  for (int i = 0; i < 20; ++i) f();
  ck(cudaStreamSynchronize(s), "warm-up");
  constexpr int kCalls = 400;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) f();
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / kCalls;
  ck(cudaStreamSynchronize(s), "host timing");
  return us;
}

template <class F>
double median_ms(F&& f, int iters, cudaStream_t s) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  ck(cudaStreamSynchronize(s), "warm-up");
  std::vector<float> t;
  for (int i = 0; i < iters; ++i) {
    cudaEventRecord(a, s);
    f();
    cudaEventRecord(b, s);
    ck(cudaEventSynchronize(b), "timing");
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Device time per call: kRep calls captured in one CUDA graph, replayed; the host's own cost
// (validation, launch) is not in it. Eager single calls are timed too, host included. One eager
// call first makes what a first call makes (the JIT's kernel, a fused kernel's bf16 table), as an
// application's warm-up would, so that no capture times a first call (session 40: before the
// table could be made inside a capture, each process's first shape of 1x128 gelu read up to 6%
// low).
template <class F>
double graph_ms_per_call(F&& f, cudaStream_t s) {
  constexpr int kRep = 10;
  f();
  ck(cudaStreamSynchronize(s), "warm-up call");
  cudaGraph_t g;
  cudaGraphExec_t ge;
  ck(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "capture");
  for (int i = 0; i < kRep; ++i) f();
  ck(cudaStreamEndCapture(s, &g), "end capture");
  ck(cudaGraphInstantiate(&ge, g, 0), "instantiate");
  const double ms = median_ms([&] { cudaGraphLaunch(ge, s); }, 20, s) / kRep;
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  return ms;
}

struct Row {
  std::string recipe, shape, note;
  double ms, gbps, copy_gbps, ratio, eager_ms;
};

// The outputs of a timed call: q's buffers, the amax among them only where the recipe needs one
// (a global scale); elsewhere an amax output would add a pass.
QuantizedTensor outputs_of(cli::QuantizedBuffers& q, const Recipe& r) {
  QuantizedTensor v = q.view();
  if (!r.has_global_scale()) v.amax = Buffer{};
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  std::vector<std::string> only;  // --only R (repeatable): these recipes, any recipe string, or "R+fused"
  std::vector<std::pair<int64_t, int64_t>> custom_shapes;  // --shape MxK (repeatable)
  int repeat = 1;  // --repeat N: the recipe list N times over, in one process (A/B within a run)
  bool quick = false;
  bool host_only = false;  // --host: only the host cost per call
  bool small_only = false;  // --small: only the decode-sized calls (graph replay), of --only and --shape
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only.emplace_back(argv[++i]);
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--host")) host_only = true;
    else if (!std::strcmp(argv[i], "--small")) small_only = true;
    else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc && std::atoi(argv[i + 1]) > 0)
      repeat = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--shape") && i + 1 < argc) {
      long long m = 0, k = 0;
      char tail = 0;
      if (std::sscanf(argv[++i], "%lldx%lld%c", &m, &k, &tail) != 2 || m <= 0 || k <= 0) {
        std::fprintf(stderr, "bench_quantize_gpu: --shape '%s': expected MxK with positive M and K, e.g. 8192x7168\n",
                     argv[i]);
        return 2;
      }
      custom_shapes.emplace_back(m, k);
    } else {
      std::fprintf(stderr,
                   "usage: bench_quantize_gpu [--quick] [--host] [--small] [--only RECIPE]... [--shape MxK]... "
                   "[--repeat N] "
                   "[--json FILE]\n");
      return 2;
    }
  }
  if (runtime::cuda_device_count() == 0) {
    std::fprintf(stderr, "bench_quantize_gpu: no usable CUDA device: %s\n", backend_status()[1].detail.c_str());
    return 77;
  }
  const Device gpu{DeviceKind::cuda, 0};
  cudaStream_t s;
  ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  const char* const default_recipes[] = {"fp8_tensor", "fp8_block_1x128", "fp8_block_1x128:layout=mn_major_tma",
                           "fp8_block_1x128:pow2=1,layout=packed_ue8m0", "fp8_block_128x128", "mxfp8",
                           "mxfp8:dir=both", "mxfp8:dir=both,colform=same",
                           // row+col with swizzled_128x4 scales (JIT kernels; MXFP8 stores whole atoms)
                           "mxfp8:layout=swizzled_128x4,dir=both", "mxfp4:layout=swizzled_128x4,dir=both",
                           "mxfp8_e5m2", "mxfp4", "mxfp4:dir=both", "nvfp4", "nvfp4:layout=swizzled_128x4", "nvfp4_2d",
                           // NVFP4 row+col (TransformerEngine's NVFP4 training recipe quantizes activations
                           // and gradients both ways) and DeepSeek V4's FP4 both ways: JIT kernels
                           "nvfp4:dir=both", "fp4_block_1x32", "fp4_block_1x32:dir=both"};
  // --only picks plain recipes by their recipe string (not only those of the default list) and
  // fused rows as "R+fused"
  auto wanted = [&](const std::string& name) { return only.empty() || std::count(only.begin(), only.end(), name) > 0; };
  std::vector<std::string> recipes;
  if (only.empty()) recipes.assign(std::begin(default_recipes), std::end(default_recipes));
  for (const std::string& o : only)
    if (o.size() < 6 || o.compare(o.size() - 6, 6, "+fused") != 0) recipes.push_back(o);
  for (const std::string& rt : recipes) {
    try {
      (void)Recipe::parse(rt);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_quantize_gpu: --only '%s': %s\n", rt.c_str(), e.what());
      return 2;
    }
  }
  std::vector<std::pair<int64_t, int64_t>> shapes = {{8192, 7168}, {32768, 7168}};
  if (quick) shapes = {{1024, 7168}};
  if (!custom_shapes.empty()) shapes = custom_shapes;
  if (host_only || small_only) shapes.clear();
  std::vector<Row> rows;
  for (auto [m, k] : shapes) {
    const std::vector<float> xf = cli::make_activation(m, k, 42);
    std::vector<uint16_t> xb(xf.size());
    for (size_t i = 0; i < xb.size(); ++i) xb[i] = num::float_to_bf16(xf[i]);
    cli::DeviceBuffer x(gpu, int64_t(xb.size() * 2)), copy_dst(gpu, int64_t(xb.size() * 2)), amax_given(gpu, 4);
    x.upload(xb.data());
    const float given = 100.0f;
    amax_given.upload(&given);
    const TensorView xv = TensorView::matrix(x.data(), DType::bfloat16, m, k, -1, gpu);
    const double copy_ms = graph_ms_per_call(
        [&] { cudaMemcpyAsync(copy_dst.data(), x.data(), size_t(x.bytes()), cudaMemcpyDeviceToDevice, s); }, s);
    const double copy_gbps = 2.0 * double(x.bytes()) / copy_ms / 1e6;
    const std::string shape = std::to_string(m) + "x" + std::to_string(k);
    rows.push_back({"copy (D2D)", shape, "peer", copy_ms, copy_gbps, copy_gbps, 1.0, 0.0});
    for (int pass = 0; pass < repeat; ++pass) {
      for (const std::string& rt : recipes) {
        const Recipe r = Recipe::parse(rt);
        cli::QuantizedBuffers q(r, m, k, gpu);
        const double bytes = double(x.bytes()) + double(q.layout().total_bytes());
        for (int given_amax = 0; given_amax < 2; ++given_amax) {
          const bool global = r.has_global_scale();
          if (given_amax && !global) continue;
          QuantizeOptions o;
          o.stream = s;
          // auto: the kernel a user gets. (cuda-aot alone ran the generic kernel wherever only the
          // JIT has a fast one, as for the swizzled_128x4 row+col configurations, until session 33.)
          if (given_amax) o.amax_in = static_cast<const float*>(amax_given.data());
          const QuantizedTensor qv = outputs_of(q, r);
          const double ms = graph_ms_per_call([&] { quantize(xv, qv, o); }, s);
          const double eager_ms = median_ms([&] { quantize(xv, qv, o); }, 20, s);
          const double gbps = bytes / ms / 1e6;
          std::string note = global ? (given_amax ? "given amax: 1 pass" : "device amax: 2 passes") : "";
          // which kernel ran, where it is not an ahead-of-time fast one
          const std::string& kernel = last_dispatch().kernel;
          if (kernel.rfind("fast", 0) != 0)
            note += (note.empty() ? "" : ", ") + (kernel.rfind("jit", 0) == 0 ? std::string("jit") : kernel);
          rows.push_back({r.name(), shape, note, ms, gbps, copy_gbps, gbps / copy_gbps, eager_ms});
        }
      }
    }
    // Fused epilogues (cuda-jit kernels): bytes are everything read (input, and act_input for
    // dact) and written (outputs, dbias). copy_dst holds a copy of x: the backward pass's
    // act_input, a distinct buffer so that its reads are not L2 hits on x.
    struct FusedRow {
      const char* recipe;
      Activation act;
      bool dact, dbias;
    };
    const FusedRow fused[] = {{"mxfp8", Activation::swiglu, false, false},
                              {"mxfp8:dir=both", Activation::gelu, true, true},
                              {"fp8_block_1x128:layout=mn_major_tma", Activation::silu, false, false},
                              // erf out of line in the rows shape: the bf16 table's case there
                              {"fp8_block_1x128:layout=mn_major_tma", Activation::gelu, false, false},
                              {"mxfp8", Activation::none, false, true},
                              {"nvfp4", Activation::swiglu, false, false},
                              // the two-input rows kernels whose function is erf: TE's rowwise
                              // backward (dgelu + dbias) and a gated forward
                              {"mxfp8", Activation::gelu, true, true},
                              {"mxfp8", Activation::geglu, false, false}};
    cli::DeviceBuffer dbias(gpu, k * 4);
    for (const FusedRow& fr : fused) {
      if (!wanted(std::string(fr.recipe) + "+fused")) continue;
      const Recipe r = Recipe::parse(fr.recipe);
      const bool gated = num::is_gated(fr.act);
      const int64_t n = gated ? k / 2 : k;
      cli::QuantizedBuffers q(r, m, n, gpu);
      const QuantizedTensor qv = outputs_of(q, r);
      const bool global = r.has_global_scale();
      const TensorView av = TensorView::matrix(copy_dst.data(), DType::bfloat16, m, k, -1, gpu);
      QuantizeOptions o;
      o.stream = s;
      o.activation = fr.act;
      if (fr.dact) o.act_input = &av;
      if (fr.dbias) o.dbias = static_cast<float*>(dbias.data());
      if (global) o.amax_in = static_cast<const float*>(amax_given.data());
      const double bytes = double(x.bytes()) * (fr.dact ? 2 : 1) + double(q.layout().total_bytes()) -
                           (global ? 0 : double(q.layout().amax.bytes)) + (fr.dbias ? double(n) * 4 : 0);
      const double ms = graph_ms_per_call([&] { quantize(xv, qv, o); }, s);
      const double eager_ms = median_ms([&] { quantize(xv, qv, o); }, 20, s);
      const double gbps = bytes / ms / 1e6;
      const std::string note = std::string("fused ") + (fr.dact ? "d" : "") + activation_name(fr.act) +
                               (fr.dbias ? "+dbias" : "") + (global ? ", given amax" : "");
      rows.push_back({r.name(), shape, note, ms, gbps, copy_gbps, gbps / copy_gbps, eager_ms});
    }
  }
  // Decode-sized shapes: microseconds per call under CUDA-graph replay.
  struct Small {
    std::string recipe, shape;
    double us;
    std::string kernel;  // last_dispatch() of the captured calls
  };
  std::vector<Small> small;
  // the default list, or with --small the --only recipes and the --shape shapes
  std::vector<std::pair<int64_t, int64_t>> small_shapes = {{1, 7168}, {16, 7168}, {128, 7168}};
  std::vector<std::string> small_recipes = {"fp8_block_1x128", "mxfp8", "mxfp8:dir=both",
                                           "nvfp4",           "fp8_tensor", "mxfp4"};
  if (small_only && !custom_shapes.empty()) small_shapes = custom_shapes;
  if (small_only && !only.empty()) small_recipes = recipes;
  for (auto [m, k] : small_shapes) {
    if ((!only.empty() && !small_only) || host_only) break;
    std::vector<uint16_t> xb(size_t(m * k));
    const std::vector<float> xf = cli::make_activation(m, k, 7);
    for (size_t i = 0; i < xb.size(); ++i) xb[i] = num::float_to_bf16(xf[i]);
    cli::DeviceBuffer x(gpu, int64_t(xb.size() * 2)), amax_given(gpu, 4);
    x.upload(xb.data());
    const float given = 100.0f;
    amax_given.upload(&given);
    const TensorView xv = TensorView::matrix(x.data(), DType::bfloat16, m, k, -1, gpu);
    for (const std::string& rt : small_recipes) {
      const Recipe r = Recipe::parse(rt);
      if (r.has_columnwise() && m == 1) continue;
      cli::QuantizedBuffers q(r, m, k, gpu);
      const QuantizedTensor qv = outputs_of(q, r);
      const bool global = r.has_global_scale();
      // the per-tensor recipes twice: the amax taken on the device, then given (static scales)
      for (int given_amax = 0; given_amax < (global ? 2 : 1); ++given_amax) {
        constexpr int kCalls = 100;
        cudaGraph_t g;
        cudaGraphExec_t ge;
        ck(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "capture");
        QuantizeOptions o;
        o.stream = s;
        if (given_amax) o.amax_in = static_cast<const float*>(amax_given.data());
        for (int i = 0; i < kCalls; ++i) quantize(xv, qv, o);
        ck(cudaStreamEndCapture(s, &g), "end capture");
        ck(cudaGraphInstantiate(&ge, g, 0), "instantiate");
        const double ms = median_ms([&] { cudaGraphLaunch(ge, s); }, 20, s);
        small.push_back({r.name() + (given_amax ? " (given amax)" : ""), std::to_string(m) + "x" + std::to_string(k),
                         ms * 1e3 / kCalls, last_dispatch().kernel});
        cudaGraphExecDestroy(ge);
        cudaGraphDestroy(g);
      }
    }
  }
  // Host cost of one quantize call with warm caches: 400 calls enqueued back to back on the
  // stream (the GPU runs ~1-3 us each, so the host is what is timed), wall time per call.
  struct Host {
    std::string recipe, backend;
    double us;
  };
  std::vector<Host> host;
  if (only.empty() && !small_only) {
    const int64_t m = 1, k = 7168;
    std::vector<uint16_t> xb(size_t(m * k), 0x3f80);
    cli::DeviceBuffer x(gpu, int64_t(xb.size() * 2));
    x.upload(xb.data());
    const TensorView xv = TensorView::matrix(x.data(), DType::bfloat16, m, k, -1, gpu);
    host.push_back({"empty kernel <<<1, 32>>> (reference)", "cuda runtime", host_us_per_call([&] { launch_empty_kernel(s); }, s)});
    cli::DeviceBuffer x2(gpu, 2 * int64_t(xb.size() * 2));  // [1, 2 x 7168] for the gated row
    const TensorView x2v = TensorView::matrix(x2.data(), DType::bfloat16, m, 2 * k, -1, gpu);
    struct HostRow {
      const char* recipe;
      Backend backend;
      Activation act;
    };
    for (const HostRow& hr : {HostRow{"mxfp8", Backend::cuda_aot, Activation::none},
                              HostRow{"mxfp8", Backend::cuda_jit, Activation::none},
                              HostRow{"fp8_block_1x128", Backend::automatic, Activation::none},
                              HostRow{"nvfp4", Backend::automatic, Activation::none},
                              HostRow{"mxfp8", Backend::automatic, Activation::swiglu}}) {
      const Recipe r = Recipe::parse(hr.recipe);
      cli::QuantizedBuffers q(r, m, k, gpu);
      const QuantizedTensor qv = outputs_of(q, r);
      QuantizeOptions o;
      o.stream = s;
      o.backend = hr.backend;
      o.activation = hr.act;
      const TensorView& in = hr.act == Activation::none ? xv : x2v;
      const double us = host_us_per_call([&] { quantize(in, qv, o); }, s);
      const std::string name = r.name() + (hr.act == Activation::none ? "" : std::string(" + ") + activation_name(hr.act));
      host.push_back({name, last_dispatch().backend + " " + last_dispatch().kernel.substr(0, 4), us});
    }
  }

  std::printf("\n%-46s %-11s %-22s %9s %9s %9s %7s %9s\n", "recipe (bf16 in)", "shape", "note", "ms", "GB/s",
              "copy GB/s", "ratio", "eager ms");
  for (const auto& r : rows)
    std::printf("%-46s %-11s %-22s %9.4f %9.1f %9.1f %7.3f %9.4f\n", r.recipe.c_str(), r.shape.c_str(),
                r.note.c_str(), r.ms, r.gbps, r.copy_gbps, r.ratio, r.eager_ms);
  std::printf("\n%-46s %-11s %12s\n", "recipe (CUDA-graph replay)", "shape", "us per call");
  for (const auto& r : small)
    std::printf("%-46s %-11s %12.2f  %s\n", r.recipe.c_str(), r.shape.c_str(), r.us, r.kernel.c_str());
  std::printf("\n%-46s %-16s %12s\n", "recipe (1x7168, host cost)", "ran", "us per call");
  for (const auto& h : host) std::printf("%-46s %-16s %12.2f\n", h.recipe.c_str(), h.backend.c_str(), h.us);
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << "{\"bandwidth\": [";
    for (size_t i = 0; i < rows.size(); ++i)
      f << (i ? "," : "") << "{\"recipe\":\"" << rows[i].recipe << "\",\"shape\":\"" << rows[i].shape
        << "\",\"note\":\"" << rows[i].note << "\",\"ms\":" << rows[i].ms << ",\"gbps\":" << rows[i].gbps
        << ",\"copy_gbps\":" << rows[i].copy_gbps << ",\"ratio\":" << rows[i].ratio
        << ",\"eager_ms\":" << rows[i].eager_ms << "}";
    f << "], \"small\": [";
    for (size_t i = 0; i < small.size(); ++i)
      f << (i ? "," : "") << "{\"recipe\":\"" << small[i].recipe << "\",\"shape\":\"" << small[i].shape
        << "\",\"us\":" << small[i].us << "}";
    f << "], \"host\": [";
    for (size_t i = 0; i < host.size(); ++i)
      f << (i ? "," : "") << "{\"recipe\":\"" << host[i].recipe << "\",\"ran\":\"" << host[i].backend
        << "\",\"us\":" << host[i].us << "}";
    f << "]}\n";
  }
  return 0;
}
