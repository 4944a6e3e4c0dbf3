"""The memory hierarchy's drift round by round against per-tile traces of the plain persistent GEMM (no GPU).

    python bench/drift_rounds.py [--profile h200-x1-calibrated-lru] [--out bench/results/drift-rounds] [DIR ...]

DIR (default: both rested order-trace folders, ``bench/results/hw/2026-12-02-order-traces`` with 16 and 63 rounds and
``bench/results/hw/2026-12-02-long-order-traces/run2`` with 63, 125 and 249) holds ``tiles-<M>x<H>-<raster>-swizzle<s>.csv.gz``
(``bench/hw/order_trace_probe.py``: the chain kernel's static design with one layer, CUTLASS's own order) and
``timing.csv`` (the plain CUTLASS GEMM at the same order, medians). For each trace and each band of rounds it
sets beside each other: the measured mean tile time (acquire to compute end) and spread of start times (standard
deviation within a round, in tile times of rounds 1-3), and the wave times of ``ctasim.costs.order_waves`` in the
same order: the profile (``--profile``, its ``cta_drift`` and ``drift_form``), the same in lockstep (no drift),
``h200-x1-calibrated-wave`` (registered plan 8's form "wave" with the L2 constants fitted with it), and the profile at
the drift the trace itself shows (``ctasim.calibration.trace_drift``); per trace, the same predictors' totals against the plain GEMM's
median, and per predictor the mean and largest |error| of the totals (``summary.csv``).

Writes ``rounds.csv``, ``totals.csv`` and ``summary.csv`` into ``--out`` and prints them. Every figure is post-hoc on these traces.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ctasim import costs  # noqa: E402
from ctasim.calibration import trace_drift  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.spec import Layer, load_hardware  # noqa: E402

FOLDERS = ("bench/results/hw/2026-12-02-order-traces", "bench/results/hw/2026-12-02-long-order-traces/run2")
BANDS = (1, 4, 16, 32, 48, 64, 96, 128, 160, 192, 224)
"""First rounds of the bands (the last band ends at the trace's last full round)."""


WAVE_PROFILE = "h200-x1-calibrated-wave"
"""The profile as registered plans 7-10 judged it: drift_form "wave" with the L2 constants fitted with it."""


def predictors(hw, wave, m: int, h: int, raster: str, swizzle: int, own_drift: float) -> dict[str, np.ndarray]:
    """Wave times (ns) of an M x H x H layer in CUTLASS's (raster, swizzle) order on the profile's grid: lockstep,
    the profile (its drift and drift form), ``wave`` (:data:`WAVE_PROFILE`: registered plan 8's form and constants),
    and the profile at the trace's own drift."""
    lay = Layer(m=m, n=h, k=h)
    order, slots, profile = costs.cutlass_waves(lay, hw, 2, raster, swizzle)
    return {"lockstep": costs.order_waves(lay, hw, 2, order, slots, drift=0.0),
            "profile": profile,
            "wave": costs.cutlass_waves(lay, wave, 2, raster, swizzle)[2],
            "own_drift": costs.order_waves(lay, hw, 2, order, slots, drift=own_drift)}


def analyse(folder: Path, hw, wave) -> tuple[list[dict], list[dict]]:
    timing = pd.read_csv(folder / "timing.csv")
    timing = timing[timing.variant == "cutlass"]
    rounds, totals = [], []
    for path in sorted(folder.glob("tiles-*.csv.gz")):
        name = path.name.removeprefix("tiles-").removesuffix(".csv.gz")
        shape, raster, sw = name.rsplit("-", 2)
        m, h = (int(x) for x in shape.split("x"))
        swizzle = int(sw.removeprefix("swizzle"))
        t = pd.read_csv(path).sort_values("t_acquire")
        d = trace_drift(t, str(path))
        t["round"] = t.groupby("cta").t_acquire.rank(method="first").astype(int) - 1
        t["tile"] = t.t_compute_end - t.t_acquire
        g = t.groupby("round")
        tile, sd = g.tile.mean().to_numpy(), (g.t_acquire.std() / d["mainloop_start_ns"]).to_numpy()
        pred = predictors(hw, wave, m, h, raster, swizzle, d["start_sd_per_round"])
        last = len(tile) - 1  # the last round is partial
        edges = [b for b in BANDS if b < last] + [last]
        for a, b in zip(edges[:-1], edges[1:]):
            rounds.append({"case": name, "rounds": f"{a}-{b - 1}", "measured_us": tile[a:b].mean() / 1e3,
                           "spread": np.nanmean(sd[a:b]),
                           **{f"{k}_us": v[a:b].mean() / 1e3 for k, v in pred.items()}})
        row = timing[(timing.m == m) & (timing.h == h) & (timing.order == f"{raster}/swizzle{swizzle}")]
        ms = float(row.median_ms.iloc[0])
        totals.append({"case": name, "rounds": len(tile), "own_drift": d["start_sd_per_round"],
                       "spread_last": d["start_sd_last_round"], "measured_ms": ms,
                       **{f"{k}_pct": (v.sum() / 1e6 / ms - 1) * 100 for k, v in pred.items()}})
    return rounds, totals


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/drift_rounds.py", description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", type=Path)
    # the 2026-12-02 record's profile: h200-x1-calibrated before plan 67's adoption on an H200 (2026-12-06)
    ap.add_argument("--profile", default="h200-x1-calibrated-lru")
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/drift-rounds")
    args = parse_outputs(ap, argv, folders=("--out",))
    folders = args.dirs or [ROOT / f for f in FOLDERS]
    for f in folders:
        if not (f / "timing.csv").is_file() or not list(f.glob("tiles-*.csv.gz")):
            print(f"drift_rounds: {f} has no timing.csv and tiles-*.csv.gz (bench/hw/order_trace_probe.py)",
                  file=sys.stderr)
            return 2
    try:
        hw = load_hardware(args.profile)
        if not costs.memory_model(hw, hw.config(128, 256)):
            raise ValueError(f"profile {hw.name!r} has no memory hierarchy for 128x256 tiles")
    except (ValueError, OSError) as e:  # SpecError is a ValueError
        print(f"drift_rounds: {e}", file=sys.stderr)
        return 2
    wave = load_hardware(WAVE_PROFILE)
    rounds, totals = [], []
    for f in folders:
        r, t = analyse(f, hw, wave)
        rounds += r
        totals += t
    args.out.mkdir(parents=True, exist_ok=True)
    tot = pd.DataFrame(totals)
    summary = [{"predictor": c.removesuffix("_pct"), "traces": len(tot), "mean_abs_pct": tot[c].abs().mean(),
                "worst_pct": tot[c].iloc[tot[c].abs().argmax()], "worst_case": tot.case.iloc[tot[c].abs().argmax()]}
               for c in tot.columns if c.endswith("_pct")]
    for name, rows in (("rounds", rounds), ("totals", totals), ("summary", summary)):
        df = pd.DataFrame(rows).round(4)
        df.to_csv(args.out / f"{name}.csv", index=False)
        print(df.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
