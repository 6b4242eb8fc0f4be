// Host side of the CUDA GEMM: the cuBLASLt block-scaled path and the generic kernel, chosen per
// call. cuBLASLt (CUDA >= 12.9) takes DeepSeek's recipes directly: A's 1 x 128 scales in the
// mn_major_tma layout are its VEC128_32F scales, and B's 128 x 128 row-major scales its
// BLK128x128_32F ones, so `quantize -> gemm` converts nothing.
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "cuda/check.hpp"
#include "cuda/gemm/config.h"
#include "cuda/gemm/launchers.hpp"
#include "cuda/gemm/params.h"
#include "mxq/error.hpp"
#include "mxq/gemm_plan.hpp"
#include "runtime/backends.hpp"
#include "runtime/jit/kernels.hpp"
#include "runtime/settings.hpp"

#if MXQ_HAVE_CUBLASLT
#include <cublasLt.h>
#endif


namespace mxq::runtime {
namespace {

using cuda::aligned16;

cuda::GemmOperand operand(const QuantizedTensor& q, const num::ScaleGeometry& g) {
  // NVFP4 keeps a scale row per data row (nvfp4_2d's 16 x 16 blocks too); per-tensor FP8 has none
  const int block_rows = q.recipe.scale_per_row() || q.recipe.is_tensor_scaled() ? 1 : q.recipe.block_rows;
  return {static_cast<const uint8_t*>(q.data.data), q.scales.data, g, block_rows,
          q.recipe.scale_type == ScaleType::float32 && q.recipe.layout != ScaleLayout::packed_ue8m0};
}

// The family fields of the generic kernel's parameters (cuda::GemmFamily).
cuda::GemmFamily family(const QuantizedTensor& a, const QuantizedTensor& b) {
  cuda::GemmFamily f;
  f.scheme = a.recipe.scheme;  // check_gemm: b's is the same
  f.a_elem = a.recipe.elem;
  f.b_elem = b.recipe.elem;
  f.block_k = a.recipe.is_tensor_scaled() ? 128 : a.recipe.block_cols;  // MX 32, NVFP4 16, fp8_block 128
  if (a.recipe.has_global_scale()) {
    f.a_global = static_cast<const float*>(a.global_scale.data);
    f.b_global = static_cast<const float*>(b.global_scale.data);
  }
  return f;
}

// Why cuBLASLt cannot take this call ("" when it can). Its block-scaled FP8 GEMM needs fp32
// scales, A's in the M-major layout with M % 4 == 0 (the layout's padding is then none), B's
// 128 x 128 ones row-major with K % 512 (whole groups of four K blocks) or 1 x 128 ones M-major
// with N % 4 == 0, K % 16 == 0, 16-byte aligned operands and no bias; C only with an fp32 D.
std::string cublaslt_why_not(const GemmCall& call, const QuantizedTensor& a, const QuantizedTensor& b,
                             const GemmOptions& opt) {
#if !MXQ_HAVE_CUBLASLT
  (void)call, (void)a, (void)b, (void)opt;
  return "this build has no cuBLASLt (configured without CUDA::cublasLt)";
#else
  const int64_t m = a.rows, n = b.rows, k = a.cols;
  if (a.recipe.is_tensor_scaled()) {  // per-tensor FP8: scalar scales, E4M3 / E5M2 but not both E5M2
    if (a.recipe.elem == ElemFormat::e5m2 && b.recipe.elem == ElemFormat::e5m2)
      return "cuBLASLt has no E5M2 x E5M2 FP8 GEMM";
  } else if (a.recipe.scale_type != ScaleType::float32 || b.recipe.scale_type != ScaleType::float32) {
    return "cuBLASLt takes fp32 block scales, not UE8M0 bytes";
  } else {
    if (a.recipe.layout != ScaleLayout::mn_major_tma || m % 4 != 0)
      return "cuBLASLt takes A's 1x128 scales in layout mn_major_tma with M % 4 == 0 (M=" + std::to_string(m) + ")";
    if (b.recipe.block_rows == 128 && (b.recipe.layout != ScaleLayout::row_major || k % 512 != 0))
      return "cuBLASLt takes B's 128x128 scales row_major with K % 512 == 0 (K=" + std::to_string(k) + ")";
    if (b.recipe.block_rows == 1 && (b.recipe.layout != ScaleLayout::mn_major_tma || n % 4 != 0))
      return "cuBLASLt takes B's 1x128 scales in layout mn_major_tma with N % 4 == 0 (N=" + std::to_string(n) + ")";
  }
  if (k == 0 || k % 16 != 0) return "cuBLASLt needs K > 0 and K % 16 == 0 (K=" + std::to_string(k) + ")";
  if (opt.bias) return "cuBLASLt's block-scaled GEMM is called without a bias epilogue here";
  if (call.c.data && call.d.dtype != DType::float32) return "cuBLASLt adds C only to an fp32 D";
  const int64_t esz = call.d.dtype == DType::float32 ? 4 : 2;
  if (!aligned16(a.data.data) || !aligned16(b.data.data) || !aligned16(call.d.data) || (call.d.row_stride * esz) % 16 ||
      (call.c.data && (!aligned16(call.c.data) || (call.c.row_stride * 4) % 16)))
    return "cuBLASLt needs 16-byte aligned operands and row strides";
  return "";
#endif
}

#if MXQ_HAVE_CUBLASLT
void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    fail(ErrorCode::device_error, std::string("gemm: cuBLASLt ") + what + " failed: " + cublasLtGetStatusString(s));
}

constexpr size_t kWorkspace = size_t(32) << 20;

// One handle and workspace per device, and the descriptors and algorithm of each shape seen:
// a warm call creates nothing.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr, ld = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool ok = false;
};
struct DeviceLt {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int, int>, Plan> plans;
};
std::mutex g_lt_mu;
std::map<int, DeviceLt> g_lt;

// Runs the call on cuBLASLt; "" once enqueued, else why not (its heuristic found no algorithm).
std::string run_cublaslt(const GemmCall& call, const QuantizedTensor& a, const QuantizedTensor& b,
                         const GemmOptions& opt, cudaStream_t stream) {
  const int64_t m = a.rows, n = b.rows, k = a.cols;
  const bool has_c = call.c.data != nullptr, fp32_d = call.d.dtype == DType::float32;
  // scales: 0 VEC128 x VEC128 (1D1D), 1 VEC128 x BLK128x128 (1D2D), 2 scalars (per-tensor FP8),
  // whose element types may differ: E4M3 or E5M2 each
  const int mode = a.recipe.is_tensor_scaled() ? 2 : b.recipe.block_rows == 128 ? 1 : 0;
  const bool e5_a = a.recipe.elem == ElemFormat::e5m2, e5_b = b.recipe.elem == ElemFormat::e5m2;
  std::lock_guard<std::mutex> lock(g_lt_mu);
  DeviceLt& dev = g_lt[call.d.device.index];
  if (!dev.handle) {
    cuda::RelaxedCapture relaxed;
    check_lt(cublasLtCreate(&dev.handle), "handle creation");
    cuda::check_cuda(cudaMalloc(&dev.workspace, kWorkspace), "gemm: cuBLASLt workspace");
  }
  Plan& p = dev.plans[{m, n, k, call.d.row_stride, has_c ? call.c.row_stride : 0, fp32_d, has_c, mode,
                       int(e5_a) * 2 + int(e5_b)}];
  if (!p.desc) {
    // Row-major D[M, N] = A . B^T is column-major D^T[N, M] = op(B') . A' with B' = our B
    // (K x N, column-major, transposed) and A' = our A (K x M): cuBLASLt's "A" is our B.
    check_lt(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "descriptor");
    const cublasOperation_t t = CUBLAS_OP_T, nop = CUBLAS_OP_N;
    check_lt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "transa");
    check_lt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &nop, sizeof nop), "transb");
    const cublasLtMatmulMatrixScale_t sa = mode == 2   ? CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F
                                           : mode == 1 ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F
                                                       : CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    const cublasLtMatmulMatrixScale_t sb =
        mode == 2 ? CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F : CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    check_lt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &sa, sizeof sa), "A scale mode");
    check_lt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &sb, sizeof sb), "B scale mode");
    const cudaDataType_t dt = fp32_d ? CUDA_R_32F : CUDA_R_16BF;
    check_lt(cublasLtMatrixLayoutCreate(&p.la, e5_b ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3, uint64_t(k), uint64_t(n), k),
             "A layout");
    check_lt(cublasLtMatrixLayoutCreate(&p.lb, e5_a ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3, uint64_t(k), uint64_t(m), k),
             "B layout");
    check_lt(cublasLtMatrixLayoutCreate(&p.ld, dt, uint64_t(n), uint64_t(m), call.d.row_stride), "D layout");
    check_lt(cublasLtMatrixLayoutCreate(&p.lc, dt, uint64_t(n), uint64_t(m), has_c ? call.c.row_stride : call.d.row_stride),
             "C layout");
    cublasLtMatmulPreference_t pref = nullptr;
    check_lt(cublasLtMatmulPreferenceCreate(&pref), "preference");
    check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspace,
                                                  sizeof kWorkspace),
             "workspace preference");
    // The heuristic needs the scale pointers' modes only; any non-null pointer will do here.
    const void* any = mode == 2 ? a.global_scale.data : a.scales.data;
    check_lt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &any, sizeof any), "A scale");
    check_lt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &any, sizeof any), "B scale");
    cublasLtMatmulHeuristicResult_t r{};
    int found = 0;
    const cublasStatus_t hs =
        cublasLtMatmulAlgoGetHeuristic(dev.handle, p.desc, p.la, p.lb, p.lc, p.ld, pref, 1, &r, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    p.ok = hs == CUBLAS_STATUS_SUCCESS && found > 0;
    if (p.ok) p.algo = r.algo;
  }
  if (!p.ok)
    return std::string("cuBLASLt's heuristic has no ") + (mode == 2 ? "per-tensor FP8" : "block-scaled") +
           " algorithm for M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k);
  // cuBLASLt's A is our B; per-tensor FP8's scalars are the global scales (decode multipliers)
  const void* scale_b = mode == 2 ? b.global_scale.data : b.scales.data;
  const void* scale_a = mode == 2 ? a.global_scale.data : a.scales.data;
  check_lt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_b, sizeof scale_b),
           "A scale");
  check_lt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_a, sizeof scale_a),
           "B scale");
  const float alpha = opt.alpha, beta = has_c ? 1.0f : 0.0f;
  const void* c = has_c ? call.c.data : call.d.data;
  check_lt(cublasLtMatmul(dev.handle, p.desc, &alpha, b.data.data, p.la, a.data.data, p.lb, &beta, c, p.lc,
                          call.d.data, p.ld, &p.algo, dev.workspace, kWorkspace, stream),
           "matmul");
  return "";
}
#endif

// What last_dispatch().kernel says of the TMA + wgmma kernel (the JIT's adds its specialisation).
std::string wgmma_kernel_text(int block_m, int promote_k, int split, bool b1d) {
  return "wgmma " + std::to_string(block_m) + "x128 TMA warp-specialized, promote-k " + std::to_string(promote_k) +
         (split > 1 ? ", split-K over a cluster of " + std::to_string(split) : "") + (b1d ? ", 1D1D" : "");
}

}  // namespace

std::string cublaslt_unavailable_reason() {
#if MXQ_HAVE_CUBLASLT
  const std::string cuda = cuda_unavailable_reason();
  if (!cuda.empty()) return cuda;
  return cublasLtGetVersion() >= 120900 ? "" : "cuBLASLt " + std::to_string(cublasLtGetVersion()) +
                                                   " has no block-scaled FP8 GEMM (needs 12.9 or later)";
#else
  return "this build has no cuBLASLt (configured without CUDA::cublasLt)";
#endif
}

// cuBLASLt for this call (block-scaled or per-tensor FP8): "" once it is enqueued and the dispatch
// recorded, else why cuBLASLt did not take it.
static std::string try_cublaslt(const GemmCall& call, const QuantizedTensor& a, const QuantizedTensor& b,
                                const GemmOptions& opt, cudaStream_t stream) {
  std::string why = cublaslt_unavailable_reason();
  if (why.empty()) why = cublaslt_why_not(call, a, b, opt);
#if MXQ_HAVE_CUBLASLT
  if (why.empty()) why = run_cublaslt(call, a, b, opt, stream);
  if (why.empty())
    record_dispatch("gemm", Backend::cublaslt,
                    a.recipe.is_tensor_scaled()      ? "cublasLt per-tensor FP8"
                    : b.recipe.block_rows == 128 ? "cublasLt VEC128 x BLK128x128"
                                                 : "cublasLt VEC128 x VEC128");
#else
  (void)stream;
#endif
  return why;
}

void cuda_gemm(Backend be, const GemmCall& call, const QuantizedTensor& a, const QuantizedTensor& b,
               const GemmOptions& opt) {
  cuda::require_supported_device(call.d.device, "gemm");
  cuda::check_device_pointer(a.data.data, call.d.device, "a.data.data");
  cuda::check_device_pointer(a.scales.data, call.d.device, "a.scales.data");
  if (a.recipe.has_global_scale())  // check_gemm and the kernels ignore it otherwise
    cuda::check_device_pointer(a.global_scale.data, call.d.device, "a.global_scale.data");
  cuda::check_device_pointer(b.data.data, call.d.device, "b.data.data");
  cuda::check_device_pointer(b.scales.data, call.d.device, "b.scales.data");
  if (b.recipe.has_global_scale()) cuda::check_device_pointer(b.global_scale.data, call.d.device, "b.global_scale.data");
  cuda::check_device_pointer(call.d.data, call.d.device, "d.data");
  cuda::check_device_pointer(call.c.data, call.d.device, "options.c.data");
  cuda::check_device_pointer(opt.bias, call.d.device, "options.bias");
  cuda::DeviceGuard guard(call.d.device.index);
  auto stream = static_cast<cudaStream_t>(opt.stream);
  if (call.d.empty()) {
    record_dispatch("gemm", be == Backend::automatic ? Backend::cuda_aot : be, "empty");
    return;
  }
  cuda::GemmParams p{};
  p.a = operand(a, call.a_scales);
  p.b = operand(b, call.b_scales);
  p.m = a.rows;
  p.n = b.rows;
  p.k = a.cols;
  p.alpha = opt.alpha;
  p.c = static_cast<const float*>(call.c.data);
  p.c_stride = call.c.row_stride;
  p.bias = opt.bias;
  p.d = call.d.data;
  p.d_stride = call.d.row_stride;
  p.d_bf16 = call.d.dtype == DType::bfloat16;
  p.family = family(a, b);
  if (a.recipe.scheme != Scheme::fp8_block) {
    // MX, NVFP4 and per-tensor FP8 operands (check_gemm: both of one family). Per-tensor FP8 runs
    // on cuBLASLt (auto, cublaslt) where it takes the call; no tensor-core GEMM takes the others
    // on Hopper, and the generic kernel decodes them all. Asked for by auto, cublaslt or cuda-jit,
    // the generic kernel is a fallback (strict mode refuses it).
    const bool tensor = a.recipe.is_tensor_scaled();
    std::string why = tensor ? "the JIT specialises the fp8_block TMA + wgmma kernel only"
                             : "no tensor-core GEMM takes " + a.recipe.name() + " x " + b.recipe.name() +
                                   " operands on this GPU (neither ours nor cuBLASLt's on Hopper)";
    if (tensor && (be == Backend::automatic || be == Backend::cublaslt)) {
      why = try_cublaslt(call, a, b, opt, stream);
      if (why.empty()) return;
    }
    if (be != Backend::cuda_aot) fallback("gemm", backend_name(be), "cuda-aot generic kernel", why);
    cuda::check_cuda(cuda::launch_gemm_generic(p, stream), "gemm kernel launch");
    record_dispatch("gemm", Backend::cuda_aot, "generic");
    return;
  }
  // Our kernels, by gemm_path's shape rule (mxq/gemm_plan.hpp): the swap-AB decode kernel for
  // M <= 32 with K % 128 == 0 (M <= 64 where the wgmma kernel cannot run), the TMA + wgmma kernel
  // for the other 1D2D shapes with K % 16 == 0, the generic kernel for the rest; each also needs
  // its operand layouts and alignment. auto: see auto_ours below.
  const int dev = call.d.device.index, arch = cuda::arch_of(dev);
  ArchDesc ad;
  ad.major = arch / 10;
  ad.minor = arch % 10;
  ad.sms = cuda::sm_count(dev);
  // the wgmma kernel's operand checks feed the rule: M = 33..64 calls it refuses (A's scales not
  // fp32 mn_major_tma, unaligned scales) stay on the decode kernel
  const bool d1d2 = b.recipe.block_rows == 128;  // else 1D1D (check_gemm: B 1 x 128)
  const GemmPath path = gemm_path(a.rows, b.rows, a.cols, d1d2 ? GemmKind::d1d2 : GemmKind::d1d1, ad,
                                  cuda::gemm_wgmma_takes(p), call.promote_k);
  const bool wgmma = path == GemmPath::tma_wgmma;
  // the wgmma kernel's tile rows: the option, else the plan's rule (gemm_config::wgmma_block_m)
  const int block_m = opt.block_m ? opt.block_m : gemm_config::wgmma_block_m(p.m, p.n, ad.sms);
  // split-K clusters for shapes of few 128-row tiles (gemm_config::wgmma_split_k)
  int split = 1;
  if (wgmma && block_m == 128) {
    cuda::decode_resident_clusters(dev, ad.resident_clusters);
    split = gemm_config::wgmma_split_k(p.m, p.n, p.k, block_m, gemm_config::wgmma_resident(ad));
  }
  const bool decode = path == GemmPath::swap_ab && cuda::gemm_decode_takes(p);
  const char* own = wgmma ? "cuda-aot wgmma kernel" : decode ? "cuda-aot swap-AB decode kernel" : "cuda-aot generic kernel";
  std::string why;
  // auto: our decode kernels up to kDecodeAutoMaxM rows and our wgmma kernel above kDecodeMaxM;
  // cuBLASLt first in between (faster there; ours are more accurate), ours where it cannot run.
  // 1D1D keeps cuBLASLt first above kDecodeMaxM too: the wgmma kernel's 1D1D instance (a scale per
  // tile column, 64 more multiplies per promotion) has not been timed against it yet.
  const bool auto_ours =
      (wgmma && d1d2 && a.rows > gemm_config::kDecodeMaxM) || (decode && a.rows <= gemm_config::kDecodeAutoMaxM);
  if (be == Backend::cublaslt || (be == Backend::automatic && !auto_ours)) {
    why = try_cublaslt(call, a, b, opt, stream);
    if (why.empty()) return;
    if (be == Backend::cublaslt || (!decode && !wgmma)) fallback("gemm", "cublaslt", own, why);
  } else if (be == Backend::cuda_jit) {
    // The JIT specialises the TMA + wgmma kernel on N and K (M stays a run-time value): compiled
    // on the calling thread at the first call of each (tile rows, promote-k, N, K), then from the memory and
    // disk caches; `mxq cache warmup gemm:N=..,K=..` compiles ahead of time.
    const jit::GemmKey key = jit::gemm_key_for(call.promote_k, block_m, p.n, p.k, split, !d1d2);
    if (!wgmma)
      why = std::string("the JIT specialises the TMA + wgmma kernel only, and ") +
            (cuda::gemm_wgmma_takes(p) ? "the shape rule (gemm_path) gives this call to another kernel"
                                       : "that kernel does not take this call's operands");
    else if (why = jit::unavailable_reason(); !why.empty()) why = "the JIT is " + why;
    else if (dev >= 64) why = "the JIT's GEMM cache keys devices 0..63 (device " + std::to_string(dev) + ")";
    else why = jit::gemm_key_problem(key);  // N or K of 2^24 or more
    if (why.empty()) {
      CUtensorMap maps[gemm_config::kWgmmaMaps];
      unsigned grid = 0;
      if (!cuda::gemm_wgmma_setup(p, ad.sms, block_m, split, maps, grid))
        cuda::check_cuda(cudaErrorInvalidValue, "gemm: TMA descriptors for the JIT kernel");
      jit::launch_gemm(key, dev, grid, maps, p, stream);  // compiles or loads first: a failure enqueues none
      record_dispatch("gemm", Backend::cuda_jit,
                      wgmma_kernel_text(block_m, call.promote_k, split, !d1d2) + ", specialised N=" + std::to_string(p.n) +
                          " K=" + std::to_string(p.k));
      return;
    }
    fallback("gemm", "cuda-jit", own, why);
  }
  if (wgmma) {
    cuda::check_cuda(cuda::launch_gemm_wgmma(p, dev, ad.sms, call.promote_k / 32, block_m, split, stream),
                     "gemm kernel launch");
    record_dispatch("gemm", Backend::cuda_aot, wgmma_kernel_text(block_m, call.promote_k, split, !d1d2));
    return;
  }
  if (decode) {
    // up to 8 rows (K < 16384) the mma.sync kernel streams the weights faster (decode_mma.cu), else wgmma
    const bool mma = gemm_config::decode_use_mma(a.rows, a.cols);
    if (!mma) cuda::decode_resident_clusters(dev, ad.resident_clusters);
    cuda::check_cuda(mma ? cuda::launch_gemm_decode_mma(p, dev, ad.sms, stream) : cuda::launch_gemm_decode(p, dev, ad, stream),
                     "gemm kernel launch");
    record_dispatch("gemm", Backend::cuda_aot, mma ? "swap-AB decode, mma.sync" : "swap-AB decode, wgmma");
    return;
  }
  cuda::check_cuda(cuda::launch_gemm_generic(p, stream), "gemm kernel launch");
  record_dispatch("gemm", Backend::cuda_aot, "generic");
}

}  // namespace mxq::runtime
