"""Registered plan 59: the profile as plan 58's adoption left it, on chains never run (no GPU here)

    python bench/plan59_adopted.py --register [--out bench/predictions/reg59-adopted]
    python bench/plan59_adopted.py --judge RUN_DIR [--registered bench/predictions/reg59-adopted]
                                   [--out bench/results/validation-registered59]

Registered plan 58's rule gave ``h200-x1-calibrated`` the survival ticket law's two refinements (``ticket_gap_cv``
0.74, measured; ``ticket_touched`` 1.3, chosen post-hoc). Plan 59 asks the refined profile for the targets of
docs/validation.md on shapes no GPU has run and no choice has seen: 2-layer chains at H = 5632 (a layer's weights
about the L2's size) and 8960 (2.5 times it), M = 6144, 10240 and 14336, sequential and the chain kernel in groups of 8
and 4, pairs and row order (``specs/experiments/reg59-adopted-h5632``, ``-h8960``). Beside it, the profile before the
adoption (plan 53's: ``posthoc_order_mainloop.as_plan_53``) and a twin with ``ticket_touched`` at :data:`TOUCHED`: on
plan 58's own runs (post-hoc) 1.6 was the nearer on the pairs' tiles and 1.3 on row order's makespans.

``--register`` writes ``predicted.csv``: per experiment, case, chain-kernel order and predictor (:data:`PREDICTORS`)
the model's late mainloop (µs; ``posthoc_order_mainloop.late_median`` of ``t_compute_end``) and makespan (ms). The
experiments' ``ctasim predict`` registrations (``bench/predictions/EXP``: the model, the naive line and the waves
predictor for every strategy, and the model's per-CTA schedules) are made at the same commit. A registration is never
overwritten.

``--judge`` reads RUN_DIR/EXP/results.csv (the timed medians) and RUN_DIR/EXP/ctapipe_traces.trace.npz (the traced
runs) of both experiments, and writes ``cases.csv`` (per experiment, case, order and predictor: the penalties over
groups of 8 and the makespan errors; ``registered_plan.order_cases``), ``strategies.csv`` (per experiment, case,
strategy and source of the ``ctasim predict`` registrations: measured and predicted makespans), ``starts.csv`` (per
traced run: the per-CTA start error, ``ctasim.accuracy.per_cta``) and ``claims.csv`` (:data:`CLAIMS`; registered or
post-hoc by ``ctasim.accuracy.provenance_order`` of predicted.csv against the first bundle). A missing registration,
run or case is refused in one line, exit 2, nothing written.
"""

from __future__ import annotations

import dataclasses

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import posthoc_order_mainloop as pom  # noqa: E402
import registered_plan  # noqa: E402

EXPERIMENTS = ("reg59-adopted-h5632", "reg59-adopted-h8960")
CASES = ("m=6144", "m=10240", "m=14336")
ORDERS = (pom.REFERENCE, "intragpu-g4", "intragpu-g2", "intragpu-row")
STRATEGIES = ("sequential",) + ORDERS
TOUCHED = 1.6
"""The twin's ``ticket_touched`` (the profile's: 1.3)."""


def as_plan_58(hw):
    """``hw`` as registered plan 58's adoption left it (h200-x1-calibrated from 2026-12-05): the survival law with
    ``ticket_gap_cv`` 0.74 and ``ticket_touched`` 1.3, reuse across waves an LRU of the whole L2 (as before registered
    plan 67's adoption on an H200, 2026-12-06), whatever a later change does to the profile."""
    return dataclasses.replace(hw.with_tickets(ticket_gap_cv=0.74, ticket_touched=1.3), l2_reuse_law="lru")


PREDICTORS = {
    "adopted": dict(profile=as_plan_58),
    "plan53": dict(profile=pom.as_plan_53),
    "touched16": dict(profile=lambda hw: as_plan_58(hw).with_tickets(ticket_touched=TOUCHED)),
}
"""Label -> ``posthoc_order_mainloop.simulated``'s profile argument: ``adopted``, the experiment's profile
(h200-x1-calibrated) as plan 58's adoption left it (:func:`as_plan_58`); ``plan53``, the profile before that adoption;
``touched16``, the adopted one with ``ticket_touched`` = :data:`TOUCHED`."""
REGISTERED = ROOT / "bench/predictions/reg59-adopted"
PREDICTIONS = ROOT / "bench/predictions"
"""Where the experiments' ``ctasim predict`` registrations are (``PREDICTIONS/EXP``)."""
JudgeError = registered_plan.JudgeError
MAPE, WORST, START = 3.0, 6.0, 0.02
MAPE_SLACK = 0.3
TIE = 0.5
"""Claim (c)'s resolution (%): where the model's two fastest strategies are within it of each other, the measured
fastest may be either."""
WHY = "plan 59's call runs and traces both experiments"
CLAIMS = {
    "a": f"adopted (ctasim predict's model rows): makespan MAPE <= {MAPE:g}% and worst |error| <= {WORST:g}% over "
         "every case and strategy (30)",
    "b": "adopted: makespan MAPE at most half the naive line's over the same 30 cases",
    "c": f"adopted: the fastest of the five strategies right at every (H, M) (6; where the model's two fastest are "
         f"within {TIE:g}% of each other, either)",
    "d": "adopted: the chain kernel against sequential (the groups of 8 / sequential ratio, predicted over measured, "
         "less 1) within 1 point on average over the 6 (H, M)",
    "e": "adopted: mean |error| of the makespan penalty over groups of 8 (groups of 4, pairs and row order, 18 cases) "
         "below plan 53's profile's",
    "f": f"adopted: the median over the traced chain-kernel runs of the median per-CTA start error <= {START:.0%} of "
         "the makespan",
    "g": f"touched {TOUCHED:g}: mean |error| of the makespan penalty (18 cases) below the adopted profile's",
    "h": f"touched {TOUCHED:g}: chain-kernel makespan MAPE (24 cases) at most {MAPE_SLACK} points above the adopted "
         "profile's",
}
ADOPT = ("g", "h")
"""The adoption rule: the profile's ``ticket_touched`` becomes :data:`TOUCHED` where both are met."""


def register() -> pd.DataFrame:
    rows = []
    pairs = [(c, o) for c in CASES for o in ORDERS]
    for exp in EXPERIMENTS:
        for label, kw in PREDICTORS.items():
            for (case, order), tr in pom.simulated(exp, pairs, **kw).items():
                rows.append(dict(experiment=exp, case=case, order=order, predictor=label,
                                 late_us=pom.late_median(tr.tiles, "t_compute_end"), makespan_ms=tr.makespan_ns / 1e6))
    return pd.DataFrame(rows)


def registrations(predictions: Path = PREDICTIONS) -> pd.DataFrame:
    """The experiments' ``ctasim predict`` rows with status ok (experiment, case, strategy, source, makespan_ms)."""
    parts = []
    for exp in EXPERIMENTS:
        f = predictions / exp / "predictions.csv"
        if not f.is_file():
            raise JudgeError(f"no {f} (the experiment's ctasim predict registration)")
        p = pd.read_csv(f)
        parts.append(p[p["status"] == "ok"][["case", "strategy", "source", "makespan_ms"]].assign(experiment=exp))
    return pd.concat(parts, ignore_index=True)


def measured(run_dir: Path) -> pd.DataFrame:
    """One frame, its rows told apart by ``kind``: 'order', the chain-kernel orders' late mainloops and makespans
    (``registered_plan.order_runs``); 'timed', every strategy's timed makespan, sequential's included (its name in
    ``order``); 'start', each traced run's per-CTA start error (``ctasim.accuracy.per_cta``)."""
    from ctasim.accuracy import per_cta  # noqa: PLC0415

    orders = registered_plan.order_runs(run_dir, EXPERIMENTS, CASES, ORDERS, WHY).assign(kind="order")
    timed, starts = [], []
    for exp in EXPERIMENTS:
        r = registered_plan.timed_makespans(run_dir, exp, WHY)
        for case in CASES:
            if (case, "sequential") not in r.index:
                raise JudgeError(f"{run_dir / exp / 'results.csv'}: no timed run of {case} sequential")
            timed += [dict(experiment=exp, case=case, order=s, makespan_ms=float(r[(case, s)]), kind="timed")
                      for s in STRATEGIES]
        s = per_cta(PREDICTIONS / exp, run_dir / exp)[0]
        if s.empty:
            raise JudgeError(f"{run_dir / exp}: no traced run with a registered schedule ({WHY})")
        starts.append(s.assign(experiment=exp, kind="start"))
    return pd.concat([orders, pd.DataFrame(timed), *starts], ignore_index=True)


def strategy_table(meas: pd.DataFrame, reg: pd.DataFrame) -> pd.DataFrame:
    """Per experiment, case, strategy and source of ``reg``: measured and predicted makespans and the error (%)."""
    t = meas[meas["kind"] == "timed"][["experiment", "case", "order", "makespan_ms"]].rename(
        columns={"order": "strategy", "makespan_ms": "measured_ms"})
    j = t.merge(reg.rename(columns={"makespan_ms": "predicted_ms"}), on=["experiment", "case", "strategy"], how="left")
    j["error_pct"] = (j["predicted_ms"] / j["measured_ms"] - 1) * 100
    return j[["experiment", "case", "strategy", "source", "measured_ms", "predicted_ms", "error_pct"]]


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """``registered_plan.order_cases`` of the chain-kernel orders, with the other tables the claims read attached as
    ``attrs`` (``strategies``: :func:`strategy_table`; ``starts``: the traced runs' per-CTA start errors)."""
    c = registered_plan.order_cases(pred, meas[meas["kind"] == "order"].drop(columns="kind"))
    c.attrs["strategies"] = strategy_table(meas, registrations())
    c.attrs["starts"] = meas[meas["kind"] == "start"].dropna(axis=1, how="all").drop(columns="kind")
    return c


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    st, starts = c.attrs["strategies"], c.attrs["starts"]

    def mean_abs(predictor, col, orders):
        s = c[(c["predictor"] == predictor) & c["order"].isin(orders)][col]
        return float(np.mean(np.abs(s))) if len(s) else float("nan"), len(s)

    model, naive = (st[(st["source"] == src) & st["error_pct"].notna()] for src in ("model", "naive"))
    mape = {src: float(d["error_pct"].abs().mean()) for src, d in (("model", model), ("naive", naive))}
    worst = float(model["error_pct"].abs().max())
    fastest, chain_gap = [], []
    for (exp, case), d in model.groupby(["experiment", "case"]):
        d = d.set_index("strategy")
        if set(d.index) != set(STRATEGIES):  # a strategy without its figures: the case is not right
            fastest.append(False)
            continue
        p = d["predicted_ms"].sort_values()
        near = p.index[:2] if p.iloc[1] / p.iloc[0] - 1 <= TIE / 100 else p.index[:1]
        fastest.append(d["measured_ms"].idxmin() in near)
        ratio = d["predicted_ms"] / d["measured_ms"]
        chain_gap.append(abs(ratio[pom.REFERENCE] / ratio["sequential"] - 1) * 100)
    rest = ORDERS[1:]
    pen = {p: mean_abs(p, "makespan_pct_err", rest) for p in PREDICTORS}
    chain = {p: mean_abs(p, "makespan_err_pct", ORDERS) for p in PREDICTORS}
    n = len(EXPERIMENTS) * len(CASES)
    traced = (starts.dropna(subset=["start_median_frac"]).drop_duplicates(["experiment", "case", "strategy"])
              if "start_median_frac" in starts.columns else starts.iloc[0:0])
    start = float(starts["start_median_frac"].median()) if len(traced) else float("nan")
    every_traced = len(traced) == n * len(ORDERS) and bool(starts["start_median_frac"].notna().all())
    rows = [
        ("a", f"MAPE {mape['model']:.2f}%, worst {worst:.2f}% over {len(model)} cases",
         len(model) == n * len(STRATEGIES) and mape["model"] <= MAPE and worst <= WORST),
        ("b", f"{mape['model']:.2f} against the naive line's {mape['naive']:.2f}%",
         len(naive) == n * len(STRATEGIES) and mape["model"] <= mape["naive"] / 2),
        ("c", f"{sum(fastest)} of {len(fastest)}", len(fastest) == n and all(fastest)),
        ("d", f"{np.mean(chain_gap):.2f} points on average (worst {max(chain_gap):.2f})" if chain_gap else "no case",
         len(chain_gap) == n and float(np.mean(chain_gap)) <= 1.0),
        ("e", f"{pen['adopted'][0]:.2f} against plan 53's {pen['plan53'][0]:.2f} points over {pen['adopted'][1]} cases",
         pen["adopted"][1] == n * len(rest) and pen["adopted"][0] < pen["plan53"][0]),
        ("f", f"{100 * start:.2f}% over {len(starts)} traced runs of {len(traced)} cases and orders",
         every_traced and start <= START),
        ("g", f"{pen['touched16'][0]:.2f} against {pen['adopted'][0]:.2f} points over {pen['touched16'][1]} cases",
         pen["touched16"][1] == n * len(rest) and pen["touched16"][0] < pen["adopted"][0]),
        ("h", f"{chain['touched16'][0]:.2f} against {chain['adopted'][0]:.2f}% over {chain['touched16'][1]} cases",
         chain["touched16"][1] == n * len(ORDERS) and chain["touched16"][0] <= chain["adopted"][0] + MAPE_SLACK),
    ]
    out = registered_plan.claims_table(rows, CLAIMS)
    adopt = bool(out.set_index("claim").loc[list(ADOPT), "met"].all())
    out = pd.concat([out, pd.DataFrame([{"claim": "adopt", "rule": f"the profile's ticket_touched becomes {TOUCHED:g} "
                                         "where g and h are both met", "value": "yes" if adopt else "no",
                                         "met": adopt}])], ignore_index=True)
    return out.assign(provenance=provenance)


PLAN = registered_plan.Plan(
    name="plan59_adopted", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered59", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / EXPERIMENTS[0] / pom.BUNDLE,
    tables=lambda c: {"strategies": c.attrs["strategies"], "starts": c.attrs["starts"]})


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
