"""Registered plan 96: small models' MLP blocks on an H100 -- short K and narrow N, a domain no registered block ran

    python bench/plan96_small_blocks.py --register [--out bench/predictions/reg96-small-blocks]
    python bench/plan96_small_blocks.py --judge RUN_DIR [--registered bench/predictions/reg96-small-blocks]
                                        [--out bench/results/validation-registered96]

Every registered model block so far had a hidden size of 3584 or more, so its up (or gate-and-up) GEMM read K >= 3584
and its down GEMM wrote 14 or more tiles a row; registered plan 95 then found a first wave of K = 1280-1536 19-22%
over the model's mainloop even where nothing else binds. Small models put whole GEMMs there: plan 96 asks, before any
GPU ran them, for four blocks of models of 0.4-3B parameters (:data:`EXPERIMENTS`; specs/models/): Llama-3.2-1B and
-3B and Qwen2.5-1.5B (SwiGLU unfused, RMSNorm; up K = 2048, 3072, 1536, down N = 8, 12, 6 tiles a row) and
Pythia-410M (GeLU fused, LayerNorm; up K = 1024, down N = 4 tiles a row), at M = 16384 and 65536 (0.5-15 ms), with the
reference GEMM beside them (16384 x 8192 x 8192, a control for the machine's speed). Sources (:data:`SOURCES`):
``model`` (``h100-x1-datasheet``, the H100 profile ``ctasim advise`` uses), ``naive`` (the FLOPs line fitted on H200
GEMMs), ``waves`` (whole waves of the profile's tile time, no event model) and ``flat`` (the profile without its
memory hierarchy), each ``ctasim predict``'s rows of the experiment's registration.

``--register`` writes ``predicted.csv`` (per experiment, case, strategy and source the makespan, ms). ``--judge
RUN_DIR`` reads ``RUN_DIR/env.txt`` (the call's GPU: an H100) and ``RUN_DIR/EXP/results.csv`` of every experiment,
and writes ``cases.csv`` (per case, strategy and source: measured, predicted, error) and ``claims.csv``
(:data:`CLAIMS`); ``scaled``'s rows are the model's times the call's reference ratio (measured over predicted of the
reference GEMM at M = 16384: registered plan 63's rule, a machine's speed taken out). A missing registration, run or
case, or a call on another GPU, is refused in one line, exit 2, nothing written.

No adoption rule: the claims say what the profile a user without an H100 calibration has is worth on a small model's
block. Left out: the sustained regime (the call runs burst, each timed run rested), attention, CTA-pipelining.
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
from ctasim.predict import REFERENCE_EXPERIMENT  # noqa: E402

BLOCKS = ("reg96-llama3.2-1b-1gpu", "reg96-llama3.2-3b-1gpu", "reg96-qwen2.5-1.5b-1gpu", "reg96-pythia-410m-1gpu")
EXPERIMENTS = {**{b: b for b in BLOCKS}, REFERENCE_EXPERIMENT: "reg96-h100-reference"}
"""Experiment -> its ``ctasim predict`` registration under ``h100-x1-datasheet`` (bench/predictions/)."""
SOURCES = ("model", "naive", "waves", "flat")
REFERENCE_CASE = "m=16384"
PREDICTIONS = p64.PREDICTIONS
REGISTERED = ROOT / "bench/predictions/reg96-small-blocks"
JudgeError = registered_plan.JudgeError
MAPE, WORST = 3.0, 6.0
WHY = "plan 96's call times every experiment on one H100"
CLAIMS = {
    "a": f"model (h100-x1-datasheet): makespan MAPE <= {MAPE:g}% and worst |error| <= {WORST:g}% over the four blocks' "
         "eight cases",
    "b": "model: makespan MAPE over the blocks at most half the naive FLOPs line's",
    "c": "model: makespan MAPE over the blocks below the waves predictor's (the event model adds something)",
    "d": f"scaled (the model times the call's reference ratio): MAPE <= {MAPE:g}% and worst <= {WORST:g}% over the "
         "blocks",
}


def register(predictions: Path = PREDICTIONS) -> pd.DataFrame:
    """Every source's makespan (ms) per experiment, case and strategy (:data:`SOURCES`)."""
    parts = [p64._rows(reg, {s: s for s in SOURCES}, predictions) for reg in EXPERIMENTS.values()]
    out = pd.concat(parts, ignore_index=True).rename(columns={"makespan_ms": "predicted_ms"})
    return out[["experiment", "case", "strategy", "source", "predicted_ms"]]


def measured(run_dir: Path) -> pd.DataFrame:
    """Every experiment's timed medians (experiment, case, strategy, measured_ms), from an H100's call."""
    return p64.h100_timed(run_dir, EXPERIMENTS, WHY, "plan 96")


def cases(pred: pd.DataFrame, meas: pd.DataFrame, sources=SOURCES) -> pd.DataFrame:
    """Per experiment, case, strategy and source of ``sources`` (with ``scaled``): measured and predicted makespans and
    the error (%). :class:`JudgeError` where the registration lacks a column or a source's rows, or a registered case
    has no timed run. Plan 99 judges this way with its own sources."""
    need = {"experiment", "case", "strategy", "source", "predicted_ms"}
    if not need <= set(pred.columns):
        raise JudgeError(f"the registration's predicted.csv lacks {', '.join(sorted(need - set(pred.columns)))}")
    counts = pred.groupby("source").size().reindex(list(sources), fill_value=0)
    if counts.nunique() != 1 or counts.iloc[0] == 0:
        raise JudgeError(f"the registration's predicted.csv prices {dict(counts)} rows by source: every source "
                         "prices every case")
    c = p64.timed_cases(pred.assign(n_runs=1), meas).drop(columns="n_runs")
    ref = c[(c["experiment"] == REFERENCE_EXPERIMENT) & (c["case"] == REFERENCE_CASE) & (c["source"] == "model")]
    if len(ref) != 1:
        raise JudgeError(f"the registration has no single model row of {REFERENCE_EXPERIMENT} {REFERENCE_CASE}")
    ratio = float(ref["measured_ms"].iloc[0] / ref["predicted_ms"].iloc[0])
    scaled = c[c["source"] == "model"].assign(source="scaled")
    scaled["predicted_ms"] = scaled["predicted_ms"] * ratio
    scaled["error_pct"] = (scaled["predicted_ms"] / scaled["measured_ms"] - 1) * 100
    out = pd.concat([c, scaled], ignore_index=True)
    out.attrs["ratio"] = ratio
    return out


def block_rows(c: pd.DataFrame, blocks, sources) -> tuple[dict, dict, dict, bool]:
    """The claims every small-blocks plan makes (plans 96 and 99) over ``blocks``' cases of ``c`` (:func:`cases`'
    rows, ``sources`` and ``scaled``): per claim -- ``model`` within MAPE and WORST, half the naive line's, below the
    waves predictor's, ``scaled`` within MAPE and WORST -- its (value, met); and the rows, MAPE by source and whether
    every source priced every case, for a plan's further claims."""
    by, mape, complete, worst = p64.by_source(c[c["experiment"].isin(blocks)], (*sources, "scaled"))
    scaled_worst = float(by["scaled"]["error_pct"].abs().max())
    ratio = c.attrs.get("ratio", float("nan"))
    rows = {
        "model": (f"MAPE {mape['model']:.2f}%, worst {p64.signed_worst(by['model']):+.2f}% over {len(by['model'])} "
                  "cases", complete and mape["model"] <= MAPE and worst <= WORST),
        "naive": (f"{mape['model']:.2f} against the naive line's {mape['naive']:.2f}%",
                  complete and mape["model"] <= mape["naive"] / 2),
        "waves": (f"{mape['model']:.2f} against the waves predictor's {mape['waves']:.2f}% (flat {mape['flat']:.2f}%)",
                  complete and mape["model"] < mape["waves"]),
        "scaled": (f"MAPE {mape['scaled']:.2f}%, worst {p64.signed_worst(by['scaled']):+.2f}% (reference ratio "
                   f"{ratio:.4f})", complete and mape["scaled"] <= MAPE and scaled_worst <= WORST),
    }
    return rows, by, mape, complete


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    r, _, _, _ = block_rows(c, BLOCKS, SOURCES)
    rows = [(claim, *r[key]) for claim, key in zip("abcd", ("model", "naive", "waves", "scaled"))]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan96_small_blocks", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered96", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / REFERENCE_EXPERIMENT / "results.csv")


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
