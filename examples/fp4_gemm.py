"""FP4 block-scaled GEMM, end to end, from Python: quantize an activation-like A (M x K) and a
weight-like B (N x K) to NVFP4 and MXFP4, multiply them with mxq.gemm, and compare with the
float64 product of the unquantized inputs.

What differs from FP8 (docs/ARCHITECTURE.md, "GEMM operand families"):
  - FP4 data is packed two codes per byte (element 2i in the low nibble): q.data has K / 2
    columns (uint8 in NumPy, torch.float4_e2m1fn_x2 in torch), and K must be even;
  - NVFP4 has one UE4M3 scale per 16 elements of K plus a per-tensor global scale
    (q.global_scale), which the product includes; MXFP4 one UE8M0 scale per 32;
  - both operands are quantized rowwise: K-major, the layout block-scaled tensor cores read.
Hopper has no FP4 tensor-core instruction: with NumPy arrays this runs on the CPU backend, the
fp64 reference.

    python examples/fp4_gemm.py
"""
import numpy as np

import mxq


def main() -> int:
    rng = np.random.default_rng(0)
    m, n, k = 64, 96, 512
    a = rng.standard_normal((m, k), dtype=np.float32)
    a[rng.random((m, k)) < 0.01] *= 20.0  # activation outliers
    b = rng.standard_normal((n, k), dtype=np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64).T
    print(f"{'A x B':<20} {'A data':>26} {'A scales':>14} {'rel. error':>11} {'ran on':>7}")
    for ra, rb in (("nvfp4", "nvfp4"), ("nvfp4", "nvfp4_2d"), ("mxfp4", "mxfp4"), ("mxfp8", "mxfp4")):
        qa, qb = mxq.quantize(a, ra), mxq.quantize(b, rb)
        d = mxq.gemm(qa, qb)  # float32 (M, N)
        err = np.linalg.norm(d - exact) / np.linalg.norm(exact)
        print(f"{ra + ' x ' + rb:<20} {str(qa.data.shape) + ' ' + str(qa.data.dtype):>26} "
              f"{str(qa.scales.shape):>14} {err:11.3e} {mxq.last_dispatch()['backend']:>7}")
        if not err < 0.3:
            print(f"fp4_gemm: {ra} x {rb}: relative error {err} is not that of FP4 operands")
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
