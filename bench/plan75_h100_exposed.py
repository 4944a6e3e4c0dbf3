"""Registered plan 75: on an H100, is the exposed HBM share's time the H200's? Blocks and a chain's orders (no GPU)

    python bench/plan75_h100_exposed.py --register [--out bench/predictions/reg75-h100-exposed]
    python bench/plan75_h100_exposed.py --judge RUN_DIR [--registered bench/predictions/reg75-h100-exposed]
                                        [--out bench/results/validation-registered75]

Registered plan 74's two H100s ran four models' MLP blocks, GeLU chains and the reference GEMM about as fast as the
H200s, and ``h100-x1-datasheet`` priced all of them 1-7% slow. Post-hoc (``bench/posthoc_h100_blocks.py``) one change
priced them at 0.76 and 1.68%: the exposed share of a wave's HBM bytes (``l2_hbm_exposed``) charged at the H200's
measured rate instead of the H100's datasheet rate (``Hardware.l2_hbm_exposed_gbps``), as if that part were the loads'
latency, not bandwidth. On every earlier H100 call the same change is nearer on sequential GEMMs and the chain
kernel's groups of 8 and 4, and further on its pairs and row order (``orders.csv`` there: 6.64 against 3.73% and 11.39
against 9.76%), where the overcharged HBM hides the ticket law's underprice of the reuse those orders lose.

Plan 75 asks both, before any H100 ran them (:data:`EXPERIMENTS`): five models' blocks the H200s ran (Yi-34B and
Mixtral-8x22B's expert, SwiGLU with RMSNorm, up to 91 ms; Llama-2-13B, SwiGLU; OPT-13B, ReLU with LayerNorm;
Falcon-40B, GeLU with LayerNorm; 12 cases), the reference GEMM (2) and a 2-layer chain at H = 6656 with every order and
sequential at M = 4096, 8192, 16384 (15; a layer's weights 1.69 times the H100's L2). Sources (:data:`SOURCES`):
``model`` (``h100-x1-datasheet``), ``exposed`` (its twin ``h100-x1-datasheet-exposed``), ``naive`` (the FLOPs line
fitted on H200 GEMMs) and ``h200-measured`` (the H200s' medians, ``plan64_h100_datasheet.h200_measured``).

``--register`` writes ``predicted.csv``; ``--judge RUN_DIR`` reads ``RUN_DIR/env.txt`` (an H100) and
``RUN_DIR/EXP/results.csv`` of every experiment and writes ``cases.csv`` and ``claims.csv`` (:data:`CLAIMS`, and the
adoption rule's row). A missing registration, column, source, run or case, or a call on another GPU, is refused in one
line, exit 2, nothing written.

Adoption rule (:data:`ADOPT`): where (b), (e) and (f) all hold -- the twin nearer on the blocks, on the chain's groups
and sequential, and on its pairs and row order -- ``h100-x1-datasheet`` takes the twin's ``l2_hbm_exposed_gbps``.
Written before the run: (f) is expected to miss (the earlier calls' reading), and then nothing is adopted, however
near the twin is on the blocks: one profile prices every order. Left out: the sustained regime, per-CTA starts
(``ctasim compare`` reports them per registration), H100s of other forms.
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

EXPERIMENTS = {
    "reg49-reference": ("reg75-h100-reference", "reg75-h100-reference-exposed"),
    "reg28-yi-34b-1gpu": ("reg75-h100-yi-34b", "reg75-h100-yi-34b-exposed"),
    "reg26-mixtral-8x22b-expert-1gpu": ("reg75-h100-mixtral-8x22b-expert", "reg75-h100-mixtral-8x22b-expert-exposed"),
    "reg25-opt-13b-1gpu": ("reg75-h100-opt-13b", "reg75-h100-opt-13b-exposed"),
    "reg20-falcon-40b-1gpu": ("reg75-h100-falcon-40b", "reg75-h100-falcon-40b-exposed"),
    "reg20-llama2-13b-1gpu": ("reg75-h100-llama2-13b", "reg75-h100-llama2-13b-exposed"),
    "reg51-chain-order-h6656": ("reg75-h100-h6656", "reg75-h100-h6656-exposed"),
}
"""Experiment -> its ``ctasim predict`` registrations under ``h100-x1-datasheet`` and under the twin
``h100-x1-datasheet-exposed`` (bench/predictions/)."""
CHAIN = "reg51-chain-order-h6656"
"""The chain experiment (every order and sequential): claims (e)-(g)."""
GROUPS = ("sequential", "intragpu", "intragpu-g4")
"""The chain's strategies of claim (e): sequential, groups of 8 and of 4."""
LOSSY = ("intragpu-g2", "intragpu-row")
"""The chain's strategies of claim (f): pairs and row order, the orders that lose reuse on an H100."""
SOURCES = ("model", "exposed", "naive", "h200-measured")
PREDICTIONS = p64.PREDICTIONS
REGISTERED = ROOT / "bench/predictions/reg75-h100-exposed"
JudgeError = registered_plan.JudgeError
MAPE, WORST = 3.0, 6.0
TIE = p64.TIE
WHY = "plan 75's call times every experiment on one H100"
CLAIMS = {
    "a": f"exposed twin: makespan MAPE <= {MAPE:g}% and worst |error| <= {WORST:g}% over the blocks and the reference "
         "GEMM (14 cases)",
    "b": "exposed twin: MAPE below the model's (h100-x1-datasheet) over the blocks and the reference GEMM",
    "c": "exposed twin: MAPE at most half the naive FLOPs line's over the blocks and the reference GEMM",
    "d": "exposed twin: MAPE below the H200s' measured medians' over the blocks and the reference GEMM",
    "e": "exposed twin: MAPE below the model's over the chain's sequential, groups of 8 and groups of 4 (9 cases)",
    "f": "exposed twin: MAPE below the model's over the chain's pairs and row order (6 cases)",
    "g": f"exposed twin: the fastest strategy right at every chain M (3; where its two fastest are within {TIE:g}%, "
         "either)",
}
ADOPT = ("b", "e", "f")
"""The adoption rule: ``h100-x1-datasheet`` takes the twin's ``l2_hbm_exposed_gbps`` where these are all met."""


def register(predictions: Path = PREDICTIONS, runs: Path = p64.H200_RUNS) -> pd.DataFrame:
    """Every source's makespan (ms) per experiment, case and strategy (:data:`SOURCES`)."""
    return p64.register_twin(EXPERIMENTS, "exposed", predictions, runs)


def measured(run_dir: Path) -> pd.DataFrame:
    """Every experiment's timed medians (experiment, case, strategy, measured_ms), from an H100's call."""
    return p64.h100_timed(run_dir, EXPERIMENTS, WHY, "plan 75")


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per experiment, case, strategy and source: measured and predicted makespans and the error (%).
    :class:`JudgeError` where the registration lacks a column or a source's rows, or a registered case has no timed
    run."""
    p74.check_registration(pred, SOURCES)
    return p64.timed_cases(pred, meas)


def twin_rows(by: dict, complete: bool, blocks: dict, groups: dict, lossy: dict, chain: str, chain_ms: int) -> list:
    """Claims (a)-(g) of a plan that asks the twin ``exposed`` beside the model (plans 75 and 76), as
    ``registered_plan.claims_table`` rows: ``by`` and ``complete`` as ``plan64_h100_datasheet.by_source`` gives them,
    and per source the rows of (a)-(d) (``blocks``), of (e) (``groups``) and of (f) (``lossy``); (g) over the
    experiment ``chain``'s ``chain_ms`` cases."""
    mape = p64.mape
    m = {s: mape(d) for s, d in blocks.items()}
    worst = float(blocks["exposed"]["error_pct"].abs().max()) if len(blocks["exposed"]) else float("nan")
    fastest = p64.fastest_right(by["exposed"][by["exposed"]["experiment"] == chain])
    return [
        ("a", f"MAPE {m['exposed']:.2f}%, worst {worst:.2f}% over {len(blocks['exposed'])} cases",
         complete and m["exposed"] <= MAPE and worst <= WORST),
        ("b", f"{m['exposed']:.2f} against the model's {m['model']:.2f}%", complete and m["exposed"] < m["model"]),
        ("c", f"{m['exposed']:.2f} against the naive line's {m['naive']:.2f}%",
         complete and m["exposed"] <= m["naive"] / 2),
        ("d", f"{m['exposed']:.2f} against the H200s' measured {m['h200-measured']:.2f}%",
         complete and m["exposed"] < m["h200-measured"]),
        ("e", f"{mape(groups['exposed']):.2f} against the model's {mape(groups['model']):.2f}% over "
              f"{len(groups['model'])} cases",
         complete and len(groups["model"]) > 0 and mape(groups["exposed"]) < mape(groups["model"])),
        ("f", f"{mape(lossy['exposed']):.2f} against the model's {mape(lossy['model']):.2f}% over "
              f"{len(lossy['model'])} cases",
         complete and len(lossy["model"]) > 0 and mape(lossy["exposed"]) < mape(lossy["model"])),
        ("g", f"{sum(fastest)} of {len(fastest)}", complete and len(fastest) == chain_ms and all(fastest)),
    ]


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    by, _, complete, _ = p64.by_source(c, SOURCES)
    seq = {s: d[d["experiment"] != CHAIN] for s, d in by.items()}
    grp = {s: d[(d["experiment"] == CHAIN) & d["strategy"].isin(GROUPS)] for s, d in by.items()}
    lossy = {s: d[(d["experiment"] == CHAIN) & d["strategy"].isin(LOSSY)] for s, d in by.items()}
    rows = twin_rows(by, complete, seq, grp, lossy, CHAIN, 3)
    return registered_plan.with_adoption(registered_plan.claims_table(rows, CLAIMS), ADOPT, "h100-x1-datasheet takes "
                                         "the twin's l2_hbm_exposed_gbps where b, e and f are all met", provenance)


PLAN = registered_plan.Plan(
    name="plan75_h100_exposed", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered75", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "reg49-reference" / "results.csv")


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
