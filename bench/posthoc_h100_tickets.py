"""Post-hoc: are an H100's tickets spread as an H200's? (no GPU)

    python bench/posthoc_h100_tickets.py [--out bench/results/posthoc-h100-tickets]

Registered plans 64 and 65 found the H100s losing row order's and pairs' reuse where ``h100-x1-datasheet`` keeps it,
and neither the L2's survival (probed: the H200's in L2 sizes) nor one smaller L2 prices that
(``bench/posthoc_h100_capacity.py``). The ticket laws price a later sharer of a W panel by the bytes the L2 takes in
between, at a reach set by the profile's ``ticket_spread`` and, under the survival law, spread about it by
``ticket_gap_cv`` (both measured on H200s). This script asks four things of the committed H100 data:

* ``gaps.csv``: every traced chain-kernel run of plans 64's and 65's experiments, H100 and H200 (the H200s' committed
  traced runs of the same experiments), read as ``bench/posthoc_order_mainloop.py`` reads them: each later sharer's
  measured time after the sharer before over the model's reach (the H200 profile's ``ticket_spread``), per run, case
  and order (10th, 50th and 90th percentiles, coefficient of variation), and the tickets' spread per window
  (``spread``: ``ctasim.calibration.span_rate``, as a profile's ``ticket_spread`` is read);
* ``mainloop.csv``: the same H100 runs' penalties over groups of 8 (``bench/posthoc_order_mainloop.py``'s
  ``compared``: the late mainloop's and the makespan's, measured and under ``h100-x1-datasheet``), per run, case and
  order: where the loss is (the tiles' mainloop or around it) and whether the model's two states (reuse kept or
  thrashed) bracket it;
* ``probes.csv``: ``ctahw calibrate``'s ticket and gap traces on every machine that ran them (:data:`PROBES`: the
  median ``spread_per_window`` of the four ticket traces, the median ``gap_cv`` of the two traces in pairs);
* ``whatif.csv`` and ``whatif-summary.csv``: ``h100-x1-datasheet`` with the H100 probes' ``ticket_gap_cv``
  (``ctasim.profiles.H100_TICKET_GAP_CV``, their median), with twice the reach (``ticket_spread`` times 2), with both
  (the derived twin ``h100-x1-datasheet-tickets``, ``ctasim.profiles.H100_REACH_FACTOR``), with the probes' gap
  spread and 3 or 4 times the reach (:data:`WHATIFS`), and with each order's own traced spread (:data:`PER_ORDER`),
  predicting both plans' experiments against every H100 call that ran them (MAPE per call and class of strategy).

Every figure is post-hoc: the what-ifs were chosen after the runs and the traces were seen. Left out: a law that
prices a reach that grows with the misses themselves (a slower tile spreads the tickets), which is what the traces
point at; the H200s' what-ifs (their profile is judged elsewhere).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import posthoc_h100_capacity as pc  # noqa: E402
import posthoc_h100_exposed as ph  # noqa: E402
import posthoc_order_mainloop as pom  # noqa: E402
import posthoc_spread_by_order as psbo  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

H100 = ROOT / "bench/results/hw-h100"
PROBES = {"GPU-291847ac": ("H100", H100 / "2026-12-05-row-groups-gaps/gaps/probes"),
          "GPU-e4628d39": ("H100", H100 / "2026-12-05-ticket-gaps-GPU-e4628d39/probes"),
          "GPU-ee4f01a5": ("H200", ROOT / "bench/results/hw/2026-12-05-ticket-gaps-1gpu/probes"),
          "GPU-fa3bc407": ("H200", ROOT / "bench/results/hw/2026-12-05-registered62-1gpu/gaps/probes")}
"""Machine -> (GPU, the folder of ``ctahw calibrate``'s ticket and gap traces)."""
WHATIFS = ("gap cv of the H100 probes", "reach x2", "h100-x1-datasheet-tickets", "gap cv, reach x3",
           "gap cv, reach x4")
PER_ORDER = "gap cv, each order's traced spread"
"""The what-if that prices each order with the H100 probes' gap spread and that order's own ``ticket_spread`` as the
H100 traces read it (the median ``spread`` of ``gaps.csv`` over the H100 runs of the order): what one spread per
order, known exactly, would give (:func:`per_order`)."""


def gap_bundles() -> dict[str, list[Path]]:
    """The traced chain-kernel runs of plans 64's and 65's experiments, per GPU."""
    exps = [e for e in pc.EXPERIMENTS if "reference" not in e]
    h100 = sorted(p for e in exps for p in H100.glob(f"*/{e}/{pom.BUNDLE}") if p.parent.parent.name <= pc.THROUGH)
    return {"H100": h100, "H200": pom.bundles(experiments=tuple(exps))}


def gaps() -> pd.DataFrame:
    """:func:`posthoc_order_mainloop.gaps` of every traced run, per GPU, with each run's ticket spread per window
    (``spread``: ``posthoc_spread_by_order.spreads``' span rate, as a profile's ``ticket_spread`` is read)."""
    keys = ["run", "experiment", "case", "order"]
    parts = [pom.gaps(paths).merge(psbo.spreads(paths)[keys + ["span_rate"]], on=keys, how="left").assign(gpu=gpu)
             for gpu, paths in gap_bundles().items()]
    g = pd.concat(parts, ignore_index=True).rename(columns={"span_rate": "spread"})
    g["h"] = g["experiment"].str.extract(r"h(\d+)$", expand=False).astype(int)
    return g[["gpu", "run", "experiment", "h", "case", "order", "sharers", "p10", "p50", "p90", "cv", "spread"]]


def bundle_mainloop(bundle: Path, hw) -> pd.DataFrame:
    """One traced run's measured and modelled penalties over groups of 8 (``posthoc_order_mainloop.compared``), the
    model under ``hw`` (a Hardware) in place of the experiment's profile."""
    meas = pom.measured(bundle)
    pairs = list(meas[["case", "order"]].itertuples(index=False, name=None))
    mod = pom.modelled(bundle.parent.name, pairs, None, profile=lambda _hw: hw)
    return pom.compared(meas, mod).assign(run=pom.run_label(bundle), experiment=bundle.parent.name)


def mainloop() -> pd.DataFrame:
    """:func:`bundle_mainloop` of every traced H100 run, the model ``h100-x1-datasheet`` as registered."""
    hw = ph.p64.as_registered(pc.PROFILE)
    c = pd.concat([bundle_mainloop(b, hw) for b in gap_bundles()["H100"]], ignore_index=True)
    c["h"] = c["experiment"].str.extract(r"h(\d+)$", expand=False).astype(int)
    return c[["run", "experiment", "h", "case", "order", "mainloop_pct_meas", "mainloop_pct_model",
              "makespan_pct_meas", "makespan_pct_model"]]


def probes() -> pd.DataFrame:
    rows = []
    for machine, (gpu, d) in PROBES.items():
        t, g = pd.read_csv(d / "tickets.csv"), pd.read_csv(d / "ticket-gaps.csv")
        rows.append(dict(machine=machine, gpu=gpu, ticket_spread=float(np.median(t["spread_per_window"])),
                         ticket_gap_cv=float(np.median(g["gap_cv"])), folder=str(d.relative_to(ROOT))))
    return pd.DataFrame(rows)


def whatif_profiles() -> dict:
    """The datasheet profile and :data:`WHATIFS`, by name (the third is the derived twin as committed)."""
    from ctasim.profiles import H100_REACH_FACTOR  # noqa: PLC0415
    from ctasim.profiles import H100_TICKET_GAP_CV as cv  # noqa: PLC0415
    base = ph.p64.as_registered(pc.PROFILE)
    spread = base.config(128, 256).ticket_spread
    return {pc.PROFILE: base,
            WHATIFS[0]: base.with_tickets(ticket_gap_cv=cv),
            WHATIFS[1]: base.with_tickets(ticket_spread=H100_REACH_FACTOR * spread),
            WHATIFS[2]: ph.p64.as_registered(WHATIFS[2]),
            WHATIFS[3]: base.with_tickets(ticket_gap_cv=cv, ticket_spread=3 * spread),
            WHATIFS[4]: base.with_tickets(ticket_gap_cv=cv, ticket_spread=4 * spread)}


def per_order(g: pd.DataFrame, experiments=pc.EXPERIMENTS) -> pd.DataFrame:
    """:data:`PER_ORDER`'s predictions: each chain-kernel order (and sequential, which no ticket field moves) from
    the datasheet profile with that order's H100 spread (from ``g``, :func:`gaps`) and the probes' gap spread."""
    from ctasim.profiles import H100_TICKET_GAP_CV as cv  # noqa: PLC0415
    base = ph.p64.as_registered(pc.PROFILE)
    spread = g[g["gpu"] == "H100"].groupby("order")["spread"].median()
    parts = []
    for order, sp in spread.items():
        p = predicted({PER_ORDER: base.with_tickets(ticket_gap_cv=cv, ticket_spread=float(sp))}, experiments)
        parts.append(p[p["strategy"].isin([order, "sequential"])])
    return pd.concat(parts, ignore_index=True).drop_duplicates(["experiment", "case", "strategy"])


def predicted(profiles: dict, experiments=pc.EXPERIMENTS) -> pd.DataFrame:
    """``posthoc_h100_exposed.model_rows`` of ``profiles`` (label -> Hardware) over ``experiments``."""
    return ph.model_rows(profiles, experiments)


def whatif(pred: pd.DataFrame, root: Path = H100) -> pd.DataFrame:
    """Every H100 call's timed cases (up to ``posthoc_h100_capacity.THROUGH``) against each what-if
    (``posthoc_h100_exposed.call_cases``)."""
    c = ph.call_cases(pred, pc.through(root), pc.EXPERIMENTS)
    return c[["call", "experiment", "case", "strategy", "class", "profile", "measured_ms", "predicted_ms",
              "error_pct"]]


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_h100_tickets.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-h100-tickets")
    args = parse_outputs(ap, argv, folders=("--out",))
    g, pr, ml = gaps(), probes(), mainloop()
    c = whatif(pd.concat([predicted(whatif_profiles()), per_order(g)], ignore_index=True))
    s = ph.summary(c)
    args.out.mkdir(parents=True, exist_ok=True)
    g.to_csv(args.out / "gaps.csv", index=False, float_format="%.4f")
    ml.to_csv(args.out / "mainloop.csv", index=False, float_format="%.4f")
    pr.to_csv(args.out / "probes.csv", index=False, float_format="%.4f")
    c.to_csv(args.out / "whatif.csv", index=False, float_format="%.4f")
    s.to_csv(args.out / "whatif-summary.csv", index=False, float_format="%.4f")
    with pd.option_context("display.width", 200):
        print(pr.drop(columns="folder").round(3).to_string(index=False))
        print(g.groupby(["gpu", "order"])[["p50", "p90", "cv", "spread"]].median().round(4))
        print(s.pivot_table(index="class", columns="profile", values="mape_pct",
                            aggfunc=lambda x: f"{x.min():.2f}-{x.max():.2f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
