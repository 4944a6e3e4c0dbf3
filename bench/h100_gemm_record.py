"""The H100 record of GEMMs alone: every registered GEMM-order call, the profile as registered against the naive line.

    python bench/h100_gemm_record.py [--out bench/results/h100-gemm-record]

``bench/registered_record.py --machine h100`` pools the ``ctasim compare`` reports of the H100 calls (blocks, chains,
the reference); the plans that time GEMMs alone at every CUTLASS order (``bench/hw/gemm_shape_probe.py``) are judged
by their own scripts and left out there. Here each of those calls (:data:`CALLS`) is read from its judged
``orders.csv`` (per shape and order: the measured median and each registered profile's error) and its registration's
``predicted.csv`` (the naive FLOPs line, the same for every order): per shape, the best measured order, the error
there of the H100 profile as it stood at the registration (the column that plan names after it; never a twin) and of
the naive line. Writes ``shapes.csv`` (one row per call and shape) and ``record.csv`` (per call, per K range, per M
range and over all: shapes, the profile's MAPE, mean and worst, the naive line's MAPE and mean) and prints the last.
Every figure is as registered: nothing is refitted or re-predicted. Left out: the twins (each plan's claims judge
them), every order but the best measured one, the padded grids.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

OUT = ROOT / "bench/results/h100-gemm-record"
CALLS = (
    (72, "validation-registered72", "reg72-h100-drift", "datasheet"),
    (73, "validation-registered73", "reg73-drift-absolute/h100", "model"),
    (73, "validation-registered73-run2", "reg73-drift-absolute/h100", "model"),
    (97, "validation-registered97", "reg97-small-gemms", "model"),
    (98, "validation-registered98", "reg98-capped-drift", "absolute"),
    (100, "validation-registered100", "reg100-block-gemms", "model"),
    (105, "validation-registered105", "reg105-long-k-route", "model"),
    (106, "validation-registered106", "reg106-harness-or-unit", "model"),
    (106, "validation-registered106-run2", "reg106-harness-or-unit", "model"),
    (106, "validation-registered106-run3", "reg106-harness-or-unit", "model"),
    (107, "validation-registered107", "reg107-tuned-harness", "model"),
    (107, "validation-registered107-run2", "reg107-tuned-harness", "model"),
    (108, "validation-registered108", "reg108-reference-units", "model"),
)
"""(plan, judged folder under bench/results, registration under bench/predictions, the column of the H100 profile as
it stood at that registration: ``datasheet`` before plan 73's adoption, ``absolute`` between plans 73 and 98)."""
K_EDGES = (0, 8192, 16384, 65536)
M_EDGES = (0, 16384, 131072)


def shapes() -> pd.DataFrame:
    from plan72_h100_drift import best_orders  # noqa: PLC0415

    parts = []
    for plan, folder, reg, col in CALLS:
        o = pd.read_csv(ROOT / "bench/results" / folder / "orders.csv")
        b = best_orders(o[~o.padded], pd.read_csv(ROOT / "bench/predictions" / reg / "predicted.csv"), (col,))
        parts.append(b.rename(columns={f"{col}_pct": "model_pct"}).assign(
            plan=plan, call=folder.removeprefix("validation-"), profile=col))
    cols = ["plan", "call", "m", "n", "k", "best_order", "best_ms", "profile", "model_pct", "naive_pct"]
    return pd.concat(parts, ignore_index=True)[cols]


def record(s: pd.DataFrame) -> pd.DataFrame:
    def row(group: str, value: str, d: pd.DataFrame) -> dict:
        return dict(group=group, value=value, shapes=len(d), model_mape_pct=d.model_pct.abs().mean(),
                    model_mean_pct=d.model_pct.mean(), model_worst_pct=d.model_pct.iloc[d.model_pct.abs().argmax()],
                    naive_mape_pct=d.naive_pct.abs().mean(), naive_mean_pct=d.naive_pct.mean())

    out = [row("call", c, d) for c, d in s.groupby("call", sort=False)]
    out += [row("k", str(c), d) for c, d in s.groupby(pd.cut(s.k, K_EDGES), observed=True)]
    out += [row("m", str(c), d) for c, d in s.groupby(pd.cut(s.m, M_EDGES), observed=True)]
    out.append(row("all", "all", s))
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/h100_gemm_record.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help=f"output folder (default {OUT.relative_to(ROOT)})")
    a = parse_outputs(ap, argv, folders=("--out",))
    out = Path(a.out) if a.out else OUT
    s = shapes()
    r = record(s)
    out.mkdir(parents=True, exist_ok=True)
    s.round(4).to_csv(out / "shapes.csv", index=False)
    r.round(4).to_csv(out / "record.csv", index=False)
    with pd.option_context("display.width", 200):
        print(r.round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
