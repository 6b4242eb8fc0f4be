"""Merges the GPU benchmark outputs into the one summary table printed last by gpu_check.sh."""
import json
import sys


def main(bench_path, peer_path, status_path):
    bench = json.load(open(bench_path))
    try:
        peer = {(r["recipe"], r["shape"]): r for r in json.load(open(peer_path))}
    except (OSError, ValueError):
        peer = {}
    print("\n=== mxq GPU summary ===")
    try:
        print(open(status_path).read().rstrip())
    except OSError:
        pass
    hdr = f"{'recipe (bf16 in)':46s} {'shape':11s} {'note':22s} {'ours GB/s':>9s} {'copy GB/s':>9s} {'/copy':>6s} {'torch.c GB/s':>12s} {'/torch':>7s}"
    print(hdr)
    for r in bench["bandwidth"]:
        if r["recipe"].startswith("copy"):
            continue
        key = r["recipe"].split(":layout")[0] if r["recipe"].startswith("fp8_block_1x128:layout") else r["recipe"]
        # the peer formula is the plain recipe's: no peer for given-amax or fused rows
        plain = not r["note"].startswith("given") and not r["note"].startswith("fused")
        p = peer.get((key, r["shape"])) if plain else None
        pg = f"{p['gbps']:12.1f}" if p else f"{'-':>12s}"
        pr = f"{r['gbps'] / p['gbps']:7.2f}" if p else f"{'-':>7s}"
        print(f"{r['recipe']:46s} {r['shape']:11s} {r['note']:22s} {r['gbps']:9.1f} {r['copy_gbps']:9.1f} "
              f"{r['ratio']:6.3f} {pg} {pr}")
    print(f"\n{'recipe (CUDA-graph replay)':46s} {'shape':11s} {'us/call':>8s}")
    for r in bench["small"]:
        print(f"{r['recipe']:46s} {r['shape']:11s} {r['us']:8.2f}")
    print(f"\n{'recipe (1x7168, host cost per call)':46s} {'ran':16s} {'us':>8s}")
    for r in bench.get("host", []):
        print(f"{r['recipe']:46s} {r['ran']:16s} {r['us']:8.2f}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
