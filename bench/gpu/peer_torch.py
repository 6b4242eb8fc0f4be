"""The peer for the quantize benchmark: torch.compile of the straightforward PyTorch formula of
each recipe (what a user would otherwise write), timed under CUDA-graph replay in the same
run as mxq's benchmark. Bytes are counted as for mxq: input plus every output (scales included)."""
import argparse
import json

import torch

F8 = torch.float8_e4m3fn


def _e8m0_rceil(amax, fmax):
    # rceil: biased exponent of amax / fmax, +1 when its mantissa is non-zero (normal v only).
    bits = (amax / fmax).view(torch.int32)
    code = ((bits >> 23) & 0xFF) + ((bits & 0x7FFFFF) != 0).to(torch.int32)
    code = torch.where(amax == 0, torch.zeros_like(code), code).clamp(0, 254)
    mult = ((254 - code).clamp(min=1) << 23).view(torch.float32)  # 2^(127 - code)
    return code.to(torch.uint8), mult


def _e2m1_pack(v):
    a = v.abs()
    code = ((a > 0.25).to(torch.uint8) + (a >= 0.75) + (a > 1.25) + (a >= 1.75) + (a > 2.5) + (a >= 3.5)
            + (a > 5.0)).to(torch.uint8)
    code = code | ((v < 0).to(torch.uint8) << 3)
    return code[..., 0::2] | (code[..., 1::2] << 4)


def fp8_tensor(x):
    amax = x.abs().amax().float()
    scale = torch.where(amax > 0, 448.0 / amax, torch.ones_like(amax))
    q = (x.float() * scale).clamp(-448, 448).to(F8)
    return q, 1.0 / scale, amax


def fp8_block_1x128(x):
    m, k = x.shape
    xb = x.float().view(m, k // 128, 128)
    s = xb.abs().amax(-1, keepdim=True).clamp(min=1e-4) / 448.0
    return (xb * (1.0 / s)).to(F8).view(m, k), s.view(m, k // 128)


def fp8_block_128x128(x):
    m, k = x.shape
    xb = x.float().view(m // 128, 128, k // 128, 128)
    s = xb.abs().amax(dim=(1, 3), keepdim=True).clamp(min=1e-4) / 448.0
    return (xb * (1.0 / s)).to(F8).view(m, k), s.view(m // 128, k // 128)


def _mx_rows(x, fmax, fp4):
    m, k = x.shape
    xb = x.float().view(m, k // 32, 32)
    code, mult = _e8m0_rceil(xb.abs().amax(-1, keepdim=True), fmax)
    y = xb * mult
    q = _e2m1_pack(y.clamp(-6, 6).view(m, k)) if fp4 else y.clamp(-fmax, fmax).to(F8).view(m, k)
    return q, code.view(m, k // 32)


def mxfp8(x):
    return _mx_rows(x, 448.0, False)


def mxfp8_both(x):
    return _mx_rows(x, 448.0, False) + _mx_rows(x.t(), 448.0, False)


def mxfp4(x):
    return _mx_rows(x, 6.0, True)


def nvfp4(x):
    m, k = x.shape
    g = x.abs().amax().float()
    s_enc = torch.where(g > 0, (448.0 * 6.0) / g, torch.ones_like(g))
    xb = x.float().view(m, k // 16, 16)
    sdec = (xb.abs().amax(-1, keepdim=True) * (s_enc * (1.0 / 6.0))).clamp(max=448.0).to(F8)
    r = 1.0 / (sdec.float() * (1.0 / s_enc))
    return _e2m1_pack((xb * r).view(m, k)), sdec.view(m, k // 16), 1.0 / s_enc


RECIPES = {"fp8_tensor": fp8_tensor, "fp8_block_1x128": fp8_block_1x128, "fp8_block_128x128": fp8_block_128x128,
           "mxfp8": mxfp8, "mxfp8:dir=both": mxfp8_both, "mxfp4": mxfp4, "nvfp4": nvfp4}


def bench(fn, x, iters=20, rep=10):
    """Device time per call: `rep` calls captured in one CUDA graph and replayed, as mxq's
    benchmark does, so that neither side is charged for host overhead."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            out = fn(x)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(rep):
            out = fn(x)
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / rep)
    times.sort()
    return times[len(times) // 2], out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--shapes", default="8192x7168")
    ap.add_argument("--recipes", default=",".join(RECIPES), help="comma-separated, of: " + ", ".join(RECIPES))
    args = ap.parse_args()
    chosen = [r for r in args.recipes.split(",") if r]
    unknown = [r for r in chosen if r not in RECIPES]
    if unknown:
        ap.error(f"--recipes: unknown {unknown}; expected some of {list(RECIPES)}")
    torch.manual_seed(0)
    rows = []
    for shape in args.shapes.split(","):
        m, k = map(int, shape.split("x"))
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        dst = torch.empty_like(x)
        copy_ms, _ = bench(lambda t: dst.copy_(t), x)
        copy_gbps = 2 * x.nbytes / copy_ms / 1e6
        rows.append({"recipe": "copy (torch)", "shape": shape, "ms": copy_ms, "gbps": copy_gbps})
        for name in chosen:
            fn = RECIPES[name]
            compiled = torch.compile(fn, dynamic=False)
            ms, out = bench(compiled, x)
            nbytes = x.nbytes + sum(t.nbytes for t in out if torch.is_tensor(t))
            rows.append({"recipe": name, "shape": shape, "ms": ms, "gbps": nbytes / ms / 1e6,
                         "copy_gbps": copy_gbps})
            print(f"torch.compile {name:24s} {shape:11s} {ms:8.4f} ms {nbytes / ms / 1e6:8.1f} GB/s", flush=True)
            if args.json:  # after every recipe, so that a time limit keeps what was measured
                with open(args.json, "w") as f:
                    json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
