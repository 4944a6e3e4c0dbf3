"""Registered plan 56: is the chain kernel's loss of reuse gradual where the model's flips? (no GPU here)

    python bench/plan56_gradual.py --register [--out bench/predictions/reg56-gradual]
    python bench/plan56_gradual.py --judge RUN_DIR [--registered bench/predictions/reg56-gradual]
                                   [--out bench/results/validation-registered56]

Post-hoc, over 13 traced chain-kernel runs (``bench/posthoc_order_onset.py``), the adopted profile
(``h200-x1-calibrated``: the survival ticket law, as plan 53 adopted it; its "adopted" predictor is
``posthoc_order_mainloop.as_plan_53``) gives pairs and row order a penalty over groups of 8 at one of two levels, the
weight panels' reuse kept or lost, flipping as M grows; the measured penalty grows gradually, the hardware loses a part
of the reuse in the cases the model keeps it all, and where both lose it row order's level is overcharged. Plan 56 asks
that of shapes never run: 2-layer chains at H = 6912 and 7936, M = 4096, 6144, 8192, 12288, 16384, the chain kernel in
groups of 8, pairs and row order (``specs/experiments/reg56-chain-gradual-h6912``, ``-h7936``), whose measurement (one
traced run of each case and order, ``ctahw run``) does not exist yet.

``--register`` writes ``predicted.csv``: per experiment, case and order the model's late mainloop (µs; median of
``t_compute_end - t_acquire`` over the second half of the tiles by ``t_acquire``, ``bench/posthoc_order_mainloop``),
its makespan (ms), and, for pairs and row order, the waves, the **level** and the **onset** of its excess per wave over
groups of 8 (``bench/posthoc_order_onset``: each window of 132 tiles' median mainloop over groups of 8's median, less 1;
the level is the last quarter's median, the onset the first wave from 2 on that begins three at half the level). A
registration is never overwritten.

``--judge`` reads RUN_DIR/EXP/ctapipe_traces.trace.npz of both experiments, sets the same figures from the traced runs
(``t_mainloop_end`` for the mainloop), and writes ``cases.csv`` and ``claims.csv`` (:data:`CLAIMS`, with whether the
figures are registered: ``ctasim.accuracy.provenance_order`` of predicted.csv against the first bundle). A missing
registration, run or traced case is refused in one line, exit 2, nothing written.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import posthoc_order_mainloop as pom  # noqa: E402
import posthoc_order_onset as poo  # noqa: E402
import registered_plan  # noqa: E402

EXPERIMENTS = ("reg56-chain-gradual-h6912", "reg56-chain-gradual-h7936")
CASES = ("m=4096", "m=6144", "m=8192", "m=12288", "m=16384")
LOSERS = ("intragpu-g2", "intragpu-row")
"""The orders judged (pairs, row order), each against groups of 8 (``posthoc_order_mainloop.REFERENCE``)."""
ORDERS = (pom.REFERENCE, *LOSERS)
REGISTERED = ROOT / "bench/predictions/reg56-gradual"
JudgeError = registered_plan.JudgeError
"""A registration or a run that cannot be judged (one line; ``bench/registered_plan.py``)."""
KEPT_SHARE = 2 / 3
SERIES_GRADUAL = 3
ROW_BELOW_SHARE = 0.5
LOST_LEVEL = 0.2
"""Claim (c)'s cases: row order where the model's level is this or more (the reuse lost, not a few per cent)."""
CLAIMS = {
    "a": f"where the model keeps the reuse to the end (its level under {poo.MIN_LEVEL:.0%}), the measured level is "
         f"{poo.MIN_LEVEL:.0%} or more in at least {KEPT_SHARE:.0%} of those cases (pairs and row order together)",
    "b": "in at least 3 of the 4 series (H x order, M ascending) the largest rise of the measured late-mainloop "
         "penalty from one M to the next is smaller than the model's",
    "c": f"where the model loses row order's reuse (its level {LOST_LEVEL:.0%} or more), the measured level is the "
         f"lower in more than {ROW_BELOW_SHARE:.0%} of those cases",
}


def figures(traces: dict, end: str) -> pd.DataFrame:
    """Per (case, order) of ``traces`` ((case, order) -> tile table): late mainloop (µs) and, for :data:`LOSERS`,
    waves, level and onset of the excess per wave over groups of 8 of the same case."""
    rows = []
    for case in CASES:
        ref = poo.wave_medians(traces[(case, pom.REFERENCE)], end)
        for order in ORDERS:
            tiles = traces[(case, order)]
            row = dict(case=case, order=order, late_us=pom.late_median(tiles, end))
            if order != pom.REFERENCE:
                excess = poo.excess(poo.wave_medians(tiles, end), ref)
                level, onset = poo.onset(excess)
                row.update(waves=len(excess), level=round(level, 4), onset=onset)
            rows.append(row)
    return pd.DataFrame(rows)


def register() -> pd.DataFrame:
    parts = []
    for exp in EXPERIMENTS:
        traces = pom.simulated(exp, [(c, o) for c in CASES for o in ORDERS])
        f = figures({k: tr.tiles for k, tr in traces.items()}, "t_compute_end")
        f["makespan_ms"] = [traces[(c, o)].makespan_ns / 1e6 for c, o in zip(f["case"], f["order"])]
        parts.append(f.assign(experiment=exp))
    return pd.concat(parts, ignore_index=True)[["experiment", "case", "order", "late_us", "makespan_ms", "waves",
                                                "level", "onset"]]


def measured(run_dir: Path) -> pd.DataFrame:
    parts = []
    for exp in EXPERIMENTS:
        traces = registered_plan.traced_runs(run_dir, exp, [(c, o) for c in CASES for o in ORDERS],
                                             "plan 56's call traces one run of each case and order")
        parts.append(figures({k: tr.tiles for k, tr in traces.items()}, "t_mainloop_end").assign(experiment=exp))
    return pd.concat(parts, ignore_index=True)


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per experiment, case and judged order: the penalty (late mainloop over groups of 8's, less 1, points; each
    source over its own groups of 8), level and onset, measured and registered."""
    out = []
    for label, d in (("meas", meas), ("model", pred)):
        d = d.copy()
        ref = d[d["order"] == pom.REFERENCE].set_index(["experiment", "case"])["late_us"]
        d = d[d["order"] != pom.REFERENCE].copy()
        d["penalty_pct"] = (d["late_us"] / [ref[(e, c)] for e, c in zip(d["experiment"], d["case"])] - 1) * 100
        out.append(d.set_index(["experiment", "case", "order"])[["penalty_pct", "waves", "level", "onset"]]
                   .add_suffix(f"_{label}"))
    c = out[0].join(out[1], how="inner").reset_index()
    c["m"] = c["case"].str.split("=").str[1].astype(int)
    return c.sort_values(["experiment", "order", "m"]).drop(columns="m").reset_index(drop=True)


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    kept = c[c["level_model"] < poo.MIN_LEVEL]
    lost_row = c[(c["order"] == "intragpu-row") & (c["level_model"] >= LOST_LEVEL)]
    kept_lose = int((kept["level_meas"] >= poo.MIN_LEVEL).sum())
    gradual = 0
    for _, s in c.groupby(["experiment", "order"]):
        if np.diff(s["penalty_pct_meas"].to_numpy()).max() < np.diff(s["penalty_pct_model"].to_numpy()).max():
            gradual += 1
    below = int((lost_row["level_meas"] < lost_row["level_model"]).sum())
    rows = [
        ("a", f"{kept_lose} of {len(kept)}", len(kept) > 0 and kept_lose >= KEPT_SHARE * len(kept)),
        ("b", f"{gradual} of {c.groupby(['experiment', 'order']).ngroups}", gradual >= SERIES_GRADUAL),
        ("c", f"{below} of {len(lost_row)}", len(lost_row) > 0 and below > ROW_BELOW_SHARE * len(lost_row)),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan56_gradual", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered56", register=register, measured=measured, cases=cases, claims=claims,
    first_file=lambda run_dir: run_dir / EXPERIMENTS[0] / pom.BUNDLE)


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
