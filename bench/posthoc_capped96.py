"""Post-hoc: registered plan 96's small blocks priced again by ``h100-x1-datasheet`` as adopted (the capped drift K law)

    python bench/posthoc_capped96.py [--out bench/results/posthoc-capped96]

Plan 96 (``bench/results/hw-h100/2026-12-07-registered96-1gpu``, one H100) was registered and judged with the profile on
the absolute drift K law; plan 98 then adopted the capped law, chosen after plan 97's call, which timed plan 96's GEMMs
alone. Here, per block and M: the call's measured makespan, the registered ``model`` (absolute law), ``waves`` and
``flat`` errors (plan 96's judged ``cases.csv``) and the error of the profile as it is now (``capped``: ``ctasim
predict``'s model row with the registration's harness and seed: ``plan99_capped_blocks.registered_rows``). Writes
``cases.csv`` and prints it with each column's mean |error|. Post-hoc throughout: the law was chosen after these blocks'
GEMMs were timed, so no claim rests on it; registered plan 99 judges the capped law on blocks it never saw. Left out:
the reference GEMM (K = 8192: the laws agree there).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

OUT = ROOT / "bench/results/posthoc-capped96"
JUDGED = ROOT / "bench/results/validation-registered96/cases.csv"
REGISTERED = ("model", "waves", "flat")


def cases() -> pd.DataFrame:
    """Per plan 96 block and case: measured ms, the registered sources' errors and the capped profile's (%)."""
    import plan96_small_blocks as p96  # noqa: PLC0415
    from plan99_capped_blocks import registered_rows  # noqa: PLC0415

    judged = pd.read_csv(JUDGED)
    judged = judged[judged["experiment"].isin(p96.BLOCKS)]
    err = judged.pivot_table(index=["experiment", "case"], columns="source", values="error_pct")
    measured = judged[judged["source"] == "model"].set_index(["experiment", "case"])["measured_ms"]
    rows = []
    for exp in p96.BLOCKS:
        p = registered_rows(exp, p96.PREDICTIONS / p96.EXPERIMENTS[exp])
        for (_, case, _), ms in p.items():
            meas = float(measured.loc[(exp, case)])
            rows.append(dict(experiment=exp, case=case, measured_ms=meas, capped_ms=float(ms),
                             **{f"{s if s != 'model' else 'absolute'}_pct": float(err.loc[(exp, case), s])
                                for s in REGISTERED},
                             capped_pct=(float(ms) / meas - 1) * 100))
    return pd.DataFrame(rows).round(4)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_capped96.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help=f"output folder (default {OUT.relative_to(ROOT)})")
    a = parse_outputs(ap, argv, folders=("--out",))
    out = Path(a.out) if a.out else OUT
    c = cases()
    out.mkdir(parents=True, exist_ok=True)
    c.to_csv(out / "cases.csv", index=False)
    with pd.option_context("display.width", 200):
        print(c.round(2).to_string(index=False))
        print("mean |error| (%):", ", ".join(f"{col[:-4]} {c[col].abs().mean():.2f}"
                                               for col in c.columns if col.endswith("_pct")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
