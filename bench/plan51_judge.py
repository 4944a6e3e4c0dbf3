"""Registered plan 51: the mechanism model (measured L2 curve, measured tickets mainloop) against the profile, judged.

    python bench/plan51_judge.py RUN_DIR [--rate-dir RATE_DIR] [--out bench/results/validation-registered51]
    python bench/plan51_judge.py --factor RATE_DIR       # step 1: the tickets mainloop factor from the microbenchmark

Step 1 (``--factor``): RATE_DIR holds ``ctahw run``'s measurement of :data:`RATE` (``RATE_DIR/EXP/results.csv``; the
one-layer chain kernel against the plain GEMM); prints the factor the registration's rules define
(:func:`mainloop_factor`: the median over its cases of measured over predicted groups-of-8-to-sequential ratio) and
each case's ratio.

Step 2: RUN_DIR holds the measurement of :data:`EXPERIMENTS` (the device runs them with ``bash
bench/hw/run_registered.sh --no-hw-tests reg49-reference reg51-chain-order-h6656 reg51-chain-order-h13312``). Each
chain experiment has three registrations, written before it ran: ``bench/predictions/EXP`` (h200-x1-calibrated: the
``"partition"`` law, no factor; its naive FLOPs line and waves predictor too), ``EXP-mechanism``
(h200-x1-calibrated-mechanism: the ``"survival"`` law on the measured L2 curve and the step-1 factor) and
``EXP-threshold-rate`` (the ``"threshold"`` law and the same factor). The machine's speed comes from plan 49's
reference GEMM. The rules are in ``bench/predictions/reg51-chain-order-h6656/README.md`` (:data:`CLAIMS`); claim (h)
needs ``--rate-dir`` (step 1's run), else it is reported as not judged.

Writes into ``--out`` what ``bench/plan50_judge.py`` writes (``cases.csv``, ``summary.csv``, ``order-effect.csv``,
``rankings.csv``, ``chain-vs-sequential.csv``, ``claims.csv``) and, with ``--rate-dir``, ``rate.csv`` (the
microbenchmark's cases). A missing measurement or one that is not these experiments' is refused (one line, exit 2).
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
import registered_plan  # noqa: E402
from ctasim import accuracy, results, ticket_rate  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.spec import SpecError  # noqa: E402

REFERENCE = P49.REFERENCE
RATE = ("reg51-chain-rate-h8192", "reg51-chain-rate-h12288")
CHAINS = ("reg51-chain-order-h6656", "reg51-chain-order-h13312")
EXPERIMENTS = (REFERENCE, *CHAINS)
BASE = P49.BASE
TARGET_MAPE, TARGET_WORST, CHAIN_POINTS, RATE_POINTS = 3.0, 6.0, 2.0, 1.0
CLAIMS = {
    "a": "mechanism: MAPE below the profile's over the chain-kernel cases (every order, every H and M)",
    "b": f"mechanism: mean |error| of the chain against sequential (groups of 8 / sequential) below the profile's, "
         f"and within {CHAIN_POINTS:g} points at every (H, M)",
    "c": "mechanism: the fastest strategy right at every (H, M) (sequential or a chain-kernel order)",
    "d": "mechanism: mean |error| of the order effect (ratio to groups of 8: groups of 4, pairs, row order) below the "
         "profile's",
    "e": f"mechanism: MAPE <= {TARGET_MAPE:g}% over groups of 8 and groups of 4",
    "f": f"mechanism: MAPE <= {TARGET_MAPE:g}% and worst <= {TARGET_WORST:g}% over every measured case",
    "g": "mechanism: MAPE at most half of naive's over the chain-kernel cases",
    "h": f"the factor is one constant: the microbenchmark's ratios within {RATE_POINTS:g} point of their median",
}


def registrations(exp: str) -> dict[str, tuple[str, str]]:
    """Predictor -> (registration folder, its source) for ``exp``."""
    out = {"profile": (exp, "model"), "naive": (exp, "naive"), "waves": (exp, "waves")}
    if exp != REFERENCE:
        out["mechanism"] = (f"{exp}-mechanism", "model")
        out["threshold-rate"] = (f"{exp}-threshold-rate", "model")
    return out


def rate_cases(rate_dir: Path) -> pd.DataFrame:
    """Per microbenchmark case: groups of 8 over sequential, measured and as the profile's registration predicted it,
    and their ratio (the case's factor)."""
    rows = []
    for exp in RATE:
        pred = results.read(P49.PREDICTIONS / exp / "predictions.csv")
        j = accuracy.judge(pred[pred["source"] == "model"], P49.measured(rate_dir, exp, 51))
        for case, g in j.groupby("case", sort=False):
            t = g.set_index("strategy")
            if not {BASE, "sequential"} <= set(t.index):
                raise P49.JudgeError(f"{rate_dir / exp}: case {case} lacks groups of 8 or sequential")
            meas = t.loc[BASE, "measured_ms"] / t.loc["sequential", "measured_ms"]
            prd = t.loc[BASE, "predicted_ms"] / t.loc["sequential", "predicted_ms"]
            rows.append({"experiment": exp, "case": case, "measured": round(meas, 5), "predicted": round(prd, 5),
                         "factor": round(meas / prd, 5)})
    return pd.DataFrame(rows)


def mainloop_factor(rc: pd.DataFrame) -> float:
    """The registration's factor: the median of the cases' factors, rounded to 3 places (the rule
    ``ctasim.ticket_rate.mainloop_factor`` keeps; plan 51 applied it to its registration's partition-law predictions)."""
    return ticket_rate.mainloop_factor(rc)


CHAIN_CASES = 24
"""The registered chain-kernel cases (2 H x 3 M x 4 orders): a judgement on fewer is refused."""


def cases(run_dir: Path) -> pd.DataFrame:
    return P49.check_count(P49.cases(run_dir, EXPERIMENTS, registrations, REFERENCE, plain="profile", plan=51),
                           CHAIN_CASES, 51)


def claims(c: pd.DataFrame, s: pd.DataFrame, oe: pd.DataFrame, r: pd.DataFrame, cs: pd.DataFrame,
           rc: pd.DataFrame | None) -> pd.DataFrame:
    mape = s.set_index(["predictor", "cases"])["mape_pct"]
    worst = s.set_index(["predictor", "cases"])["worst_pct"]

    def points(src):
        return 100 * (oe[src] - oe["measured"]).abs().mean()

    chain = {src: 100 * (cs[src] - cs["measured"]) for src in ("profile", "mechanism")}
    g84 = c[(c["source"] == "mechanism") & c["strategy"].isin([BASE, "intragpu-g4"])]
    g84_mape = 100 * g84["error"].abs().mean()
    m = chain["mechanism"]
    rows = [
        ("a", f"{mape['mechanism', 'chain kernel']:.2f}% against {mape['profile', 'chain kernel']:.2f}%",
         mape["mechanism", "chain kernel"] < mape["profile", "chain kernel"]),
        ("b", f"{m.abs().mean():.2f} against {chain['profile'].abs().mean():.2f} points; worst "
              f"{m.iloc[m.abs().argmax()]:+.2f} over {len(m)} cases",
         m.abs().mean() < chain["profile"].abs().mean() and bool((m.abs() <= CHAIN_POINTS).all())),
        ("c", f"{int(r['mechanism_fastest_right'].sum())} of {len(r)} (profile "
              f"{int(r['profile_fastest_right'].sum())})", bool(r["mechanism_fastest_right"].all())),
        ("d", f"{points('mechanism'):.2f} against {points('profile'):.2f} points",
         points("mechanism") < points("profile")),
        ("e", f"{g84_mape:.2f}% over {len(g84)} cases", g84_mape <= TARGET_MAPE),
        ("f", f"MAPE {mape['mechanism', 'all']:.2f}%, worst {worst['mechanism', 'all']:+.2f}%",
         mape["mechanism", "all"] <= TARGET_MAPE and abs(worst["mechanism", "all"]) <= TARGET_WORST),
        ("g", f"{mape['mechanism', 'chain kernel']:.2f}% against naive {mape['naive', 'chain kernel']:.2f}%",
         mape["mechanism", "chain kernel"] <= 0.5 * mape["naive", "chain kernel"]),
    ]
    if rc is None:
        rows.append(("h", "not judged: no --rate-dir", False))
    else:
        dev = 100 * (rc["factor"] - rc["factor"].median()).abs()
        rows.append(("h", f"factor {mainloop_factor(rc):.3f}; the {len(rc)} ratios {rc['factor'].min():.4f}-"
                          f"{rc['factor'].max():.4f}, at most {dev.max():.2f} points from the median",
                     bool((dev <= RATE_POINTS).all())))
    return registered_plan.claims_table(rows, CLAIMS)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/plan51_judge.py", description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path, nargs="?")
    ap.add_argument("--factor", type=Path, metavar="RATE_DIR", help="step 1: print the factor from RATE_DIR")
    ap.add_argument("--rate-dir", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/validation-registered51")
    args = parse_outputs(ap, argv, folders=("--out",))
    if (args.factor is None) == (args.run_dir is None):
        print("plan51_judge: give RUN_DIR or --factor RATE_DIR (one of the two)", file=sys.stderr)
        return 2
    try:
        if args.factor is not None:
            rc = rate_cases(args.factor)
            print(rc.to_string(index=False))
            print(f"ticket_mainloop_factor = {mainloop_factor(rc):.3f}")
            return 0
        c = cases(args.run_dir)
        rc = rate_cases(args.rate_dir) if args.rate_dir is not None else None
    except (P49.JudgeError, SpecError, results.ResultsError) as e:
        print(f"plan51_judge: {e}", file=sys.stderr)
        return 2
    s, oe, r = P49.summary(c), P49.order_effect(c, CHAINS), P49.rankings(c, CHAINS)
    cs = P50.chain_vs_sequential(c, CHAINS)
    cl = claims(c, s, oe, r, cs, rc)
    tables = {"summary": s, "order-effect": oe, "rankings": r, "chain-vs-sequential": cs, "claims": cl}
    if rc is not None:
        tables["rate"] = rc
    P49.write_judgement(args.out, c, tables, ("summary", "chain-vs-sequential", "claims"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
