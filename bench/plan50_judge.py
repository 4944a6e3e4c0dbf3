"""Registered plan 50: the adopted ticket law on chains at H = 11264 and 14336, judged (no GPU).

    python bench/plan50_judge.py RUN_DIR [--out bench/results/validation-registered50]

RUN_DIR holds ``ctahw run``'s measurement of each of :data:`EXPERIMENTS` (``RUN_DIR/EXP/results.csv``; the device
runs them with ``bash bench/hw/run_registered.sh --no-hw-tests reg49-reference reg50-chain-order-h11264
reg50-chain-order-h14336``). Each chain experiment has two registrations, written before it ran:
``bench/predictions/EXP`` (h200-x1-calibrated, ticket law ``"partition"`` since plan 49; its naive FLOPs line and waves
predictor too) and ``bench/predictions/EXP-threshold`` (h200-x1-calibrated-threshold, the law ``"threshold"``, the
profile's before plan 49). The machine's
speed comes from plan 49's reference GEMM (``reg49-reference``, registered by plan 49). Predictors: "profile" and
"threshold" (each registration's model), "naive", "waves". The rules are in
``bench/predictions/reg50-chain-order-h11264/README.md`` (:data:`CLAIMS`).

Writes into ``--out`` what ``bench/plan49_judge.py`` writes (``cases.csv``, ``summary.csv``, ``order-effect.csv``,
``rankings.csv``, ``claims.csv``), plus ``chain-vs-sequential.csv`` (per (H, M): groups of 8 over sequential, measured
and per predictor) and, where RUN_DIR also holds plan 49's ``reg49-chain-order-h9216`` (a second call on the same
machine), ``row-state.csv``: each order's ratio to groups of 8 at H = 9216 on this machine beside every committed
plan-49 machine's (reported, not judged).

A missing measurement or one that is not these experiments' is refused (one line, exit 2).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan49_judge as P49  # noqa: E402
import registered_plan  # noqa: E402
from ctasim import results  # noqa: E402

REFERENCE = P49.REFERENCE  # plan 49's reference GEMM, registered there
CHAINS = ("reg50-chain-order-h11264", "reg50-chain-order-h14336")
EXPERIMENTS = (REFERENCE, *CHAINS)
BASE = P49.BASE  # groups of 8
ROW_STATE = "reg49-chain-order-h9216"
ROW_STATE_RUNS = {f"2026-12-04-registered49-1gpu{s}": f"2026-12-04-registered49-1gpu{s}/{ROW_STATE}"
                  for s in ("", "-run2", "-run3")} | {
                  f"2026-12-04-plan49-row-repeats {r}": f"2026-12-04-plan49-row-repeats/{r}" for r in ("rep1", "rep2", "rep3")}
"""The committed plan-49 measurements of ``reg49-chain-order-h9216``: label -> folder (of ``results.csv``) under
bench/results/hw (the row repeats, post-hoc, ran it three times in one call)."""
TARGET_MAPE, TARGET_WORST, CHAIN_POINTS = 3.0, 6.0, 2.0
CLAIMS = {
    "a": "profile: MAPE below threshold's over the chain-kernel cases (every order, every H and M)",
    "b": "profile: mean |error| of the order effect (ratio to groups of 8: groups of 4, pairs, row order) below "
         "threshold's",
    "c": "profile: the fastest strategy right at every (H, M) (sequential or a chain-kernel order)",
    "d": f"profile: the chain against sequential (groups of 8 / sequential) within {CHAIN_POINTS:g} points of the "
         "measured ratio at every (H, M)",
    "e": f"profile: MAPE <= {TARGET_MAPE:g}% over groups of 8 and groups of 4",
    "f": f"profile: MAPE <= {TARGET_MAPE:g}% and worst <= {TARGET_WORST:g}% over every measured case",
    "g": "profile: MAPE at most half of naive's over the chain-kernel cases",
}


def registrations(exp: str) -> dict[str, tuple[str, str]]:
    """Predictor -> (registration folder, its source) for ``exp``."""
    out = {"profile": (exp, "model"), "naive": (exp, "naive"), "waves": (exp, "waves")}
    if exp != REFERENCE:
        out["threshold"] = (f"{exp}-threshold", "model")
    return out


CHAIN_CASES = 24
"""The registered chain-kernel cases (2 H x 3 M x 4 orders): fewer are refused."""


def cases(run_dir: Path) -> pd.DataFrame:
    return P49.check_count(P49.cases(run_dir, EXPERIMENTS, registrations, REFERENCE, plain="profile", plan=50),
                           CHAIN_CASES, 50)


def chain_vs_sequential(c: pd.DataFrame, experiments=CHAINS) -> pd.DataFrame:
    """Per chain experiment (of ``experiments``) and case: groups of 8 over sequential, measured and per predictor."""
    chains = c[c["experiment"].isin(experiments)]
    rows = []
    for (exp, case), g in chains.groupby(["experiment", "case"], sort=False):
        meas = g.drop_duplicates("strategy").set_index("strategy")["measured_ms"]
        row = {"experiment": exp, "case": case, "measured": round(meas[BASE] / meas["sequential"], 4)}
        for src, gp in g.groupby("source", sort=True):
            p = gp.set_index("strategy")["predicted_ms"]
            row[src] = round(p[BASE] / p["sequential"], 4)
        rows.append(row)
    return pd.DataFrame(rows)


def row_state(run_dir: Path) -> pd.DataFrame | None:
    """Each order's ratio to groups of 8 at H = 9216, per M, on this machine (``run_dir``) and the committed plan-49
    machines; None where ``run_dir`` has no ``reg49-chain-order-h9216``."""
    mine = run_dir / ROW_STATE / "results.csv"
    if not mine.is_file():
        return None
    rows = []
    for label, f in [(str(run_dir.name), mine),
                     *((k, ROOT / "bench/results/hw" / v / "results.csv") for k, v in ROW_STATE_RUNS.items())]:
        m = results.read(f)
        m = m[m["status"] == "ok"].pivot_table(index="m", columns="strategy", values="makespan_ms")
        for mm, r in m.iterrows():
            rows.append({"run": label, "m": int(mm), **{o: round(r[o] / r[BASE], 4) for o in P49.ORDERS},
                         "sequential": round(r["sequential"] / r[BASE], 4)})
    return pd.DataFrame(rows)


def claims(c: pd.DataFrame, s: pd.DataFrame, oe: pd.DataFrame, r: pd.DataFrame, cs: pd.DataFrame) -> pd.DataFrame:
    t = s.set_index(["predictor", "cases"])
    mape = t["mape_pct"]

    def points(src):
        return 100 * (oe[src] - oe["measured"]).abs().mean()

    chain_err = 100 * (cs["profile"] - cs["measured"])
    g84 = c[(c["source"] == "profile") & c["strategy"].isin([BASE, "intragpu-g4"])]
    g84_mape = 100 * g84["error"].abs().mean()
    rows = [
        ("a", f"{mape['profile', 'chain kernel']:.2f}% against {mape['threshold', 'chain kernel']:.2f}%",
         mape["profile", "chain kernel"] < mape["threshold", "chain kernel"]),
        ("b", f"{points('profile'):.2f} against {points('threshold'):.2f} points",
         points("profile") < points("threshold")),
        ("c", f"{int(r['profile_fastest_right'].sum())} of {len(r)} (threshold "
              f"{int(r['threshold_fastest_right'].sum())})", bool(r["profile_fastest_right"].all())),
        ("d", f"worst {chain_err.iloc[chain_err.abs().argmax()]:+.2f} points over {len(chain_err)} cases",
         bool((chain_err.abs() <= CHAIN_POINTS).all())),
        ("e", f"{g84_mape:.2f}% over {len(g84)} cases", g84_mape <= TARGET_MAPE),
        ("f", f"MAPE {mape['profile', 'all']:.2f}%, worst {t.loc[('profile', 'all'), 'worst_pct']:+.2f}%",
         mape["profile", "all"] <= TARGET_MAPE and abs(t.loc[("profile", "all"), "worst_pct"]) <= TARGET_WORST),
        ("g", f"{mape['profile', 'chain kernel']:.2f}% against naive {mape['naive', 'chain kernel']:.2f}%",
         mape["profile", "chain kernel"] <= 0.5 * mape["naive", "chain kernel"]),
    ]
    return registered_plan.claims_table(rows, CLAIMS)


def main(argv: list[str] | None = None) -> int:
    def tables(c, run_dir):
        s, oe, r = P49.summary(c), P49.order_effect(c, CHAINS), P49.rankings(c, CHAINS)
        cs = chain_vs_sequential(c)
        out = {"summary": s, "order-effect": oe, "rankings": r, "chain-vs-sequential": cs,
               "claims": claims(c, s, oe, r, cs)}
        rs = row_state(run_dir)
        return out if rs is None else dict(out, **{"row-state": rs})

    return P49.judge_main(argv, 50, __doc__, cases, tables, ("summary", "chain-vs-sequential", "claims", "row-state"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
