"""Post-hoc: every registered single-GPU run under the clock's one step and under its mean curve (no GPU).

    python bench/posthoc_clock_curve.py [--out bench/results/posthoc-clock-curve] [--min-ms 20] [--runs GLOB]

The burst regime has been one step: tiles that start ``clock_onset_ns`` (the median onset of the calibration's
trajectory rounds) or later take ``clock_sustained_slowdown`` times their time. The onsets of those rounds spread
over 31-70 ms (h200-x1-calibrated) and 27-86 ms (h200-x2-calibrated), and a round slows in two or three stages. The
curve (``Hardware.clock_curve_ns``, ``clock_curve_factor``; ``ctahw.calibrate.clock_curve``) is the mean factor over
the same rounds at each busy time: the same measurement, averaged instead of reduced to a median step.

For every committed run folder ``bench/results/hw/*registered*-1gpu*`` and every experiment in it with a
registration, each measured case whose model makespan is at least ``--min-ms`` (shorter runs end before either form
slows a tile) is predicted with the experiment's profile as it is (``curve``: the profiles hold the curve of the
calibration their clock fields come from) and with its one step (``step``, ``ctasim.predict.one_step``), both with
today's model (but for a panel's reuse across waves, an LRU of the whole L2 as when the table was written,
2026-12-03, before registered plan 67's adoption on an H200: ``ctasim.profiles.before_h200_reuse``), and judged
against the measurement. Post-hoc twice over: the measurements exist, and today's model is not what was registered.
Writes ``cases.csv`` (run, registration, case, strategy, variant, kind, m, measured_ms, predictor, predicted_ms,
error_pct) and ``summary.csv`` (per makespan band and predictor: cases, MAPE, bias, worst) into ``--out``, and prints
the summary.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from ctasim import results  # noqa: E402
from ctasim.accuracy import judge  # noqa: E402
from ctasim.cases import load_experiment  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.harness import load_harness  # noqa: E402
from ctasim.predict import one_step, predict  # noqa: E402
from ctasim.profiles import before_h200_reuse  # noqa: E402

HW = ROOT / "bench/results/hw"
BANDS = ((0, 30), (30, 45), (45, 60), (60, 80), (80, 1e9))
"""Makespan bands (ms, measured) of the summary."""


def runs(pattern: str = "*registered*-1gpu*") -> list[tuple[str, str]]:
    """(run folder, registration) of every committed single-GPU registered run (folders matching ``pattern``)."""
    out = []
    for run in sorted(p for p in HW.glob(pattern) if p.is_dir()):
        for exp in sorted(p.name for p in run.iterdir() if (p / "results.csv").is_file()):
            if (ROOT / "bench/predictions" / exp / "registration.json").is_file():
                out.append((run.name, exp))
    return out


def judged(run: str, name: str, min_ms: float) -> pd.DataFrame:
    """One registration of one run: its cases of at least ``min_ms`` (the longer of the two predictions) under the
    one step and under the curve."""
    reg = ROOT / "bench/predictions" / name
    meas = results.read(HW / run / name / "results.csv")
    harness = load_harness(json.loads((reg / "registration.json").read_text())["harness"]["name"])
    e = load_experiment(name)
    hw = before_h200_reuse(e.hardware)  # a table made before plan 67's adoption on an H200, 2026-12-06
    if not hw.clock_curve_ns:
        raise ValueError(f"{name}: profile {hw.name} has no clock curve")
    parts = []
    for src, h in (("step", one_step(hw)), ("curve", hw)):
        p = predict(dataclasses.replace(e, hardware=h), harness, None)
        p = p[p["source"] == "model"].assign(source=src)
        parts.append(p)
    j = judge(pd.concat(parts, ignore_index=True), meas)
    longest = j.groupby(list(results.KEY))["predicted_ms"].transform("max")
    j = j[longest >= min_ms]
    return j.assign(run=run, registration=name)


def summary(cases: pd.DataFrame) -> pd.DataFrame:
    """Per makespan band (:data:`BANDS`, then all) and predictor: cases, MAPE, bias, worst (%)."""
    bands = [(f"{lo:g}-{hi:g}" if hi < 1e9 else f">={lo:g}", cases[cases.measured_ms.between(lo, hi, inclusive="left")])
             for lo, hi in BANDS] + [("all", cases)]
    rows = []
    for band, b in bands:
        for src, g in b.groupby("predictor", sort=False):
            rows.append({"band_ms": band, "predictor": src, "cases": len(g),
                         "mape_pct": round(g.error_pct.abs().mean(), 2), "bias_pct": round(g.error_pct.mean(), 2),
                         "worst_pct": round(g.error_pct.loc[g.error_pct.abs().idxmax()], 2)})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_clock_curve.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-clock-curve")
    ap.add_argument("--min-ms", type=float, default=20.0)
    ap.add_argument("--runs", default="*registered*-1gpu*", help="run folders under bench/results/hw (a glob)")
    args = parse_outputs(ap, argv, folders=("--out",))
    if not args.min_ms >= 0:
        print(f"posthoc_clock_curve: --min-ms must be >= 0, got {args.min_ms}", file=sys.stderr)
        return 2
    todo = runs(args.runs)
    if not todo:
        print(f"posthoc_clock_curve: no registered run under bench/results/hw matches {args.runs!r}", file=sys.stderr)
        return 2
    cases = pd.concat([judged(run, name, args.min_ms) for run, name in todo], ignore_index=True)
    cases = cases.rename(columns={"source": "predictor"}).assign(error_pct=lambda d: 100 * d.error)
    cols = ["run", "registration", "case", "strategy", "variant", "kind", "m", "measured_ms", "predictor",
            "predicted_ms", "error_pct"]
    s = summary(cases)
    args.out.mkdir(parents=True, exist_ok=True)
    cases[cols].to_csv(args.out / "cases.csv", index=False, float_format="%.6g")
    s.to_csv(args.out / "summary.csv", index=False)
    pd.set_option("display.width", 200)
    print(s.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
