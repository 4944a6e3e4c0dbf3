"""Registered plan 99: five small models' MLP blocks on an H100 under the adopted capped drift K law -- held out

    python bench/plan99_capped_blocks.py --register [--out bench/predictions/reg99-capped-blocks]
    python bench/plan99_capped_blocks.py --judge RUN_DIR [--registered bench/predictions/reg99-capped-blocks]
                                         [--out bench/results/validation-registered99]

Registered plan 98 moved ``h100-x1-datasheet`` to the capped drift K law (``drift_k_law = "capped"``) on twelve
short-K GEMMs alone; plan 96's blocks, the ones the law was meant to mend (the model +1.1 to +3.7% slow on all six
SwiGLU cases), were measured before it. Plan 99 asks the adopted profile, before any GPU ran them, for the blocks of
five models no call has run (:data:`EXPERIMENTS`; specs/models/): Qwen2.5-3B (SwiGLU unfused, RMSNorm; up K = 2048,
gate-and-up N = 86 tiles a row, down K = 11008), StableLM-2-1.6B (SwiGLU unfused, LayerNorm; K = 2048, 44 tiles, down
K = 5632), Phi-2 (GeLU fused, LayerNorm; K = 2560, 40 tiles), Pythia-1.4B (GeLU fused) and OPT-1.3B (ReLU fused),
the last two with the same GEMM shapes (K = 2048, 32 tiles a row; down K = 8192), each block's down GEMM 8-10 tiles a
row; at M = 16384 and 65536 (1.4-13.3 ms by the model), with the reference GEMM beside them (a control for the
machine's speed). Sources (:data:`SOURCES`): ``model`` (``h100-x1-datasheet`` as adopted), ``absolute`` (the same
profile on the absolute K law, as it priced plan 96's blocks: ``ctasim.profiles.before_h100_capped``), ``naive`` (the
FLOPs line fitted on H200 GEMMs), ``waves`` (whole waves of the profile's tile time, no event model), ``flat`` (the
profile without its memory hierarchy); every source but ``absolute`` is ``ctasim predict``'s rows of the experiment's
registration, ``absolute`` is :func:`ctasim.predict.predict`'s model rows under the pinned profile.

``--register`` writes ``predicted.csv`` (per experiment, case, strategy and source the makespan, ms). ``--judge
RUN_DIR`` reads ``RUN_DIR/env.txt`` (the call's GPU: an H100) and ``RUN_DIR/EXP/results.csv`` of every experiment,
and writes ``cases.csv`` (per case, strategy and source: measured, predicted, error) and ``claims.csv``
(:data:`CLAIMS`); ``scaled``'s rows are the model's times the call's reference ratio (plan 96's rule). A missing
registration, run or case, or a call on another GPU, is refused in one line, exit 2, nothing written.

No adoption rule: the capped law stays adopted whatever the call says, and the claims say what it is worth on blocks
it never saw. Left out: the sustained regime (the call runs burst, each timed run rested), attention, the biases of
Phi-2's, Pythia-1.4B's and OPT-1.3B's linear layers, CTA-pipelining.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import dataclasses  # noqa: E402
import json  # noqa: E402

import pandas as pd  # noqa: E402

import plan64_h100_datasheet as p64  # noqa: E402
import plan96_small_blocks as p96  # noqa: E402
import registered_plan  # noqa: E402
from ctasim.harness import load_harness  # noqa: E402
from ctasim.predict import REFERENCE_EXPERIMENT, predict  # noqa: E402
from ctasim.profiles import before_h100_capped, before_h100_passes  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402
from ctasim.cases import load_experiment  # noqa: E402

MODELS = ("qwen2.5-3b", "stablelm-2-1.6b", "phi-2", "pythia-1.4b", "opt-1.3b")
BLOCKS = tuple(f"reg99-{m}-1gpu" for m in MODELS)
EXPERIMENTS = {**{b: b for b in BLOCKS}, REFERENCE_EXPERIMENT: "reg99-h100-reference"}
"""Experiment -> its ``ctasim predict`` registration under ``h100-x1-datasheet`` (bench/predictions/)."""
PREDICTED = ("model", "naive", "waves", "flat")
"""The sources read from each experiment's ``ctasim predict`` registration."""
ABSOLUTE = "absolute"
SOURCES = (*PREDICTED, ABSOLUTE)
PREDICTIONS = p64.PREDICTIONS
REGISTERED = ROOT / "bench/predictions/reg99-capped-blocks"
JudgeError = registered_plan.JudgeError
MAPE, WORST = p96.MAPE, p96.WORST
WHY = "plan 99's call times every experiment on one H100"
CLAIMS = {
    "a": f"model (h100-x1-datasheet, capped K law): makespan MAPE <= {MAPE:g}% and worst |error| <= {WORST:g}% over "
         "the five blocks' ten cases",
    "b": "model: makespan MAPE over the blocks at most half the naive FLOPs line's",
    "c": "model: makespan MAPE over the blocks below the waves predictor's (the event model adds something)",
    "d": "model: makespan MAPE over the blocks below the absolute K law's (the adoption holds on blocks)",
    "e": f"scaled (the model times the call's reference ratio): MAPE <= {MAPE:g}% and worst <= {WORST:g}% over the "
         "blocks",
}


def registered_rows(experiment: str, registration: Path, pin=None) -> pd.Series:
    """The model's makespans (ms, by case) of ``experiment`` under the profile, harness and seed its ``ctasim predict``
    registration ``registration`` was priced with, the profile passed through ``pin`` (a Hardware -> Hardware) where
    given; the profile as it is now otherwise."""
    record = json.loads((registration / "registration.json").read_text())
    hw = before_h100_passes(load_hardware(record["hardware"]))  # registered before plan 103's adoption
    exp = dataclasses.replace(load_experiment(experiment), hardware=pin(hw) if pin else hw)
    p = predict(exp, load_harness(record["harness"]["name"]), None, seed=record["seed"])
    p = p[(p["source"] == "model") & (p["status"] == "ok")]
    return p.set_index(["experiment", "case", "strategy"])["makespan_ms"]


def absolute_rows(experiment: str, registration: Path) -> pd.DataFrame:
    """The model's rows of ``experiment`` (source ``absolute``) under the profile and harness its ``ctasim predict``
    registration ``registration`` was priced with, the profile on the absolute drift K law."""
    rows = registered_rows(experiment, registration, before_h100_capped).reset_index().assign(source=ABSOLUTE)
    return rows[["experiment", "case", "strategy", "source", "makespan_ms"]]


def register(predictions: Path = PREDICTIONS) -> pd.DataFrame:
    """Every source's makespan (ms) per experiment, case and strategy (:data:`SOURCES`)."""
    parts = []
    for exp, reg in EXPERIMENTS.items():
        parts.append(p64._rows(reg, {s: s for s in PREDICTED}, predictions))
        parts.append(absolute_rows(exp, predictions / reg))
    out = pd.concat(parts, ignore_index=True).rename(columns={"makespan_ms": "predicted_ms"})
    return out[["experiment", "case", "strategy", "source", "predicted_ms"]]


def measured(run_dir: Path) -> pd.DataFrame:
    """Every experiment's timed medians (experiment, case, strategy, measured_ms), from an H100's call."""
    return p64.h100_timed(run_dir, EXPERIMENTS, WHY, "plan 99")


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per experiment, case, strategy and source (with ``scaled``): measured and predicted makespans and the error
    (%), as plan 96 judges (:func:`plan96_small_blocks.cases`)."""
    return p96.cases(pred, meas, SOURCES)


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    r, by, mape, complete = p96.block_rows(c, BLOCKS, SOURCES)
    r[ABSOLUTE] = (f"{mape['model']:.2f} against the absolute law's {mape[ABSOLUTE]:.2f}% (worst "
                   f"{p64.signed_worst(by[ABSOLUTE]):+.2f}%)", complete and mape["model"] < mape[ABSOLUTE])
    rows = [(claim, *r[key]) for claim, key in zip("abcde", ("model", "naive", "waves", ABSOLUTE, "scaled"))]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan99_capped_blocks", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered99", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / REFERENCE_EXPERIMENT / "results.csv")


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
