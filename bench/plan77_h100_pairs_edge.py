"""Registered plan 77: do an H100's pairs lose their reuse past a size, or at H = 8704 only? The adopted H100 profile

    python bench/plan77_h100_pairs_edge.py --register [--out bench/predictions/reg77-h100-pairs-edge]
    python bench/plan77_h100_pairs_edge.py --judge RUN_DIR [--registered bench/predictions/reg77-h100-pairs-edge]
                                           [--out bench/results/validation-registered77]

On every H100 call before registered plan 76 the chain kernel's pairs took 1.04-1.15 times groups of 8's makespan
(2-layer chains at H = 4096-8448, a layer's weights up to 2.7 times the H100's 50 MiB L2; three calls at H = 8448:
1.10-1.12); on plan 76's two H100s at H = 8704 (2.9 times) they took 1.44-1.60 at M >= 8192, every SM losing the
reuse, where the H200s lose 7-8% at the same cases (`bench/results/validation-registered76`). Plan 77 asks, before any
H100 ran them, two chains past 8704 (:data:`EXPERIMENTS`): H = 8960 (3.1 times the L2; M = 6144, 10240, 14336) and H =
9216 (3.2 times; M = 4096, 8192, 16384), sequential and the chain kernel's groups of 8 and 4, pairs and row order, 30
cases. Sources (:data:`SOURCES`): ``model`` (``h100-x1-datasheet``, as plan 76's adoption left it), ``naive`` (the
FLOPs line fitted on H200 GEMMs), ``h200-measured`` (the H200s' medians). Claims (:data:`CLAIMS`): (a) the size reading
-- the pairs at least :data:`CLIFF` times groups of 8 at every M >= 8192 of both chains (4 cases); (b)-(d) the adopted
profile on the orders that keep their reuse (sequential, groups of 8 and 4: 18 cases); (e) on the pairs and row order
(12). No adoption rule: nothing here changes a profile. Left out: the sustained regime, per-CTA starts (``ctasim
compare`` reports them per registration).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan64_h100_datasheet as p64  # noqa: E402
import plan74_h100_blocks as p74  # noqa: E402
import registered_plan  # noqa: E402

EXPERIMENTS = {"reg59-adopted-h8960": "reg77-h100-h8960", "reg49-chain-order-h9216": "reg77-h100-h9216"}
"""Experiment -> its ``ctasim predict`` registration under ``h100-x1-datasheet`` (bench/predictions/)."""
KEPT = ("sequential", "intragpu", "intragpu-g4")
LOSSY = ("intragpu-g2", "intragpu-row")
PAIRS, GROUPS = "intragpu-g2", "intragpu"
SOURCES = ("model", "naive", "h200-measured")
PREDICTIONS = p64.PREDICTIONS
REGISTERED = ROOT / "bench/predictions/reg77-h100-pairs-edge"
JudgeError = registered_plan.JudgeError
MAPE, WORST, LOSSY_MAPE = 3.0, 6.0, 10.0
CLIFF = 1.3
"""Claim (a): the pairs' makespan over groups of 8's at every M >= :data:`CLIFF_M`, at least this."""
CLIFF_M = 8192
TIE = p64.TIE
WHY = "plan 77's call times both chains on one H100"
CLAIMS = {
    "a": f"the H100's pairs take at least {CLIFF:g} times groups of 8's makespan at every M >= {CLIFF_M} of both "
         "chains (4 cases): the pairs lose their reuse past a size, not at H = 8704 only",
    "b": f"model (h100-x1-datasheet): makespan MAPE <= {MAPE:g}% and worst |error| <= {WORST:g}% over sequential and "
         "groups of 8 and 4 (18 cases)",
    "c": "model: MAPE at most half the naive FLOPs line's there",
    "d": f"model: the fastest strategy right at every chain (H, M) (6; where its two fastest are within {TIE:g}%, "
         "either)",
    "e": f"model: MAPE <= {LOSSY_MAPE:g}% over the pairs and row order (12 cases)",
}


def register(predictions: Path = PREDICTIONS, runs: Path = p64.H200_RUNS) -> pd.DataFrame:
    """Every source's makespan (ms) per experiment, case and strategy (:data:`SOURCES`)."""
    parts = [p64._rows(reg, {"model": "model", "naive": "naive"}, predictions) for reg in EXPERIMENTS.values()]
    pred = pd.concat(parts, ignore_index=True).rename(columns={"makespan_ms": "predicted_ms"})
    meas = p64.h200_measured(runs, tuple(EXPERIMENTS)).assign(source="h200-measured")
    out = pd.concat([pred, meas], ignore_index=True)
    return out[["experiment", "case", "strategy", "source", "predicted_ms", "n_runs"]]


def measured(run_dir: Path) -> pd.DataFrame:
    """Every experiment's timed medians (experiment, case, strategy, measured_ms), from an H100's call."""
    return p64.h100_timed(run_dir, EXPERIMENTS, WHY, "plan 77")


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per experiment, case, strategy and source: measured and predicted makespans and the error (%).
    :class:`JudgeError` where the registration lacks a column or a source's rows, or a registered case has no timed
    run."""
    p74.check_registration(pred, SOURCES)
    return p64.timed_cases(pred, meas)


def pairs_over_groups(c: pd.DataFrame) -> pd.DataFrame:
    """Per experiment and case: the measured pairs' makespan over groups of 8's (one row per case, M as ``m``)."""
    m = c[c["source"] == "model"].pivot_table(index=["experiment", "case"], columns="strategy", values="measured_ms")
    r = (m[PAIRS] / m[GROUPS]).rename("ratio").reset_index()
    r["m"] = r["case"].str.extract(r"(\d+)", expand=False).astype(int)
    return r


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    by, _, complete, _ = p64.by_source(c, SOURCES)
    kept = {s: d[d["strategy"].isin(KEPT)] for s, d in by.items()}
    lossy = {s: d[d["strategy"].isin(LOSSY)] for s, d in by.items()}
    worst = float(kept["model"]["error_pct"].abs().max()) if len(kept["model"]) else float("nan")
    r = pairs_over_groups(c)
    big = r[r["m"] >= CLIFF_M]
    fastest = p64.fastest_right(by["model"])
    rows = [
        ("a", f"{big['ratio'].min():.3f}-{big['ratio'].max():.3f} over {len(big)} cases (all M: "
              f"{r['ratio'].min():.3f}-{r['ratio'].max():.3f})", len(big) == 4 and bool((big["ratio"] >= CLIFF).all())),
        ("b", f"MAPE {p64.mape(kept['model']):.2f}%, worst {worst:.2f}% over {len(kept['model'])} cases",
         complete and p64.mape(kept["model"]) <= MAPE and worst <= WORST),
        ("c", f"{p64.mape(kept['model']):.2f} against the naive line's {p64.mape(kept['naive']):.2f}%",
         complete and p64.mape(kept["model"]) <= p64.mape(kept["naive"]) / 2),
        ("d", f"{sum(fastest)} of {len(fastest)}", complete and len(fastest) == 6 and all(fastest)),
        ("e", f"MAPE {p64.mape(lossy['model']):.2f}% over {len(lossy['model'])} cases (the H200s' measured "
              f"{p64.mape(lossy['h200-measured']):.2f}%)", complete and p64.mape(lossy["model"]) <= LOSSY_MAPE),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan77_h100_pairs_edge", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered77", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "reg59-adopted-h8960" / "results.csv",
    tables=lambda c: {"pairs": pairs_over_groups(c)})


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
