"""Post-hoc: is the sharers' gap spread the machine's, and does a machine's own spread price its tile orders better?

    python bench/posthoc_gap_machine.py [--out bench/results/posthoc-gap-machine] [--runs GLOB] [--as-of DATE|all]

``h200-x1-calibrated`` prices a later sharer of a weight panel at the survival curve averaged over a lognormal spread
of its distance (``ticket_gap_cv`` 0.74: the median coefficient of variation of the sharers' measured gaps over every
traced pairs' and row-order case of registered plans 9-53, ``posthoc_order_mainloop.gaps``; ``ctasim.l2.gap_survival``).
One value for every machine. The traces say otherwise: each committed run is one lent H200, and the runs' medians
range 0.63-0.95 while most cases of one run sit within about 0.15 of theirs. If the spread is the machine's, ``ctahw
calibrate`` should measure it per machine, as it measures ``ticket_spread``; if a machine's own spread does not price
its orders better, one value is enough.

For every traced chain-kernel run (``posthoc_order_mainloop.bundles`` of :data:`EXPERIMENTS`; ``--runs`` a glob on the
run's folder name) this prices each case's orders under the profile (gap cv 0.74, ``ticket_touched`` 1.3) and under the
profile with the run's own gap cv, measured on the run's **other** cases (every experiment of the run; the case priced
is left out, so that no case is priced with its own gaps): the median of their cases' coefficients of variation, pairs'
and row order's (``own, pairs and row``) or the pairs' alone (``own, pairs``: what a calibration tracing the tickets
design in pairs would measure). Cases where the run has no other pairs' case are left out of every predictor, so each
predictor is judged on the same cases.

Writes ``cases.csv`` (``posthoc_order_mainloop.cases``' columns and ``gap_cv``, the value each case was priced with),
``gaps.csv`` (``posthoc_order_mainloop.gaps`` of every run, every order, and its GPU), ``by-run.csv`` (per run and
order, its gap cv and the profile's mean errors), ``correlations.csv`` (per order, the rank correlation over the runs of
the gap cv with those errors), ``response.csv`` (:func:`response`: how far the machines differ against how far their own
value moves the model), ``summary.csv`` (``posthoc_order_mainloop.summary``), ``machines.csv`` (per run: its GPU, its
pairs' and row order's cases, their coefficients' median, min and max) and ``spread.csv`` (a one-way analysis of
variance of the coefficients by run, pairs and row order together and each alone: the runs' and the cases' mean squares
and their ratio ``F``). Every run here had been seen, and 0.74 was taken from them: the figures are post-hoc. ~2-3 min
on 2 cores.

Left out: which machine property the spread stands for (the runs' reference GEMM speed does not follow it), groups of
8 and 4's own spreads (their sharers stay near, where the refinement does not reach), and ``ticket_touched`` (1.3 in
every predictor).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import posthoc_gap_law as pgl  # noqa: E402
import posthoc_order_mainloop as pom  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

TOUCHED = 1.3
"""``ticket_touched`` in every predictor: the profile's since registered plan 58's adoption."""
GAP_ORDERS = {"pairs and row": ("intragpu-g2", "intragpu-row"), "pairs": ("intragpu-g2",)}
"""Which orders' cases a run's own gap cv is the median over, by predictor."""
EXPERIMENTS = (*pom.EXPERIMENTS, "reg58-gap-law-*", "reg59-adopted-*")
"""The experiments read: the dated records' and the registered plans' since (plan 58's run was measured after 0.74 and
1.3 were chosen)."""
PROFILE = f"profile (gap cv {pgl.GAP_CV:g})"
PREDICTORS = (PROFILE, *(f"own, {k}" for k in GAP_ORDERS))

AS_OF = "2026-12-05"
"""The committed tables (``bench/results/posthoc-gap-machine``) read the traced runs dated this day or before;
``--as-of`` another day (or ``all``) reads the runs committed since too."""


def own_cv(gaps: pd.DataFrame, experiment: str, case: str, orders: tuple[str, ...]) -> float:
    """The median coefficient of variation of ``gaps``' (one run's ``posthoc_order_mainloop.gaps``, every experiment
    of the run) cases in ``orders`` other than ``experiment``'s ``case``; NaN where there is none."""
    g = gaps[~((gaps["experiment"] == experiment) & (gaps["case"] == case)) & gaps["order"].isin(orders)]
    return float(g["cv"].median()) if len(g) else float("nan")


def bundle_cases(bundle: Path, gaps: pd.DataFrame) -> pd.DataFrame:
    """One bundle's measured and predicted order penalties, per predictor of :data:`PREDICTORS`, on its cases that have
    a reference and another pairs' case in its run (``gaps``: the run's) to measure the gap cv on."""
    meas = pom.measured(bundle)
    if pom.REFERENCE not in set(meas["order"]) or meas["order"].nunique() < 2:
        return pd.DataFrame()
    experiment = bundle.parent.name
    base = dict(run=pom.run_label(bundle), machine=pom.machine(bundle), experiment=experiment)
    parts = []
    for case, m in meas.groupby("case", sort=False):
        cvs = {PROFILE: pgl.GAP_CV, **{f"own, {k}": own_cv(gaps, experiment, case, v) for k, v in GAP_ORDERS.items()}}
        if any(np.isnan(v) for v in cvs.values()):
            continue
        pairs = list(m[["case", "order"]].itertuples(index=False, name=None))
        for label, cv in cvs.items():
            pred = pom.modelled(experiment, pairs, None, pgl.refined(cv, TOUCHED))
            parts.append(pom.compared(m, pred).assign(predictor=label, gap_cv=cv, **base))
    if not parts:
        return pd.DataFrame()
    cols = ["run", "machine", "experiment", "case", "order", "predictor", "gap_cv", "late_us_meas", "late_us_model",
            "mainloop_pct_meas", "mainloop_pct_model", "makespan_pct_meas", "makespan_pct_model", "mainloop_err",
            "makespan_err"]
    return pd.concat(parts, ignore_index=True)[cols]


def machines(gaps: pd.DataFrame) -> pd.DataFrame:
    """Per run (``gaps`` with its ``machine``): the pairs' and row order's cases and their coefficients' median, min
    and max."""
    g = gaps[gaps["order"].isin(GAP_ORDERS["pairs and row"])].groupby(["run", "machine"], sort=True)["cv"]
    return pd.DataFrame({"cases": g.size(), "cv_median": g.median(), "cv_min": g.min(),
                         "cv_max": g.max()}).round(4).reset_index()


def anova(values: pd.Series, groups: pd.Series) -> dict:
    """One-way analysis of variance of ``values`` by ``groups``: the groups, the values, the between-group and
    within-group mean squares and their ratio F (large where the groups differ by more than their members do)."""
    d = pd.DataFrame({"v": values.to_numpy(), "g": groups.to_numpy()})
    k, n = d["g"].nunique(), len(d)
    if k < 2 or n <= k:
        raise ValueError(f"an analysis of variance needs 2 or more groups and more values than groups, got {k} "
                         f"groups of {n} values")
    mean = d["v"].mean()
    by = d.groupby("g")["v"]
    between = float((by.size() * (by.mean() - mean) ** 2).sum()) / (k - 1)
    within = float(((d["v"] - by.transform("mean")) ** 2).sum()) / (n - k)
    return dict(groups=k, values=n, between_ms=between, within_ms=within, f=between / within)


def spread(gaps: pd.DataFrame) -> pd.DataFrame:
    """:func:`anova` of the pairs' and row order's coefficients by run, together and each order alone."""
    rows = []
    for label, orders in (("pairs and row", GAP_ORDERS["pairs and row"]), ("pairs", ("intragpu-g2",)),
                          ("row", ("intragpu-row",))):
        g = gaps[gaps["order"].isin(orders)]
        rows.append(dict(orders=label, **anova(g["cv"], g["run"])))
    return pd.DataFrame(rows).round(4)


def by_run(c: pd.DataFrame, machines_table: pd.DataFrame) -> pd.DataFrame:
    """Per run and order: the cases, the run's gap cv (``machines_table``'s median) and the mean errors of the
    mainloop and makespan penalties under the profile (points; the sign kept, so a machine the profile over-prices is
    positive)."""
    p = c[c["predictor"] == PROFILE]
    g = p.groupby(["run", "machine", "order"], sort=True)
    t = pd.DataFrame({"cases": g.size(), "mainloop_err": g["mainloop_err"].mean(),
                      "makespan_err": g["makespan_err"].mean()}).reset_index()
    t.insert(3, "gap_cv", t["run"].map(machines_table.set_index("run")["cv_median"]))
    return t.round(4)


def correlations(runs: pd.DataFrame) -> pd.DataFrame:
    """Per order of :func:`by_run`'s table: the runs and the rank (Spearman) correlation over them of the run's gap cv
    with its mean mainloop and makespan errors under the profile."""
    rows = []
    for order, r in runs.dropna(subset=["gap_cv"]).groupby("order", sort=True):
        if len(r) < 3:
            continue
        rows.append(dict(order=order, runs=len(r),
                         rho_mainloop=r["gap_cv"].corr(r["mainloop_err"], method="spearman"),
                         rho_makespan=r["gap_cv"].corr(r["makespan_err"], method="spearman")))
    return pd.DataFrame(rows).round(4)


def response(c: pd.DataFrame) -> pd.DataFrame:
    """Per order, own predictor and penalty (mainloop, makespan), over the runs (per-run means of the cases): how the
    measured penalty's distance from the profile's follows what the run's own gap cv moves the model by. ``slope``:
    the least-squares slope through 0 of (measured - profile) on (own - profile), 1 where the own value moves the model
    as far as the machine differs, above 1 where the law answers the spread by less than the hardware does;
    ``corr``: their correlation."""
    rows = []
    for (order, label), _ in c[c["predictor"] != PROFILE].groupby(["order", "predictor"], sort=True):
        t = c[(c["order"] == order) & c["predictor"].isin([label, PROFILE])]
        t = t.groupby(["run", "predictor"])[[f"{k}_pct_{w}" for k in ("mainloop", "makespan")
                                             for w in ("model", "meas")]].mean().unstack("predictor")
        if len(t) < 3:
            continue
        for k in ("mainloop", "makespan"):
            moved = t[(f"{k}_pct_model", label)] - t[(f"{k}_pct_model", PROFILE)]
            off = t[(f"{k}_pct_meas", PROFILE)] - t[(f"{k}_pct_model", PROFILE)]
            denom = float((moved * moved).sum())
            rows.append(dict(order=order, predictor=label, penalty=k, runs=len(t),
                             slope=float((moved * off).sum()) / denom if denom > 0 else float("nan"),
                             corr=float(np.corrcoef(moved, off)[0, 1]) if denom > 0 else float("nan")))
    return pd.DataFrame(rows).round(4)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_gap_machine.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-gap-machine")
    ap.add_argument("--runs", default="*", help="a glob on the run folder's name (default: every traced run)")
    ap.add_argument("--as-of", default=AS_OF, metavar="YYYY-MM-DD|all",
                    help=f"only the runs dated this day or before (default {AS_OF}, the committed tables' runs)")
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        paths = pom.selected(EXPERIMENTS, args.runs, None if args.as_of == "all" else args.as_of)
    except ValueError as e:
        print(f"posthoc_gap_machine: {e}", file=sys.stderr)
        return 2
    if not paths:
        print(f"posthoc_gap_machine: no traced chain-kernel run matches {args.runs!r}"
              f"{'' if args.as_of == 'all' else f' dated {args.as_of} or before'}",
              file=sys.stderr)
        return 2
    gp = pom.gaps(paths)
    gp["machine"] = gp["run"].map({pom.run_label(p): pom.machine(p) for p in paths})
    parts = [bundle_cases(p, gp[gp["run"] == pom.run_label(p)]) for p in paths]
    parts = [p for p in parts if len(p)]
    if not parts:
        print(f"posthoc_gap_machine: no run matching {args.runs!r} has two traced cases with pairs", file=sys.stderr)
        return 2
    c = pd.concat(parts, ignore_index=True).round(4)  # every table below is derived from cases.csv as written
    s = pom.summary(c)
    args.out.mkdir(parents=True, exist_ok=True)
    c.to_csv(args.out / "cases.csv", index=False)
    s.to_csv(args.out / "summary.csv", index=False)
    gp.to_csv(args.out / "gaps.csv", index=False, float_format="%.4f")
    m = machines(gp)
    m.to_csv(args.out / "machines.csv", index=False)
    br = by_run(c, m)
    br.to_csv(args.out / "by-run.csv", index=False)
    co = correlations(br)
    co.to_csv(args.out / "correlations.csv", index=False)
    response(c).to_csv(args.out / "response.csv", index=False)
    sp = spread(gp) if gp["run"].nunique() > 1 else pd.DataFrame()
    if len(sp):
        sp.to_csv(args.out / "spread.csv", index=False)
    with pd.option_context("display.width", 200):
        print(s[["order", "predictor", "cases", "mainloop_err", "mainloop_abs_err", "makespan_err",
                 "makespan_abs_err"]].to_string(index=False))
        print()
        print(m.to_string(index=False))
        print()
        print(co.to_string(index=False))
        if len(sp):
            print()
            print(sp.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
