"""Registered plan 49: the chain kernel's tile orders under the two ticket laws, judged (no GPU).

    python bench/plan49_judge.py RUN_DIR [--out bench/results/validation-registered49]

RUN_DIR holds ``ctahw run``'s measurement of each of :data:`EXPERIMENTS` (``RUN_DIR/EXP/results.csv``; the device
runs them with ``bash bench/hw/run_registered.sh --no-hw-tests reg49-reference reg49-chain-order-h5120 ...``).
Each experiment has two registrations, written before it ran: ``bench/predictions/EXP`` (h200-x1-calibrated, ticket
law ``"threshold"``; its naive FLOPs line and waves predictor too) and ``bench/predictions/EXP-partition``
(h200-x1-calibrated-partition, law ``"partition"``). Predictors: "threshold" and "partition" (each registration's
model), "naive", "waves" (the first registration's).

Writes into ``--out``:

* ``cases.csv``: per measured case and predictor, predicted, measured, error, and the error normalised by the
  machine's speed (divided by the reference GEMM's predicted / measured at M = 16384, which every predictor here
  prices from the same profile);
* ``summary.csv``: per predictor, over the chain-kernel cases, sequential, groups of 8, pairs, row order and all:
  MAPE, worst, and the normalised MAPE;
* ``order-effect.csv``: per case and order other than groups of 8, the makespan ratio to groups of 8, measured and
  per predictor (the machine's speed cancels in it);
* ``rankings.csv``: per case, the measured ranking of the five strategies and each predictor's;
* ``claims.csv``: :data:`CLAIMS`, each met or not.

A missing measurement or one that is not these experiments' is refused (one line, exit 2).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import own_profile_blocks  # noqa: E402
import registered_plan  # noqa: E402
from ctasim import accuracy, results  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.predict import REFERENCE_EXPERIMENT as REFERENCE  # noqa: E402  (the calibration GEMM, registered here)
from ctasim.spec import SpecError  # noqa: E402

CHAINS = ("reg49-chain-order-h5120", "reg49-chain-order-h7168", "reg49-chain-order-h9216")
EXPERIMENTS = (REFERENCE, *CHAINS)
PREDICTIONS = ROOT / "bench" / "predictions"
BASE = "intragpu"  # groups of 8, the chain kernel's default order
ORDERS = ("intragpu-g4", "intragpu-g2", "intragpu-row")
TARGET_MAPE, TARGET_WORST, PAIR_POINTS = 3.0, 6.0, 3.0
CLAIMS = {
    "a": "partition: MAPE below threshold's over the chain-kernel cases (every order, every M)",
    "b": "partition: mean |error| of the order effect (ratio to groups of 8, groups of 4, pairs, row order) below "
         "threshold's",
    "c": f"pairs: partition's ratio to groups of 8 within {PAIR_POINTS:g} points of the measured one at every M",
    "d": f"groups of 8 (the default order): partition's MAPE <= {TARGET_MAPE:g}%",
    "e": f"partition: MAPE <= {TARGET_MAPE:g}% and worst <= {TARGET_WORST:g}% over every measured case",
    "f": "partition: MAPE at most half of naive's over the chain-kernel cases",
    "g": "partition: the fastest strategy right at every M (sequential or a chain-kernel order)",
}


class JudgeError(Exception):
    """Bad input: one line for the user."""


def registrations(exp: str) -> dict[str, tuple[str, str]]:
    """Predictor -> (registration folder, its source) for ``exp``."""
    out = {"threshold": (exp, "model"), "naive": (exp, "naive"), "waves": (exp, "waves")}
    if exp != REFERENCE:
        out["partition"] = (f"{exp}-partition", "model")
    return out


def measured(run_dir: Path, exp: str, plan: int) -> pd.DataFrame:
    """``run_dir``'s measurement of ``exp`` (``EXP/results.csv``), or a one-line JudgeError where it is missing, not
    a results file, or another experiment's."""
    f = run_dir / exp / "results.csv"
    if not f.is_file():
        raise JudgeError(f"{f}: no measurement of {exp} (is {run_dir} plan {plan}'s run folder?)")
    try:
        meas = results.read(f)
    except results.ResultsError as e:
        raise JudgeError(f"{f}: {e}") from None
    if set(meas["experiment"]) != {exp}:
        raise JudgeError(f"{f}: measures {sorted(set(meas['experiment']))}, not {exp}")
    return meas


def cases(run_dir: Path, experiments=EXPERIMENTS, regs=registrations, reference: str = REFERENCE,
          plain: str = "threshold", plan: int = 49) -> pd.DataFrame:
    """Every measured case of ``experiments`` judged (``ctasim.accuracy.judge``) per predictor of ``regs(exp)``, with
    the machine-normalised error (by ``reference``'s M = 16384 case; a predictor without a reference row takes
    predictor ``plain``'s factor: every predictor here prices a plain GEMM alike)."""
    parts = []
    for exp in experiments:
        meas = measured(run_dir, exp, plan)
        for name, (reg, source) in regs(exp).items():
            pred = results.read(PREDICTIONS / reg / "predictions.csv")
            j = accuracy.judge(pred[pred["source"] == source], meas)
            parts.append(j.assign(source=name))
    c = pd.concat(parts, ignore_index=True)
    ref = c[(c["experiment"] == reference) & (c["m"] == 16384)].set_index("source")
    if ref.empty:
        raise JudgeError(f"{run_dir / reference}: no M = 16384 case of the reference GEMM")
    factor = ref["predicted_ms"] / ref["measured_ms"]  # per predictor: how fast the profile says this machine is
    f = c["source"].map(factor).fillna(factor[plain])  # the ticket laws price plain GEMMs alike
    c["error_normalised"] = (c["predicted_ms"] / f - c["measured_ms"]) / c["measured_ms"]
    return c


CHAIN_CASES = 32
"""The registered chain-kernel cases (H = 5120 at two M, 7168 and 9216 at three, four orders): fewer are refused."""


def check_count(c: pd.DataFrame, want: int, plan: int) -> pd.DataFrame:
    """``c`` unchanged if every predictor has ``want`` chain-kernel cases with a measurement; else a one-line
    JudgeError (a failed or missing case would otherwise drop out of every mean)."""
    chain = c[c["strategy"].str.startswith(BASE) & c["measured_ms"].notna() & c["predicted_ms"].notna()]
    got = chain.groupby("source").size()
    if got.empty or (got != want).any():
        raise JudgeError(f"plan {plan} registered {want} chain-kernel cases; measured and predicted: "
                         f"{dict(got) if len(got) else 0}")
    return c


def write_judgement(out: Path, c: pd.DataFrame, tables: dict[str, pd.DataFrame], show: Sequence[str]) -> None:
    """Write a judge's ``cases.csv`` and each of ``tables`` (name -> frame) into ``out`` as ``name.csv``, then print
    the tables named in ``show``, a blank line between them: what every registered plan's judge ends with."""
    out.mkdir(parents=True, exist_ok=True)
    c.to_csv(out / "cases.csv", index=False, float_format="%.6g")
    for name, d in tables.items():
        d.to_csv(out / f"{name}.csv", index=False)
    pd.set_option("display.width", 250)
    print("\n\n".join(tables[name].to_string(index=False) for name in show))


def summary(c: pd.DataFrame) -> pd.DataFrame:
    groups = {"chain kernel": c["strategy"].str.startswith("intragpu"), "sequential": c["strategy"] == "sequential",
              "groups of 8": c["strategy"] == BASE, "pairs": c["strategy"] == "intragpu-g2",
              "row order": c["strategy"] == "intragpu-row", "all": pd.Series(True, index=c.index)}
    rows = []
    for src, g in c.groupby("source", sort=True):
        for name, sel in groups.items():
            s = g[sel[g.index]]
            if s.empty:
                continue
            w = s.loc[s["error"].abs().idxmax()]
            rows.append({"predictor": src, "cases": name, "n": len(s),
                         "mape_pct": round(100 * s["error"].abs().mean(), 2), "worst_pct": round(100 * w["error"], 2),
                         "worst_case": f"{w['experiment']} {w['case']} {w['strategy']}",
                         "normalised_mape_pct": round(100 * s["error_normalised"].abs().mean(), 2)})
    return pd.DataFrame(rows)


def order_effect(c: pd.DataFrame, experiments=CHAINS) -> pd.DataFrame:
    """Per chain experiment (of ``experiments``), case and order other than groups of 8: the makespan ratio to groups
    of 8, measured and per predictor."""
    chains = c[c["experiment"].isin(experiments)]
    meas = chains.drop_duplicates(["experiment", "case", "strategy"]).pivot_table(
        index=["experiment", "case"], columns="strategy", values="measured_ms")
    pred = chains.pivot_table(index=["experiment", "case", "source"], columns="strategy", values="predicted_ms")
    rows = []
    for (exp, case), m in meas.iterrows():
        for order in ORDERS:
            row = {"experiment": exp, "case": case, "order": order, "measured": round(m[order] / m[BASE], 4)}
            for src in sorted(c["source"].unique()):
                p = pred.loc[(exp, case, src)]
                row[src] = round(p[order] / p[BASE], 4)
            rows.append(row)
    return pd.DataFrame(rows)


def rankings(c: pd.DataFrame, experiments=CHAINS) -> pd.DataFrame:
    """Per chain experiment (of ``experiments``) and case: the measured ranking of the five strategies and each
    predictor's (``own_profile_blocks.rankings``, plan 48's)."""
    return own_profile_blocks.rankings(c[c["experiment"].isin(experiments)].rename(columns={"source": "predictor"}))


def claims(s: pd.DataFrame, oe: pd.DataFrame, r: pd.DataFrame) -> pd.DataFrame:
    t = s.set_index(["predictor", "cases"])
    mape = t["mape_pct"]

    def points(src, sel=slice(None)):
        e = (oe[src] - oe["measured"])[sel]
        return 100 * e.abs().mean()

    pairs = oe["order"] == "intragpu-g2"
    pair_err = 100 * (oe.loc[pairs, "partition"] - oe.loc[pairs, "measured"])
    rows = [
        ("a", f"{mape['partition', 'chain kernel']:.2f}% against {mape['threshold', 'chain kernel']:.2f}%",
         mape["partition", "chain kernel"] < mape["threshold", "chain kernel"]),
        ("b", f"{points('partition'):.2f} against {points('threshold'):.2f} points",
         points("partition") < points("threshold")),
        ("c", f"worst {pair_err.iloc[pair_err.abs().argmax()]:+.2f} points over {len(pair_err)} cases",
         bool((pair_err.abs() <= PAIR_POINTS).all())),
        ("d", f"{mape['partition', 'groups of 8']:.2f}%", mape["partition", "groups of 8"] <= TARGET_MAPE),
        ("e", f"MAPE {mape['partition', 'all']:.2f}%, worst {t.loc[('partition', 'all'), 'worst_pct']:+.2f}%",
         mape["partition", "all"] <= TARGET_MAPE and abs(t.loc[("partition", "all"), "worst_pct"]) <= TARGET_WORST),
        ("f", f"{mape['partition', 'chain kernel']:.2f}% against naive {mape['naive', 'chain kernel']:.2f}%",
         mape["partition", "chain kernel"] <= 0.5 * mape["naive", "chain kernel"]),
        ("g", f"{int(r['partition_fastest_right'].sum())} of {len(r)} (threshold "
              f"{int(r['threshold_fastest_right'].sum())})", bool(r["partition_fastest_right"].all())),
    ]
    return registered_plan.claims_table(rows, CLAIMS)


def judge_main(argv: Sequence[str] | None, plan: int, doc: str, cases_of, tables_of, show: Sequence[str]) -> int:
    """A registered plan's judge command: ``RUN_DIR [--out bench/results/validation-registered<plan>]``; the cases
    (``cases_of(run_dir)``) and the tables (``tables_of(cases, run_dir)``: name -> frame; a bad run refused in one
    line, exit 2, nothing written) written, and those of ``show`` it has printed, by :func:`write_judgement`."""
    ap = OneLineParser(prog=f"python bench/plan{plan}_judge.py", description=doc.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / f"bench/results/validation-registered{plan}")
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        c = cases_of(args.run_dir)
        tables = tables_of(c, args.run_dir)
    except (JudgeError, SpecError, results.ResultsError) as e:
        print(f"plan{plan}_judge: {e}", file=sys.stderr)
        return 2
    write_judgement(args.out, c, tables, [n for n in show if n in tables])
    return 0


def main(argv: list[str] | None = None) -> int:
    def tables(c, run_dir):
        s, oe, r = summary(c), order_effect(c), rankings(c)
        return {"summary": s, "order-effect": oe, "rankings": r, "claims": claims(s, oe, r)}

    return judge_main(argv, 49, __doc__, lambda run: check_count(cases(run), CHAIN_CASES, 49), tables,
                      ("summary", "claims"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
