"""Post-hoc: can any ticket-law setting price the pairs an H100 lost at H = 8704 and an H200 kept? (no GPU)

    python bench/posthoc_h100_pairs.py [--out bench/results/posthoc-h100-pairs]

Registered plan 76's two H100 calls ran the chain kernel on 2-layer H = 8704 chains (a layer's weights 2.9 times the
H100's L2) and its pairs came out 1.2-1.6 times groups of 8 (every SM's late mainloop 50-90% over groups of 8 at M >=
8192, the 24 small-GPC SMs the least slowed); registered plan 53's H200 ran the same cases (2.4 times its L2) and lost
7-8%. Both profiles priced the H100's pairs as keeping most of the reuse (-11 to -33%). This prices the chain's groups
of 8, groups of 4 and pairs of :data:`CALLS` under each GPU's profile (``h100-x1-datasheet``, ``h200-x1-calibrated``)
and the ticket-law settings of :data:`VARIANTS`:

* ``profile``: as committed (the survival law, the sharers' gap spread 0.74, the touched bytes 1.3);
* ``threshold``, ``partition``: the other two ticket laws (``Hardware.with_ticket_law``);
* ``tickets twin``: registered plan 66's H100 change (the gap spread 1.222, the ticket spread twice 0.0189);
* ``spread = pairs' pace range``: the ticket spread set to the call's traced pairs' median pace range
  (``ctasim.calibration.cta_pace_range``; bench/posthoc_cta_paces.py), every order;
* ``reach floor 0.03``, ``0.06``: every later sharer's reach at least this many tile times (a what-if of sharers that
  part within a tile, run by wrapping ``ctasim.l2._survival_rereads``; no profile field does this).

``what-if.csv``: per GPU, call, case, order and variant the measured and predicted makespans and the error (%);
``summary.csv``: the MAPE per GPU, order and variant. Every run here had been seen; nothing is put into a profile.
~15 s on 2 cores.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import posthoc_order_mainloop as P  # noqa: E402

from ctasim import calibration as C  # noqa: E402
from ctasim import l2  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402

EXPERIMENT = "reg53-chain-law-h8704"
CALLS = {"H100": (ROOT / "bench/results/hw-h100/2026-12-06-registered76-1gpu",
                  ROOT / "bench/results/hw-h100/2026-12-06-registered76-1gpu-run2"),
         "H200": (P.HW / "2026-12-04-registered53-1gpu",)}
"""GPU -> the committed calls that ran :data:`EXPERIMENT` with traces."""
PROFILES = {"H100": "h100-x1-datasheet", "H200": "h200-x1-calibrated"}
ORDERS = ("intragpu", "intragpu-g4", "intragpu-g2")
PAIRS = "intragpu-g2"
FLOORS = (0.03, 0.06)
VARIANTS = ("profile", "threshold", "partition", "tickets twin", "spread = pairs' pace range",
            *(f"reach floor {f:g}" for f in FLOORS))


@contextlib.contextmanager
def reach_floor(floor: float | None):
    """Within the block, every later sharer's reach under the survival law at least ``floor`` tile times."""
    if not floor:
        yield
        return
    plain = l2._survival_rereads

    def floored(gw, nbytes, reach, *args, **kwargs):
        return plain(gw, nbytes, np.maximum(reach, floor), *args, **kwargs)

    l2._survival_rereads = floored
    try:
        yield
    finally:
        l2._survival_rereads = plain


def pace(call: Path) -> float:
    """The median over M of the call's traced pairs' CTA pace range (tile times)."""
    runs = dict(P.first_runs(call / EXPERIMENT / P.BUNDLE))
    return float(np.median([C.cta_pace_range(tr.tiles) for (_, order), tr in runs.items() if order == PAIRS]))


def variant(hw, name: str, call: Path):
    """``hw`` as ``name`` of :data:`VARIANTS` sets it, and the reach floor (None: none)."""
    if name in ("threshold", "partition"):
        return hw.with_ticket_law(name), None
    if name == "tickets twin":
        return hw.with_tickets(ticket_gap_cv=1.222, ticket_spread=2 * 0.0189), None
    if name == "spread = pairs' pace range":
        return hw.with_tickets(ticket_spread=pace(call)), None
    if name.startswith("reach floor"):
        return hw, float(name.split()[-1])
    return hw, None


def what_if(calls: dict = CALLS, variants=VARIANTS, cases: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Per GPU, call, case (of ``cases``; None: every one), order and variant: the measured and predicted makespans
    and the error (%)."""
    rows = []
    for gpu, found in calls.items():
        base = load_hardware(PROFILES[gpu])
        for call in found:
            meas = pd.read_csv(call / EXPERIMENT / "results.csv").set_index(["case", "strategy"])["makespan_ms"]
            pairs = [(c, o) for c, o in meas.index if o in ORDERS and (cases is None or c in cases)]
            for name in variants:
                hw, floor = variant(base, name, call)
                with reach_floor(floor):
                    m = P.modelled(EXPERIMENT, pairs, None, profile=lambda _h, hw=hw: hw)
                for r in m.itertuples(index=False):
                    rows.append(dict(gpu=gpu, call=call.name, case=r.case, order=r.order, variant=name,
                                     measured_ms=meas[(r.case, r.order)], predicted_ms=r.makespan_ms))
    d = pd.DataFrame(rows)
    d["error_pct"] = (d["predicted_ms"] / d["measured_ms"] - 1) * 100
    return d


def summary(d: pd.DataFrame) -> pd.DataFrame:
    s = d.assign(abs_err=d["error_pct"].abs()).pivot_table(index=["gpu", "variant"], columns="order",
                                                           values="abs_err", aggfunc="mean", sort=False)
    return s[list(ORDERS)].round(2).reset_index().rename_axis(columns=None)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench/results/posthoc-h100-pairs"))
    args = parse_outputs(ap, argv, folders=["--out"])
    out = Path(args.out)
    d = what_if()
    out.mkdir(parents=True, exist_ok=True)
    d.round(4).to_csv(out / "what-if.csv", index=False)
    s = summary(d)
    s.to_csv(out / "summary.csv", index=False)
    print(s.to_string(index=False))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
