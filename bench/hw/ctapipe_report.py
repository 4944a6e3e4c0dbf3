"""Tables of a CTA-pipelining device run: latency against the baselines, the issue's targets, traces.

    python bench/hw/ctapipe_report.py bench/results/hw/<date>-ctapipe [--markdown]

Reads ``baselines.csv`` (every row of ``ctahw run gemm,microbatch,tp,ctapipe``) and the ctasim trace bundle
``ctapipe_traces.trace.npz`` (the kept traced run of each variant and M) from the folder; re-checks every trace with ctasim's invariant checker on this machine and
prints, per M: each CTA-pipelining variant, the best micro-batching, TP, the lower bound (one layer on one GPU,
cuBLAS, plus the first row-block's completion time from the variant's trace) and the ratios the issue targets
(<= 0.75 x best micro-batching, <= 0.78 x TP, <= 1.06 x the lower bound at M = 16384), then the simulator's
prediction for the same plan (``h200-x2-calibrated`` profile) beside the measurement. A folder that is not one, or
holds no ``baselines.csv``, is one line and exit 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy

import pandas as pd  # noqa: E402

TARGETS = {"vs_microbatch": 0.75, "vs_tp": 0.78, "vs_lower_bound": 1.06}


def tables(folder: Path, simulate: bool = True) -> dict[str, pd.DataFrame]:
    from ctahw.pipelined import TRACE_TOL_NS, other_violations, plan_of_trace, publish_inversion_ns
    from ctasim.invariants import find_violations
    from ctasim.trace import load_traces
    from ctasim.trace import TRACES_FILE

    df = pd.read_csv(folder / "baselines.csv")
    ok = df[df["error"].isna() | (df["error"].astype(str) == "")] if "error" in df else df
    bundle = load_traces(folder / TRACES_FILE) if (folder / TRACES_FILE).exists() else {}
    traces = {(int(t.meta["m"]), str(t.meta["variant"])): t for t in bundle.values() if t.meta.get("kept", True)}
    checks, first_rb, makespan_tr = [], {}, {}
    for (m, variant), tr in sorted(traces.items()):
        plan, info = plan_of_trace(tr), tr.meta
        viol = find_violations(tr, plan, TRACE_TOL_NS)
        ev = tr.events
        t0 = tr.tiles.loc[tr.tiles["kernel"] == plan.kernels()[0].id, "t_start"].min()
        first_rb[(m, variant.removesuffix("_trace"))] = (ev.loc[ev["kind"] == "zero", "t_ns"].min() - t0) * 1e-6
        makespan_tr[(m, variant)] = tr.makespan_ns * 1e-6
        checks.append(dict(m=m, variant=variant, tiles=len(tr.tiles), violations=len(viol),
                           other_than_publish_order=len(other_violations(viol)),
                           publish_inversion_us=publish_inversion_ns(tr) * 1e-3,
                           first=str(viol[0])[:100] if viol else "", tol_ns=TRACE_TOL_NS,
                           clock_offset_ns=info["offsets"]["1"]["offset_ns"],
                           offset_spread_ns=info["offsets"]["1"]["offset_spread_ns"]))
    rows = []
    for m, g in ok.groupby("m"):
        gemm = g[(g.experiment == "gemm") & (g.backend == "cublas")].median_ms
        mb = g[g.experiment == "microbatch"]
        tp = g[g.experiment == "tp"].median_ms
        best_mb = mb.loc[mb.median_ms.idxmin()] if len(mb) else None
        for _, r in g[g.experiment == "ctapipe"].iterrows():
            plain = r.backend.removesuffix("_trace")
            # The bound's row-block term: the earliest first row-block completion any traced variant of this M
            # showed (a variant's own trace is one run and can carry a one-off stall).
            frs = [v for (mm, _), v in first_rb.items() if mm == m]
            fr = min(frs) if frs else None
            lb = float(gemm.iloc[0]) + fr if len(gemm) and fr is not None else float("nan")
            rows.append(dict(
                m=m, variant=r.backend, ctapipe_ms=r.median_ms, rel_err=r.rel_err,
                best_microbatch_ms=best_mb.median_ms if best_mb is not None else float("nan"),
                microbatch_chunks=int(best_mb.chunks) if best_mb is not None else 0,
                tp_ms=float(tp.iloc[0]) if len(tp) else float("nan"),
                gemm_ms=float(gemm.iloc[0]) if len(gemm) else float("nan"), first_rowblock_ms=fr, lower_bound_ms=lb,
                vs_microbatch=r.median_ms / best_mb.median_ms if best_mb is not None else float("nan"),
                vs_tp=r.median_ms / float(tp.iloc[0]) if len(tp) else float("nan"),
                vs_lower_bound=r.median_ms / lb, trace_overhead=r.get("trace_overhead", float("nan"))))
    out = {"latency": pd.DataFrame(rows), "trace_checks": pd.DataFrame(checks)}
    if simulate and rows:
        out["prediction"] = predictions(sorted({r["m"] for r in rows}), out["latency"])
    return out


def predictions(ms, lat: pd.DataFrame) -> pd.DataFrame:
    """ctasim's makespan for the plan each variant ran, on ``h200-x2-calibrated`` with the variant's kernel
    configs (``ctasim.validation.ctapipe.plan_for``: per-cluster-shape tile rates; launch_ns = 0, no timing
    harness); variants without a fitted config use the default one (``chain_plan``)."""
    from ctahw.pipelined import VARIANTS, chain_plan, variant_plan
    from ctasim.engine import simulate
    from ctasim.spec import load_hardware
    from ctasim.validation.ctapipe import VARIANT_KERNELS, plan_for

    hw = load_hardware("h200-x2-calibrated")
    rows = []
    for m in ms:
        base = chain_plan(m, hardware="h200-x2-calibrated")
        for _, r in lat[lat.m == m].iterrows():
            v = VARIANTS.get(r.variant)
            if v is None:
                continue
            plan = variant_plan(base, v, hardware="h200-x2-calibrated")
            name = r.variant.removesuffix("_trace")
            if name in VARIANT_KERNELS:
                ks = sorted(plan.kernels(), key=lambda k: k.layer)
                plan = plan_for(m, name, hw, ks[0].order, ks[-1].order if v.consumer == "wait" else None)
            sim = simulate(plan, hw).makespan_ns * 1e-6
            rows.append(dict(m=m, variant=r.variant, predicted_ms=sim, measured_ms=r.ctapipe_ms,
                             measured_over_predicted=r.ctapipe_ms / sim))
    return pd.DataFrame(rows)


def markdown(df: pd.DataFrame) -> str:
    """A Markdown table (no tabulate needed); floats with 3 decimals."""
    def cell(v) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser

    ap = OneLineParser(prog="python bench/hw/ctapipe_report.py", description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--markdown", action="store_true", help="Markdown tables")
    ap.add_argument("--no-sim", action="store_true", help="skip the simulator's predictions")
    args = ap.parse_args(argv)
    if not args.folder.is_dir():
        ap.error(f"{args.folder}: {'not a folder' if args.folder.exists() else 'no such folder'}")
    if not (args.folder / "baselines.csv").is_file():
        ap.error(f"{args.folder}: no baselines.csv (not a CTA-pipelining device run's folder)")
    t = tables(args.folder, simulate=not args.no_sim)
    for name, df in t.items():
        print(f"\n## {name}\n")
        print(markdown(df) if args.markdown else df.to_string(index=False))
    lat = t["latency"]
    at = lat[lat.m == lat.m.max()] if len(lat) else lat
    if len(at):
        best = at.loc[at.ctapipe_ms.idxmin()]
        print(f"\ntargets at M={int(best.m)} (best variant {best.variant}):")
        for k, lim in TARGETS.items():
            print(f"  {k}: {best[k]:.3f} (target <= {lim}) {'met' if best[k] <= lim else 'MISSED by %.1f%%' % (100 * (best[k] / lim - 1))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
