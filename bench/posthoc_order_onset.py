"""Post-hoc: when in a run the chain kernel's tile order starts to lose its reuse, measured and modelled (no GPU).

    python bench/posthoc_order_onset.py [--out bench/results/posthoc-order-onset]

``bench/posthoc_order_mainloop.py`` found the model's penalty of pairs and row order over groups of 8 taking one of two
levels, the reuse kept or lost, where the measured penalty grows gradually with M and H. This asks the same traced runs
where in a run the loss sets in. Per traced (run, case, order) other than groups of 8, tiles by ``t_acquire`` in
windows of 132 (the CTAs: a wave), each wave's median mainloop (measured ``t_mainloop_end - t_acquire``, modelled
``t_compute_end - t_acquire`` under the profile as plan 53 adopted it, ``posthoc_order_mainloop.as_plan_53``) over the
median of groups of 8's of the same case and source, less 1: the **excess** per wave. Its **level** is the median excess
of the last quarter of the waves; the **onset** is the first wave from wave 2 on (waves 0 and 1 run a cold L2) that
begins three waves in a row at half the level or more (:func:`onset`), in waves and as a share of the run's waves. Cases
whose level is under :data:`MIN_LEVEL` (no loss to time) have no onset.

Writes ``onset.csv`` (one row per run, case and order: waves, the measured and modelled level and onset) and
``summary.csv`` (per order, :func:`summary`: the cases where the model keeps the reuse and what the hardware loses in
them; the cases where it loses it, both levels and the onsets), and prints the summary. Every run had been seen: the figures are post-hoc.
~15 s on 2 cores.
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

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

MIN_LEVEL = 0.02
"""The least level (2% over groups of 8) whose onset is timed: below it the excess per wave is the waves' noise."""


def wave_medians(tiles: pd.DataFrame, end: str, slots: int = P.SLOTS) -> np.ndarray:
    """Each window of ``slots`` tiles by ``t_acquire``: the median mainloop (``end - t_acquire``), ns."""
    t = tiles.sort_values("t_acquire", kind="stable")
    ml = (t[end] - t["t_acquire"]).to_numpy(np.float64)
    return pd.Series(ml).groupby(np.arange(len(ml)) // slots).median().to_numpy()


FIRST = 2
"""The first wave an onset may be: waves 0 and 1 run a cold L2 (every panel's first use), whatever the order."""
HOLD = 3
"""Waves in a row at half the level or more that make an onset (one wave's noise does not)."""


def excess(waves: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """The excess per wave: an order's :func:`wave_medians` over the median of groups of 8's (``reference``), less 1."""
    return waves / np.median(reference) - 1


def onset(excess: np.ndarray) -> tuple[float, float]:
    """(level, onset) of a run's excess per wave: the onset is the first wave from :data:`FIRST` on that begins
    :data:`HOLD` waves in a row at half the level or more; NaN under :data:`MIN_LEVEL` or where none does."""
    n = len(excess)
    level = float(np.median(excess[n - max(1, n // 4):]))
    if level < MIN_LEVEL:
        return level, float("nan")
    high = excess >= level / 2
    for w in range(FIRST, n - HOLD + 1):
        if high[w:w + HOLD].all():
            return level, float(w)
    return level, float("nan")


def run_rows(bundle: Path) -> list[dict]:
    """One row per traced (case, order) of ``bundle`` with groups of 8 traced in the same case."""
    traces = dict(P.first_runs(bundle))
    judged = [(case, order) for case, order in traces if order != P.REFERENCE and (case, P.REFERENCE) in traces]
    model = {k: wave_medians(tr.tiles, "t_compute_end") for k, tr in P.simulated(
        bundle.parent.name, sorted({*judged, *((case, P.REFERENCE) for case, _ in judged)})).items()}
    rows = []
    for case, order in judged:
        meas = excess(wave_medians(traces[(case, order)].tiles, "t_mainloop_end"),
                      wave_medians(traces[(case, P.REFERENCE)].tiles, "t_mainloop_end"))
        mod = excess(model[(case, order)], model[(case, P.REFERENCE)])
        (lm, om), (lp, op) = onset(meas), onset(mod)
        rows.append(dict(run=P.run_label(bundle), experiment=bundle.parent.name, case=case, order=order,
                         waves=len(meas), level_meas=round(lm, 4), onset_meas=om, level_model=round(lp, 4),
                         onset_model=op))
    return rows


def table(paths: list[Path] | None = None) -> pd.DataFrame:
    return pd.DataFrame([r for b in (paths if paths is not None else P.bundles()) for r in run_rows(b)])


def summary(d: pd.DataFrame) -> pd.DataFrame:
    """Per order, the cases split by the model's level: where it keeps the reuse (level under :data:`MIN_LEVEL`) the
    measured level's median, least and most; where it loses it, the measured and modelled levels' medians, and over
    the cases where both have an onset the median onsets and in how many the model's is the later (levels in
    percent)."""
    rows = []
    for order, x in d.groupby("order"):
        kept, lost = x[x["level_model"] < MIN_LEVEL], x[x["level_model"] >= MIN_LEVEL]
        both = lost.dropna(subset=["onset_meas", "onset_model"])
        rows.append({
            "order": order, "cases": len(x),
            "model_keeps": len(kept), "kept_level_meas_median": 100 * kept["level_meas"].median(),
            "kept_level_meas_min": 100 * kept["level_meas"].min(), "kept_level_meas_max": 100 * kept["level_meas"].max(),
            "model_loses": len(lost), "lost_level_meas_median": 100 * lost["level_meas"].median(),
            "lost_level_model_median": 100 * lost["level_model"].median(),
            "onsets_timed": len(both), "onset_meas_median": both["onset_meas"].median(),
            "onset_model_median": both["onset_model"].median(),
            "model_onset_later": int((both["onset_model"] > both["onset_meas"]).sum()),
        })
    return pd.DataFrame(rows).round(2)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_order_onset.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-order-onset")
    args = parse_outputs(ap, argv, folders=["--out"])
    d = table()
    s = summary(d)
    args.out.mkdir(parents=True, exist_ok=True)
    d.to_csv(args.out / "onset.csv", index=False)
    s.to_csv(args.out / "summary.csv", index=False)
    pd.set_option("display.width", 200)
    print(s.to_string(index=False))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
