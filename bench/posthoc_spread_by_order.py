"""Post-hoc: the chain kernel's ticket spread by tile order, and the order effect with each order's own spread (no GPU).

    python bench/posthoc_spread_by_order.py [--out bench/results/posthoc-spread-by-order] [--no-what-if]
    python bench/posthoc_spread_by_order.py --bundles BUNDLE [BUNDLE ...] --out DIR     (those runs' spreads only)

The profile's ``ticket_spread`` (0.0189 tile times a round) was measured on the chain kernel's default order, groups of
8 (registered plan 3's traces, ``bench/ticket_spread.py``), and the model gives it to every order. This measures it
per order on every committed traced chain-kernel run that ``bench/posthoc_order_mainloop.py`` reads (13 runs, 13
machines; ``ctasim.calibration.window_spans`` and ``span_rate``, as ``ctahw calibrate`` and ``bench/ticket_spread.py``
measure it): ``spread.csv``, one row per traced (run, case, order), and ``by-order.csv``, the median and mean per
order.

Then, as a what-if (``what-if.csv``, ``what-if-summary.csv``), the order penalties over groups of 8 of
``bench/posthoc_order_mainloop.py`` with the profile as plan 53 adopted it (``posthoc_order_mainloop.as_plan_53``) given
each order's median spread in place of its one value, alone and with the survival curve averaged over a spread distance
(cv 0.5, that script's ``--smooth-cv``), beside that profile unchanged. Every run here had been seen: the spreads are
measured, the what-if is post-hoc and was not put into the profile. ~1 min on 2 cores (``--no-what-if``: the spreads
alone, a few seconds). ``--bundles`` measures the spreads of the trace bundles named instead (any call's, an H100's
among them) and runs no what-if.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import posthoc_order_mainloop as P  # noqa: E402

from ctasim import calibration as C  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

SMOOTH_CV = 0.5
"""The spread distance's coefficient of variation in the smoothed what-if (``posthoc_order_mainloop.smoothed``)."""


def spreads(paths: list[Path] | None = None) -> pd.DataFrame:
    """Per traced (run, case, order) of the bundles (default ``posthoc_order_mainloop.bundles``): the span rate (None
    where too few windows) and the mean span of windows 1-4, in tile times."""
    rows = []
    for bundle in paths if paths is not None else P.bundles():
        for (case, order), tr in P.first_runs(bundle):
            sp = C.window_spans(tr.tiles, P.SLOTS)
            rows.append(dict(run=P.run_label(bundle), experiment=bundle.parent.name, case=case, order=order,
                             windows=len(sp), span_rate=C.span_rate(sp),
                             early_span=float(np.mean(sp[1:5])) if len(sp) > 5 else np.nan))
    return pd.DataFrame(rows)


def by_order(s: pd.DataFrame) -> pd.DataFrame:
    g = s.groupby("order")
    return pd.DataFrame({"traces": g.size(), "fitted": g["span_rate"].count(),
                         "span_rate_median": g["span_rate"].median(), "span_rate_mean": g["span_rate"].mean(),
                         "early_span_median": g["early_span"].median()}).round(4).reset_index()


def with_spread(hw, spread: float | None):
    """``hw`` with every ticket-scheduled config's ``ticket_spread`` set to ``spread`` (None: as it is)."""
    if spread is None:
        return hw
    return hw.with_tickets(ticket_spread=spread)


def what_if(spread: dict[str, float], paths: list[Path] | None = None) -> pd.DataFrame:
    """The order penalties (``posthoc_order_mainloop.cases``) under three predictors: the adopted profile, each order at
    its own spread, and that with the survival curve averaged over a spread distance (:data:`SMOOTH_CV`)."""
    def own(hw, order):
        return with_spread(hw, spread.get(order))

    parts = []
    for label, per_order, cv in (("adopted", None, None), ("own spread per order", own, None),
                                 (f"own spread, survival averaged cv {SMOOTH_CV:g}", own, SMOOTH_CV)):
        parts.append(P.cases(paths, {label: None}, per_order=P.smoothed(cv, then=per_order) if cv else per_order))
    return pd.concat(parts, ignore_index=True)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_spread_by_order.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-spread-by-order")
    ap.add_argument("--no-what-if", action="store_true", help="measure the spreads only (no simulation)")
    ap.add_argument("--bundles", type=Path, nargs="+", metavar="BUNDLE",
                    help="measure these trace bundles' spreads instead (no what-if)")
    args = parse_outputs(ap, argv, folders=["--out"])
    for b in args.bundles or ():
        if not b.is_file():
            ap.error(f"--bundles: no trace bundle {b}")
    try:
        s = spreads([b.resolve() for b in args.bundles] if args.bundles else None)
    except (OSError, KeyError, ValueError) as e:
        ap.error(f"--bundles: not a chain-kernel trace bundle ({e})")
    b = by_order(s)
    args.out.mkdir(parents=True, exist_ok=True)
    s.to_csv(args.out / "spread.csv", index=False, float_format="%.6g")
    b.to_csv(args.out / "by-order.csv", index=False)
    pd.set_option("display.width", 200)
    print(b.to_string(index=False))
    if not args.no_what_if and not args.bundles:
        w = what_if(dict(zip(b["order"], b["span_rate_median"])))
        w.to_csv(args.out / "what-if.csv", index=False, float_format="%.6g")
        ws = P.summary(w)
        ws.to_csv(args.out / "what-if-summary.csv", index=False)
        print()
        print(ws.to_string(index=False))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
