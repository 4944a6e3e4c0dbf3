"""Post-hoc: GEMMs alone on three H100 units, each call's predictions scaled by the calibration GEMM timed in it.

    python bench/posthoc_h100_reference_units.py [--out bench/results/posthoc-h100-reference-units]

Registered plans 106 and 107 timed, in each call by the shape probe (``bench/hw/gemm_shape_probe.py``), the
calibration GEMM (16384 x 8192 x 8192, ``ctasim.predict.REFERENCE_CASE``) beside four to six GEMMs at M = 32768: five
calls (:data:`CALLS`) on two units (plan 106's call and repeat on GPU-d182769f; plan 107's call and repeat and plan
106's call again on GPU-21f0e6a0), whose speeds differ by ~4% on every shape. Read after the calls, not registered:
each call's judged best orders (``best.csv``: per shape the best measured order, the profile's and the naive line's
error there, both as registered), and the same errors with each predictor's prediction divided by its own ratio on
the calibration GEMM of that call (``ctasim predict --reference-ms``'s recipe, applied to GEMMs alone). Writes
``shapes.csv`` (per call and shape) and ``calls.csv`` (per call: the unit, the two ratios, each predictor's MAPE over
the other shapes before and after scaling) and prints the last. Nothing is refitted; no registered figure changes.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

OUT = ROOT / "bench/results/posthoc-h100-reference-units"
REFERENCE = (16384, 8192, 8192)
CALLS = (
    ("registered106", "hw-h100/2026-12-08-registered106-1gpu"),
    ("registered106-run2", "hw-h100/2026-12-08-registered106-1gpu-run2"),
    ("registered106-run3", "hw-h100/2026-12-08-registered106-1gpu-run3"),
    ("registered107", "hw-h100/2026-12-08-registered107-1gpu"),
    ("registered107-run2", "hw-h100/2026-12-08-registered107-1gpu-run2"),
)
"""(judged folder ``bench/results/validation-CALL``, the call's folder under ``bench/results``: its env.txt names the
unit)."""


def unit(run: Path) -> str:
    """The GPU's UUID prefix (``GPU-xxxxxxxx``) from the call's env.txt."""
    for word in (run / "env.txt").read_text().replace(",", " ").split():
        if word.startswith("GPU-"):
            return word[:12]
    raise ValueError(f"{run / 'env.txt'} names no GPU")


def scale_by_reference(best: pd.DataFrame, ref: pd.Series, sources=("model", "naive")) -> pd.DataFrame:
    """``best`` with ``SOURCE_scaled_pct`` per source: its error (``SOURCE_pct``, %) once its prediction is divided by
    its own ratio on the calibration GEMM (``ref``'s ``SOURCE_pct``): the recipe of ``ctasim predict --reference-ms``
    on errors (registered plan 108's judge uses it too)."""
    for p in sources:
        best[f"{p}_scaled_pct"] = ((1 + best[f"{p}_pct"] / 100) / (1 + ref[f"{p}_pct"] / 100) - 1) * 100
    return best


def shapes() -> pd.DataFrame:
    parts = []
    for call, run in CALLS:
        b = pd.read_csv(ROOT / "bench/results" / f"validation-{call}" / "best.csv")
        is_ref = (b.m == REFERENCE[0]) & (b.n == REFERENCE[1]) & (b.k == REFERENCE[2])
        if is_ref.sum() != 1:
            raise ValueError(f"validation-{call} timed no calibration GEMM")
        ref = b[is_ref].iloc[0]
        o = scale_by_reference(b[~is_ref].copy(), ref)
        o["model_ref_pct"], o["naive_ref_pct"] = ref.model_pct, ref.naive_pct
        parts.append(o.assign(call=call, unit=unit(ROOT / "bench/results" / run)))
    cols = ["call", "unit", "m", "n", "k", "best_order", "best_ms", "model_pct", "model_scaled_pct", "naive_pct",
            "naive_scaled_pct", "model_ref_pct", "naive_ref_pct"]
    return pd.concat(parts, ignore_index=True)[cols]


def calls(s: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for call, d in s.groupby("call", sort=False):
        rows.append(dict(call=call, unit=d.unit.iloc[0], shapes=len(d), model_ref_pct=d.model_ref_pct.iloc[0],
                         naive_ref_pct=d.naive_ref_pct.iloc[0], model_mape_pct=d.model_pct.abs().mean(),
                         model_scaled_mape_pct=d.model_scaled_pct.abs().mean(),
                         naive_mape_pct=d.naive_pct.abs().mean(),
                         naive_scaled_mape_pct=d.naive_scaled_pct.abs().mean()))
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_h100_reference_units.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help=f"output folder (default {OUT.relative_to(ROOT)})")
    a = parse_outputs(ap, argv, folders=("--out",))
    out = Path(a.out) if a.out else OUT
    s = shapes()
    c = calls(s)
    out.mkdir(parents=True, exist_ok=True)
    s.round(4).to_csv(out / "shapes.csv", index=False)
    c.round(4).to_csv(out / "calls.csv", index=False)
    with pd.option_context("display.width", 200):
        print(c.round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
