"""Post-hoc: where the chain kernel's order effect is missed, in the tiles' mainloop or around it (no GPU).

    python bench/posthoc_order_mainloop.py [--out bench/results/posthoc-order-mainloop] [--as-of YYYY-MM-DD|all]

The profile prices the chain kernel's pairs about a point fast against its groups of 4 and 8, and overprices groups
of 8 against groups of 4 by about half a point (`bench/posthoc_law_factor.py`, order-gaps.csv); row order is missed
by every ticket law. A makespan mixes the tiles' mainloop (the L2 and HBM reuse of the order) with the fill, the
waits and the protocol. This reads every committed traced run of a chain-kernel experiment that traced groups of 8 and
another order of the same case (per-tile %globaltimer stamps; ``bench/results/hw/*/reg*-chain-*``, the one-layer
microbenchmarks and the GeLU chains left out) and sets, per case and order, the **penalty** of the order over groups
of 8 in the same run (so the machine's speed and the epilogue cancel):

* ``mainloop``: the median mainloop (measured ``t_mainloop_end - t_acquire``, the model's ``t_compute_end -
  t_acquire``) over the second half of the tiles taken (by ``t_acquire``; the first waves run a cold L2), the
  order's less groups of 8's, in percent of groups of 8's measured figure;
* ``makespan``: the order's makespan over groups of 8's, less 1, in percent.

Measured against the model's, under the profile registered plan 53 adopted (``h200-x1-calibrated`` from 2026-12-04:
the survival ticket law, the tickets mainloop factor 1.019; :func:`as_plan_53`, without the two refinements plan 58's
adoption added on 2026-12-05: ``bench/posthoc_gap_law.py`` prices these runs with them) and under the partition law
it replaced (factor 1). If the makespan's penalty is missed by
what the mainloop's is, the order effect's error is the tiles' mainloop, not the fill or the protocol.

What the ticket laws take for the time between two sharers of a panel is checked too (``gaps.csv``): per traced run,
the later sharers of a W column panel (the same layer and ``tile_n``) within a window of 132 tickets (taken in
``t_acquire`` order), at least :data:`MIN_GAP` tickets after the one before and past the first window; each one's
measured time after it, in the run's median mainloops, over the model's reach for it (``ctasim.l2.ticket_rereads``:
``g / 132 * min(1, ticket_spread * window)``, ``g`` the tickets between them, the profile's ``ticket_spread``): its
10th, 50th and 90th percentiles and coefficient of variation. The laws price each sharer at that reach, so a ratio
spread wide says a sharp survival curve is averaged over a wide distance in the hardware.

``traffic.csv`` says what the laws charge each order: per order and law, one layer's mean HBM bytes a wave (waves 5 to
the last but two; MiB) of A and W panels missed across waves, of later sharers read again within a window (the ticket
law's), and of stores, at :data:`TRAFFIC_SHAPE` (``ctasim.l2.wave_traffic``, the profile's 128x256 config).

``--smooth-cv 0.5,0.75,...`` also prices the orders under the survival law averaged over a lognormal distance of mean
the reach and each coefficient of variation (:func:`smoothed`: the survival share of a later sharer is ``E[S(B X)]``,
``X`` lognormal of mean 1, in place of ``S(B)``; 24-point Gauss-Hermite) and writes ``smoothed-summary.csv``, the summary
beside the adopted law's: an exploration of the lead ``gaps.csv`` gives, not a model the profile has.

Writes ``cases.csv`` (one row per run, experiment, case and order), ``by-h.csv`` (the mean errors per order,
predictor and H), ``gaps.csv``, ``traffic.csv`` and ``summary.csv`` (per order and predictor: the
cases, the mean measured and predicted penalties and the mean and mean absolute error in points, for the mainloop
and the makespan, and ``err_corr``, the correlation over the cases of the two errors); prints the summary. Every run here was seen before this was written: the figures are post-hoc.
~1-2 min on 2 cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ctasim import calibration, l2  # noqa: E402
from ctasim.cases import expand, load_experiment  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.run import run_strategy  # noqa: E402
from ctasim.trace import load_traces  # noqa: E402

HW = ROOT / "bench/results/hw"
BUNDLE = "ctapipe_traces.trace.npz"
LEFT_OUT = ("-rate-", "-gelu")
"""Experiments whose traces are left out: the one-layer microbenchmarks (groups of 8 only) and the GeLU chains."""
REFERENCE = "intragpu"
"""The strategy the penalties are taken against: groups of 8 (the chain kernel's default order)."""
SLOTS = 132
"""The chain kernel's CTAs on an H200 (one per SM): a window of tickets."""
MIN_GAP = calibration.GAP_MIN_TICKETS
"""The fewest tickets between two sharers counted in ``gaps.csv`` (``ctasim.calibration.GAP_MIN_TICKETS``): nearer ones
read the panel within a few per cent of a tile time, a hit under any law."""
TRAFFIC_SHAPE = (16384, 8704)
"""(M, H) of ``traffic.csv``: plan 53's largest case at its smaller H."""
ORDERS = {"intragpu": 8, "intragpu-g4": 4, "intragpu-g2": 2, "intragpu-row": 1}
"""The chain kernel's orders in ``traffic.csv``: strategy name -> groups of that many row-blocks."""
PREDICTORS = {"adopted (survival, 1.019)": None, "partition (factor 1)": ("partition", 1.0)}
"""Label -> the ticket law and tickets mainloop factor put on the experiment's profile as plan 53 adopted it (None:
that profile's own; :func:`simulated`)."""
ADOPTED = next(label for label, law in PREDICTORS.items() if law is None)
"""The label of the profile's own predictor."""


def as_plan_53(hw):
    """``hw`` as registered plan 53 adopted it: the survival law without registered plan 58's two refinements
    (``ticket_gap_cv`` 0, ``ticket_touched`` 1; h200-x1-calibrated took them on 2026-12-05). The profile of this
    dated record, of the scripts built on it and of the registrations made before plan 58's adoption (the "adopted"
    predictor of plans 55, 56 and 58); ``h200-x1-calibrated-survival-own`` is the same profile by name
    (tests/test_memory.py). Reuse across waves an LRU of the whole L2, as before registered plan 67's adoption on an
    H200 (2026-12-06)."""
    return dataclasses.replace(hw.with_tickets(ticket_gap_cv=0.0, ticket_touched=1.0), l2_reuse_law="lru")


EXPERIMENTS = ("reg*-chain-*",)
"""The experiment folders :func:`bundles` reads by default: those of the dated records (registered plans 9-56; plan 58's
and 59's, ``reg58-gap-law-*`` and ``reg59-adopted-*``, came after them)."""


def bundles(root: Path = HW, experiments: tuple[str, ...] = EXPERIMENTS) -> list[Path]:
    """The committed chain-kernel trace bundles of the experiment folders matching ``experiments`` (sorted), the
    :data:`LEFT_OUT` experiments left out."""
    found = []
    for e in experiments:
        found += list(root.glob(f"*/{e}/{BUNDLE}")) + list(root.glob(f"*/*/{e}/{BUNDLE}"))
    found = sorted(set(found))
    return [p for p in found if not any(s in p.parent.name for s in LEFT_OUT)]


def machine(bundle: Path) -> str:
    """The GPU's uuid prefix (``GPU-xxxxxxxx``) from the nearest ``env.txt`` above the bundle ('?' if none)."""
    for d in bundle.parents:
        env = d / "env.txt"
        if env.is_file():
            m = re.search(r"GPU-[0-9a-f]{8}", env.read_text(errors="replace"))
            return m.group(0) if m else "?"
        if d == HW:
            break
    return "?"


def late_median(tiles: pd.DataFrame, end: str) -> float:
    """The median of ``end - t_acquire`` over the second half of the tiles by ``t_acquire`` (µs)."""
    t = tiles.sort_values("t_acquire", kind="stable")
    late = t.iloc[len(t) // 2:]
    return float(np.median((late[end] - late["t_acquire"]).to_numpy()) / 1e3)


def run_label(bundle: Path) -> str:
    """The run folder of a bundle: under :data:`HW` where it is there, else under the repository where it is there
    (the H100 calls of ``bench/results/hw-h100``), else as given."""
    run = bundle.parent.parent
    for root in (HW, ROOT):
        if run.is_relative_to(root):
            return str(run.relative_to(root))
    return str(run)


def run_date(bundle: Path) -> str:
    """The date (YYYY-MM-DD) a bundle's run folder is named by."""
    return Path(run_label(bundle)).name[:10]


def selected(experiments: tuple[str, ...] = EXPERIMENTS, runs: str = "*", as_of: str | None = None) -> list[Path]:
    """:func:`bundles` of ``experiments`` whose run folder's name matches the glob ``runs`` and, with ``as_of``
    (YYYY-MM-DD), is dated that day or before: the runs a dated post-hoc table read, whatever was committed since.
    ValueError (one line) for an ``as_of`` that is not a date."""
    import fnmatch  # noqa: PLC0415

    if as_of is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", as_of):
        raise ValueError(f"--as-of {as_of!r}: not a date (YYYY-MM-DD)")
    return [p for p in bundles(experiments=experiments) if fnmatch.fnmatch(run_label(p), runs)
            and (as_of is None or run_date(p) <= as_of)]


def first_runs(bundle: Path):
    """``((case, strategy), trace)`` of a bundle's first traced run of each case and strategy, in the bundle's order."""
    seen = set()
    for tr in load_traces(bundle).values():
        key = (tr.meta["case"], tr.meta["strategy"])
        if key not in seen:
            seen.add(key)
            yield key, tr


def measured(bundle: Path) -> pd.DataFrame:
    """One row per traced (case, strategy) of a bundle (its first traced run): late mainloop and makespan."""
    return traced_figures(first_runs(bundle))


def traced_figures(runs) -> pd.DataFrame:
    """One row per ``((case, strategy), trace)`` of ``runs``: the late mainloop (:func:`late_median` of
    ``t_mainloop_end``) and the makespan."""
    return pd.DataFrame([dict(case=case, order=order, late_us=late_median(tr.tiles, "t_mainloop_end"),
                              makespan_ms=float(tr.meta["makespan_ms"])) for (case, order), tr in runs])


def sharer_gaps(tiles: pd.DataFrame, spread: float, slots: int = SLOTS) -> np.ndarray:
    """Each later sharer's measured time after the sharer before over the model's reach (see the module docstring;
    ``ctasim.calibration.sharer_gaps``, which ``ctahw calibrate`` measures ``ticket_gap_cv`` with)."""
    return calibration.sharer_gaps(tiles, spread, slots)


def gaps(paths: list[Path] | None = None, spread: float | None = None) -> pd.DataFrame:
    """:func:`sharer_gaps` of every traced (case, order) of the bundles in ``paths`` (default :func:`bundles`), at the
    profile's ``ticket_spread`` (h200-x1-calibrated's 128x256 config) unless ``spread`` is given."""
    if spread is None:
        from ctasim.spec import load_hardware  # noqa: PLC0415
        spread = load_hardware("h200-x1-calibrated").config(128, 256).ticket_spread
    rows = []
    for bundle in paths if paths is not None else bundles():
        for (case, order), tr in first_runs(bundle):
            r = sharer_gaps(tr.tiles, spread)
            if len(r) == 0:
                continue
            q10, q50, q90 = np.percentile(r, [10, 50, 90])
            rows.append(dict(run=run_label(bundle), experiment=bundle.parent.name, case=case, order=order,
                             sharers=len(r), p10=q10, p50=q50, p90=q90, cv=float(np.std(r) / np.mean(r))))
    return pd.DataFrame(rows)


def traffic(shape: tuple[int, int] = TRAFFIC_SHAPE) -> pd.DataFrame:
    """One layer's mean HBM MiB a wave, by kind, per order of :data:`ORDERS` and law (the adopted profile's and the
    partition law)."""
    from ctasim.plan import chain_order  # noqa: PLC0415
    from ctasim.spec import load_hardware  # noqa: PLC0415

    m, h = shape
    base = as_plan_53(load_hardware("h200-x1-calibrated"))
    rows = []
    for law in ("survival", "partition"):
        hw = base.with_ticket_law(law)
        cfg = hw.config(128, 256)
        for name, g in ORDERS.items():
            order = chain_order(1, m // 128, h // 256, g)  # one layer of the chain kernel's order
            t = l2.wave_traffic(order, m, h, h, 128, 256, 2, hw.sm_count * cfg.cta_slots_per_sm, hw.l2_bytes,
                                store_elem_bytes=2, drift=0.0, cluster_m=cfg.cluster_m,
                                ticket_spread=cfg.ticket_spread, drift_form=cfg.drift_form, ticket_law=law,
                                survival=(hw.l2_survival_taken, hw.l2_survival_share))
            steady = slice(5, -2)

            def mib(a):
                return round(float(np.mean(a[steady])) / 2**20, 1)

            rows.append(dict(m=m, h=h, order=name, law=law, a_mib=mib(t.a_hbm), w_mib=mib(t.w_hbm),
                             ticket_mib=mib(t.ticket_hbm), store_mib=mib(t.store), total_mib=mib(t.hbm)))
    return pd.DataFrame(rows)


def simulated(experiment: str, pairs: list[tuple[str, str]], law: tuple[str, float] | None = None,
              per_order=None, profile=as_plan_53) -> dict:
    """The model's trace of each (case, strategy) of ``experiment`` in ``pairs``, by that key (``run_strategy``, the
    experiment's regime, no invariant check): its profile as ``profile`` (``hardware -> hardware``; default
    :func:`as_plan_53`, the profile of the dated records; None: the experiment's profile as it is) has it, under
    ticket law and tickets mainloop factor ``law`` (None: the profile's own), and ``per_order`` (``(hardware,
    strategy) -> hardware``), where given, changing it per strategy (a what-if)."""
    exp = load_experiment(experiment)
    hw = exp.hardware if profile is None else profile(exp.hardware)
    hw = hw if law is None else hw.with_ticket_law(law[0], mainloop_factor=law[1])
    cases = {c.label: c for c in expand(exp)}
    strategies = {s.name or s.kind: s for s in exp.strategies}
    return {(case, order): run_strategy(strategies[order], cases[case],
                                        hw if per_order is None else per_order(hw, order),
                                        check=False, regime=exp.regime).trace for case, order in pairs}


def modelled(experiment: str, pairs: list[tuple[str, str]], law: tuple[str, float] | None,
             per_order=None, profile=as_plan_53) -> pd.DataFrame:
    """The model's late mainloop and makespan of each (case, strategy) of ``experiment`` in ``pairs``
    (:func:`simulated`, same arguments)."""
    traces = simulated(experiment, pairs, law, per_order, profile)
    return pd.DataFrame([dict(case=case, order=order, late_us=late_median(tr.tiles, "t_compute_end"),
                              makespan_ms=tr.makespan_ns / 1e6) for (case, order), tr in traces.items()])


def penalties(d: pd.DataFrame, meas_late_ref: pd.Series) -> pd.DataFrame:
    """``d`` (case, order, late_us, makespan_ms) with each order's penalties over :data:`REFERENCE` of its case:
    ``mainloop_pct`` (late mainloop difference over ``meas_late_ref``, the measured reference's, by case) and
    ``makespan_pct``. Cases without the reference are dropped, and so are the reference's own rows."""
    ref = d[d["order"] == REFERENCE].set_index("case")
    d = d[d["case"].isin(ref.index) & (d["order"] != REFERENCE)].copy()
    d["mainloop_pct"] = (d["late_us"] - d["case"].map(ref["late_us"])) / d["case"].map(meas_late_ref) * 100
    d["makespan_pct"] = (d["makespan_ms"] / d["case"].map(ref["makespan_ms"]) - 1) * 100
    return d


def compared(meas: pd.DataFrame, pred: pd.DataFrame) -> pd.DataFrame:
    """One run's measured and one predictor's :func:`penalties` of each (case, order) beside each other (``_meas`` /
    ``_model``; both mainloop penalties over the measured reference's late mainloop) and the errors, predicted less
    measured (``mainloop_err``, ``makespan_err``; points)."""
    ref_late = meas[meas["order"] == REFERENCE].set_index("case")["late_us"]
    j = penalties(meas, ref_late).merge(penalties(pred, ref_late), on=["case", "order"], suffixes=("_meas", "_model"))
    j["mainloop_err"] = j["mainloop_pct_model"] - j["mainloop_pct_meas"]
    j["makespan_err"] = j["makespan_pct_model"] - j["makespan_pct_meas"]
    return j


def cases(paths: list[Path] | None = None, predictors: dict = PREDICTORS, per_order=None) -> pd.DataFrame:
    """Measured and predicted penalties of every order of every bundle in ``paths`` (default :func:`bundles`);
    ``per_order``: :func:`modelled`'s per-strategy profile change, for every predictor."""
    parts = []
    for bundle in paths if paths is not None else bundles():
        experiment = bundle.parent.name
        meas = measured(bundle)
        if REFERENCE not in set(meas["order"]) or meas["order"].nunique() < 2:
            continue
        base = dict(run=run_label(bundle), machine=machine(bundle), experiment=experiment)
        pairs = list(meas[["case", "order"]].itertuples(index=False, name=None))
        for label, law in predictors.items():
            parts.append(compared(meas, modelled(experiment, pairs, law, per_order)).assign(predictor=label, **base))
    cols = ["run", "machine", "experiment", "case", "order", "predictor", "late_us_meas", "late_us_model",
            "mainloop_pct_meas", "mainloop_pct_model", "makespan_pct_meas", "makespan_pct_model", "mainloop_err",
            "makespan_err"]
    return pd.concat(parts, ignore_index=True)[cols]


def summary(c: pd.DataFrame) -> pd.DataFrame:
    """Per order and predictor: cases, mean measured and predicted penalties, mean and mean |error| (points), and the
    correlation over the cases of the mainloop's error with the makespan's."""
    g = c.groupby(["order", "predictor"], sort=True)
    return pd.DataFrame({
        "cases": g.size(),
        "mainloop_meas": g["mainloop_pct_meas"].mean(), "mainloop_model": g["mainloop_pct_model"].mean(),
        "mainloop_err": g["mainloop_err"].mean(), "mainloop_abs_err": g["mainloop_err"].apply(lambda s: s.abs().mean()),
        "makespan_meas": g["makespan_pct_meas"].mean(), "makespan_model": g["makespan_pct_model"].mean(),
        "makespan_err": g["makespan_err"].mean(), "makespan_abs_err": g["makespan_err"].apply(lambda s: s.abs().mean()),
        "err_corr": g[["mainloop_err", "makespan_err"]].apply(lambda x: x["mainloop_err"].corr(x["makespan_err"])),
    }).round(2).reset_index()


def smoothed(cv: float, then=None):
    """A per-order profile change (``(hardware, strategy) -> hardware``, :func:`cases`' ``per_order``): the survival law
    averaged over a lognormal factor ``X`` on the bytes taken in (mean 1, coefficient of variation ``cv``), the
    profile's ``ticket_gap_cv`` at ``cv`` (``ctasim.l2.gap_survival``; see the module docstring), after ``then``
    (another such change) where given."""
    if not cv > 0:
        raise ValueError(f"a coefficient of variation must be > 0, got {cv}")

    def change(hw, strategy):
        return (hw if then is None else then(hw, strategy)).with_tickets(ticket_gap_cv=cv)

    return change


def smoothed_summary(cvs: list[float], adopted: pd.DataFrame) -> pd.DataFrame:
    """:func:`summary` of the adopted profile (``adopted``: its :func:`cases`, already computed) and of it under
    :func:`smoothed` at each of ``cvs``."""
    parts = [adopted]
    for cv in cvs:
        parts.append(cases(predictors={f"survival averaged, cv {cv:g}": None}, per_order=smoothed(cv)))
    return summary(pd.concat(parts, ignore_index=True))


def _cvs(text: str) -> list[float]:
    try:
        cvs = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        cvs = []
    if not cvs or not all(0 < c <= 5 for c in cvs):
        raise argparse.ArgumentTypeError(f"give coefficients of variation in (0, 5], comma-separated, got {text!r}")
    return cvs


def by_h(c: pd.DataFrame) -> pd.DataFrame:
    """Per order, predictor and H (a layer's K = N; the experiment name's ``-h<H>``, 8192 where it has none): the
    cases and the mean mainloop and makespan errors (points)."""
    h = c["experiment"].str.extract(r"-h(\d+)$")[0].fillna("8192").astype(int)
    g = c.assign(h=h).groupby(["order", "predictor", "h"], sort=True)
    return pd.DataFrame({"cases": g.size(), "mainloop_err": g["mainloop_err"].mean(),
                         "makespan_err": g["makespan_err"].mean()}).round(2).reset_index()


AS_OF = "2026-12-04"
"""The committed tables (``bench/results/posthoc-order-mainloop``) read the traced runs dated this day or before;
``--as-of`` another day (or ``all``) reads the runs committed since too."""


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_order_mainloop.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-order-mainloop")
    ap.add_argument("--smooth-cv", type=_cvs, metavar="CV,CV,...",
                    help="also smoothed-summary.csv: the survival law averaged over a distance of these spreads")
    ap.add_argument("--as-of", default=AS_OF, metavar="YYYY-MM-DD|all",
                    help=f"only the runs dated this day or before (default {AS_OF}, the committed tables' runs)")
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        paths = selected(EXPERIMENTS, "*", None if args.as_of == "all" else args.as_of)
    except ValueError as e:
        print(f"posthoc_order_mainloop: {e}", file=sys.stderr)
        return 2
    c = cases(paths)
    s = summary(c)
    gp = gaps(paths)
    tr = traffic()
    args.out.mkdir(parents=True, exist_ok=True)
    tr.to_csv(args.out / "traffic.csv", index=False)
    c.to_csv(args.out / "cases.csv", index=False, float_format="%.4f")
    by_h(c).to_csv(args.out / "by-h.csv", index=False)
    gp.to_csv(args.out / "gaps.csv", index=False, float_format="%.4f")
    s.to_csv(args.out / "summary.csv", index=False)
    with pd.option_context("display.width", 250):
        print(s.to_string(index=False))
        print()
        print(gp.groupby("order")[["sharers", "p10", "p50", "p90", "cv"]].median().round(2).to_string())
        if args.smooth_cv:
            sm = smoothed_summary(args.smooth_cv, c[c["predictor"] == ADOPTED])
            sm.to_csv(args.out / "smoothed-summary.csv", index=False)
            print()
            print(sm.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
