"""Registered plan 54: the adopted profile on chains of four layers, judged.

    python bench/plan54_judge.py RUN_DIR [--out bench/results/validation-registered54]

RUN_DIR holds ``ctahw run``'s measurement of :data:`EXPERIMENTS` (the device runs them with ``bash
bench/hw/run_registered.sh --no-hw-tests reg49-reference reg54-chain-deep-h6400 reg54-chain-deep-h9728``). Each chain
experiment has two registrations (:func:`registrations`): ``EXP`` (the profile as adopted after registered plan 53: the
``"survival"`` law and the tickets mainloop factor 1.019; its naive FLOPs line and waves predictor too) and
``EXP-partition`` (h200-x1-calibrated-partition: the profile before plan 53, the ``"partition"`` law and factor 1).
The rules are in ``bench/predictions/reg54-chain-deep-h6400/README.md`` (:data:`CLAIMS`).

Writes into ``--out``: ``cases.csv``, ``summary.csv``, ``rankings.csv``, ``chain-vs-sequential.csv`` (per (H, M):
groups of 8 over sequential, measured and per predictor) and ``claims.csv``. A missing measurement, one that is not
these experiments', or one short of a registered case is refused (one line, exit 2).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan49_judge as P49  # noqa: E402
import plan50_judge as P50  # noqa: E402
import plan53_judge as P53  # noqa: E402
from ctasim import results  # noqa: E402
from ctasim.cliargs import OneLineParser, writable_folder  # noqa: E402
from ctasim.spec import SpecError  # noqa: E402

REFERENCE = P49.REFERENCE
CHAINS = ("reg54-chain-deep-h6400", "reg54-chain-deep-h9728")
EXPERIMENTS = (REFERENCE, *CHAINS)
CANDIDATE, BEFORE = "profile", "partition"
TARGET_MAPE, TARGET_WORST, MEAN_POINTS = 3.0, 6.0, 1.0
CLAIMS = {
    "a": "profile: mean |error| of the chain against sequential (groups of 8 / sequential) below the profile before "
         "plan 53's",
    "b": "profile: MAPE below the profile before plan 53's over the chain-kernel cases, each error normalised by the "
         "machine's speed (the reference GEMM at M = 16384)",
    "c": "profile: the faster of groups of 8 and sequential right at every (H, M)",
    "d": "profile: the fastest strategy right at every (H, M) (sequential or a chain-kernel order)",
    "e": f"profile: MAPE <= {TARGET_MAPE:g}% and worst <= {TARGET_WORST:g}% over every measured case",
    "f": "profile: MAPE at most half of naive's over the chain-kernel cases (raw errors)",
    "g": f"profile: mean |error| of the chain against sequential <= {MEAN_POINTS:g} point",
}
CHAIN_CASES = 12
"""The registered chain-kernel cases: 2 H x 3 M x 2 orders."""


def registrations(exp: str) -> dict[str, tuple[str, str]]:
    """Predictor -> (registration folder, its source) for ``exp``."""
    out = {CANDIDATE: (exp, "model"), "naive": (exp, "naive"), "waves": (exp, "waves")}
    if exp != REFERENCE:
        out[BEFORE] = (f"{exp}-{BEFORE}", "model")
    return out


def cases(run_dir: Path) -> pd.DataFrame:
    c = P49.cases(run_dir, EXPERIMENTS, registrations, REFERENCE, plain=CANDIDATE, plan=54)
    return P49.check_count(c, CHAIN_CASES, 54)


def claims(c: pd.DataFrame, s: pd.DataFrame, r: pd.DataFrame, cs: pd.DataFrame) -> pd.DataFrame:
    st = {src: P53.chain_stats(c, cs, src, CHAINS) for src in (CANDIDATE, BEFORE, "naive")}
    m, p, n = st[CANDIDATE], st[BEFORE], st["naive"]
    a = s[s["cases"] == "all"].set_index("predictor")
    rows = [
        ("a", f"{m['chain_vs_sequential_points']:.2f} against {p['chain_vs_sequential_points']:.2f} points",
         m["chain_vs_sequential_points"] < p["chain_vs_sequential_points"]),
        ("b", f"{m['chain_kernel_normalised_mape_pct']:.2f}% against {p['chain_kernel_normalised_mape_pct']:.2f}% "
              f"(raw {m['chain_kernel_mape_pct']:.2f} against {p['chain_kernel_mape_pct']:.2f}%)",
         m["chain_kernel_normalised_mape_pct"] < p["chain_kernel_normalised_mape_pct"]),
        ("c", f"{m['faster_right']} of {m['comparisons']} (before plan 53 {p['faster_right']})",
         m["faster_right"] == m["comparisons"]),
        ("d", f"{int(r[f'{CANDIDATE}_fastest_right'].sum())} of {len(r)} (before plan 53 "
              f"{int(r[f'{BEFORE}_fastest_right'].sum())})", bool(r[f"{CANDIDATE}_fastest_right"].all())),
        ("e", f"MAPE {a.loc[CANDIDATE, 'mape_pct']:.2f}%, worst {a.loc[CANDIDATE, 'worst_pct']:+.2f}%",
         a.loc[CANDIDATE, "mape_pct"] <= TARGET_MAPE and abs(a.loc[CANDIDATE, "worst_pct"]) <= TARGET_WORST),
        ("f", f"{m['chain_kernel_mape_pct']:.2f}% against naive {n['chain_kernel_mape_pct']:.2f}%",
         m["chain_kernel_mape_pct"] <= 0.5 * n["chain_kernel_mape_pct"]),
        ("g", f"{m['chain_vs_sequential_points']:.2f} points", m["chain_vs_sequential_points"] <= MEAN_POINTS),
    ]
    return pd.DataFrame([{"claim": k, "rule": CLAIMS[k], "value": v, "met": bool(ok)} for k, v, ok in rows])


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/plan54_judge.py", description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/validation-registered54")
    args = ap.parse_args(argv)
    try:
        writable_folder(args.out)
        c = cases(args.run_dir)
    except (P49.JudgeError, SpecError, results.ResultsError) as e:
        print(f"plan54_judge: {e}", file=sys.stderr)
        return 2
    s, r = P49.summary(c), P49.rankings(c, CHAINS)
    cs = P50.chain_vs_sequential(c, CHAINS)
    cl = claims(c, s, r, cs)
    tables = {"summary": s, "rankings": r, "chain-vs-sequential": cs, "claims": cl}
    P49.write_judgement(args.out, c, tables, ("summary", "chain-vs-sequential", "claims"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
