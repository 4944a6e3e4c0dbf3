"""Registered plan 52: is the chain kernel faster than sequential? The profile against the mechanism model, judged.

    python bench/plan52_judge.py RUN_DIR [--plan51 RUN51] [--out bench/results/validation-registered52]

RUN_DIR holds ``ctahw run``'s measurement of :data:`EXPERIMENTS` (the device runs them with ``bash
bench/hw/run_registered.sh --no-hw-tests reg49-reference reg52-chain-faster-h7680 reg52-chain-faster-h10752``). Each
chain experiment has the registrations of plan 51's pattern (``bench/plan51_judge.registrations``): ``EXP`` (the
profile), ``EXP-mechanism`` and ``EXP-threshold-rate``. The rules and the adoption rule are in
``bench/predictions/reg52-chain-faster-h7680/README.md`` (:data:`CLAIMS`); the adoption rule pools plan 51's committed
measurement (``--plan51``, default bench/results/hw/2026-12-04-registered51-1gpu).

Writes into ``--out``: ``cases.csv``, ``summary.csv``, ``rankings.csv``, ``chain-vs-sequential.csv`` (per (H, M):
groups of 8 over sequential, measured and per predictor), ``claims.csv`` and ``adoption.csv`` (the pooled figures and
the rule's verdict). A missing measurement or one that is not these experiments' is refused (one line, exit 2).
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
import plan51_judge as P51  # noqa: E402
import registered_plan  # noqa: E402
from ctasim import results  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.spec import SpecError  # noqa: E402

REFERENCE = P49.REFERENCE
CHAINS = ("reg52-chain-faster-h7680", "reg52-chain-faster-h10752")
EXPERIMENTS = (REFERENCE, *CHAINS)
BASE = P49.BASE
PLAN51 = ROOT / "bench/results/hw/2026-12-04-registered51-1gpu"
TARGET_MAPE, TARGET_WORST = 3.0, 6.0
CLAIMS = {
    "a": "mechanism: mean |error| of the chain against sequential (groups of 8 / sequential) below the profile's",
    "b": "mechanism: MAPE below the profile's over the chain-kernel cases (every order, every H and M)",
    "c": "mechanism: the faster of groups of 8 and sequential right at every (H, M)",
    "d": "mechanism: the fastest strategy right at every (H, M) (sequential or a chain-kernel order)",
    "e": f"mechanism: MAPE <= {TARGET_MAPE:g}% and worst <= {TARGET_WORST:g}% over every measured case",
    "f": "mechanism: MAPE at most half of naive's over the chain-kernel cases",
}


CHAIN_CASES = 24
"""The registered chain-kernel cases (2 H x 4 M x 3 orders)."""


def cases(run_dir: Path, experiments=EXPERIMENTS, plan: int = 52) -> pd.DataFrame:
    c = P49.cases(run_dir, experiments, P51.registrations, REFERENCE, plain="profile", plan=plan)
    return P49.check_count(c, CHAIN_CASES if plan == 52 else P51.CHAIN_CASES, plan)


def faster_right(cs: pd.DataFrame, src: str) -> pd.Series:
    """Per (H, M): whether ``src`` puts groups of 8 and sequential in the measured order."""
    return (cs[src] < 1.0) == (cs["measured"] < 1.0)


def chain_stats(c: pd.DataFrame, cs: pd.DataFrame, src: str) -> dict:
    chain = c[(c["source"] == src) & c["strategy"].str.startswith(BASE)]
    return {"predictor": src, "chain_vs_sequential_points": round(100 * (cs[src] - cs["measured"]).abs().mean(), 3),
            "chain_kernel_mape_pct": round(100 * chain["error"].abs().mean(), 3),
            "faster_right": int(faster_right(cs, src).sum()), "comparisons": len(cs), "chain_cases": len(chain)}


def claims(c: pd.DataFrame, s: pd.DataFrame, r: pd.DataFrame, cs: pd.DataFrame) -> pd.DataFrame:
    st = {src: chain_stats(c, cs, src) for src in ("profile", "mechanism")}
    mape = s.set_index(["predictor", "cases"])["mape_pct"]
    worst = s.set_index(["predictor", "cases"])["worst_pct"]
    m, p = st["mechanism"], st["profile"]
    rows = [
        ("a", f"{m['chain_vs_sequential_points']:.2f} against {p['chain_vs_sequential_points']:.2f} points",
         m["chain_vs_sequential_points"] < p["chain_vs_sequential_points"]),
        ("b", f"{m['chain_kernel_mape_pct']:.2f}% against {p['chain_kernel_mape_pct']:.2f}%",
         m["chain_kernel_mape_pct"] < p["chain_kernel_mape_pct"]),
        ("c", f"{m['faster_right']} of {m['comparisons']} (profile {p['faster_right']})",
         m["faster_right"] == m["comparisons"]),
        ("d", f"{int(r['mechanism_fastest_right'].sum())} of {len(r)} (profile "
              f"{int(r['profile_fastest_right'].sum())})", bool(r["mechanism_fastest_right"].all())),
        ("e", f"MAPE {mape['mechanism', 'all']:.2f}%, worst {worst['mechanism', 'all']:+.2f}%",
         mape["mechanism", "all"] <= TARGET_MAPE and abs(worst["mechanism", "all"]) <= TARGET_WORST),
        ("f", f"{mape['mechanism', 'chain kernel']:.2f}% against naive {mape['naive', 'chain kernel']:.2f}%",
         mape["mechanism", "chain kernel"] <= 0.5 * mape["naive", "chain kernel"]),
    ]
    return registered_plan.claims_table(rows, CLAIMS)


def adoption(c52: pd.DataFrame, cs52: pd.DataFrame, c51: pd.DataFrame, cs51: pd.DataFrame,
             cl: pd.DataFrame) -> pd.DataFrame:
    """The adoption rule: plan 52's (a) and (b), and the pooled plans 51 + 52 figures of both predictors."""
    c, cs = pd.concat([c51, c52], ignore_index=True), pd.concat([cs51, cs52], ignore_index=True)
    rows = [dict(chain_stats(c, cs, src), scope="plans 51 + 52") for src in ("profile", "mechanism", "threshold-rate")]
    t = pd.DataFrame(rows).set_index("predictor")
    met = cl.set_index("claim")["met"]
    adopt = bool(met["a"] and met["b"]
                 and t.loc["mechanism", "chain_vs_sequential_points"] < t.loc["profile", "chain_vs_sequential_points"]
                 and t.loc["mechanism", "chain_kernel_mape_pct"] < t.loc["profile", "chain_kernel_mape_pct"])
    return t.reset_index().assign(adopt_mechanism=adopt)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/plan52_judge.py", description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--plan51", type=Path, default=PLAN51)
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/validation-registered52")
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        c = cases(args.run_dir)
        c51 = cases(args.plan51, P51.EXPERIMENTS, plan=51)
    except (P49.JudgeError, SpecError, results.ResultsError) as e:
        print(f"plan52_judge: {e}", file=sys.stderr)
        return 2
    s, r = P49.summary(c), P49.rankings(c, CHAINS)
    cs = P50.chain_vs_sequential(c, CHAINS)
    cl = claims(c, s, r, cs)
    ad = adoption(c, cs, c51, P50.chain_vs_sequential(c51, P51.CHAINS), cl)
    tables = {"summary": s, "rankings": r, "chain-vs-sequential": cs, "claims": cl, "adoption": ad}
    P49.write_judgement(args.out, c, tables, ("summary", "chain-vs-sequential", "claims", "adoption"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
