"""Markdown tables of one device run's results (the figures quoted in docs/hardware.md).

    python bench/hw/summarize.py bench/results/hw/2026-11-29-run2

Reads baselines.csv, baselines_config.json and calibration.json of that folder (default: the run above); needs pandas,
no GPU. A folder that is not one, or lacks one of the three, is one line and exit 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy

import pandas as pd  # noqa: E402

INPUTS = ("baselines.csv", "baselines_config.json", "calibration.json")
"""What a device run's folder holds that the tables are read from."""


def md(df: pd.DataFrame, floatfmt: str = "{:.3f}") -> str:
    cols = list(df.columns)
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in df.itertuples(index=False):  # itertuples keeps each column's type (iterrows casts ints to float)
        out.append("| " + " | ".join(floatfmt.format(v) if isinstance(v, float) else str(v) for v in r) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser

    ap = OneLineParser(prog="python bench/hw/summarize.py", description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", type=Path, default=Path("bench/results/hw/2026-11-29-run2"))
    d = ap.parse_args(argv).folder
    if not d.is_dir():
        ap.error(f"{d}: {'not a folder' if d.exists() else 'no such folder'}")
    missing = [n for n in INPUTS if not (d / n).is_file()]
    if missing:
        ap.error(f"{d}: no {', '.join(missing)} (not a device run's folder)")
    df = pd.read_csv(d / "baselines.csv")
    cfg = json.loads((d / "baselines_config.json").read_text())
    cal = json.loads((d / "calibration.json").read_text())["measured"]
    prov = cfg["provenance"]
    print(f"Run: {prov['machine']}, commit {prov['commit'][:12]}, {prov['time_utc']}; all checks ok: {bool(df.ok.all())}\n")

    g = df[df.experiment == "gemm"].pivot(index="m", columns="backend", values="median_ms")
    g["cutlass / cublas"] = g["cutlass"] / g["cublas"]
    if "cutlass_default" in g:
        g["default order / cublas"] = g["cutlass_default"] / g["cublas"]
    sched = df[(df.experiment == "gemm") & (df.backend == "cutlass")].set_index("m")["cutlass_schedule"]
    g["cutlass tile order"] = sched
    print("### One GEMM, M x 8192 x 8192 bf16, GPU 0 (median ms)\n")
    print(md(g.reset_index()))

    r = df[df.experiment == "remote_d"].pivot(index="m", columns="backend", values="median_ms")
    r["remote / local"] = r["cutlass_remote_d"] / r["cutlass_local_d"]
    print("\n### CUTLASS GEMM with D on the other GPU (median ms)\n")
    print(md(r.reset_index()))

    mb = df[df.experiment == "microbatch"]
    best = mb[mb.best == True]  # noqa: E712
    seq = df[df.experiment == "sequential"].set_index(["m", "backend"])["median_ms"]
    rows = []
    for _, b in best.iterrows():
        c1 = mb[(mb.m == b.m) & (mb.backend == b.backend) & (mb.chunks == 1)].median_ms.iloc[0]
        rows.append(dict(m=b.m, backend=b.backend, best_chunks=b.chunks, best_ms=b.median_ms, chunks1_ms=c1,
                         sequential_1gpu_ms=seq[(b.m, b.backend)], speedup_vs_sequential=seq[(b.m, b.backend)] / b.median_ms,
                         compute_ms=b.compute_ms, copy_ms=b.copy_ms, idle_ms=b.idle_ms))
    print("\n### Micro-batching, 2 layers on 2 GPUs: best chunk count per M (median ms)\n")
    print(md(pd.DataFrame(rows)))
    sweep = mb.pivot_table(index=["m", "backend"], columns="chunks", values="median_ms")
    sweep.columns = [f"c={c}" for c in sweep.columns]
    print("\n### Micro-batching chunk sweep (median ms)\n")
    print(md(sweep.reset_index()))

    tp = df[df.experiment == "tp"][["m", "backend", "median_ms", "compute_ms", "comm_ms", "idle_ms", "tflops"]]
    tp = tp.rename(columns={"comm_ms": "allreduce_ms"})
    tp["allreduce share"] = tp.allreduce_ms / tp.median_ms
    print("\n### Tensor parallelism, 2 layers on 2 GPUs (column- then row-parallel, NCCL all-reduce)\n")
    print(md(tp))

    s = df[df.experiment == "sequential"][["m", "backend", "median_ms", "tflops"]]
    print("\n### Sequential, 2 layers on GPU 0\n")
    print(md(s))

    fit = cal["tile_fit_128x256"]
    print("\n### Calibration\n")
    items = [
        ("HBM copy (read + write)", f"{cal['hbm_gbps']:.0f} GB/s"),
        ("kernel stores to peer", f"{cal['link_gbps']:.0f} GB/s"),
        ("copy-engine peer copy 0->1 / 1->0", f"{cal['copy_engine_gbps']:.0f} / {cal['copy_engine_gbps_1to0']:.0f} GB/s"),
        ("flag round trip (store) min / median", f"{cal['pingpong_store']['rtt_min_ns']} / {cal['pingpong_store']['rtt_median_ns']:.0f} ns"),
        ("flag round trip (atomic) min / median", f"{cal['pingpong_atomic']['rtt_min_ns']} / {cal['pingpong_atomic']['rtt_median_ns']:.0f} ns"),
        ("peer store + __threadfence_system", f"{cal['store_fence_ns']:.0f} ns"),
        ("returning atomic, peer / local", f"{cal['atomic_return_peer_ns']:.0f} / {cal['atomic_return_local_ns']:.0f} ns"),
        ("%globaltimer tick", f"{cal['globaltimer_tick_ns']} ns"),
        ("GPU1 - GPU0 %globaltimer offset", f"{cal['clock_offset_ns'] / 1e3:.1f} us (spread {cal['pingpong_store']['offset_spread_ns']:.0f} ns)"),
        ("back-to-back kernels (start to start)", f"{cal['kernel_gap_ns']} ns"),
        ("cross-GPU event wait", f"{cal['event_wait_ns'] / 1e3:.1f} us"),
        ("launch + sync round trip (host)", f"{cal['launch_roundtrip_ns'] / 1e3:.1f} us"),
        ("NCCL all-reduce bus bandwidth / latency per step", f"{cal['allreduce_bus_gbps']:.0f} GB/s / {cal['allreduce_latency_ns'] / 1e3:.1f} us"),
        ("CUTLASS 128x256 tile rate (sm_tflops) / tile_fixed_ns", f"{fit['sm_tflops']:.3f} / {fit['tile_fixed_ns']:.0f} ns ({cal.get('cutlass_schedule', 'default order')})"),
        ("remote-D GEMM 16384x8192x8192 local / remote", f"{cal['remote_d_local_ms']:.3f} / {cal['remote_d_remote_ms']:.3f} ms"),
    ]
    print(md(pd.DataFrame(items, columns=["what", "figure"])))
    ar = pd.DataFrame(cal["allreduce_sweep"])
    ar["MiB"] = ar.bytes // (1 << 20)
    ar["algbw GB/s"] = ar.bytes / (ar.ms * 1e6)
    print("\n### NCCL all-reduce vs size (bf16, 2 GPUs)\n")
    print(md(ar[["MiB", "ms", "algbw GB/s"]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
