"""Registered plan 20's claims (bench/predictions/README.md) from its committed reports (no GPU).

    python bench/plan20_judge.py [--reports bench/results/validation-registered20]

Reads each registration's ``accuracy.csv`` (``ctasim compare``: the carried model of ``reg20-X``, the wave form's model
of ``reg20-X-wave``, lockstep, flat, naive and waves), and writes ``judged.csv`` (every block case's error per
predictor) and ``claims.csv`` (per predictor over the 8 block cases: MAPE, worst, cases over-predicted, and the same
machine-normalised by the reference GEMM at M = 16384) into the reports folder, and prints both.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
WAVE = "-wave"
"""The suffix of a registration predicted with plan 8's drift form (``--hardware h200-x1-calibrated-wave``)."""
REFERENCE = "reg20-reference"
BLOCKS = tuple(sorted(p.name for p in (ROOT / "bench/predictions").glob("reg20-*")
                      if not p.name.endswith(WAVE) and p.name != REFERENCE))
"""Plan 20's block registrations, as committed under bench/predictions (each with its ``-wave`` twin)."""


def load(reports: Path) -> pd.DataFrame:
    """Every judged row, one predictor name each: the registration's own sources, its model as ``carried`` and the
    ``-wave`` registration's model as ``wave``."""
    rows = []
    for exp in BLOCKS + (REFERENCE,):
        for suffix in ("", WAVE):
            path = reports / f"{exp}{suffix}" / "accuracy.csv"
            if not path.is_file():
                raise FileNotFoundError(f"plan20_judge: no {path} (run ctasim compare first)")
            a = pd.read_csv(path)
            if not a.registered.all():
                raise ValueError(f"plan20_judge: {path} holds rows not labelled registered")
            a = a[a.source == "model"] if suffix else a
            a = a.assign(predictor=a.source.replace({"model": "wave" if suffix else "carried"}))
            rows.append(a[["experiment", "m", "measured_ms", "predictor", "predicted_ms", "error"]])
    return pd.concat(rows, ignore_index=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reports", type=Path, default=ROOT / "bench/results/validation-registered20")
    args = ap.parse_args(argv)
    try:
        d = load(args.reports)
    except (FileNotFoundError, ValueError) as e:
        print(e, file=sys.stderr)
        return 2
    ref = d[(d.experiment == REFERENCE) & (d.m == 16384)].set_index("predictor").error
    blocks = d[d.experiment.isin(BLOCKS)].copy()
    blocks["error_pct"] = 100 * blocks.error
    blocks["normalised_pct"] = 100 * ((1 + blocks.error) / (1 + blocks.predictor.map(ref)) - 1)
    claims = blocks.groupby("predictor").agg(
        cases=("error_pct", "size"), mape_pct=("error_pct", lambda x: x.abs().mean()),
        worst_pct=("error_pct", lambda x: x.iloc[x.abs().argmax()]), over=("error_pct", lambda x: int((x > 0).sum())),
        normalised_mape_pct=("normalised_pct", lambda x: x.abs().mean()),
        normalised_worst_pct=("normalised_pct", lambda x: x.iloc[x.abs().argmax()])).reset_index()
    blocks.drop(columns="error").round(4).to_csv(args.reports / "judged.csv", index=False)
    claims.round(4).to_csv(args.reports / "claims.csv", index=False)
    pd.set_option("display.width", 200)
    print(blocks.pivot_table(index=["experiment", "m"], columns="predictor", values="error_pct").round(2).to_string())
    print(claims.round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
