"""Post-hoc: the chain kernel's committed order runs under the ticket law read from the measured L2 survival curve.

    python bench/posthoc_l2_survival.py [--out bench/results/posthoc-l2-survival]

The L2 survival probe (``ctahw.l2probe``, bench/results/hw/2026-12-04-l2-survival-1gpu) measured what the ticket laws
assume: after one SM read a line and every SM streamed ``B`` more bytes, the share of the lines another SM still finds
in L2. On the H200 the curve is a sharp edge -- all kept up to 0.375 of ``l2_bytes``, 91% at 0.5, 48% at 0.625, 3%
at 0.75 -- not the partition law's smooth ``exp(-2 B / L2)``. This predicts every chain-kernel order experiment
measured so far (registered plans 9, 10, 48, 49, 50: the runs of ``posthoc_ticket_law.RUNS`` and
``ticket_law_record.MEASURED``) again with this checkout's h200-x1-calibrated under each ticket law
(``Hardware.with_ticket_law``): ``"threshold"``, ``"partition"`` (the profile's when this was written) and
``"survival"`` (the curve), and judges them against the committed measurements (``ctasim.accuracy.judge``). The
survival law is the curve alone, as it was adopted after plan 53 (``posthoc_order_mainloop.as_plan_53``: without the
two refinements registered plan 58's adoption added).

Every figure is post-hoc: the runs were seen before the probe was written. No parameter is fitted: the curve is the
probe's.

Writes ``cases.csv`` (every judged case and law), ``summary.csv`` (MAPE, worst and bias per law and strategy, and over
the chain kernel's orders), ``order-effect.csv`` (per law and order: error of the ratio to groups of 8, points) and
``chain-over-sequential.csv`` (per experiment, M and law: the error of groups of 8 less the error of sequential on the
same run, points -- what no machine's speed moves); prints the summaries. With ``--factor``, also ``factor.csv``: the
same runs and registered plan 51's chains (:data:`FACTOR_RUNS`) under :data:`FACTOR_PREDICTORS` -- each law with and
without plan 51's tickets mainloop factor (1.008, measured by its one-layer microbenchmark after every run here but
plan 51's chains was seen) -- per predictor the chain-kernel MAPE, the mean |error| of groups of 8 over sequential and
how often the faster of the two is right (what registered plan 52 then tested), and ``factor-cases.csv``, its cases.
~25 s, ~75 s with ``--factor``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import posthoc_order_mainloop as pom  # noqa: E402
import posthoc_ticket_law as ptl  # noqa: E402
import ticket_law_record as tlr  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402

LAWS = ("threshold", "partition", "survival")
RUNS = {**ptl.RUNS, **tlr.MEASURED}
"""Experiment -> the committed runs that measured it (plans 9, 10 and 48; 49 and 50)."""
PROFILE = "h200-x1-calibrated"
BASE = ptl.BASE


FACTOR = 1.008
"""Registered plan 51's tickets mainloop factor (h200-x1-calibrated-mechanism's)."""
FACTOR_PREDICTORS = {"partition": ("partition", 1.0), "threshold": ("threshold", 1.0), "survival": ("survival", 1.0),
                     "partition+f": ("partition", FACTOR), "threshold+f": ("threshold", FACTOR),
                     "survival+f": ("survival", FACTOR)}
"""Predictor -> (ticket law, tickets mainloop factor) for ``--factor``."""
FACTOR_RUNS = {**RUNS, "reg51-chain-order-h6656": ("2026-12-04-registered51-1gpu",),
               "reg51-chain-order-h13312": ("2026-12-04-registered51-1gpu",)}


def profile():
    """:data:`PROFILE` as registered plan 53 adopted it (``posthoc_order_mainloop.as_plan_53``), this record's."""
    return pom.as_plan_53(load_hardware(PROFILE))


def predicted(name: str, law: str, factor: float = 1.0, label: str | None = None) -> pd.DataFrame:
    """``name`` as ``ctasim predict`` predicts it with :func:`profile` under ticket law ``law`` and the tickets
    design's mainloop ``factor`` (model rows, source ``label`` or ``law``)."""
    hw = profile().with_ticket_law(law, mainloop_factor=factor)
    return ptl.model_rows(name, hw).assign(source=label or law)


def cases(names=tuple(RUNS), laws=LAWS, runs=RUNS, predictors=None) -> pd.DataFrame:
    """Every run of ``names`` judged under ``laws`` (or ``predictors``: label -> (law, factor))."""
    preds_of = predictors or {law: (law, 1.0) for law in laws}
    return ptl.judged(names, runs, lambda name: pd.concat(
        [predicted(name, law, f, label) for label, (law, f) in preds_of.items()], ignore_index=True))


def summary(c: pd.DataFrame) -> pd.DataFrame:
    s = ptl.summary(c)
    chain = c[c["strategy"].str.startswith(BASE)]
    rows = [{"predictor": src, "strategy": "chain kernel", "cases": len(g),
             "mape_pct": round(100 * g["error"].abs().mean(), 2),
             "worst_pct": round(100 * g.loc[g["error"].abs().idxmax(), "error"], 2),
             "bias_pct": round(100 * g["error"].mean(), 2)} for src, g in chain.groupby("source")]
    return pd.concat([s, pd.DataFrame(rows)], ignore_index=True)


def chain_over_sequential(c: pd.DataFrame) -> pd.DataFrame:
    """Per experiment, M and law: the mean over runs of (groups of 8's error - sequential's error), in points."""
    t = c.pivot_table(index=["experiment", "m", "run", "source"], columns="strategy", values="error")
    d = (100 * (t[BASE] - t["sequential"])).dropna().groupby(level=["experiment", "m", "source"]).mean()
    return d.round(2).rename("points").reset_index()


def factor_table(c: pd.DataFrame) -> pd.DataFrame:
    """Per predictor: chain-kernel MAPE, mean |error| of groups of 8 over sequential (points) and the faster of the two
    right, over every (run, experiment, M)."""
    t = c.pivot_table(index=["experiment", "m", "run", "source"], columns="strategy",
                      values=["measured_ms", "predicted_ms"])
    ratio_m = t[("measured_ms", BASE)] / t[("measured_ms", "sequential")]
    ratio_p = t[("predicted_ms", BASE)] / t[("predicted_ms", "sequential")]
    ok = ratio_m.notna() & ratio_p.notna()
    right = ((ratio_m < 1) == (ratio_p < 1))[ok].groupby(level="source")
    pts = (100 * (ratio_p - ratio_m)).abs()[ok].groupby(level="source").mean()
    chain = c[c["strategy"].str.startswith(BASE)]
    mape = (100 * chain["error"].abs()).groupby(chain["source"]).mean()
    return pd.DataFrame({"chain_kernel_mape_pct": mape.round(2), "chain_vs_sequential_points": pts.round(2),
                         "faster_right": right.sum().astype(int), "comparisons": right.size()}).reset_index().rename(
        columns={"source": "predictor"})


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_l2_survival.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-l2-survival")
    ap.add_argument("--factor", action="store_true", help="also factor.csv (plan 51's factor; ~50 s more)")
    args = parse_outputs(ap, argv, folders=("--out",))
    c = cases()
    s, o, cs = summary(c), ptl.order_effect(c), chain_over_sequential(c)
    args.out.mkdir(parents=True, exist_ok=True)
    c.to_csv(args.out / "cases.csv", index=False, float_format="%.6g")
    s.to_csv(args.out / "summary.csv", index=False)
    o.to_csv(args.out / "order-effect.csv", index=False)
    cs.to_csv(args.out / "chain-over-sequential.csv", index=False)
    pd.set_option("display.width", 200)
    print(s.pivot_table(index="strategy", columns="predictor", values="mape_pct").to_string())
    print()
    print(o.pivot_table(index="order", columns="predictor", values="mean_abs_points").to_string())
    print()
    print(cs.pivot_table(index="experiment", columns="source", values="points", aggfunc="mean").round(2).to_string())
    if args.factor:
        fc = cases(tuple(FACTOR_RUNS), runs=FACTOR_RUNS, predictors=FACTOR_PREDICTORS)
        ft = factor_table(fc)
        fc.to_csv(args.out / "factor-cases.csv", index=False, float_format="%.6g")
        ft.to_csv(args.out / "factor.csv", index=False)
        print()
        print(ft.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
