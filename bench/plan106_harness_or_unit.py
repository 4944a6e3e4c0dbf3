"""Registered plan 106: the H100 blocks' long-K shortfall -- the harness, the unit or the shapes? (no GPU)

    python bench/plan106_harness_or_unit.py --register [--out bench/predictions/reg106-harness-or-unit]
    python bench/plan106_harness_or_unit.py --judge RUN [--out bench/results/validation-registered106]

Registered plan 103's call (GPU-7a1b197d, ``bench/hw/mlp_block_breakdown.py``: each GEMM of a block timed alone,
rested, reading the block's own activated input, its order tuned beside the block's other items) ran the plain
GEMMs of four blocks at M = 32768 0.03-3.6% slower than ``h100-x1-datasheet`` prices them (the long-K down GEMMs
2.7-3.6%), while the
calibration GEMM timed after them ran at the profile's speed. Registered plan 105's call (GPU-e8a691c8,
``bench/hw/gemm_shape_probe.py``: every CUTLASS order timed alone, rested, on random inputs) ran ten other long-K
GEMMs at or faster than priced (+0.1 to +4.7%). The two differ in harness, unit and shapes at once. Plan 106 times, in
one call on one unit, two of plan 103's blocks at M = 32768 by the block harness (:data:`BLOCKS`: Llama-3.1-8B and
GPT-NeoX-20B, the blocks whose down GEMMs ran furthest short) and then by the shape probe every plain GEMM of those
blocks (:data:`BLOCK_GEMMS`), plan 105's two down GEMMs at M = 32768 (:data:`AGAIN`, timed again on another unit)
and the calibration GEMM (:data:`REFERENCE`).

``--register`` writes ``predicted.csv`` (every order of the seven shapes under the profile as it is, its pick, the
naive FLOPs line); ``--judge RUN`` reads the call's ``breakdown-NAME.csv``, ``gemm_shapes.csv`` and ``env.txt`` (an
H100) and writes ``best.csv`` (per shape: the best measured order and time, the profile's and the naive line's error
there, %), ``harness.csv`` (per block GEMM: the block harness's median, the probe's best, plan 103's measured and
registered times) and ``claims.csv`` (:data:`CLAIMS`). Refusals (one line, exit 2, nothing written): a missing file,
item or shape, a call on another GPU, a registration the profile no longer gives. Nothing is adopted either way: the
claims say which of the three a later plan asks about. Left out: the fused epilogues and memory passes, the sustained
regime, M = 16384.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import block_gemm_orders as bgo  # noqa: E402
import plan101_block_ops as p101  # noqa: E402
import reuse_pricing  # noqa: E402
from ctasim.predict import Naive  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402
from plan72_h100_drift import best_orders, check_timed  # noqa: E402

REGISTRATION = ROOT / "bench/predictions/reg106-harness-or-unit"
RESULTS = ROOT / "bench/results/validation-registered106"
PLAN103 = ROOT / "bench/results/validation-registered103"
PLAN105_RESULTS = ROOT / "bench/results/validation-registered105"
BASE = "h100-x1-datasheet"
M = 32768
BLOCKS = {"llama3.1-8b": {"gemm1_plain": (28672, 4096), "gemm2_plain": (4096, 14336)},
          "gpt-neox-20b": {"gemm1_plain": (24576, 6144), "gemm2_plain": (6144, 24576)}}
"""Block -> its plain GEMM items -> (N, K) at hidden and intermediate of specs/models/NAME.toml (GEMM1 of a SwiGLU
block has N = 2 x intermediate)."""
BLOCK_GEMMS = tuple((M, n, k) for items in BLOCKS.values() for n, k in items.values())
AGAIN = ((M, 5120, 14336), (M, 7168, 20480))
"""Plan 105's two down GEMMs at M = 32768 (Mistral-Nemo-12B, Yi-34B), timed on GPU-e8a691c8."""
REFERENCE = (16384, 8192, 8192)
"""The calibration GEMM (``ctasim.predict.REFERENCE_CASE``)."""
SHAPES = (*BLOCK_GEMMS, *AGAIN, REFERENCE)
AGREE, MAPE = 1.0, 1.5
CLAIMS = {
    "a": f"harness: the block harness's four plain GEMMs within {AGREE:g}% (mean |ratio - 1|) of the probe's best "
         "order of the same shape",
    "b": f"shapes: the profile within {MAPE:g}% MAPE at the probe's best orders over the four block GEMMs",
    "c": f"unit: the profile within {MAPE:g}% of the calibration GEMM at its best order",
    "d": f"units: plan 105's two down GEMMs within {AGREE:g}% (mean |ratio - 1|) of plan 105's call",
    "e": "read, not judged: the naive line's MAPE over the seven shapes against the profile's",
}


def register(out: Path) -> pd.DataFrame:
    out.mkdir(parents=True, exist_ok=True)
    pred = bgo.predicted(list(SHAPES), {"model": load_hardware(BASE)}, Naive.fit(bgo.NAIVE_FROM))
    pred.round(4).to_csv(out / "predicted.csv", index=False)
    reuse_pricing.write(out, reuse_pricing.PROFILE)
    return pred


def probe_runs(run: Path) -> pd.DataFrame:
    """The shape probe's CUTLASS rows of the call (``gemm_shapes.csv``); ValueError where there is none."""
    if not (run / "gemm_shapes.csv").is_file():
        raise ValueError(f"no {run / 'gemm_shapes.csv'}")
    runs = pd.read_csv(run / "gemm_shapes.csv")
    return runs[runs.backend == "cutlass"]


def read_call(run: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The blocks' breakdown tables (:func:`plan101_block_ops.read_call`'s checks) and the probe's CUTLASS runs."""
    return p101.read_call(run, tuple(BLOCKS), "plan 106"), probe_runs(run)


def probe_orders(runs: pd.DataFrame, shapes, registration: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The probe's CUTLASS runs of ``shapes`` (ValueError where one was not timed) judged against ``registration``'s
    ``predicted.csv`` under ``BASE``: every order's error (``orders``), the best measured order per shape with the
    profile's pick (indexed by m, n, k) and the registration; refuses a profile that no longer gives the registered
    times (plans 106-108)."""
    check_timed(runs, shapes)
    runs = runs[[s in shapes for s in map(tuple, runs[["m", "n", "k"]].values.tolist())]]
    reg = pd.read_csv(registration / "predicted.csv")
    hws = {"model": load_hardware(BASE)}
    o = bgo.orders(runs, hws)
    bgo.judge(runs, o, reg, hws)
    return o, best_orders(o, reg, ("model",), picks=True).set_index(["m", "n", "k"]), reg


def judge(call: tuple[pd.DataFrame, pd.DataFrame], registration: Path = REGISTRATION) -> dict[str, pd.DataFrame]:
    blocks, runs = call
    o, b, _ = probe_orders(runs, SHAPES, registration)
    meas = blocks.set_index(["block", "m", "item"])["median_ms"]
    p103 = pd.read_csv(PLAN103 / "items.csv").set_index(["block", "m", "item"])
    rows = []
    for block, items in BLOCKS.items():
        for item, (n, k) in items.items():
            if (block, M, item) not in meas.index:
                raise ValueError(f"the call timed no {item} of {block} at M = {M}")
            h, p = float(meas[(block, M, item)]), float(b.loc[(M, n, k), "best_ms"])
            q = p103.loc[(block, M, item)]
            rows.append(dict(block=block, item=item, m=M, n=n, k=k, harness_ms=h, probe_best_ms=p,
                             harness_over_probe_pct=(h / p - 1) * 100, plan103_measured_ms=float(q.measured_ms),
                             plan103_model_ms=float(q.model_ms),
                             harness_over_plan103_pct=(h / float(q.measured_ms) - 1) * 100))
    harness = pd.DataFrame(rows)
    old = pd.read_csv(PLAN105_RESULTS / "best.csv").set_index(["m", "n", "k"])
    again = [(float(b.loc[s, "best_ms"]) / float(old.loc[s, "best_ms"]) - 1) * 100 for s in AGAIN]
    four = b.loc[list(BLOCK_GEMMS)]
    ref = b.loc[REFERENCE]
    agree = harness.harness_over_probe_pct.abs().mean()
    mape = lambda d, p: d[f"{p}_pct"].abs().mean()  # noqa: E731
    rows = [
        ("a", f"{agree:.2f}% (harness over probe {', '.join(f'{x:+.2f}' for x in harness.harness_over_probe_pct)})",
         agree <= AGREE),
        ("b", f"{mape(four, 'model'):.2f}% (naive {mape(four, 'naive'):.2f}%)", mape(four, "model") <= MAPE),
        ("c", f"{ref.model_pct:+.2f}% ({ref.best_order}, {ref.best_ms:.4f} ms)", abs(ref.model_pct) <= MAPE),
        ("d", f"{sum(map(abs, again)) / len(again):.2f}% ({', '.join(f'{x:+.2f}' for x in again)})",
         sum(map(abs, again)) / len(again) <= AGREE),
        ("e", f"{mape(b, 'naive'):.2f} against the profile's {mape(b, 'model'):.2f}%",
         mape(b, "model") < mape(b, "naive")),
    ]
    claims = pd.DataFrame([dict(claim=c, rule=CLAIMS[c], value=v, met=bool(m)) for c, v, m in rows])
    return {"orders": o, "best": b.reset_index(), "harness": harness, "claims": claims}


def main(argv=None) -> int:
    return p101.breakdown_main(argv, "plan106_harness_or_unit", __doc__.splitlines()[0], REGISTRATION, RESULTS,
                               register, judge, read_call, "best")


if __name__ == "__main__":
    raise SystemExit(main())
