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

REFERENCE = P49.REFERENCE
CHAINS = ("reg54-chain-deep-h6400", "reg54-chain-deep-h9728")
EXPERIMENTS = (REFERENCE, *CHAINS)
CANDIDATE, BEFORE = "profile", "partition"
TARGET_MAPE, TARGET_WORST, MEAN_POINTS = P53.TARGET_MAPE, P53.TARGET_WORST, P53.MEAN_POINTS
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
    return P53.claim_table(P53.comparing_claims(c, s, r, cs, CANDIDATE, BEFORE, CHAINS, "before plan 53"), CLAIMS)


def main(argv: list[str] | None = None) -> int:
    def tables(c, run_dir):
        s, r, cs = P49.summary(c), P49.rankings(c, CHAINS), P50.chain_vs_sequential(c, CHAINS)
        return {"summary": s, "rankings": r, "chain-vs-sequential": cs, "claims": claims(c, s, r, cs)}

    return P49.judge_main(argv, 54, __doc__, cases, tables, ("summary", "chain-vs-sequential", "claims"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
