"""Registered plan 84: run to run at the H100's edge of L2 reuse, the producer alone fifteen times at three H

    python bench/plan84_edge_runs.py --register [--out bench/predictions/reg84-edge-runs]
    python bench/plan84_edge_runs.py --judge RUN_DIR [--registered bench/predictions/reg84-edge-runs]
                                     [--out bench/results/validation-registered84]
    # the measurement (one H100, one call): per H of :data:`HS`,
    # python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms 16384 --variants cutlass_ctapipe --reps 15

Registered plan 83 ran the one-CTA-per-tile producer alone (``ctahw.percta``, row order, M = 16384) on an H100 and
found the weights' L2 reuse lost earlier and more gradually than any of the model's rules (1.15x the no-miss tile at
H = 8192, 1.49x at 9216, the full miss from 10240), and, post-hoc, its five traced runs at H = 9216 disagreeing: late
mainloops 1.14-1.96 times the early ones, untraced runs 4.73-6.46 ms, where at 10240 and 11264 they agreed within 2%.
Read so, a grid at the edge keeps its reuse for a while and loses it at a wave that differs by run, and the honest
prediction there is a range: the no-miss level and the model's full-miss level, not a point. Plan 84 asks it at H no
run has had (:data:`HS`: 8704 and 9728 around the repeat of 9216), fifteen traced and fifteen untraced runs each, on an
H100.

Per traced run the measured figure is its late-over-early mainloop ratio (``ctasim.calibration.percta_steps``:
``mainloop_late_ns`` over ``mainloop_early_ns``, waves >= 2 against waves 0-1: the run's own no-miss base); per
untraced run its time (``plain_ms``). The registration holds, per H, the model's range on ``h100-x8-mechanism``
(:func:`plan83_alone_edge.predictors`): the lockstep ratio (1: no miss) and the full-miss ratio (the profile's mean over
full waves >= 2 over lockstep's; plan 83 found the profile within 0.4-4.0% where the reuse was lost), and the run
counts. Claims (:data:`CLAIMS`; the thresholds read off plan 83's H100 runs, the H new). No adoption rule.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import registered_plan  # noqa: E402

M = 16384
HS = (8704, 9216, 9728)
EDGE = 9216
RUNS = 15
VARIANT = "cutlass_ctapipe"
GPU = "H100"
LOST = 1.6
"""A traced run whose late mainloop is this many times its early one or more has lost the reuse (plan 83: kept runs
1.08-1.39, lost ones 1.93-2.02, one at the edge 1.96)."""
SLACK = 0.05
REGISTERED = ROOT / "bench/predictions/reg84-edge-runs"
JudgeError = registered_plan.JudgeError
WHY = ("plan 84's call runs python -m ctahw.percta RUN_DIR/OUT_H<h> --h <h> --ms 16384 --variants cutlass_ctapipe "
       "--reps 15 per H on an H100, and writes RUN_DIR/env.txt")
CLAIMS = {
    "a": f"every traced run's late-over-early mainloop ratio within the model's range at its H: from {1 - SLACK:g} to "
         f"the full-miss ratio x {1 + SLACK:g}",
    "b": f"at H = {EDGE} the traced runs' ratios span at least 0.3 and the untraced runs' times at least 15% (plan "
         "83's five: 1.14-1.96, 4.73-6.46 ms)",
    "c": "at H = 8704 the median traced run has lost part of its reuse, not all: ratio from 1.10 to 1.60",
    "d": f"the share of traced runs that lost their reuse (ratio >= {LOST:g}) does not fall as H grows, and at "
         "H = 9728 is more than half",
    "e": "at H = 9728 the median traced run's ratio within 10% of the model's full-miss ratio (the level of a lost "
         "run priced as plan 83 found it at 10240 and 11264)",
}


def register() -> pd.DataFrame:
    """Per H: the lockstep and profile means over full waves >= 2 (us) and the full-miss ratio, and the runs asked."""
    import plan83_alone_edge as p83  # noqa: PLC0415
    from percta_predict import full_waves  # noqa: PLC0415

    preds = p83.predictors(p83.GPUS[GPU][0])
    rows = []
    for h in HS:
        mean = {}
        for name in ("lockstep", "profile"):
            t = p83.wave_times(h, VARIANT, *preds[name])
            waves = pd.DataFrame({"wave": np.arange(len(t)), "us": t})
            mean[name] = float(full_waves(waves, p83.tiles(h))["us"].mean())
        rows.append(dict(gpu=GPU, profile=p83.GPUS[GPU][0], h=h, m=M, variant=VARIANT, runs=RUNS,
                         lockstep_us=mean["lockstep"], profile_us=mean["profile"],
                         lost_ratio=mean["profile"] / mean["lockstep"]))
    return pd.DataFrame(rows)


def measured(run_dir: Path) -> pd.DataFrame:
    """Per H and run: the traced run's early and late mainloop (ns) and their ratio, the untraced run's time (ms)."""
    import plan83_alone_edge as p83  # noqa: PLC0415

    gpu = p83.call_gpu(run_dir, WHY)
    if gpu != GPU:
        raise JudgeError(f"{run_dir / 'env.txt'} names an {gpu}; plan 84 is an {GPU}'s")
    parts = []
    for h in HS:
        f = run_dir / f"OUT_H{h}" / "percta-runs.csv"
        if not f.is_file():
            raise JudgeError(f"no {f} ({WHY})")
        try:
            r = pd.read_csv(f)
            r = r[r["variant"] == VARIANT][["run", "plain_ms", "mainloop_early_ns", "mainloop_late_ns"]]
        except (OSError, KeyError, ValueError) as e:
            raise JudgeError(f"{f}: not a percta runs table ({type(e).__name__}: {e})") from None
        if len(r) != RUNS:
            raise JudgeError(f"{f}: {len(r)} runs of {VARIANT}, not the {RUNS} plan 84 asks")
        for col in ("plain_ms", "mainloop_early_ns", "mainloop_late_ns"):
            registered_plan.positive_times(r[col], [f"H = {h} run {i}" for i in r["run"]], f, col)
        parts.append(r.assign(h=h, ratio=r["mainloop_late_ns"] / r["mainloop_early_ns"]))
    return pd.concat(parts, ignore_index=True)


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per H: the runs' ratios (min, median, max), the share lost, the untraced times (min, median, max, ms), and the
    model's range and how many runs lie outside it."""
    rows = []
    for h, r in meas.groupby("h", sort=True):
        p = pred[pred["h"] == h]
        if p.empty:
            raise JudgeError(f"the registration has no row for H = {h}")
        p = p.iloc[0]
        lo, hi = 1 - SLACK, p["lost_ratio"] * (1 + SLACK)
        med = float(r["ratio"].median())
        rows.append(dict(h=h, runs=len(r), ratio_min=r["ratio"].min(), ratio_median=med, ratio_max=r["ratio"].max(),
                         lost_share=float((r["ratio"] >= LOST).mean()), range_lo=lo, range_hi=hi,
                         outside=int(((r["ratio"] < lo) | (r["ratio"] > hi)).sum()),
                         plain_ms_min=r["plain_ms"].min(), plain_ms_median=float(r["plain_ms"].median()),
                         plain_ms_max=r["plain_ms"].max(), lost_ratio=p["lost_ratio"]))
    return pd.DataFrame(rows)


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    by = c.set_index("h")
    edge, low, high = by.loc[EDGE], by.loc[HS[0]], by.loc[HS[-1]]
    spread_t = edge["plain_ms_max"] / edge["plain_ms_min"] - 1
    shares = [by.loc[h, "lost_share"] for h in HS]
    e = high["ratio_median"] / high["lost_ratio"] - 1
    rows = [
        ("a", f"{int(c['outside'].sum())} of {int(c['runs'].sum())} runs outside", bool(c["outside"].sum() == 0)),
        ("b", f"ratios {edge['ratio_min']:.2f}-{edge['ratio_max']:.2f}, times {edge['plain_ms_min']:.2f}-"
              f"{edge['plain_ms_max']:.2f} ms ({spread_t:.0%})",
         bool(edge["ratio_max"] - edge["ratio_min"] >= 0.3 and spread_t >= 0.15)),
        ("c", f"median {low['ratio_median']:.2f}", bool(1.10 <= low["ratio_median"] <= 1.60)),
        ("d", "lost shares " + ", ".join(f"{h}: {s:.0%}" for h, s in zip(HS, shares)),
         bool(all(a <= b for a, b in zip(shares, shares[1:])) and shares[-1] > 0.5)),
        ("e", f"median {high['ratio_median']:.2f} against {high['lost_ratio']:.2f} ({e:+.1%})",
         bool(abs(e) <= 0.10)),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan84_edge_runs", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered84", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "env.txt")


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
