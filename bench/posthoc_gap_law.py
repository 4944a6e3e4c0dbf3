"""Post-hoc: the survival ticket law with the sharers' measured gap spread and the lines touched in between (no GPU).

    python bench/posthoc_gap_law.py [--out bench/results/posthoc-gap-law] [--runs GLOB] [--as-of YYYY-MM-DD|all]

Registered plans 55-57 (docs/validation.md) found where the adopted profile's ticket law (``"survival"``: a later
sharer of a panel misses what the measured L2 survival curve loses after the bytes taken in over one reach) misses
the chain kernel's tile orders: its loss of reuse flips from none to all where the hardware's grows gradually, and
the L2 pushes a line out by the lines hit in between too, not only by the bytes taken in (the probe's hot set). Two
refinements of the law (``ctasim.l2.gap_survival``, ``KernelConfig.ticket_gap_cv`` / ``ticket_touched``) say so:

* ``ticket_gap_cv``: the sharers' times after the sharer before are spread about the reach (lognormal, mean the
  reach), as the traces measure (``bench/posthoc_order_mainloop.py``, ``gaps.csv``: the median coefficient of
  variation over the pairs' and row order's cases is 0.74);
* ``ticket_touched``: the bytes pushing a line out per byte taken in.

This prices every committed traced chain-kernel run (``posthoc_order_mainloop.bundles``; ``--runs`` a glob on the run
folder's name to take fewer) under the adopted profile and under it with the gap spread 0.74 and ``ticket_touched``
1.0, 1.3 and 1.6 (:data:`PREDICTORS`), and writes ``cases.csv`` (``posthoc_order_mainloop.cases``'s columns, plus
``seen``: ``before`` for the runs before 2026-12-05, ``plans 54-56`` for that day's) and ``summary.csv``
(``posthoc_order_mainloop.summary`` per ``seen`` and over all). Every figure is post-hoc: the runs had been seen, and
1.3 was chosen from the three after this table was first made. ``h200-x1-calibrated-gaps`` is the profile with
0.74 and 1.3, registered plan 58's twin; by plan 58's rule h200-x1-calibrated took both on 2026-12-05, so the profile
as it is now is the ``touched 1.3`` predictor, and ``adopted`` is the profile as plan 53 adopted it
(``posthoc_order_mainloop.as_plan_53``). ~3 minutes on every run.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import posthoc_order_mainloop as pom  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

GAP_CV = 0.74
"""The median coefficient of variation of the sharers' gaps over the pairs' and row order's traced cases (gaps.csv)."""
TOUCHED = (1.0, 1.3, 1.6)
PREDICTORS = {"adopted (survival, 1.019)": None,
              **{f"gap cv {GAP_CV:g}, touched {t:g}": (GAP_CV, t) for t in TOUCHED}}
"""Label -> (ticket_gap_cv, ticket_touched) on the profile's ticket-scheduled configs (None: the profile as plan 53
adopted it, ``posthoc_order_mainloop.as_plan_53``)."""
SEEN_BEFORE = "2026-12-05"
"""Runs in folders named before this were seen before registered plans 54-57 were measured."""

AS_OF = "2026-12-05"
"""The committed tables (``bench/results/posthoc-gap-law``) read the traced runs dated this day or before; ``--as-of``
another day (or ``all``) reads the runs committed since too."""


def refined(gap_cv: float, touched: float):
    """A ``posthoc_order_mainloop.modelled`` ``per_order`` change: every strategy's profile with the refinements on
    its ticket-scheduled configs."""
    def change(hw, _strategy):
        return hw.with_tickets(ticket_gap_cv=gap_cv, ticket_touched=touched)
    return change


def cases(paths: list[Path]) -> pd.DataFrame:
    parts = []
    for label, setting in PREDICTORS.items():
        per_order = None if setting is None else refined(*setting)
        c = pom.cases(paths, predictors={label: None}, per_order=per_order)
        parts.append(c)
    c = pd.concat(parts, ignore_index=True)
    c["seen"] = ["before" if r < SEEN_BEFORE else "plans 54-56" for r in c["run"]]
    return c


def summary(c: pd.DataFrame) -> pd.DataFrame:
    parts = [pom.summary(c).assign(seen="all")]
    for seen, g in c.groupby("seen", sort=True):
        parts.append(pom.summary(g).assign(seen=seen))
    return pd.concat(parts, ignore_index=True)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_gap_law.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-gap-law")
    ap.add_argument("--runs", default="*", help="a glob on the run folder's name (default: every traced run)")
    ap.add_argument("--as-of", default=AS_OF, metavar="YYYY-MM-DD|all",
                    help=f"only the runs dated this day or before (default {AS_OF}, the committed tables' runs)")
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        paths = pom.selected(pom.EXPERIMENTS, args.runs, None if args.as_of == "all" else args.as_of)
    except ValueError as e:
        print(f"posthoc_gap_law: {e}", file=sys.stderr)
        return 2
    if not paths:
        print(f"posthoc_gap_law: no traced chain-kernel run matches {args.runs!r}"
              f"{'' if args.as_of == 'all' else f' dated {args.as_of} or before'}",
              file=sys.stderr)
        return 2
    c = cases(paths)
    s = summary(c)
    args.out.mkdir(parents=True, exist_ok=True)
    c.round(4).to_csv(args.out / "cases.csv", index=False)
    s.to_csv(args.out / "summary.csv", index=False)
    with pd.option_context("display.width", 200):
        print(s[["seen", "order", "predictor", "cases", "mainloop_err", "mainloop_abs_err", "makespan_err",
                 "makespan_abs_err"]].to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
