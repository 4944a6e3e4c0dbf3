"""A registered block plan's claims (bench/predictions/README.md) from its committed reports (no GPU).

    python bench/plan_judge.py PLAN [--reports bench/results/validation-registeredPLAN]

PLAN is 20, 21, 22 or 25-28 (:data:`PLANS`). Reads each registration's ``accuracy.csv`` (``ctasim compare``): the model of
``regPLAN-X`` and of each twin registration ``regPLAN-X<suffix>`` (the same experiment predicted with another drift
form's profile), lockstep, flat, gelu-priced, relu-input-off and clock-step (where there), naive and waves; writes ``judged.csv`` (every block case's error per predictor) and
``claims.csv`` (per predictor over the block cases: MAPE, worst, cases over-predicted, and the same
machine-normalised by the reference GEMM at M = 16384) into the reports folder, and prints both; for a plan with
:data:`PAIRS`, ``pairs.csv`` too; for a plan in :data:`CONTROLS`, ``drift.csv`` and ``drift_claims.csv``. A missing or
unregistered report is refused (one line, exit 2).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

PLANS = {20: {"": "carried", "-wave": "wave"},
         21: {"": "interleaved", "-carried": "carried", "-wave": "wave"},
         22: {"": "interleaved", "-carried": "carried", "-wave": "wave"},
         25: {"": "interleaved"},
         26: {"": "curve"},
         27: {"": "curve"},
         28: {"": "curve"}}
"""Per plan, each registration suffix and the name of its model: plan 20 predicted with h200-x1-calibrated when its
drift form was "carried" and with h200-x1-calibrated-wave; plans 21 and 22 with the profile's "interleaved" form and
with h200-x1-calibrated-carried and -wave; plan 25 with the interleaved form only; plans 26-28 with the profile's
clock curve (its one step beside it: clock-step)."""
PAIRS = {25: (("reg25-opt-175b-1gpu", "reg25-gpt3-175b-1gpu"),)}
"""Per plan, blocks of the same GEMM shapes run in one call (a ReLU block, its GeLU twin): ``pairs.csv`` holds, per M,
the measured ratio of their makespans beside each predictor's (the machine's speed and the GEMMs' shared error
cancel in it)."""
CONTROLS = {26: {"reg26-llama3.1-70b-1gpu": 8192, "reg26-deepseek-v3-dense-1gpu": 8192,
                 "reg26-mixtral-8x22b-expert-1gpu": 16384},
            27: {"reg27-llama3.1-405b-1gpu": 2048, "reg27-qwen2.5-72b-1gpu": 8192, "reg27-gpt3-175b-1gpu": 4096},
            28: {"reg28-command-r-plus-1gpu": 6144, "reg28-yi-34b-1gpu": 8192, "reg28-mistral-large-2-1gpu": 6144}}
"""Per plan, each block's registered control M (short: it ends before the clock slows a tile): ``drift.csv`` holds,
per block, long M and predictor, the error there minus the error at the control (the GEMMs' shared pricing error and
the machine's speed cancel in it), and ``drift_claims.csv`` per predictor over the long cases: their MAPE and the mean
|drift|. A block without its control's row is refused."""
WAVE = "-wave"


def reference(plan: int) -> str:
    return f"reg{plan}-reference"


def blocks(plan: int) -> tuple[str, ...]:
    """The plan's block registrations, as committed under bench/predictions (each with its twins)."""
    twins = tuple(s for s in PLANS[plan] if s)
    return tuple(sorted(p.name for p in (ROOT / "bench/predictions").glob(f"reg{plan}-*")
                        if not p.name.endswith(twins) and p.name != reference(plan)
                        and (p / "registration.json").is_file()))  # not a GEMM-order registration (predicted.csv)


BLOCKS = blocks(20)
"""Plan 20's block registrations (bench/block_gemm_orders.py takes them apart)."""


def load(plan: int, reports: Path) -> pd.DataFrame:
    """Every judged row, one predictor name each: the registration's own sources with its model named by
    :data:`PLANS`, and each twin's model by its name."""
    rows = []
    for exp in blocks(plan) + (reference(plan),):
        for suffix, name in PLANS[plan].items():
            path = reports / f"{exp}{suffix}" / "accuracy.csv"
            if not path.is_file():
                raise FileNotFoundError(f"plan_judge: no {path} (run ctasim compare first)")
            a = pd.read_csv(path)
            if not a.registered.all():
                raise ValueError(f"plan_judge: {path} holds rows not labelled registered")
            a = a[a.source == "model"] if suffix else a
            a = a.assign(predictor=a.source.replace({"model": name}))
            rows.append(a[["experiment", "m", "measured_ms", "predictor", "predicted_ms", "error"]])
    return pd.concat(rows, ignore_index=True)


def pair_ratios(d: pd.DataFrame, pairs, model: str) -> pd.DataFrame:
    """Per pair (a, b) of :data:`PAIRS` and M both ran: measured makespan of a over b, and per predictor its predicted
    ratio and the difference from the measured, in points. A predictor that predicts only a (an ablation with nothing
    to switch off in b: relu-input-off, gelu-priced) takes the prediction of ``model`` (the plan's model) for b."""
    rows = []
    for a, b in pairs:
        for m in sorted(set(d[d.experiment == a].m) & set(d[d.experiment == b].m)):
            da, db = (d[(d.experiment == x) & (d.m == m)].set_index("predictor") for x in (a, b))
            measured = float(da.measured_ms.iloc[0] / db.measured_ms.iloc[0])
            model_b = float(db.loc[model, "predicted_ms"])
            for pred in da.index:
                pb = float(db.predicted_ms.get(pred, model_b))
                ratio = float(da.loc[pred, "predicted_ms"]) / pb
                rows.append({"pair": f"{a}/{b}", "m": int(m), "measured_ratio": measured, "predictor": pred,
                             "predicted_ratio": ratio, "points": 100 * (ratio - measured)})
    return pd.DataFrame(rows)


def length_drift(judged: pd.DataFrame, controls: dict[str, int]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per block (``controls``: its control M) and long M, each predictor's error minus its error at the control
    (points); and per predictor over the long cases: cases, MAPE, mean |drift|, mean drift. Raises ValueError (one
    line) if a block has no control, or a predictor no row at its block's control."""
    rows = []
    for exp, g in judged.groupby("experiment"):
        if exp not in controls:
            raise ValueError(f"plan_judge: {exp} has no registered control M")
        control = controls[exp]
        base = g[g.m == control].set_index("predictor").error_pct
        for _, r in g[g.m != control].iterrows():
            if r.predictor not in base.index:
                raise ValueError(f"plan_judge: {exp} has no {r.predictor} row at its control M = {control}")
            rows.append({"experiment": exp, "m": int(r.m), "measured_ms": r.measured_ms, "control_m": control,
                         "predictor": r.predictor, "error_pct": r.error_pct, "control_error_pct": base[r.predictor],
                         "drift_pts": r.error_pct - base[r.predictor]})
    drift = pd.DataFrame(rows)
    claims = drift.groupby("predictor").agg(
        cases=("error_pct", "size"), long_mape_pct=("error_pct", lambda x: x.abs().mean()),
        mean_abs_drift_pts=("drift_pts", lambda x: x.abs().mean()), mean_drift_pts=("drift_pts", "mean")).reset_index()
    return drift, claims


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/plan_judge.py", description=__doc__.splitlines()[0])
    ap.add_argument("plan", type=int, choices=sorted(PLANS))
    ap.add_argument("--reports", type=Path, help="default: bench/results/validation-registeredPLAN")
    args = parse_outputs(ap, argv, folders=("--reports",))
    reports = args.reports or ROOT / f"bench/results/validation-registered{args.plan}"
    try:
        d = load(args.plan, reports)
    except (FileNotFoundError, ValueError) as e:
        print(e, file=sys.stderr)
        return 2
    ref = d[(d.experiment == reference(args.plan)) & (d.m == 16384)].set_index("predictor").error
    judged = d[d.experiment.isin(blocks(args.plan))].copy()
    judged["error_pct"] = 100 * judged.error
    # an ablation with no reference row (gelu-priced: the reference GEMM fuses no activation) predicts it as the model
    ref_err = judged.predictor.map(ref).fillna(ref[PLANS[args.plan][""]])
    judged["normalised_pct"] = 100 * ((1 + judged.error) / (1 + ref_err) - 1)
    claims = judged.groupby("predictor").agg(
        cases=("error_pct", "size"), mape_pct=("error_pct", lambda x: x.abs().mean()),
        worst_pct=("error_pct", lambda x: x.iloc[x.abs().argmax()]), over=("error_pct", lambda x: int((x > 0).sum())),
        normalised_mape_pct=("normalised_pct", lambda x: x.abs().mean()),
        normalised_worst_pct=("normalised_pct", lambda x: x.iloc[x.abs().argmax()])).reset_index()
    pairs = pair_ratios(d, PAIRS.get(args.plan, ()), PLANS[args.plan][""])
    if not pairs.empty:
        pairs.round(4).to_csv(reports / "pairs.csv", index=False)
    if args.plan in CONTROLS:
        try:
            drift, drift_claims = length_drift(judged, CONTROLS[args.plan])
        except ValueError as e:
            print(e, file=sys.stderr)
            return 2
        drift.round(4).to_csv(reports / "drift.csv", index=False)
        drift_claims.round(4).to_csv(reports / "drift_claims.csv", index=False)
    judged.drop(columns="error").round(4).to_csv(reports / "judged.csv", index=False)
    claims.round(4).to_csv(reports / "claims.csv", index=False)
    pd.set_option("display.width", 200)
    print(judged.pivot_table(index=["experiment", "m"], columns="predictor", values="error_pct").round(2).to_string())
    print(claims.round(2).to_string(index=False))
    if not pairs.empty:
        print(pairs.round(4).to_string(index=False))
    if args.plan in CONTROLS:
        print(drift_claims.round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
