"""Registered plan 107: does the block harness at ctahw run's tuning run each GEMM at its best order? (no GPU)

    python bench/plan107_tuned_harness.py --register [--out bench/predictions/reg107-tuned-harness]
    python bench/plan107_tuned_harness.py --judge RUN [--out bench/results/validation-registered107]

Registered plan 106's call and its repeat on one H100 (GPU-d182769f) ran the block harness's
(``bench/hw/mlp_block_breakdown.py``) four plain GEMMs of two blocks at M = 32768 1.39% and then 0.50% over the shape
probe's best order (``bench/hw/gemm_shape_probe.py``), each within 0.32% of one of the probe's twelve orders -- the
5th to 7th fastest in the first call: the harness tuned each shape with two timed runs per order, where ``ctahw run``
tunes with four (``ctahw.experiment.RunConfig.tune_rounds``). The harness now tunes with ``ctahw run``'s rounds and
records the order each item ran (its ``order`` column). Plan 107 times, in one call on one H100, the same two blocks
(:data:`plan106_harness_or_unit.BLOCKS`) by the harness twice (``pass1/``, ``pass2/``) around the probe of their four
plain GEMMs and the calibration GEMM (:data:`SHAPES`).

``--register`` writes ``predicted.csv`` (every order of the five shapes under ``h100-x1-datasheet`` as it is, its
pick, the naive FLOPs line); ``--judge RUN`` reads ``RUN/env.txt`` (an H100), ``RUN/gemm_shapes.csv`` and each pass's
``breakdown-NAME.csv`` and writes ``best.csv`` (per shape: the best measured order, the profile's and the naive line's
error there), ``passes.csv`` (per pass and block GEMM: the harness's median, the order it ran, the probe's time of that
order and of the best, the order's rank among the probe's twelve) and ``claims.csv`` (:data:`CLAIMS`). Refusals (one
line, exit 2, nothing written): a missing file, item, shape or order column, a call on another GPU, a registration the
profile no longer gives. Nothing in the model changes either way: the claims say whether a block harness's GEMM times
are its GEMMs' best orders, which is what the model prices. Left out: the fused epilogues and memory passes, the
sustained regime, other M.
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
import plan106_harness_or_unit as p106  # noqa: E402
import reuse_pricing  # noqa: E402
from ctasim.predict import Naive  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402

REGISTRATION = ROOT / "bench/predictions/reg107-tuned-harness"
RESULTS = ROOT / "bench/results/validation-registered107"
BASE = p106.BASE
M = p106.M
BLOCKS = p106.BLOCKS
SHAPES = (*p106.BLOCK_GEMMS, p106.REFERENCE)
PASSES = ("pass1", "pass2")
AGREE, NEAR, MAPE = 0.5, 1.0, 1.5
CLAIMS = {
    "a": f"tuned: in each pass the harness's four plain GEMMs within {AGREE:g}% (mean |ratio - 1|) of the probe's best "
         "order of the same shape",
    "b": f"picks: every order the harness ran (two passes x four GEMMs) within {NEAR:g}% of the best in the probe's "
         "own times",
    "c": f"passes: the four GEMMs' two passes within {AGREE:g}% of each other (mean |ratio - 1|)",
    "d": f"shapes: the profile within {MAPE:g}% MAPE at the probe's best orders over the four block GEMMs (plan 106's "
         "(b) again, on this unit)",
    "e": "read, not judged: the profile's mean error (its pick's price) on the four GEMMs against the harness's "
         "times and against the probe's best",
}


def register(out: Path) -> pd.DataFrame:
    out.mkdir(parents=True, exist_ok=True)
    pred = bgo.predicted(list(SHAPES), {"model": load_hardware(BASE)}, Naive.fit(bgo.NAIVE_FROM))
    pred.round(4).to_csv(out / "predicted.csv", index=False)
    reuse_pricing.write(out, reuse_pricing.PROFILE)
    return pred


def read_call(run: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both passes' breakdown tables (a ``pass`` column; the H100 check of :func:`plan101_block_ops.read_call` on
    ``RUN/env.txt``) and the probe's CUTLASS runs."""
    p101.h100_env(run, "plan 107")
    tables = []
    for name in PASSES:
        for block in BLOCKS:
            f = run / name / f"breakdown-{block}.csv"
            if not f.is_file():
                raise ValueError(f"no {f}")
            t = pd.read_csv(f)
            if "order" not in t.columns:
                raise ValueError(f"{f} has no order column (a harness from before 2026-12-08)")
            tables.append(t.assign(block=block, **{"pass": name}))
    return pd.concat(tables, ignore_index=True), p106.probe_runs(run)


def judge(call: tuple[pd.DataFrame, pd.DataFrame], registration: Path = REGISTRATION) -> dict[str, pd.DataFrame]:
    blocks, runs = call
    o, b, reg = p106.probe_orders(runs, SHAPES, registration)
    probe = o[~o.padded].set_index(["m", "n", "k", "order"]).sort_index()
    price = reg[reg.model_pick].set_index(["m", "n", "k"]).model_ms  # the profile's price of a shape: its pick's
    meas = blocks.set_index(["pass", "block", "m", "item"])
    rows = []
    for name in PASSES:
        for block, items in BLOCKS.items():
            for item, (n, k) in items.items():
                key = (name, block, M, item)
                if key not in meas.index:
                    raise ValueError(f"{name} timed no {item} of {block} at M = {M}")
                h, order = float(meas.loc[key, "median_ms"]), str(meas.loc[key, "order"])
                if (M, n, k, order) not in probe.index:
                    raise ValueError(f"{name}'s {item} of {block} ran order {order!r}, which the probe did not time")
                times = probe.loc[(M, n, k)]
                at = float(times.loc[order, "measured_ms"])
                best = float(b.loc[(M, n, k), "best_ms"])
                ms = float(price.loc[(M, n, k)])
                rank = int((times.measured_ms < at).sum()) + 1
                rows.append(dict(**{"pass": name}, block=block, item=item, m=M, n=n, k=k, harness_ms=h, order=order,
                                 probe_order_ms=at, probe_best_ms=best, order_rank=rank,
                                 harness_over_best_pct=(h / best - 1) * 100, order_over_best_pct=(at / best - 1) * 100,
                                 model_pct_as_run=(ms / h - 1) * 100, model_pct_at_best=(ms / best - 1) * 100))
    passes = pd.DataFrame(rows)
    four = b.loc[list(p106.BLOCK_GEMMS)]
    per_pass = passes.groupby("pass", sort=False).harness_over_best_pct.apply(lambda s: s.abs().mean())
    p1, p2 = (passes[passes["pass"] == p].set_index(["block", "item"]).harness_ms for p in PASSES)
    between = ((p2 / p1 - 1) * 100).abs().mean()
    worst_pick = passes.order_over_best_pct.max()
    mape = lambda d, p: d[f"{p}_pct"].abs().mean()  # noqa: E731
    rows = [
        ("a", " and ".join(f"{v:.2f}%" for v in per_pass) + " (harness over the best: "
         + ", ".join(f"{x:+.2f}" for x in passes.harness_over_best_pct) + ")", (per_pass <= AGREE).all()),
        ("b", f"worst {worst_pick:.2f}% (ranks {', '.join(map(str, passes.order_rank))} of 12)", worst_pick <= NEAR),
        ("c", f"{between:.2f}%", between <= AGREE),
        ("d", f"{mape(four, 'model'):.2f}% (naive {mape(four, 'naive'):.2f}%)", mape(four, "model") <= MAPE),
        ("e", f"{passes.model_pct_as_run.mean():+.2f}% as run against {passes.model_pct_at_best.mean():+.2f}% at the "
         "best", True),
    ]
    claims = pd.DataFrame([dict(claim=c, rule=CLAIMS[c], value=v, met=bool(m)) for c, v, m in rows])
    return {"orders": o, "best": b.reset_index(), "passes": passes, "claims": claims}


def main(argv=None) -> int:
    return p101.breakdown_main(argv, "plan107_tuned_harness", __doc__.splitlines()[0], REGISTRATION, RESULTS,
                               register, judge, read_call, "passes")


if __name__ == "__main__":
    raise SystemExit(main())
