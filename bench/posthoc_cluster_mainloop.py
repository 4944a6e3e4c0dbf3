"""Post-hoc: the one-CTA-per-tile producer's first wave, cluster 1x1 against 2x1, on the committed producer-alone calls.

    python bench/posthoc_cluster_mainloop.py [--out bench/results/posthoc-cluster-mainloop]

Registered plan 89 found row order's first two waves 7-11% over the adopted profile's price at every H where the pairs'
and the grouped producers' were within about a point. Row order's producer is the 1x1-cluster kernel
(``cutlass_ctapipe``); the pairs and the grouped producers are 2x1 clusters, whose two CTAs take each W tile by TMA
multicast (one L2 read for the two), and the ``_c12`` probe variant is a 1x2 cluster in row order (A multicast). The
memory hierarchy (``ctasim.l2``) leaves out the L2-to-SM bandwidth and the multicast: it prices a wave's HBM bytes, and
in wave 0 the row order and the pairs run the same tiles wherever a wave holds whole row-blocks (H = 5632 at M = 24576:
132 tiles = 6 row-blocks of 22) or close to it.

Here, per committed producer-alone call that ran row order beside another producer (:data:`CALLS`: the first probe
and registered plans 13, 14 and 83-89; plans 14 and 84 ran none, so two H200s and five H100 units), H, M and producer,
the traced run of median span (``percta-tiles-<M>-<variant>.csv.gz``) gives
its wave 0's median mainloop (``t_mainloop_end - t_acquire`` of CTAs 0-131: nothing read before it); beside it the
wave-0 ratio of row order (1x1) to each other producer, measured and as the GPU's mechanism profile prices it now
(``plan85_grouped_kept.wave_prediction`` at spread 0: its wave 0's tile time).

Beside the model as it is, ``bound``: the same wave 0 with a floor at its tiles' L2-to-SM reads
(``ctasim.costs.l2_sm_reads`` by the producer's cluster, ``ctasim.variants``) at one rate, :func:`l2_sm_rate`:
registered plan 90's 1x1 first wave at H = 5632 (one H100), read as that rate -- one number taken from one case, so
every figure of ``bound`` is post-hoc, and on the H200s it is the H100's rate (the same L2 design; no H200 measured
it). The rate is read off a mainloop (acquire to mainloop end) and floors only the mainloop here; in
``ctasim.costs.order_waves`` it floors the whole wave.

Writes ``cases.csv`` (one row per call, H, M and producer: its wave-0 time measured and under the model and ``bound``,
and row order's over it) and ``summary.csv`` (per GPU and producer: the calls, cases, the median and range of the
measured wave-0 ratio, the model's and ``bound``'s, and each one's mean |error| of the wave-0 time). Post-hoc
throughout: the calls were seen. Left out: waves 1 and after, where the orders' reuse differs; the rate a probe measures
(written after this reading: ``ctahw.l2rate``, judged in registered plans 91-93; ``bench/posthoc_tile_rate.py`` reads
these calls at the probe's rate).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from percta_predict import SLOTS, wave0_us  # noqa: E402  (132 CTAs at once: one wave; its median mainloop)
from posthoc_local_spread import ALONE_CALLS as CALLS  # noqa: E402  (the one list of the committed calls)

HW100 = "bench/results/hw-h100"
ROW = "cutlass_ctapipe"
VARIANTS = (ROW, "cutlass_ctapipe_c12", "cutlass_ctapipe_c21", "cutlass_ctapipe_w21", "cutlass_ctapipe_w21g4",
            "cutlass_ctapipe_w21g8")
"""Row order (1x1) first; the others where a call ran them: 1x2 row order (A multicast), 2x1 pairs (``_c21`` pushing to
a queue, ``_w21`` counting), 2x1 groups of 4 and 8 row-blocks."""
PROFILES = {"H100": "h100-x8-mechanism", "H200": "h200-x2-mechanism"}
OUT = ROOT / "bench/results/posthoc-cluster-mainloop"
RATE_CALL = (f"{HW100}/2026-12-07-registered90-1gpu/OUT_H5632", 16384, 5632)
"""Where :func:`l2_sm_rate` is read: registered plan 90's row-order (1x1) first wave at M = 16384, H = 5632."""


def cluster_of(variant: str) -> tuple[int, int]:
    """The producer's cluster (cluster_m, cluster_n) of a ctahw variant (``ctasim.variants``: "2x1" is two CTAs along
    M)."""
    from ctasim.variants import VARIANTS as V  # noqa: PLC0415

    cm, cn = V[variant].clusters[0].split("x")
    return int(cm), int(cn)


def l2_sm_rate() -> float:
    """GB/s: the L2-to-SM bytes of :data:`RATE_CALL`'s 1x1 first wave (132 tiles) over its measured median mainloop."""
    from ctasim.costs import l2_sm_reads  # noqa: PLC0415
    from ctasim.spec import Layer  # noqa: PLC0415

    folder, m, h = RATE_CALL
    us = wave0_us(pd.read_csv(ROOT / folder / f"percta-tiles-{m}-{ROW}.csv.gz"))
    return SLOTS * l2_sm_reads(Layer(m, h, h, 128, 256), 2, 1, 1) / (us * 1e3)


def cases() -> pd.DataFrame:
    import plan85_grouped_kept as p85  # noqa: PLC0415
    from ctasim.costs import l2_sm_reads  # noqa: PLC0415
    from ctasim.spec import Layer, load_hardware  # noqa: PLC0415

    rate = l2_sm_rate()
    rows = []
    for call, gpu, folder, hs, ms in CALLS:
        hw = load_hardware(PROFILES[gpu])
        for h, sub in hs.items():
            for m in ms:
                found = {}
                for v in VARIANTS:
                    f = ROOT / folder / sub / f"percta-tiles-{m}-{v}.csv.gz"
                    if f.is_file():
                        found[v] = wave0_us(pd.read_csv(f))
                if ROW not in found or len(found) < 2:
                    continue
                model = {v: float(p85.wave_prediction(h, v, "lockstep", hw, 0.0, m)[0]) for v in found}
                layer = Layer(m, h, h, 128, 256)
                bound = {v: max(model[v], SLOTS * l2_sm_reads(layer, 2, *cluster_of(v)) / rate / 1e3) for v in found}
                for v, us in found.items():
                    rows.append(dict(call=call, gpu=gpu, h=h, m=m, variant=v, wave0_us=round(us, 3),
                                     model_us=round(model[v], 3), bound_us=round(bound[v], 3),
                                     row_over=round(found[ROW] / us, 4),
                                     model_row_over=round(model[ROW] / model[v], 4),
                                     bound_row_over=round(bound[ROW] / bound[v], 4)))
    return pd.DataFrame(rows)


def summary(c: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (gpu, v), g in c.groupby(["gpu", "variant"], sort=True):
        err = {n: round(float((g[f"{n}_us"] / g["wave0_us"] - 1).abs().mean() * 100), 2) for n in ("model", "bound")}
        rows.append(dict(gpu=gpu, variant=v, calls=g["call"].nunique(), cases=len(g),
                         row_over_median=round(float(g["row_over"].median()), 4),
                         row_over_min=float(g["row_over"].min()), row_over_max=float(g["row_over"].max()),
                         model_row_over_median=round(float(g["model_row_over"].median()), 4),
                         bound_row_over_median=round(float(g["bound_row_over"].median()), 4),
                         model_mae_pct=err["model"], bound_mae_pct=err["bound"]))
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_cluster_mainloop.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help=f"output folder (default {OUT.relative_to(ROOT)})")
    a = parse_outputs(ap, argv, folders=("--out",))
    out = Path(a.out) if a.out else OUT
    c = cases()
    s = summary(c)
    out.mkdir(parents=True, exist_ok=True)
    c.to_csv(out / "cases.csv", index=False)
    s.to_csv(out / "summary.csv", index=False)
    with pd.option_context("display.width", 200):
        print(f"L2-to-SM rate read off registered plan 90's 1x1 first wave: {l2_sm_rate():.0f} GB/s")
        print(s.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
