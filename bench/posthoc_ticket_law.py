"""Post-hoc: the chain kernel's committed tile-order runs under each ticket law (no GPU).

    python bench/posthoc_ticket_law.py [--out bench/results/posthoc-ticket-law]

Every chain-kernel order experiment measured so far -- registered plans 9 (H = 8192, 12288) and 10 (H = 6144, 10240,
a 3-layer 8192), and plan 48's two machines re-running plan 10's H = 6144 and 10240 -- predicted again with this
checkout's model under h200-x1-calibrated with each ticket law (``Hardware.with_ticket_law``): ``"threshold"`` (a
later sharer hits while the bytes the L2 takes in between fit, all or nothing; the profile's until registered plan 49)
and ``"partition"`` (it misses by the share ``1 - exp(-2 B / L2)``, the L2's two partitions; the profile's since), and,
as a sensitivity and not a choice, with the partition law's
factor at 1, 1.5 and 3 in place of the two partitions (``ctasim.l2.PARTITIONS``). Judged against the committed
measurements with ``ctasim.accuracy.judge``.

Every figure here is post-hoc: the law was chosen after these runs and plan 9's traces were seen (the pairs' mainloop
grows from a window span of 0.1 on, where the threshold law keeps their sharing until ~0.5). Registered plan 49
tests it on shapes none of these ran.

Writes ``cases.csv`` (every judged case and predictor), ``summary.csv`` (MAPE, worst and bias per predictor and
strategy, and over all) and ``order-effect.csv`` (per predictor and order: the mean absolute error, in points, of
the makespan ratio to groups of 8 -- the part of the order effect no machine's speed moves); prints the summaries.
~1 minute.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from ctasim import l2, results  # noqa: E402
from ctasim.accuracy import judge  # noqa: E402
from ctasim.cases import load_experiment  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.harness import load_harness  # noqa: E402
from ctasim.predict import predict  # noqa: E402
from ctasim.profiles import before_h200_reuse  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402

HW = ROOT / "bench/results/hw"
RUNS = {  # experiment -> the committed runs that measured it
    "reg9-chain-order": ("2026-12-02-registered9-1gpu",),
    "reg9-chain-order-h12288": ("2026-12-02-registered9-1gpu",),
    "reg10-chain-order-deep": ("2026-12-02-registered10-1gpu",),
    "reg10-chain-order-h6144": ("2026-12-02-registered10-1gpu", "2026-12-04-registered48-1gpu",
                                "2026-12-04-registered48-1gpu-run2"),
    "reg10-chain-order-h10240": ("2026-12-02-registered10-1gpu", "2026-12-04-registered48-1gpu",
                                 "2026-12-04-registered48-1gpu-run2"),
}
PROFILE = "h200-x1-calibrated"
PREDICTORS = {  # predictor -> (ticket law, the partition law's factor; None: ctasim.l2.PARTITIONS)
    "threshold": ("threshold", None),
    "partition": ("partition", None),
    "partition x1": ("partition", 1.0),
    "partition x1.5": ("partition", 1.5),
    "partition x3": ("partition", 3.0),
}
BASE = "intragpu"  # groups of 8, the chain kernel's default order


def model_rows(name: str, hw) -> pd.DataFrame:
    """``name`` as ``ctasim predict`` would predict it with profile ``hw`` and its registration's harness (the model
    source only)."""
    reg = ROOT / "bench/predictions" / name
    harness = load_harness(json.loads((reg / "registration.json").read_text())["harness"]["name"])
    p = predict(dataclasses.replace(load_experiment(name), hardware=hw), harness, None)
    return p[p["source"] == "model"]


def predicted(name: str, law: str, factor: float | None) -> pd.DataFrame:
    """:func:`model_rows` of ``name`` with :data:`PROFILE` under ticket law ``law`` and the tickets mainloop factor 1
    (the profile's before registered plan 53), a panel's reuse across waves an LRU of the whole L2 (the profile's
    before registered plan 67's adoption on an H200, ``ctasim.profiles.before_h200_reuse``), with
    ``ctasim.l2.PARTITIONS`` at ``factor`` for the call where one is given."""
    saved = l2.PARTITIONS
    try:
        if factor is not None:
            l2.PARTITIONS = factor
        # a record made before plan 67's adoption on an H200, 2026-12-06: reuse across waves an LRU of the whole L2
        hw = before_h200_reuse(load_hardware(PROFILE))
        return model_rows(name, hw.with_ticket_law(law, mainloop_factor=1.0))
    finally:
        l2.PARTITIONS = saved


def judged(names, runs, preds_of) -> pd.DataFrame:
    """Every committed run of each experiment of ``names`` (``runs``: experiment -> its run folders under :data:`HW`)
    judged (``ctasim.accuracy.judge``) against ``preds_of(name)``, the predictions of every predictor, with its run."""
    parts = []
    for name in names:
        preds = preds_of(name)
        for run in runs[name]:
            parts.append(judge(preds, results.read(HW / run / name / "results.csv")).assign(run=run))
    return pd.concat(parts, ignore_index=True)


def cases(names=tuple(RUNS), predictors=tuple(PREDICTORS)) -> pd.DataFrame:
    """Every run of the experiments ``names`` judged under the ``predictors`` (keys of :data:`PREDICTORS`)."""
    return judged(names, RUNS, lambda name: pd.concat(
        [predicted(name, *PREDICTORS[label]).assign(source=label) for label in predictors], ignore_index=True))


def summary(c: pd.DataFrame) -> pd.DataFrame:
    rows = []
    groups = [*c.groupby(["source", "strategy"]), *(((k, "all"), g) for k, g in c.groupby("source"))]
    for (src, strat), g in groups:
        w = g.loc[g["error"].abs().idxmax()]
        rows.append({"predictor": src, "strategy": strat, "cases": len(g),
                     "mape_pct": round(100 * g["error"].abs().mean(), 2), "worst_pct": round(100 * w["error"], 2),
                     "bias_pct": round(100 * g["error"].mean(), 2)})
    return pd.DataFrame(rows)


def order_effect(c: pd.DataFrame) -> pd.DataFrame:
    """Per predictor and order: the mean absolute error, in points, of the ratio makespan / groups of 8."""
    key = ["run", "experiment", "case", "source"]
    t = c.pivot_table(index=key, columns="strategy", values=["measured_ms", "predicted_ms"])
    rows = []
    for order in sorted({s for s in c["strategy"] if s.startswith("intragpu") and s != BASE}):
        ok = t[("measured_ms", order)].notna()
        meas = (t[("measured_ms", order)] / t[("measured_ms", BASE)])[ok]
        pred = (t[("predicted_ms", order)] / t[("predicted_ms", BASE)])[ok]
        err = (100 * (pred - meas)).groupby(level="source")
        for src, e in err:
            rows.append({"predictor": src, "order": order, "cases": len(e), "mean_abs_points": round(e.abs().mean(), 2),
                         "mean_points": round(e.mean(), 2)})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_ticket_law.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-ticket-law")
    args = parse_outputs(ap, argv, folders=("--out",))
    c = cases()
    s, o = summary(c), order_effect(c)
    args.out.mkdir(parents=True, exist_ok=True)
    c.to_csv(args.out / "cases.csv", index=False, float_format="%.6g")
    s.to_csv(args.out / "summary.csv", index=False)
    o.to_csv(args.out / "order-effect.csv", index=False)
    pd.set_option("display.width", 200)
    print(s.pivot_table(index="strategy", columns="predictor", values="mape_pct").to_string())
    print()
    print(o.pivot_table(index="order", columns="predictor", values="mean_abs_points").to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
