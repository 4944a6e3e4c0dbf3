"""Post-hoc: the producers alone on two H100s under h100-x8-mechanism with plan 76's exposed rate (no GPU)

    python bench/posthoc_h100_x8_exposed.py [--out bench/results/posthoc-h100-x8-exposed]

Registered plan 85 ran the producers of row order, row-block pairs and groups of 4 and 8 row-blocks alone on an H100
(GPU-d3274ca1, H = 9216-12288): the grouped ones kept their reuse but ran 2.2-5.0% faster than ``h100-x8-mechanism``
says, and the flat predictor (no memory hierarchy) was nearer. That profile charged the exposed share of a wave's HBM
time (``l2_hbm_exposed``) at its own datasheet-scaled HBM rate until registered plan 87's adoption (2026-12-07; this
table prices it as before, ``ctasim.profiles.before_h100_x8_exposed``); registered plan 76 adopted the H200's measured
rate for it on ``h100-x1-datasheet`` (``l2_hbm_exposed_gbps``), and the derived 8-GPU profile did not take it then. Here every case
of plan 85's call and plan 83's H100 call (GPU-ef03c33f: row order and the pairs of ``_c21``, H = 8192-11264) is
priced with and without that rate (:data:`TWIN`, ``h100-x8-mechanism-exposed``), at the lockstep level (ticket spread
0) and at the profile's spread, beside the flat predictor:

* ``cases.csv``: per call, H and variant, the measured mean over full waves >= 2 of the median-span (plan 85) or kept
  (plan 83) traced run's wave medians, and the same mean over waves 0-1 (``early``); per predictor its means and
  errors (%);
* ``summary.csv``: per call, producer kind (row, pairs, grouped) and predictor, the mean |error| over the H of the
  full-wave means and of the early ones.

Every figure is post-hoc: the twin was chosen after plan 85's call was seen. Registered plan 86 asks it on new H.
Left out: the consumers' grids and the chain kernel (no run here), the H200 (whose exposed rate is its own), and the
pairs' wave-by-wave climb (``docs/validation.md``, plan 85's section), which no predictor here has.
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

import plan86_x8_exposed as p86  # noqa: E402

PROFILE, TWIN, PREDICTORS, predictors = p86.PROFILE, p86.TWIN, p86.PREDICTORS, p86.predictors
"""The profile, its twin and the predictors as registered plan 86 names them (one definition)."""

CALLS = {
    "plan 85": "bench/results/hw-h100/2026-12-07-registered85-1gpu",
    "plan 83": "bench/results/hw-h100/2026-12-06-registered83-1gpu",
}
"""The committed H100 calls of the producers alone, by plan."""
KINDS = {"cutlass_ctapipe": "row", "cutlass_ctapipe_w21": "pairs", "cutlass_ctapipe_c21": "pairs",
         "cutlass_ctapipe_w21g4": "grouped", "cutlass_ctapipe_w21g8": "grouped"}
OUT = ROOT / "bench/results/posthoc-h100-x8-exposed"


def measured(call: str) -> pd.DataFrame:
    """Per H, variant and wave of ``call``'s committed run: the measured wave median (us)."""
    import plan83_alone_edge as p83  # noqa: PLC0415
    import plan85_grouped_kept as p85  # noqa: PLC0415

    run = ROOT / CALLS[call]
    m = p85.measured(run) if call == "plan 85" else p83.measured(run)
    return m[m["wave"] >= 0][["h", "variant", "wave", "measured_us"]]


def cases() -> pd.DataFrame:
    import plan83_alone_edge as p83  # noqa: PLC0415
    import plan85_grouped_kept as p85  # noqa: PLC0415
    from percta_predict import full_waves  # noqa: PLC0415

    preds = predictors()
    rows = []
    for call in CALLS:
        for (h, v), g in measured(call).groupby(["h", "variant"], sort=True):
            g = g.set_index("wave")["measured_us"]
            full = full_waves(pd.DataFrame({"wave": g.index, "us": g.to_numpy()}), p83.tiles(h))["wave"]
            r = dict(call=call, h=h, variant=v, kind=KINDS[v], measured_us=float(g[full].mean()),
                     early_measured_us=float(g.loc[[0, 1]].mean()))
            for name, (hw, spread) in preds.items():
                t = p85.wave_prediction(h, v, name, hw, spread)
                r[f"{name}_us"] = float(np.mean(t[full.to_numpy()]))
                r[f"{name}_err_pct"] = (r[f"{name}_us"] / r["measured_us"] - 1) * 100
                r[f"early_{name}_err_pct"] = (float(np.mean(t[:2])) / r["early_measured_us"] - 1) * 100
            rows.append(r)
    return pd.DataFrame(rows)


def summary(c: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (call, kind), g in c.groupby(["call", "kind"], sort=False):
        for name in PREDICTORS:
            rows.append(dict(call=call, kind=kind, predictor=name, cases=len(g),
                             mean_abs_err_pct=float(g[f"{name}_err_pct"].abs().mean()),
                             worst_err_pct=float(g[f"{name}_err_pct"].loc[g[f"{name}_err_pct"].abs().idxmax()]),
                             early_mean_abs_err_pct=float(g[f"early_{name}_err_pct"].abs().mean())))
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_h100_x8_exposed.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = parse_outputs(ap, argv, folders=("--out",))
    c = cases()
    s = summary(c)
    args.out.mkdir(parents=True, exist_ok=True)
    c.to_csv(args.out / "cases.csv", index=False, float_format="%.4f")
    s.to_csv(args.out / "summary.csv", index=False, float_format="%.4f")
    with pd.option_context("display.width", 200):
        print(s.round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
