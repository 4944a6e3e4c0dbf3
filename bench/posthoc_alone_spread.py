"""Post-hoc: do the producers alone that climb wave by wave spread more? Start-time spread against tile time (no GPU)

    python bench/posthoc_alone_spread.py [--out bench/results/posthoc-alone-spread]

The model prices a one-CTA-per-tile grid's later sharers of a panel by how far the grid's start times have spread
(``ctasim.l2.ticket_rereads``: the spread grows a round and the later sharer misses once the bytes taken in meanwhile
pass the L2). Registered plans 85 and 86's H100 calls ran four producers alone; the row-block pairs (``_w21``) climbed
wave by wave while the grouped producers (``_w21g4``, ``_w21g8``) held their level. Here each traced run of median span
(``OUT_H<h>/percta-tiles-16384-<variant>.csv.gz``) gives, per producer and H, the growth of its start-time spread a
window of 132 tiles (``ctasim.calibration.span_rate`` of ``window_spans``, in median mainloops) and its span at window
10, beside its tile time (each wave's median, acquire to compute end) in waves 2-4 and over the full waves from 10
(``climb_pct``: how much the later waves are over waves 2-4).

Writes ``spread.csv``. Every figure is post-hoc (the calls were seen). Left out: the other committed producer-alone
calls (plans 13, 14, 83, 84: other H, two designs), and any cause of the climb other than the spread.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

CALLS = {"plan 85": ("bench/results/hw-h100/2026-12-07-registered85-1gpu", (9216, 10240, 11264, 12288)),
         "plan 86": ("bench/results/hw-h100/2026-12-07-registered86-1gpu", (6144, 7168, 13312, 14336))}
"""The committed calls and their H (M = 16384, the four producers of plan 85's VARIANTS)."""
WINDOW = 10
"""The window (and first wave) of the later figures."""
OUT = ROOT / "bench/results/posthoc-alone-spread"


def spread() -> pd.DataFrame:
    import plan85_grouped_kept as p85  # noqa: PLC0415
    from ctasim.calibration import span_rate, window_spans  # noqa: PLC0415
    from percta_predict import SLOTS, full_waves, wave_medians  # noqa: PLC0415

    rows = []
    for call, (folder, hs) in CALLS.items():
        for h in hs:
            for v in p85.VARIANTS:
                t = pd.read_csv(ROOT / folder / f"OUT_H{h}" / f"percta-tiles-{p85.M}-{v}.csv.gz")
                spans = window_spans(t, SLOTS)
                w = full_waves(wave_medians(t), len(t)).set_index("wave")["measured"]
                early, late = float(w.loc[[2, 3, 4]].mean()), float(w[w.index >= WINDOW].mean())
                rate = span_rate(spans)
                rows.append(dict(call=call, h=h, variant=v, span_rate=np.nan if rate is None else rate,
                                 span_at_10=float(spans[WINDOW]), waves_2_4_us=early, late_us=late,
                                 climb_pct=(late / early - 1) * 100))
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_alone_spread.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = parse_outputs(ap, argv, folders=("--out",))
    d = spread()
    args.out.mkdir(parents=True, exist_ok=True)
    d.to_csv(args.out / "spread.csv", index=False, float_format="%.4f")
    with pd.option_context("display.width", 200):
        print(d.round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
