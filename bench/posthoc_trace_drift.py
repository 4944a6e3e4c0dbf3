"""Post-hoc: is the machines' spread on persistent GEMMs their CTAs' drift? Each committed per-tile trace priced with
its own measured drift beside the profile's (no GPU).

    python bench/posthoc_trace_drift.py [--out bench/results/posthoc-trace-drift]

Reads every committed folder of ``bench/hw/order_trace_probe.py`` (``timing.csv`` beside ``tiles-*.csv.gz``; six
rested calls on eleven machines, 2026-12-02 to registered plan 48) and writes ``cases.csv``: per traced case, the
trace's drift and late-half mainloop (``ctasim.calibration.trace_drift``), the plain CUTLASS GEMM's measured time, and
the error of ``ctasim.costs.order_waves`` at that order under h200-x1-calibrated ("interleaved") and -carried (each as
it was before registered plan 67's adoption on an H200, 2026-12-06: ``ctasim.profiles.before_h200_reuse``), each with
the profile's ``cta_drift`` and with the trace's own drift (``*_own``), and without drift; ``summary.csv``: over the
high-reuse cases (swizzle 8), per predictor, the mean, standard deviation and mean |.| of the errors. Registered
plan 46 found the machines differing in drift (0.0041-0.0097 tile times a round) and in their long-K error; if the
drift were what moves a machine's time, the model given each trace's drift would spread less. Every figure is
post-hoc: the traces were seen before this was written.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

from block_gemm_orders import PROFILES  # noqa: E402
from power_model import write_tables  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

HW = ROOT / "bench" / "results" / "hw"
FORMS = ("interleaved", "carried")


def probe_folders() -> list[Path]:
    """Every committed trace probe folder of a rested call: a ``timing.csv`` with at least one ``tiles-*.csv.gz``
    beside it, less the 2026-12-02 call that ran without rests (``run1-unrested``: not the burst regime)."""
    return sorted(t.parent for t in HW.rglob("timing.csv")
                  if any(t.parent.glob("tiles-*.csv.gz")) and "unrested" not in str(t.parent))


def cases() -> pd.DataFrame:
    from ctasim import costs
    from ctasim.calibration import trace_drift
    from ctasim.spec import Layer, load_hardware

    from ctasim.profiles import before_h200_reuse

    # a record made before plan 67's adoption on an H200, 2026-12-06: reuse across waves an LRU of the whole L2
    hws = {form: before_h200_reuse(load_hardware(PROFILES[form])) for form in FORMS}
    rows = []
    for folder in probe_folders():
        timing = pd.read_csv(folder / "timing.csv")
        for r in timing[timing["variant"] == "cutlass"].itertuples():
            raster, swizzle = r.order.split("/swizzle")
            trace = folder / f"tiles-{r.m}x{r.h}-{raster}-swizzle{swizzle}.csv.gz"
            if not trace.is_file():
                continue
            d = trace_drift(pd.read_csv(trace), str(trace))
            lay = Layer(m=r.m, n=r.h, k=r.h)
            row = {"folder": str(folder.relative_to(HW)), "m": r.m, "h": r.h, "order": r.order,
                   "drift": d["start_sd_per_round"], "late_rel": d["mainloop_late_rel"], "measured_ms": r.median_ms}
            for form, hw in hws.items():
                order, slots, waves = costs.cutlass_waves(lay, hw, 2, raster, int(swizzle))
                own = costs.order_waves(lay, hw, 2, order, slots, drift=d["start_sd_per_round"])
                row[f"{form}_pct"] = 100 * (waves.sum() / 1e6 / r.median_ms - 1)
                row[f"{form}_own_pct"] = 100 * (own.sum() / 1e6 / r.median_ms - 1)
            nodrift = costs.order_waves(lay, hws["interleaved"], 2, order, slots, drift=0.0)
            row["nodrift_pct"] = 100 * (nodrift.sum() / 1e6 / r.median_ms - 1)
            rows.append(row)
    return pd.DataFrame(rows)


def summary(c: pd.DataFrame) -> pd.DataFrame:
    high = c[c["order"].str.endswith("swizzle8")]
    cols = [f"{form}{own}_pct" for form in FORMS for own in ("", "_own")] + ["nodrift_pct"]
    return pd.DataFrame([{"predictor": col[:-4], "cases": len(high), "folders": high["folder"].nunique(),
                          "mean_pct": high[col].mean(), "sd_pct": high[col].std(), "mape_pct": high[col].abs().mean()}
                         for col in cols])


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_trace_drift.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "posthoc-trace-drift")
    args = parse_outputs(ap, argv, folders=("--out",))
    c = cases()
    s = summary(c)
    write_tables(args.out, {"cases": c, "summary": s})
    print(s.round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
