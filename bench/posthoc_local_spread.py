"""Post-hoc: the producers alone on one GPU at the one-GPU tickets' spread, every committed producer-alone call (no GPU)

    python bench/posthoc_local_spread.py [--out bench/results/posthoc-local-spread]

The mechanism profiles gave a one-CTA-per-tile grid the ``ctapipe`` family's ticket spread (0.1292 tile times a wave,
fitted on 2xH200 producers whose stores and signals cross NVLink); the chain kernel's tickets on one GPU spread 0.0189.
The producer-alone calls (``ctahw.percta``: the producer on one GPU, no consumer) were priced at the family's spread
until registered plan 88's adoption (``ctasim.costs.alone_ticket_spread``), which this reading led to.
Here, per committed call of the four producers of plan 85's VARIANTS at M = 12288 or 16384 (:data:`CALLS`: registered
plans 13, 14, 83-86 and the first probe, three H200s' and four H100s'), each traced run of median span (the tile table
``percta-tiles-<m>-<variant>.csv.gz``) gives its spread (``ctasim.calibration.span_rate`` of its windows of 132 tiles,
in median mainloops a wave) and its mean over full waves >= 2 of each wave's median tile time; beside it the GPU's
mechanism profile's prediction of that mean (``plan85_grouped_kept.wave_prediction``) under ``flat`` (no memory
hierarchy), ``lockstep`` (spread 0), ``profile`` (the family's spread) and ``local`` (the 128x256 config's, the
one-GPU tickets'): plan 88's predictors, on the profiles as plan 88 registered them; and ``now_lockstep``,
``now_local`` and ``now_family``: the profile as adopted since (``h100-x8-mechanism`` with the H200's exposed rate,
registered plan 87; the H200's unchanged) at spread 0, at ``ctasim.costs.alone_ticket_spread`` (plan 88's adoption: the
price of a grid alone now) and at the family's.

Writes ``cases.csv`` (one row per call, H, M and producer) and ``summary.csv`` (per GPU and producer: the median spread
and each predictor's mean |error|). Every figure is post-hoc: the calls were seen, and the reading that led to plan 88
was made on plans 85 and 86's. Left out: the cluster variants (``_c12``, ``_c21``: other kernels), the calibration
calls' probes (the same kernels on H200s, at H the README does not give), and the 2-GPU producers' own traces.
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

HW, HW100 = "bench/results/hw", "bench/results/hw-h100"
ALONE_CALLS = (
    # (call, GPU, run folder, {H: the folder of its tile tables}, every M of its tables)
    ("probe", "H200", f"{HW}/2026-12-02-percta-probe", {8192: "."}, (4096, 16384)),
    ("plan 13", "H200", f"{HW}/2026-12-02-registered13-1gpu", {12288: "probe"}, (12288, 16384)),
    ("plan 14", "H200", f"{HW}/2026-12-02-registered14-1gpu", {10240: "OUT_H10240", 11264: "OUT_H11264"}, (16384,)),
    ("plan 83", "H100", f"{HW100}/2026-12-06-registered83-1gpu",
     {h: f"OUT_H{h}" for h in (8192, 9216, 10240, 11264)}, (16384,)),
    ("plan 84", "H100", f"{HW100}/2026-12-06-registered84-1gpu", {h: f"OUT_H{h}" for h in (8704, 9216, 9728)},
     (16384,)),
    ("plan 85", "H100", f"{HW100}/2026-12-07-registered85-1gpu",
     {h: f"OUT_H{h}" for h in (9216, 10240, 11264, 12288)}, (16384,)),
    ("plan 86", "H100", f"{HW100}/2026-12-07-registered86-1gpu",
     {h: f"OUT_H{h}" for h in (6144, 7168, 13312, 14336)}, (16384,)),
    ("plan 87", "H100", f"{HW100}/2026-12-07-registered87-1gpu", {h: f"OUT_H{h}" for h in (7168, 10240, 13312)},
     (32768,)),
    ("plan 88", "H100", f"{HW100}/2026-12-07-registered88-1gpu",
     {h: f"OUT_H{h}" for h in (6656, 7680, 8448, 15360)}, (16384,)),
    ("plan 89", "H100", f"{HW100}/2026-12-07-registered89-1gpu",
     {h: f"OUT_H{h}" for h in (5632, 7424, 9984, 12800)}, (24576,)),
)
"""Every committed call of producers alone on one GPU (``ctahw.percta``) but plan 90's (its run is where
``posthoc_cluster_mainloop`` reads its rate): the one list the post-hoc readings of them take theirs from."""
BEFORE_88 = ("probe", "plan 13", "plan 14", "plan 83", "plan 84", "plan 85", "plan 86")
CALLS = tuple((call, gpu, folder, hs, tuple(m for m in ms if m in (12288, 16384)))
              for call, gpu, folder, hs, ms in ALONE_CALLS if call in BEFORE_88)
"""This reading's calls: those before plan 88 was registered, at M = 12288 or 16384."""
OUT = ROOT / "bench/results/posthoc-local-spread"


def cases() -> pd.DataFrame:
    import plan85_grouped_kept as p85  # noqa: PLC0415
    import plan88_local_spread as p88  # noqa: PLC0415
    from ctasim.calibration import span_rate, window_spans  # noqa: PLC0415
    from percta_predict import SLOTS, measured_mean  # noqa: PLC0415

    from ctasim.costs import alone_ticket_spread  # noqa: PLC0415
    from ctasim.spec import load_hardware  # noqa: PLC0415

    preds = {}
    for gpu, profile in p88.GPUS.items():
        now = load_hardware(profile)  # as adopted since plans 87 and 88 (the H100's exposed rate)
        family = now.config(128, 256, kernel="ctapipe").ticket_spread
        preds[gpu] = {**p88.predictors(profile), "now_lockstep": (now, 0.0),
                      "now_local": (now, alone_ticket_spread(now)), "now_family": (now, family)}
    rows = []
    for call, gpu, folder, hs, ms in CALLS:
        for h, sub in hs.items():
            for m in ms:
                for v in p85.VARIANTS:
                    f = ROOT / folder / sub / f"percta-tiles-{m}-{v}.csv.gz"
                    if not f.is_file():
                        continue
                    t = pd.read_csv(f)
                    rate, meas = span_rate(window_spans(t, SLOTS)), measured_mean(t)
                    row = dict(call=call, gpu=gpu, h=h, m=m, variant=v, tiles=len(t),
                               span_rate=np.nan if rate is None else round(rate, 4), measured_us=round(meas, 2))
                    for name, (hw, spread) in preds[gpu].items():
                        w = p85.wave_prediction(h, v, name, hw, spread, m)
                        mean = float(w[2:len(t) // SLOTS].mean())
                        row[f"{name}_err_pct"] = round((mean / meas - 1) * 100, 2)
                    rows.append(row)
    return pd.DataFrame(rows)


def summary(c: pd.DataFrame) -> pd.DataFrame:
    """Per GPU and producer: cases, the median spread, and each predictor's mean |error|."""
    err = [col for col in c if col.endswith("_err_pct")]
    g = c.groupby(["gpu", "variant"], sort=True)
    out = g.agg(cases=("h", "size"), span_rate=("span_rate", "median"))
    for col in err:
        out[col.removesuffix("_err_pct") + "_mae_pct"] = g[col].apply(lambda x: x.abs().mean())
    return out.round(4).reset_index()


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_local_spread.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = parse_outputs(ap, argv, folders=("--out",))
    c = cases()
    s = summary(c)
    args.out.mkdir(parents=True, exist_ok=True)
    c.to_csv(args.out / "cases.csv", index=False)
    s.to_csv(args.out / "summary.csv", index=False)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(s.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
