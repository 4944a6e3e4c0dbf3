"""Registered plan 74: the H100 datasheet profile on real models' MLP blocks and a GeLU chain (no GPU)

    python bench/plan74_h100_blocks.py --register [--out bench/predictions/reg74-h100-blocks]
    python bench/plan74_h100_blocks.py --judge RUN_DIR [--registered bench/predictions/reg74-h100-blocks]
                                       [--out bench/results/validation-registered74]

Plans 64-73 priced an H100 on GEMMs and on the chain kernel's square layers; none timed a model's MLP block on one,
so the parts of a block that are not a GEMM -- a GeLU or ReLU fused into the GEMM's epilogue, SwiGLU as an
elementwise kernel of its own, the residual, LayerNorm or RMSNorm as a row-wise kernel -- have never been priced on an
H100, where ``h100-x1-datasheet`` charges their HBM traffic at the datasheet's 3.35 TB/s (the H200's measured rates
times 3.35 / 4.8). And registered plan 73's adoption (the CTAs' drift the same time a round at every K,
``drift_k_ref`` = 8192) was judged on plain GEMMs alone; a block's down GEMM has the long K (17920-28672 here) where
the two drift laws part.

Plan 74 asks, before any H100 ran them, for experiments the H200s ran (:data:`EXPERIMENTS`): four models' blocks
(Phi-3-medium and Llama-3.1-70B, SwiGLU unfused with RMSNorm; GPT-NeoX-20B, fused GeLU with LayerNorm; OPT-30B,
fused ReLU with LayerNorm; 10 cases, up to 75 ms), the chain kernel against sequential on square GeLU chains of 4 and
8 layers (plan 18's experiment: intra-GPU CTA-pipelining with an activation), and the reference GEMM (a control: six
H100s have timed it). Sources (:data:`SOURCES`): ``model`` (``h100-x1-datasheet``, the adopted absolute drift law),
``tile`` (its twin ``h100-x1-datasheet-tile``, the profile before plan 73's adoption), ``naive`` (the FLOPs line
fitted on H200 GEMMs) and ``h200-measured`` (the median over every committed H200 call of the case,
``plan64_h100_datasheet.h200_measured``: an H100 taken as an H200).

``--register`` writes ``predicted.csv`` (per experiment, case, strategy and source the makespan, ms). ``--judge
RUN_DIR`` reads ``RUN_DIR/env.txt`` (the call's GPU: an H100), ``RUN_DIR/EXP/results.csv`` of every experiment and
the chain experiment's trace bundle, and writes ``cases.csv`` (per case, strategy and source: measured, predicted,
error), ``starts.csv`` (per traced chain-kernel run, the per-CTA start error against the model's schedules) and
``claims.csv`` (:data:`CLAIMS`). A missing registration, run or case, or a call on another GPU, is refused in one line,
exit 2, nothing written.

No adoption rule: the claims say what the profile a user without an H100 calibration has is worth on a block, and
whether plan 73's adoption holds there. Left out: the sustained regime (the call runs burst, each timed run rested),
an H100's own calibration (plan 69), CTA-pipelining across GPUs, and H100s of other forms.
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

EXPERIMENTS = {
    "reg49-reference": ("reg74-h100-reference", "reg74-h100-reference-tile"),
    "reg21-phi3-medium-1gpu": ("reg74-h100-phi3-medium", "reg74-h100-phi3-medium-tile"),
    "reg21-gpt-neox-20b-1gpu": ("reg74-h100-gpt-neox-20b", "reg74-h100-gpt-neox-20b-tile"),
    "reg22-opt-30b-1gpu": ("reg74-h100-opt-30b", "reg74-h100-opt-30b-tile"),
    "reg26-llama3.1-70b-1gpu": ("reg74-h100-llama3.1-70b", "reg74-h100-llama3.1-70b-tile"),
    "reg18-chain-gelu": ("reg74-h100-chain-gelu", "reg74-h100-chain-gelu-tile"),
}
"""Experiment -> its ``ctasim predict`` registrations under ``h100-x1-datasheet`` and under the twin
``h100-x1-datasheet-tile`` (bench/predictions/)."""
CHAIN = "reg18-chain-gelu"
"""The experiment that runs the chain kernel beside sequential (claims d and f)."""
BLOCKS = ("reg21-phi3-medium-1gpu", "reg21-gpt-neox-20b-1gpu", "reg22-opt-30b-1gpu", "reg26-llama3.1-70b-1gpu")
"""The MLP blocks, whose down GEMMs have the long K where the two drift laws part (claim e)."""
SOURCES = ("model", "tile", "naive", "h200-measured")
PREDICTIONS = p64.PREDICTIONS
REGISTERED = ROOT / "bench/predictions/reg74-h100-blocks"
JudgeError = registered_plan.JudgeError
MAPE, WORST, START = 3.0, 6.0, 0.02
TIE = p64.TIE
"""Claim (d)'s resolution (%), as plan 64's (``plan64_h100_datasheet.fastest_right``)."""
WHY = "plan 74's call times every experiment on one H100"
CLAIMS = {
    "a": f"model (h100-x1-datasheet): makespan MAPE <= {MAPE:g}% and worst |error| <= {WORST:g}% over every case and "
         "strategy of the six experiments (20)",
    "b": "model: makespan MAPE at most half the naive FLOPs line's over the same cases",
    "c": "model: makespan MAPE below the H200s' measured medians' (an H100's block is not priced as an H200's)",
    "d": f"model: the faster of the chain kernel and sequential right at every GeLU chain (M, layers) (4; where the "
         f"model's two are within {TIE:g}% of each other, either)",
    "e": "model: makespan MAPE below the tile-law twin's over the four blocks (10 cases; plan 73's adoption holds on a "
         "block's long-K down GEMM)",
    "f": f"model: the median over the traced chain-kernel runs of the median per-CTA start error <= {START:.0%} of the "
         "makespan",
}


def register(predictions: Path = PREDICTIONS, runs: Path = p64.H200_RUNS) -> pd.DataFrame:
    """Every source's makespan (ms) per experiment, case and strategy (:data:`SOURCES`)."""
    return p64.register_twin(EXPERIMENTS, "tile", predictions, runs)


def measured(run_dir: Path) -> pd.DataFrame:
    """One frame, told apart by ``kind``: 'timed', every experiment's timed medians (experiment, case, strategy,
    measured_ms), from an H100's call; 'start', each traced chain-kernel run's per-CTA start error against the model's
    schedules (``ctasim.accuracy.per_cta``)."""
    timed = p64.h100_timed(run_dir, EXPERIMENTS, WHY, "plan 74").assign(kind="timed")
    s = p64.traced_starts(PREDICTIONS / EXPERIMENTS[CHAIN][0], run_dir / CHAIN, WHY)
    return pd.concat([timed, s.assign(experiment=CHAIN, kind="start")], ignore_index=True)


def check_registration(pred: pd.DataFrame, sources) -> None:
    """:class:`JudgeError` where a registration's ``predicted.csv`` (``pred``) lacks a column the judges read, or one of
    ``sources`` has fewer rows than another (every source prices every case)."""
    need = {"experiment", "case", "strategy", "source", "predicted_ms", "n_runs"}
    if not need <= set(pred.columns):
        raise JudgeError(f"the registration's predicted.csv lacks {', '.join(sorted(need - set(pred.columns)))}")
    counts = pred.groupby("source").size().reindex(list(sources), fill_value=0)
    if counts.nunique() != 1 or counts.iloc[0] == 0:
        short = counts[counts < counts.max()].index[0] if counts.nunique() != 1 else sources[0]
        raise JudgeError(f"the registration's predicted.csv has {counts[short]} rows of source {short!r}, "
                         f"{counts.max()} of another: every source prices every case")


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per experiment, case, strategy and source: measured and predicted makespans and the error (%); the traced
    runs' start errors attached as ``attrs['starts']``. :class:`JudgeError` where the registration lacks a column or
    a source's rows (each of :data:`SOURCES` has one per case), or a registered case has no timed run."""
    check_registration(pred, SOURCES)
    c = p64.timed_cases(pred, meas[meas["kind"] == "timed"][["experiment", "case", "strategy", "measured_ms"]])
    c.attrs["starts"] = meas[meas["kind"] == "start"].dropna(axis=1, how="all").drop(columns="kind", errors="ignore")
    return c


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    by, mape, complete, worst = p64.by_source(c, SOURCES)
    n = len(by["model"])
    fastest = p64.fastest_right(by["model"][by["model"]["experiment"] == CHAIN])
    block = {s: d[d["experiment"].isin(BLOCKS)]["error_pct"].abs() for s, d in by.items()}
    starts = c.attrs["starts"]
    traced = starts.dropna(subset=["start_median_frac"]) if "start_median_frac" in starts.columns else starts
    start = float(traced["start_median_frac"].median()) if len(traced) else float("nan")
    rows = [
        ("a", f"MAPE {mape['model']:.2f}%, worst {worst:.2f}% over {n} cases",
         complete and mape["model"] <= MAPE and worst <= WORST),
        ("b", f"{mape['model']:.2f} against the naive line's {mape['naive']:.2f}%",
         complete and mape["model"] <= mape["naive"] / 2),
        ("c", f"{mape['model']:.2f} against the H200s' measured {mape['h200-measured']:.2f}%",
         complete and mape["model"] < mape["h200-measured"]),
        ("d", f"{sum(fastest)} of {len(fastest)}", len(fastest) > 0 and all(fastest)),
        ("e", f"{block['model'].mean():.2f} against the tile law's {block['tile'].mean():.2f}% over "
              f"{len(block['model'])} cases", complete and len(block["model"]) > 0
         and block["model"].mean() < block["tile"].mean()),
        ("f", f"{100 * start:.2f}% over {len(traced)} traced runs", len(traced) > 0 and start <= START),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan74_h100_blocks", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered74", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / REFERENCE_EXPERIMENT / "results.csv",
    tables=lambda c: {"starts": c.attrs["starts"]})


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
