"""Registered plan 48: a machine's own profile (``ctahw calibrate`` on it) against the committed one, on model blocks
and the chain kernel (no GPU).

    python bench/own_profile_blocks.py --register        # the committed profile's registrations (ctasim predict)
    python bench/own_profile_blocks.py --judge RUN_DIR [--out bench/results/validation-registered48]

:data:`EXPERIMENTS` are committed experiments of earlier plans, each run before on other machines: the reference GEMM
(``reg28-reference``), 2-layer chains at H = 6144 and 10240 run sequentially and by the chain kernel (CTA-pipelining
on one GPU) in four tile orders (``reg10-chain-order-*``), and the Llama-3.1-70B MLP block (``reg26-llama3.1-70b-1gpu``,
34-84 ms, a down GEMM at K = 28672). ``--register`` writes ``bench/predictions/reg48-committed/EXP`` with
``ctasim predict`` and each experiment's own profile (``h200-x1-calibrated``). On the device,
``bench/hw/run_own_blocks.sh`` writes the machine's own profile, predicts every experiment with it into
``RUN_DIR/reg48-own/EXP`` before any of them runs, then runs them (``RUN_DIR/EXP``).

``--judge`` writes ``cases.csv`` (per measured case and predictor: "committed" and "own", the model of each
registration, and "naive", the committed registration's FLOPs line; predicted, measured, error), ``summary.csv``
(per predictor and strategy kind, and over all: cases, MAPE, worst), ``rankings.csv`` (per case with more than one
strategy: the measured fastest and ranking, each predictor's) and ``claims.csv`` (:data:`CLAIMS`).

Left out: the own registrations are written by the device in the same call as the measurement, so ``ctasim
compare``'s git rule labels them post-hoc; the call's log orders the steps and a test re-derives them from the
committed own profile (docs/validation.md, registered plan 48).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

EXPERIMENTS = ("reg28-reference", "reg10-chain-order-h6144", "reg10-chain-order-h10240", "reg26-llama3.1-70b-1gpu")
"""Plan 48's experiments, in the order the device runs them."""
REGISTERED = ROOT / "bench" / "predictions" / "reg48-committed"
NAIVE_FROM = ROOT / "bench" / "results" / "hw" / "2026-11-29-run2" / "baselines.csv"
TARGET_MAPE, TARGET_WORST = 3.0, 6.0
CLAIMS = {
    "a": f"own: MAPE <= {TARGET_MAPE}% and worst <= {TARGET_WORST}% over every measured case",
    "b": "own: MAPE below committed's on the same measurement",
    "c": "own: MAPE at most half of naive's",
    "d": "own: the fastest strategy right at every M of the chain experiments (sequential or a chain-kernel order)",
}


def register(out: Path = REGISTERED) -> None:
    """``ctasim predict`` of every experiment with its committed profile into ``out/EXP`` (refused if one exists)."""
    for exp in EXPERIMENTS:
        subprocess.run([sys.executable, "-m", "ctasim.cli", "predict", exp, "--out", str(out / exp),
                        "--naive-from", str(NAIVE_FROM)], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)


def cases(run_dir: Path, registered: Path = REGISTERED):
    """Per experiment, the measured cases judged (``ctasim.accuracy.judge``) against the committed and the own
    registration: one row per case and predictor ("committed", "own", "naive")."""
    import pandas as pd

    from ctasim import accuracy, results

    rows = []
    for exp in EXPERIMENTS:
        meas = results.read(run_dir / exp / "results.csv")
        for name, folder in (("committed", registered / exp), ("own", run_dir / "reg48-own" / exp)):
            j = accuracy.judge(results.read(folder / "predictions.csv"), meas)
            keep = ["model", "naive"] if name == "committed" else ["model"]
            j = j[j["source"].isin(keep)].copy()
            j["predictor"] = j["source"].map({"model": name, "naive": "naive"})
            rows.append(j.drop(columns="source"))
    return pd.concat(rows, ignore_index=True)


def summary(c):
    """``ctasim.accuracy.summary`` of the pooled cases, per predictor."""
    from ctasim import accuracy

    return accuracy.summary(c.rename(columns={"predictor": "source"}))


def rankings(c):
    """Per experiment and case with more than one strategy: the measured ranking and each predictor's."""
    import pandas as pd

    rows = []
    for (exp, case), g in c.groupby(["experiment", "case"], sort=False):
        measured = g.drop_duplicates("strategy").sort_values("measured_ms")["strategy"].tolist()
        if len(measured) < 2:
            continue
        row = {"experiment": exp, "case": case, "measured": " < ".join(measured)}
        for pred, gp in g.groupby("predictor"):
            order = gp.sort_values("predicted_ms")["strategy"].tolist()
            row[f"{pred}"] = " < ".join(order)
            row[f"{pred}_fastest_right"] = order[0] == measured[0]
        rows.append(row)
    return pd.DataFrame(rows)


def claims(s, r):
    import pandas as pd

    a = s[s["kind"] == "all"].set_index("predictor")
    own, committed, naive = a.loc["own"], a.loc["committed"], a.loc["naive"]
    chains = r[r["experiment"].str.startswith("reg10-")]
    return pd.DataFrame([
        {"claim": "a", "rule": CLAIMS["a"], "value": f"MAPE {own.mape_pct:.2f}%, worst {own.worst_pct:+.2f}%",
         "met": bool(own.mape_pct <= TARGET_MAPE and abs(own.worst_pct) <= TARGET_WORST)},
        {"claim": "b", "rule": CLAIMS["b"], "value": f"{own.mape_pct:.2f}% against {committed.mape_pct:.2f}%",
         "met": bool(own.mape_pct < committed.mape_pct)},
        {"claim": "c", "rule": CLAIMS["c"], "value": f"{own.mape_pct:.2f}% against {naive.mape_pct:.2f}%",
         "met": bool(own.mape_pct <= naive.mape_pct / 2)},
        {"claim": "d", "rule": CLAIMS["d"], "value": f"{int(chains['own_fastest_right'].sum())} of {len(chains)} "
         f"(committed {int(chains['committed_fastest_right'].sum())})", "met": bool(chains["own_fastest_right"].all())},
    ])


def main(argv=None) -> int:
    from power_model import write_tables

    ap = OneLineParser(prog="python bench/own_profile_blocks.py", description=__doc__.splitlines()[0])
    ap.add_argument("--register", action="store_true", help=f"write {REGISTERED.relative_to(ROOT)}/EXP")
    ap.add_argument("--judge", type=Path, metavar="RUN_DIR", help="a run_own_blocks.sh call's folder")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "validation-registered48")
    args = parse_outputs(ap, argv, folders=("--out",))
    if args.register == (args.judge is not None):
        print("own_profile_blocks: give --register or --judge RUN_DIR", file=sys.stderr)
        return 2
    if args.register:
        if REGISTERED.exists():
            print(f"own_profile_blocks: {REGISTERED} exists (a registration is never overwritten)", file=sys.stderr)
            return 2
        register()
        return 0
    missing = [p for e in EXPERIMENTS for p in (args.judge / e / "results.csv",
                                                 args.judge / "reg48-own" / e / "predictions.csv") if not p.is_file()]
    if missing:
        print(f"own_profile_blocks: no {missing[0]}", file=sys.stderr)
        return 2
    c = cases(args.judge)
    s, r = summary(c), rankings(c)
    write_tables(args.out, {"cases": c, "summary": s, "rankings": r, "claims": claims(s, r)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
