"""Registered plan 65: the H100 where a layer's weights cross its L2, and the exposed HBM share as latency (no GPU)

    python bench/plan65_h100_edge.py --register [--out bench/predictions/reg65-h100-edge]
    python bench/plan65_h100_edge.py --judge RUN_DIR [--registered bench/predictions/reg65-h100-edge]
                                     [--out bench/results/validation-registered65]

Registered plan 64's three H100s left two questions. Its worst cases were row order where a layer's weights are
about 1.2 times the H100's 50 MiB L2 (the profile kept the reuse, the GPUs lost 15-19% of the makespan), and the
compute-bound GEMMs came out 1.2-6.0% slow: the exposed share of a wave's HBM time charged at the H100's slower HBM.
Post-hoc, the twin ``h100-x1-datasheet-latency`` (that share at the H200's rate, ``Hardware.l2_hbm_exposed_gbps``)
priced the GEMMs at a MAPE of 0.3-0.7% and the pairs 2.6-3.1 points further off (``bench/posthoc_h100_exposed.py``).

Plan 65 asks both profiles, before any H100 ran them, for two chains the H200s ran (:data:`EXPERIMENTS`): H = 5120
(a layer's weights 1.0 times the H100's L2; every order and sequential at M = 8192, 16384) and H = 6912 (1.8 times;
groups of 8, pairs and row order at five M), with the reference GEMM. Sources (:data:`SOURCES`): ``model``
(``h100-x1-datasheet``), ``latency`` (the twin), ``naive`` (the FLOPs line fitted on H200 GEMMs) and
``h200-measured`` (the median over every committed H200 call of the case, ``plan64_h100_datasheet.h200_measured``).

``--register`` writes ``predicted.csv`` (per experiment, case, strategy and source the makespan, ms). ``--judge
RUN_DIR`` reads ``RUN_DIR/env.txt`` (the call's GPU: an H100) and ``RUN_DIR/EXP/results.csv`` of every experiment,
and writes ``cases.csv`` (per case, strategy and source: measured, predicted, error) and ``claims.csv``
(:data:`CLAIMS`). A missing registration, run or case, or a call on another GPU, is refused in one line, exit 2,
nothing written.

Adoption rule (:data:`ADOPT`): where (e) and (f) both hold, ``h100-x1-datasheet`` takes the twin's
``l2_hbm_exposed_gbps``. Left out: the sustained regime, per-CTA starts (``ctasim compare`` reports them against the
model's schedules in ``bench/predictions/reg65-h100-*``), and H100s of other forms.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan64_h100_datasheet as p64  # noqa: E402
import registered_plan  # noqa: E402

EXPERIMENTS = {"reg49-reference": ("reg64-h100-reference", "reg65-h100-reference-latency"),
               "reg49-chain-order-h5120": ("reg65-h100-h5120", "reg65-h100-h5120-latency"),
               "reg56-chain-gradual-h6912": ("reg65-h100-h6912", "reg65-h100-h6912-latency")}
"""Experiment -> its ``ctasim predict`` registrations under ``h100-x1-datasheet`` and under the twin
``h100-x1-datasheet-latency`` (bench/predictions/; the reference's datasheet one is plan 64's)."""
SOURCES = ("model", "latency", "naive", "h200-measured")
PREDICTIONS = p64.PREDICTIONS
REGISTERED = ROOT / "bench/predictions/reg65-h100-edge"
JudgeError = registered_plan.JudgeError
MAPE, WORST = 3.0, 6.0
TIE = p64.TIE
"""Claim (d)'s resolution (%), as plan 64's (``plan64_h100_datasheet.fastest_right``)."""
WHY = "plan 65's call times every experiment on one H100"
CLAIMS = {
    "a": f"model (h100-x1-datasheet): makespan MAPE <= {MAPE:g}% and worst |error| <= {WORST:g}% over every case and "
         "strategy of the three experiments (27)",
    "b": "model: makespan MAPE at most half the naive FLOPs line's over the same cases",
    "c": "model: makespan MAPE below the H200s' measured medians'",
    "d": f"model: the fastest strategy right at every chain (H, M) (7; where the model's two fastest are within "
         f"{TIE:g}% of each other, either)",
    "e": "latency twin: makespan MAPE below the model's over every case",
    "f": "latency twin: makespan MAPE below the model's over the sequential GEMMs (the reference and H = 5120's "
         "sequential, 4 cases)",
}
ADOPT = ("e", "f")
"""The adoption rule: ``h100-x1-datasheet`` takes the twin's ``l2_hbm_exposed_gbps`` where both are met."""


def register(predictions: Path = PREDICTIONS, runs: Path = p64.H200_RUNS) -> pd.DataFrame:
    """Every source's makespan (ms) per experiment, case and strategy (:data:`SOURCES`)."""
    return p64.register_twin(EXPERIMENTS, "latency", predictions, runs)


def measured(run_dir: Path) -> pd.DataFrame:
    """Every experiment's timed medians (experiment, case, strategy, measured_ms), from an H100's call."""
    return p64.h100_timed(run_dir, EXPERIMENTS, WHY, "plan 65")


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per experiment, case, strategy and source: measured and predicted makespans and the error (%).
    :class:`JudgeError` where a registered case has no timed run."""
    return p64.timed_cases(pred, meas)


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    by, mape, complete, worst = p64.by_source(c, SOURCES)
    n = len(by["model"])
    seq = {s: d[d["strategy"] == "sequential"]["error_pct"].abs() for s, d in by.items()}
    fastest = p64.fastest_right(by["model"])
    rows = [
        ("a", f"MAPE {mape['model']:.2f}%, worst {worst:.2f}% over {n} cases",
         complete and mape["model"] <= MAPE and worst <= WORST),
        ("b", f"{mape['model']:.2f} against the naive line's {mape['naive']:.2f}%",
         complete and mape["model"] <= mape["naive"] / 2),
        ("c", f"{mape['model']:.2f} against the H200s' measured {mape['h200-measured']:.2f}%",
         complete and mape["model"] < mape["h200-measured"]),
        ("d", f"{sum(fastest)} of {len(fastest)}", len(fastest) > 0 and all(fastest)),
        ("e", f"{mape['latency']:.2f} against the model's {mape['model']:.2f}%",
         complete and mape["latency"] < mape["model"]),
        ("f", f"{seq['latency'].mean():.2f} against the model's {seq['model'].mean():.2f}% over "
              f"{len(seq['model'])} cases", complete and len(seq["model"]) > 0
         and seq["latency"].mean() < seq["model"].mean()),
    ]
    return registered_plan.with_adoption(registered_plan.claims_table(rows, CLAIMS), ADOPT, "h100-x1-datasheet takes "
                                         "the twin's l2_hbm_exposed_gbps where e and f are both met", provenance)


PLAN = registered_plan.Plan(
    name="plan65_h100_edge", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered65", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "reg49-reference" / "results.csv")


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
