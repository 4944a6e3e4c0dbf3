"""The two ticket laws' registered record on the chain kernel, pooled over every registered measurement (no GPU).

    python bench/ticket_law_record.py [--out bench/results/ticket-law-record]

Registered plans 49 and 50 each predicted their chain-order experiments with both ticket laws before the GPUs ran them
(``ctasim.l2.TICKET_LAWS``: ``"threshold"``, all or nothing once the bytes the L2 takes in between pass its capacity;
``"partition"``, the share ``1 - exp(-2 B / L2)``). This pools every measurement of them -- plan 49's three machines,
plan 50's three (``-run2`` and ``-run3`` ran its two experiments again), and plan 50's first machine's second call
re-running plan 49's H = 9216 experiment -- judged against the committed registrations' model rows (nothing is
predicted again), so that the choice of the profile's law rests on all of it.

Writes ``cases.csv`` (per measured chain-kernel case and law: predicted, measured, error), ``chain-vs-sequential.csv``
(per (run, H, M) and law: groups of 8 over sequential, predicted and measured, and whether the faster of the two and
the fastest strategy are right) and ``summary.csv`` (per law, over every machine and over the machines within 2% of
the profile's reference GEMM: chain-kernel MAPE, the same over the grouped orders -- groups of 8, 4 and pairs, the ones
a user runs; row order is explained by neither law --, the chain-vs-sequential error in points, its sign and the
fastest strategy right), and ``rings.csv``: the rings of registered plans 40-42 on one shared H200 under each law,
the survival law (the profiles' since registered plan 53) at the profiles' tickets mainloop factor (post-hoc for the
law, :func:`rings`); prints both.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

from ctasim import accuracy, results  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.spec import SpecError, load_hardware  # noqa: E402

HW = ROOT / "bench/results/hw"
PREDICTIONS = ROOT / "bench/predictions"
PLAN49 = tuple(f"2026-12-04-registered49-1gpu{s}" for s in ("", "-run2", "-run3"))
PLAN50 = tuple(f"2026-12-04-registered50-1gpu{s}" for s in ("", "-run2", "-run3"))
MEASURED = {  # experiment -> the run folders that measured it (registered: each came after its registrations)
    "reg49-chain-order-h5120": PLAN49,
    "reg49-chain-order-h7168": PLAN49,
    "reg49-chain-order-h9216": (*PLAN49, PLAN50[0]),
    "reg50-chain-order-h11264": PLAN50,
    "reg50-chain-order-h14336": PLAN50,
}
TWIN = {"reg49": ("threshold", "partition", "-partition"), "reg50": ("partition", "threshold", "-threshold")}
"""Plan -> (the law of the registration ``EXP``, the law of its twin, the twin's suffix): plan 49's registrations
were made with the threshold law (the profile's then), plan 50's with the partition law (the profile's then)."""
RUNS = (*PLAN49, *PLAN50)
REFERENCE = "reg49-reference"
"""Every run's reference GEMM (plan 49's registration; plan 50 re-ran it)."""
NEAR_PCT = 2.0
"""Machines whose reference GEMM ran within this (%) of the profile's prediction: all but plan 49's first, 4.6% slow."""
BASE = "intragpu"


def registrations(exp: str) -> dict[str, str]:
    """Law -> the registration folder of ``exp`` predicted with it."""
    own, twin, suffix = TWIN[exp.split("-", 1)[0]]
    return {own: exp, twin: exp + suffix}


def cases() -> pd.DataFrame:
    parts = []
    for exp, runs in MEASURED.items():
        preds = {law: model_rows(reg) for law, reg in registrations(exp).items()}
        for run in runs:
            f = HW / run / exp / "results.csv"
            if not f.is_file():
                raise SpecError(str(f), "results", "missing: a committed measurement of the record")
            meas = results.read(f)
            for law, pred in preds.items():
                parts.append(accuracy.judge(pred, meas).assign(law=law, run=run))
    c = pd.concat(parts, ignore_index=True)
    c["h"] = c["experiment"].str.extract(r"-h(\d+)$", expand=False).astype(int)
    return c


def model_rows(registration: str) -> pd.DataFrame:
    """A registration's model predictions."""
    pred = results.read(PREDICTIONS / registration / "predictions.csv")
    return pred[pred["source"] == "model"]


def machine_speed(run: str) -> float:
    """The run's reference GEMM at M = 16384, measured over predicted (the profile's, the same under either law)."""
    j = accuracy.judge(model_rows(REFERENCE), results.read(HW / run / REFERENCE / "results.csv"))
    r = j[j["m"] == 16384].iloc[0]
    return float(r["measured_ms"] / r["predicted_ms"])


def chain_vs_sequential(c: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (law, run, exp, m), g in c.groupby(["law", "run", "experiment", "m"], sort=True):
        g = g.set_index("strategy")
        meas = g.loc[BASE, "measured_ms"] / g.loc["sequential", "measured_ms"]
        pred = g.loc[BASE, "predicted_ms"] / g.loc["sequential", "predicted_ms"]
        rows.append({"law": law, "run": run, "experiment": exp, "m": int(m), "measured": round(meas, 4),
                     "predicted": round(pred, 4), "error_points": round(100 * (pred - meas), 2),
                     "faster_right": bool((pred < 1) == (meas < 1)),
                     "fastest_right": bool(g["predicted_ms"].idxmin() == g["measured_ms"].idxmin())})
    return pd.DataFrame(rows)


def summary(c: pd.DataFrame, cs: pd.DataFrame) -> pd.DataFrame:
    speed = {r: machine_speed(r) for r in RUNS}
    near = {r for r, s in speed.items() if abs(s - 1) * 100 <= NEAR_PCT}
    rows = []
    for scope, runs in (("every machine", set(speed)), (f"reference within {NEAR_PCT:g}% of the profile", near)):
        for law in sorted(c["law"].unique()):
            k = c[(c["law"] == law) & c["run"].isin(runs) & c["strategy"].str.startswith("intragpu")]
            grouped = k[k["strategy"] != "intragpu-row"]
            s = cs[(cs["law"] == law) & cs["run"].isin(runs)]
            rows.append({"scope": scope, "law": law, "machines": len(runs), "chain_cases": len(k),
                         "chain_mape_pct": round(100 * k["error"].abs().mean(), 2),
                         "grouped_cases": len(grouped),
                         "grouped_mape_pct": round(100 * grouped["error"].abs().mean(), 2),
                         "chain_vs_sequential_cases": len(s),
                         "chain_vs_sequential_mean_abs_points": round(s["error_points"].abs().mean(), 2),
                         "faster_right": int(s["faster_right"].sum()), "fastest_right": int(s["fastest_right"].sum())})
    return pd.DataFrame(rows)


def rings(only: tuple[str, str] | None = None) -> pd.DataFrame:
    """The rings on one shared H200 (registered plans 40-42, every measured row) under each law: the shared-device
    profiles (``bench/posthoc_shared_device.py``: the even split for plans 40-41, the ``-active`` rule for all) with
    ``Hardware.with_ticket_law``, the partition and threshold laws at factor 1 and the survival law at the profiles'
    tickets mainloop factor (since registered plan 53; column ``factor``). Post-hoc for the law: plans 40-42 registered
    the threshold law only; every row is today's model. ``only`` = (law, predictor label): that row alone."""
    import posthoc_shared_device as S  # noqa: PLC0415

    own = load_hardware("h200-x1-shared2-active").config(128, 256).ticket_mainloop_factor
    rows = []
    for law, factor in (("partition", 1.0), ("threshold", 1.0), ("survival", own)):
        for label, active, regs in (("even split, plans 40-41", False, S.EARLY),
                                    ("active, plans 40-42", True, list(S.RUNS))):
            if only is not None and only != (law, label):
                continue
            d = S.errors(lambda r, a=active: S._profile(S.KERNELS[r], active=a, law=law, factor=factor), regs)
            rows.append({"law": law, "factor": factor, **S._summary(d, label)})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/ticket_law_record.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/ticket-law-record")
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        c = cases()
    except SpecError as e:
        print(f"ticket_law_record: {e}", file=sys.stderr)
        return 2
    cs = chain_vs_sequential(c)
    s = summary(c, cs)
    r = rings()
    args.out.mkdir(parents=True, exist_ok=True)
    c.to_csv(args.out / "cases.csv", index=False, float_format="%.6g")
    cs.to_csv(args.out / "chain-vs-sequential.csv", index=False)
    s.to_csv(args.out / "summary.csv", index=False)
    r.to_csv(args.out / "rings.csv", index=False)
    pd.set_option("display.width", 250)
    print(s.to_string(index=False))
    print()
    print(r.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
