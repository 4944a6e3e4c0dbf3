"""Post-hoc: what spreads the chain kernel's tickets -- the CTAs' own paces, by order, on H200s and H100s (no GPU).

    python bench/posthoc_cta_paces.py [--out bench/results/posthoc-cta-paces]

The ticket laws (``ctasim.l2.ticket_rereads``) take one spread per kernel config: the growth per window of the span of
a window's start times (``ctasim.calibration.span_rate``, 0.0189 tile times on the H200s' groups of 8). Plans 66 and 75
found an H100's pairs and row order spreading 2.5-10 times as fast, an H200's not, and the candidate reading was a
spread that grows with an order's misses. This reads every committed traced chain-kernel run (the experiments of
``posthoc_order_mainloop.EXPERIMENTS``, plans 58's and 59's, on the H200s of ``bench/results/hw`` and the H100s of
``bench/results/hw-h100``, the calls up to :data:`THROUGH`; its first traced run of each case and order) for:

* ``span_rate``, as ``ctahw calibrate`` measures it;
* ``pace_range``: the range of the CTAs' paces (``ctasim.calibration.cta_pace_range``: each CTA's mean time from one
  tile to its next, in median mainloops). A grid whose CTAs each keep their pace spreads by exactly this a window;
  tiles' noise alone spreads as the square root of the windows;
* ``penalty``: the run's median mainloop over the same call's groups of 8 at the case, less 1 (what the order loses);
* ``lead24``: how much sooner the 24 quickest SMs start their next tile than the rest's median (the SM groups of
  docs/validation.md, "Row order keeps or loses its reuse by fixed groups of SMs", were 24 SMs);
* ``span_wo_quick24`` and ``span_wo_slow24``: the span rate of the run's tiles on all but its 24 quickest or slowest
  SMs.

``paces.csv``: one row per traced (run, case, order); ``by-order.csv``: the medians per GPU kind and order, the median
of span_rate / pace_range and the correlation of span_rate and pace_range with the penalty within the order. Every
run here had been seen; nothing is put into a profile. ~15 s.
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

CALLS = {"H200": P.HW, "H100": ROOT / "bench/results/hw-h100"}
"""GPU kind -> the folder of its calls."""
EXPERIMENTS = P.EXPERIMENTS + ("reg58-gap-law-*", "reg59-adopted-*")
"""The chain-kernel experiments read (plans 9-56's, 58's and 59's)."""
THROUGH = {"H200": "2026-12-06-registered67-68-1gpu", "H100": "2026-12-06-registered75-1gpu"}
"""GPU kind -> the last call folder (in name order) the committed tables read."""
GROUP = 24
"""The SMs counted in ``lead24`` and left out in ``span_wo_*``: the size of the H200s' and H100s' fixed SM groups."""


def bundles(calls: dict = CALLS, through: dict | None = THROUGH) -> list[tuple[str, Path]]:
    """(GPU kind, bundle) of every committed chain-kernel trace bundle, up to ``through[kind]`` (None: every call)."""
    out = []
    for kind, root in calls.items():
        for b in P.bundles(root, EXPERIMENTS):
            call = b.relative_to(root).parts[0]
            if through is None or call <= through[kind]:
                out.append((kind, b))
    return out


def _without(tiles: pd.DataFrame, sms) -> float | None:
    keep = tiles[~tiles["sm"].isin(sms)]
    return C.span_rate(C.window_spans(keep, int(keep["cta"].nunique())))


def paces(found: list[tuple[str, Path]] | None = None) -> pd.DataFrame:
    """One row per traced (run, experiment, case, order) of the chain kernel's orders
    (``posthoc_order_mainloop.ORDERS``)."""
    rows = []
    for kind, bundle in bundles() if found is None else found:
        for (case, order), tr in P.first_runs(bundle):
            if order not in P.ORDERS:
                continue
            t = tr.tiles
            by_sm = C.cta_cycles(t.assign(cta=t["sm"]))
            quick, slow = by_sm.nsmallest(GROUP).index, by_sm.nlargest(GROUP).index
            rows.append(dict(gpu=kind, run=P.run_label(bundle), machine=P.machine(bundle),
                             experiment=bundle.parent.name, case=case, order=order,
                             mainloop_ns=float(np.median(t["t_mainloop_end"] - t["t_acquire"])),
                             span_rate=C.span_rate(C.window_spans(t, P.SLOTS)), pace_range=C.cta_pace_range(t),
                             lead24=float(by_sm.drop(quick).median() - by_sm[quick].median()),
                             span_wo_quick24=_without(t, quick), span_wo_slow24=_without(t, slow)))
    d = pd.DataFrame(rows)
    ref = d[d["order"] == P.REFERENCE].set_index(["run", "experiment", "case"])["mainloop_ns"]
    d["penalty"] = d["mainloop_ns"] / d.set_index(["run", "experiment", "case"]).index.map(ref).to_numpy() - 1
    return d


def by_order(d: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (kind, order), g in d.groupby(["gpu", "order"]):
        f = g.dropna(subset=["span_rate"])
        rows.append(dict(gpu=kind, order=order, runs=len(g), calls=g["run"].nunique(),
                         penalty=g["penalty"].median(), span_rate=f["span_rate"].median(),
                         pace_range=g["pace_range"].median(),
                         span_over_range=(f["span_rate"] / f["pace_range"]).median(),
                         lead24=g["lead24"].median(), span_wo_quick24=g["span_wo_quick24"].median(),
                         span_wo_slow24=g["span_wo_slow24"].median(),
                         corr_span_penalty=f["span_rate"].corr(f["penalty"]) if len(f) > 2 else np.nan,
                         corr_range_penalty=g["pace_range"].corr(g["penalty"]) if len(g) > 2 else np.nan))
    return pd.DataFrame(rows).round(4)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench/results/posthoc-cta-paces"))
    args = parse_outputs(ap, argv, folders=["--out"])
    out = Path(args.out)
    d = paces()
    if d.empty:
        ap.error("no traced chain-kernel run found")
    out.mkdir(parents=True, exist_ok=True)
    d.round(6).to_csv(out / "paces.csv", index=False)
    s = by_order(d)
    s.to_csv(out / "by-order.csv", index=False)
    f = d.dropna(subset=["span_rate"])
    print(s.to_string(index=False))
    print(f"span_rate / pace_range over {len(f)} runs: median {np.median(f.span_rate / f.pace_range):.2f}, "
          f"correlation {f.span_rate.corr(f.pace_range):.2f}; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
