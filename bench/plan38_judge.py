"""Registered plans 38 and 39 (the paper's Fig. 4 and Fig. 7 on 4 or 8 H200s; the Fig. 4 ring's chain group) from
their ``ctasim compare`` reports.

    python bench/plan38_judge.py --fig4 REPORT4 --fig7 REPORT7 [--groups REPORT39] --out bench/results/validation-registered38

REPORT4 / REPORT7: the folders ``ctasim compare bench/predictions/reg38-fig4-x8 ...`` and ``... reg38-fig7-x8 ...``
wrote (their ``accuracy.csv``: every judged row, each predictor's prediction beside the measurement). A 4-GPU machine
measures the Fig. 4 cases L <= 4 and TP4 / TP2; every claim is judged on the rows measured, never on a row chosen
after the measurement. The claims, registered with the predictions (bench/predictions/reg38-fig4-x8/README.md):

* (a) the targets: MAPE <= 3% and worst |error| <= 6% over every judged row of both reports;
* (b) ring vs the best micro-batching (each side's best over the chunk counts both ran, per case): at every measured L
  where the registered model's margin is at least :data:`SIGN_MARGIN` (2%), each predictor's sign of the margin the
  measured one (a predictor that says "equal" agrees with none); and the measured
  margin within :data:`MARGIN_POINTS` (3) points of the model's at every measured L;
* (c) the growth per added layer (least-squares slope of the makespan over the measured L, three L or more) of the
  ring and of the best micro-batching each within :data:`SLOPE_REL` (25%) of the model's over the same L (|measured /
  predicted - 1|);
* (d) the paper's 31.8% is not there: measured ring / best micro-batching >= :data:`PAPER_FLOOR` (0.90) at every L;
* (e) Fig. 7: per M, the measured strategies (micro-batching at its best) in the model's order, and TP8 and TP4 each
  within 6% of the model;
* (f) the model's MAPE at most half the naive FLOPs line's over every judged row.

Plan 39 (``--groups``: the report of ``reg39-ring-groups-x8``, the ring with chain groups 1, 2, 4, 8; claims in
bench/predictions/reg39-ring-groups-x8/README.md), claims named ``g1``-``g5``:

* (g1) groups of 4 faster than groups of 8 at every measured L >= 3 (for each predictor: predicted and measured), the measured margin (1 - g4 / g8) within
  :data:`MARGIN_POINTS` of the model's at every measured L;
* (g2) row order (groups of 1) the slowest of the four at every measured L (predicted strictly and measured);
* (g3) the growth per added layer of groups of 4 and of 8 each within :data:`SLOPE_REL` of the model's;
* (g4) MAPE <= 3% and worst |error| <= 6% over its rows;
* (g5) with plan 38's micro-batching of the same call: groups of 4 faster than the best micro-batching at every
  measured L, the margin within :data:`MARGIN_POINTS` of the model's.

Each claim is also evaluated for the naive predictors (naive, waves) where it applies. Writes ``claims.csv`` (claim,
predictor, value, threshold, met) and ``fig4.csv`` (per L: the ring's and the best micro-batching's measured and
predicted makespans and margins) into ``--out``. A report that is missing, not registered (``registered`` false on a
row) or of another experiment is refused in one line (exit 2), before anything is written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import judge_reports as JR  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.spec import SpecError  # noqa: E402

FIG4, FIG7, GROUPS = "reg38-fig4-x8", "reg38-fig7-x8", "reg39-ring-groups-x8"
SIGN_MARGIN = 0.02
MARGIN_POINTS = 3.0
SLOPE_REL = 0.25
PAPER_FLOOR = 0.90
TP_WORST = 0.06
PREDICTORS = ("model", "naive", "waves")


def read_report(folder: Path, experiment: str) -> pd.DataFrame:
    """A report's judged rows (``accuracy.csv``; :func:`judge_reports.read_report` refuses a bad one)."""
    return JR.read_report(folder, experiment)[0]


def _layers(case: str) -> int:
    return int(case.split("=")[1])


def fig4_table(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """Per measured L (with both the ring and micro-batching): measured and ``source``'s ring and best micro-batching
    (each side's minimum over the chunk counts it ran), and the margins 1 - ring / best."""
    d = df[df["source"] == source]
    rows = []
    nan = float("nan")
    for case, g in d.groupby("case"):  # an L with any measured row is judged; a side that failed there is NaN
        ring, mb = g[g["strategy"] == "ring"], g[g["strategy"] == "microbatch"]
        if ring.empty and mb.empty:
            continue
        rows.append({"layers": _layers(case), "source": source,
                     "ring_measured_ms": ring["measured_ms"].min() if len(ring) else nan,
                     "ring_predicted_ms": ring["predicted_ms"].min() if len(ring) else nan,
                     "mb_measured_ms": mb["measured_ms"].min() if len(mb) else nan,
                     "mb_predicted_ms": mb["predicted_ms"].min() if len(mb) else nan,
                     "mb_measured_best": mb.loc[mb["measured_ms"].idxmin(), "variant"] if len(mb) else "",
                     "mb_predicted_best": mb.loc[mb["predicted_ms"].idxmin(), "variant"] if len(mb) else ""})
    t = pd.DataFrame(rows)
    t = t.sort_values("layers").reset_index(drop=True) if len(t) else t
    if not t.empty:
        t["margin_measured"] = 1 - t["ring_measured_ms"] / t["mb_measured_ms"]
        t["margin_predicted"] = 1 - t["ring_predicted_ms"] / t["mb_predicted_ms"]
    return t


def _signs_agree(predicted: pd.Series, measured: pd.Series) -> pd.Series:
    """Per row, whether a predicted and a measured margin have the same sign (a predictor that says 0 -- the two
    equal -- agrees with no measurement)."""
    return pd.Series(np.sign(np.asarray(predicted, float)) == np.sign(np.asarray(measured, float)),
                     index=predicted.index) & (np.asarray(predicted, float) != 0)


def sign_layers() -> set[int]:
    """The L of claim (b)'s sign: where the registered model's margin 1 - ring / best micro-batching (its best over
    every chunk count it predicted) is at least :data:`SIGN_MARGIN` (L = 2-6), from the registration itself, so that
    a row that failed at one of them leaves it judged (and missed), not dropped."""
    p = pd.read_csv(ROOT / "bench" / "predictions" / FIG4 / "predictions.csv")
    p = p[(p["source"] == "model") & (p["status"] == "ok")]
    ring = p[p["strategy"] == "ring"].set_index("case")["makespan_ms"]
    mb = p[p["strategy"] == "microbatch"].groupby("case")["makespan_ms"].min()
    margin = 1 - ring / mb.reindex(ring.index)
    return {_layers(c) for c, v in margin.items() if v >= SIGN_MARGIN}


def _slope(x, y) -> float:
    """Least-squares slope; NaN where a value is missing (a side that failed at some L: the claim misses)."""
    y = np.asarray(y, float)
    return float("nan") if np.isnan(y).any() else float(np.polyfit(np.asarray(x, float), y, 1)[0])


def _worst(diff) -> float:
    """The largest |difference| in points; inf where one is missing (a failed side at some judged L)."""
    d = np.abs(np.asarray(diff, float))
    return float("inf") if np.isnan(d).any() else float(100 * d.max())


def _order(g: pd.DataFrame, col: str) -> list[str]:
    best = g.groupby("strategy")[col].min()
    return list(best.sort_values(kind="mergesort").index)


def claims(fig4: pd.DataFrame, fig7: pd.DataFrame) -> pd.DataFrame:
    """Every claim per predictor: (claim, predictor, value, threshold, met)."""
    both = pd.concat([fig4, fig7], ignore_index=True)
    out = []

    def add(*row):
        JR.claim(out, *row)

    sign_l = sign_layers()
    mape = {}
    for s in PREDICTORS:
        d = both[both["source"] == s]
        if d.empty:
            continue
        err = 100 * d["error"].abs()
        mape[s] = float(err.mean())
        worst = float(100 * d.loc[d["error"].abs().idxmax(), "error"])
        add("a: MAPE % over every judged row", s, mape[s], 3.0, mape[s] <= 3.0)
        add("a: worst error %", s, worst, 6.0, abs(worst) <= 6.0)
        t = fig4_table(fig4, s)
        if not t.empty:
            signs = t[t["layers"].isin(sign_l)]
            agree = _signs_agree(signs["margin_predicted"], signs["margin_measured"])
            add("b: L (of those where the model's margin >= 2%) where the predicted and measured sign of ring vs the "
                "best micro-batching agree", s, float(agree.sum()), float(len(signs)),
                len(signs) > 0 and bool(agree.all()))
            gap = _worst(t["margin_predicted"] - t["margin_measured"])
            add("b: worst |margin error|, points", s, gap, MARGIN_POINTS, gap <= MARGIN_POINTS)
            if len(t) >= 3:
                for side in ("ring", "mb"):
                    sm = _slope(t["layers"], t[f"{side}_measured_ms"])
                    sp = _slope(t["layers"], t[f"{side}_predicted_ms"])
                    rel = sm / sp - 1 if sp else float("inf")  # the measured growth within 25% of the predictor's
                    add(f"c: {side} growth per layer, measured / predicted - 1 (measured {sm:.4f} ms/layer)", s,
                        float(rel), SLOPE_REL, abs(rel) <= SLOPE_REL)
            low = float((1 - t["margin_measured"]).min())
            if s == "model":
                add("d: measured ring / best micro-batching, lowest over L", "measured", low, PAPER_FLOOR,
                    low >= PAPER_FLOOR)
        f7 = fig7[fig7["source"] == s]
        for case, g in f7.groupby("case"):
            if g["strategy"].nunique() < 2:  # one strategy measured (a one-GPU machine): no order to judge
                continue
            same = _order(g, "measured_ms") == _order(g, "predicted_ms")
            add(f"e: {case} strategies in the measured order ({' < '.join(_order(g, 'measured_ms'))})", s,
                float(same), 1.0, same)
            for tp in ("tp8", "tp4"):
                row = g[g["strategy"] == tp]
                if not row.empty:
                    e = float(row["error"].iloc[0])
                    add(f"e: {case} {tp} error %", s, 100 * e, 100 * TP_WORST, abs(e) <= TP_WORST)
    if "model" in mape and "naive" in mape:
        add("f: model MAPE / naive MAPE", "model", mape["model"] / mape["naive"], 0.5,
            mape["model"] <= 0.5 * mape["naive"])
    return pd.DataFrame(out)


def groups_claims(groups: pd.DataFrame, fig4: pd.DataFrame) -> pd.DataFrame:
    """Plan 39's claims per predictor: (claim, predictor, value, threshold, met)."""
    out = []

    def add(*row):
        JR.claim(out, *row)

    for s in PREDICTORS:
        d = groups[groups["source"] == s]
        if d.empty:
            continue
        meas = d.pivot_table(index="case", columns="strategy", values="measured_ms")
        pred = d.pivot_table(index="case", columns="strategy", values="predicted_ms")
        meas.index = pred.index = [_layers(c) for c in meas.index]
        meas, pred = meas.sort_index(), pred.sort_index()
        err = 100 * d["error"].abs()
        worst = float(100 * d.loc[d["error"].abs().idxmax(), "error"])
        add("g4: MAPE % over the group rows", s, float(err.mean()), 3.0, err.mean() <= 3.0)
        add("g4: worst error %", s, worst, 6.0, abs(worst) <= 6.0)
        if {"ring-g4", "ring-g8"} <= set(meas.columns):
            deep = meas.index >= 3
            mm = 1 - meas["ring-g4"] / meas["ring-g8"]
            pm = 1 - pred["ring-g4"] / pred["ring-g8"]
            agree = _signs_agree(pm[deep], mm[deep]) & (mm[deep] > 0)
            add("g1: L >= 3 where groups of 4 beat groups of 8, predicted and measured", s, float(agree.sum()),
                float(deep.sum()), deep.sum() > 0 and bool(agree.all()))
            gap = _worst(mm - pm)
            add("g1: worst |g4 / g8 margin error|, points", s, gap, MARGIN_POINTS, gap <= MARGIN_POINTS)
            if len(meas) >= 3:
                for g in ("ring-g4", "ring-g8"):
                    sm, sp = _slope(meas.index, meas[g]), _slope(pred.index, pred[g])
                    rel = sm / sp - 1 if sp else float("inf")  # the measured growth within 25% of the predictor's
                    add(f"g3: {g} growth per layer, measured / predicted - 1 (measured {sm:.4f} ms/layer)", s,
                        float(rel), SLOPE_REL, abs(rel) <= SLOPE_REL)
        if "ring-g1" in meas.columns and meas.shape[1] > 1:
            others = pred.drop(columns="ring-g1").max(axis=1)
            slowest = (meas.idxmax(axis=1) == "ring-g1") & (pred["ring-g1"] > others)
            add("g2: L where row order is the slowest, predicted and measured", s, float(slowest.sum()),
                float(len(slowest)), bool(slowest.all()))
        mb = fig4[(fig4["source"] == s) & (fig4["strategy"] == "microbatch")]
        if "ring-g4" in meas.columns and not mb.empty:
            best_m = mb.groupby("case")["measured_ms"].min()
            best_p = mb.groupby("case")["predicted_ms"].min()
            best_m.index = best_p.index = [_layers(c) for c in best_m.index]
            both = meas.index.intersection(best_m.index)
            if len(both):
                mm = 1 - meas.loc[both, "ring-g4"] / best_m[both]
                pm = 1 - pred.loc[both, "ring-g4"] / best_p[both]
                agree = _signs_agree(pm, mm) & (mm > 0)
                add("g5: L where groups of 4 beat the best micro-batching, predicted and measured", s,
                    float(agree.sum()), float(len(both)), bool(agree.all()))
                gap = _worst(mm - pm)
                add("g5: worst |margin error| against micro-batching, points", s, gap, MARGIN_POINTS,
                    gap <= MARGIN_POINTS)
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python bench/plan38_judge.py", description=__doc__.splitlines()[0])
    p.add_argument("--fig4", required=True, help=f"ctasim compare's report folder for {FIG4}")
    p.add_argument("--fig7", required=True, help=f"ctasim compare's report folder for {FIG7}")
    p.add_argument("--groups", default=None, help=f"ctasim compare's report folder for {GROUPS} (plan 39)")
    p.add_argument("--out", required=True, help="folder for claims.csv and fig4.csv")
    args = parse_outputs(p, argv, folders=("--out",))
    out = Path(args.out)
    try:
        fig4, fig7 = read_report(Path(args.fig4), FIG4), read_report(Path(args.fig7), FIG7)
        groups = read_report(Path(args.groups), GROUPS) if args.groups else None
    except (SpecError, ValueError) as e:
        p.error(str(e))
    table = pd.concat([fig4_table(fig4, s) for s in PREDICTORS], ignore_index=True)
    result = claims(fig4, fig7)
    if groups is not None:
        result = pd.concat([result, groups_claims(groups, fig4)], ignore_index=True)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "fig4.csv", index=False, float_format="%.6g")
    result.to_csv(out / "claims.csv", index=False, float_format="%.6g")
    with pd.option_context("display.width", 200, "display.max_colwidth", 100):
        if len(table):
            print(table.to_string(index=False))
        print(result.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
