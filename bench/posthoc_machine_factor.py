"""Post-hoc: the measuring machine's speed carried into single-GPU block predictions three ways (no GPU).

    python bench/posthoc_machine_factor.py [--out bench/results/posthoc-machine-factor] [--runs GLOB]

Every committed single-GPU registered call (``bench/results/hw/*registered*-1gpu*``) that ran its plan's reference
GEMM (``regPLAN-reference``, :func:`plan_judge.reference`) beside its blocks is re-simulated with today's model, each
measured block case under three profiles (:func:`machine_hw`):

* ``R0``: the experiment's profile as it is (raw; its reuse across waves an LRU of the whole L2, as before registered
  plan 67's adoption on an H200, 2026-12-06: :func:`profile`);
* ``R1``: every kernel tile ``s`` times slower (the clock curve's factors ``f -> s f``, its knot at 0 = ``s``: the
  ratio);
* ``R2``: the machine factor at rest, fading to the curve's common sustained level ``S`` (its last factor) as the curve
  rises: ``f -> s + (S - s)(f - 1)/(S - 1)`` (capped);

where ``s``, per call, makes R1 (= R2: the reference ends before the curve's first rise) reproduce the measured
reference GEMM at M = 16384 of the same call (:func:`machine_factor`: the makespan ratio, then three fixed-point
steps). ``R1m`` beside them is R0's makespan times that makespan ratio, and ``reg_model`` the registered model.
Post-hoc: the measurements exist, the three forms were chosen after plans 25-28 were measured, and today's
model is not what was registered.

Writes into ``--out``: ``refs.csv`` (per call: run folder, reference measured and modelled, ``s_makespan``,
``s_tile`` = s), ``cases.csv`` (every measured ok block case: each form's makespan and error, %, and its band:
short < 25 ms <= mid < 40 ms <= long, measured), ``summary.csv`` (per call and band, per band over all calls, and all:
cases, MAPE and mean signed error, %, of reg_model, R0, R1m, R1, R2) and ``drift.csv`` (each long case's error less
that of its block's control, in points: the control M of :data:`plan_judge.CONTROLS` where the plan registered one,
else the block's shortest short case; the shapes' shared pricing error and the machine's speed cancel in it); prints
the references, the summary and the drift per call.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import plan_judge  # noqa: E402
from ctasim import results  # noqa: E402
from ctasim.cases import expand, load_experiment  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.harness import load_harness, timed_makespan_ns, timed_plans  # noqa: E402
from ctasim.profiles import before_h200_reuse  # noqa: E402
from ctasim.spec import Hardware  # noqa: E402

HW = ROOT / "bench/results/hw"
PRED = ROOT / "bench/predictions"
REF_M = 16384
"""The reference GEMM's M that fixes s."""
BAND_EDGES = (0, 25, 40, 1e9)
BAND_LABELS = ("short", "mid", "long")
"""Makespan bands (ms, measured, left-closed): short cases end before the curve slows a tile."""
FORMS = ("R0", "R1", "R2")
PREDICTORS = ("reg_model", "R0", "R1m", "R1", "R2")
STEPS = 3
"""Fixed-point steps refining s from the makespan ratio to the tile factor."""


def machine_hw(hw: Hardware, form: str, s: float) -> Hardware:
    """``hw`` with the machine factor ``s`` carried as ``form``: R0 as it is, R1 every clock-curve factor times s,
    R2 ``f -> s + (S - s)(f - 1)/(S - 1)`` (S = the curve's last factor: s at rest, S once it has risen)."""
    if form == "R0":
        return hw
    t, f = tuple(hw.clock_curve_ns), tuple(hw.clock_curve_factor)
    if not t or t[0] != 0.0 or f[0] != 1.0:
        raise ValueError(f"{hw.name}: no clock curve starting at 0 with factor 1")
    S = f[-1]
    if form == "R1":
        g = tuple(s * x for x in f)
    elif form == "R2":
        g = tuple(s + (S - s) * (x - 1) / (S - 1) for x in f)
    else:
        raise ValueError(f"unknown form {form!r} (known: {', '.join(FORMS)})")
    return dataclasses.replace(hw, clock_curve_factor=g)


class Model:
    """Today's model of a registration's measured cases under any profile (its harness from registration.json;
    ``timed_plans``/``timed_makespan_ns`` as ``ctasim.predict.predict`` runs them, seed 0, the model only)."""

    def __init__(self):
        self._exp, self._harness = {}, {}

    def experiment(self, name: str):
        if name not in self._exp:
            e = load_experiment(name)
            h = json.loads((PRED / name / "registration.json").read_text())["harness"]["name"]
            self._exp[name] = (e, {c.label: c for c in expand(e)}, {s.label: s for s in e.strategies})
            self._harness[name] = load_harness(h)
        return self._exp[name]

    def ms(self, name: str, case: str, strategy: str, variant: str, hw: Hardware) -> float:
        """Makespan (ms) of one (case, strategy, variant) of registration ``name`` under ``hw``."""
        e, cases, strategies = self.experiment(name)
        c, s = cases[case], strategies[strategy]
        for plan in timed_plans(s, c.workload, hw, c.gpus, c.label, self._harness[name]):
            if (f"chunks={plan.params['chunks']}" if s.kind == "microbatch" else "") == variant:
                return timed_makespan_ns(plan, hw, self._harness[name], seed=0, regime=e.regime)[0] / 1e6
        raise KeyError(f"{name}: no plan for {(case, strategy, variant)}")


def profile(model: Model, name: str) -> Hardware:
    """Registration ``name``'s profile as this record was made with it: a record made before plan 67's adoption on an
    H200, 2026-12-06 (a panel's reuse across waves an LRU of the whole L2, ``ctasim.profiles.before_h200_reuse``)."""
    return before_h200_reuse(model.experiment(name)[0].hardware)


def calls(pattern: str = "*registered*-1gpu*") -> list[dict]:
    """Every committed single-GPU registered call (run folders matching ``pattern``) with its plan's reference GEMM:
    call tag (plan, and -runN), run folder, plan, and its block registrations (every other measured ``regPLAN-*``).
    A call that re-ran another plan's reference (registered plan 48's, ``registered48`` running ``reg28-reference``)
    is not that plan's call and is left out."""
    out = []
    for run in sorted(p for p in HW.glob(pattern) if p.is_dir()):
        refs = sorted(p.parent.name for p in run.glob("reg*-reference/results.csv"))
        if not refs:
            continue
        plan = int(refs[0].split("-")[0][3:])
        if int(re.search(r"registered(\d+)", run.name).group(1)) != plan:
            continue
        assert refs[0] == plan_judge.reference(plan), refs
        suffix = run.name.rsplit("-1gpu", 1)[1]  # '' or '-runN'
        blocks = sorted(p.parent.name for p in run.glob(f"reg{plan}-*/results.csv")
                        if p.parent.name != plan_judge.reference(plan))
        out.append({"call": f"{plan}{suffix}", "run": run.name, "plan": plan, "blocks": blocks})
    return out


def machine_factor(model: Model, call: dict) -> dict:
    """The call's reference at M = 16384, measured and under R0, and s: the makespan ratio, refined so that R1
    reproduces the measurement."""
    name = plan_judge.reference(call["plan"])
    meas = results.read(HW / call["run"] / name / "results.csv")
    r = meas[(meas.status == "ok") & (meas.m == REF_M)]
    if len(r) != 1:
        raise ValueError(f"{call['run']}/{name}: {len(r)} ok rows at M = {REF_M}, not one")
    r = r.iloc[0]
    hw0 = profile(model, name)
    ref0 = model.ms(name, r.case, r.strategy, r.variant, hw0)
    s = r.makespan_ms / ref0
    for _ in range(STEPS):
        s *= r.makespan_ms / model.ms(name, r.case, r.strategy, r.variant, machine_hw(hw0, "R1", s))
    return {"call": call["call"], "dir": call["run"], "ref_measured_ms": r.makespan_ms, "ref_model_ms": ref0,
            "s_makespan": r.makespan_ms / ref0, "s_tile": s}


def call_cases(model: Model, call: dict, ref: dict) -> pd.DataFrame:
    """Every measured ok block case of one call: measured, registered model, and R0/R1/R2 makespans (ms)."""
    rows = []
    for name in call["blocks"]:
        hw0 = profile(model, name)
        hws = {k: machine_hw(hw0, k, ref["s_tile"]) for k in FORMS}
        reg = results.read(PRED / name / "predictions.csv")
        reg = reg[reg.source == "model"].set_index(list(results.KEY[1:])).makespan_ms
        meas = results.read(HW / call["run"] / name / "results.csv")
        for _, m in meas[meas.status == "ok"].iterrows():
            if m.gpus != 1:
                raise ValueError(f"{call['run']}/{name}: a case on {m.gpus} GPUs")
            row = {"call": call["call"], "experiment": name, "case": m.case, "strategy": m.strategy,
                   "variant": m.variant, "m": m.m, "measured_ms": m.makespan_ms,
                   "reg_model_ms": reg.get((m.case, m.strategy, m.variant))}
            for k, hw in hws.items():
                row[f"{k}_ms"] = model.ms(name, m.case, m.strategy, m.variant, hw)
            rows.append(row)
    return pd.DataFrame(rows)


def errors(d: pd.DataFrame, refs: pd.DataFrame) -> pd.DataFrame:
    """Each predictor's error (%), R1m's from R0 times the call's makespan ratio, and the band."""
    d = d.copy()
    for k in ("reg_model", "R0", "R1", "R2"):
        d[f"{k}_err"] = 100 * (d[f"{k}_ms"] / d.measured_ms - 1)
    d["R1m_err"] = 100 * (d.R0_ms * refs.s_makespan.reindex(d.call).values / d.measured_ms - 1)
    d["band"] = pd.cut(d.measured_ms, list(BAND_EDGES), right=False, labels=list(BAND_LABELS))
    return d


def _summ(g: pd.DataFrame) -> pd.Series:
    out = {"n": len(g)}
    for k in PREDICTORS:
        out[f"{k}_mape"] = g[f"{k}_err"].abs().mean()
        out[f"{k}_mse"] = g[f"{k}_err"].mean()
    return pd.Series(out)


def summary(d: pd.DataFrame) -> pd.DataFrame:
    """Per call and band, per band (call ALL) and over all (call ALL, band all): cases, MAPE and mean signed error."""
    cols = [c for c in d.columns if c.endswith("_err")]
    per = d.groupby(["call", "band"], observed=True)[cols].apply(_summ).reset_index()
    allb = d.groupby("band", observed=True)[cols].apply(_summ).reset_index().assign(call="ALL")
    tot = pd.DataFrame([_summ(d)]).assign(call="ALL", band="all")
    return pd.concat([per, allb, tot], ignore_index=True)[["call", "band", "n"] + [
        f"{k}_{x}" for k in PREDICTORS for x in ("mape", "mse")]]


def control_m(plan: int, g: pd.DataFrame) -> pd.Series | None:
    """A block's control row: its registered control M (:data:`plan_judge.CONTROLS`) where there is one, else its
    shortest short case; None without one."""
    short = g[g.band == "short"].sort_values("measured_ms")
    registered = plan_judge.CONTROLS.get(plan, {}).get(g.experiment.iloc[0])
    if registered is not None:
        short = short[short.m == registered]
        if short.empty:
            raise ValueError(f"{g.experiment.iloc[0]}: no short case at its control M = {registered}")
    return None if short.empty else short.iloc[0]


def drift(d: pd.DataFrame, refs: pd.DataFrame) -> pd.DataFrame:
    """Each long case's error less its block's control's (points), per form."""
    rows = []
    for (call, exp), g in d.groupby(["call", "experiment"]):
        c = control_m(int(call.split("-")[0]), g)
        if c is None:
            continue
        for _, r in g[(g.band == "long") & (g.strategy == c.strategy)].iterrows():
            rows.append({"call": call, "experiment": exp, "m": r.m, "control_m": c.m, "s": refs.s_tile[call],
                         **{f"{k}_drift": r[f"{k}_err"] - c[f"{k}_err"] for k in FORMS}})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_machine_factor.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-machine-factor")
    ap.add_argument("--runs", default="*registered*-1gpu*", help="run folders under bench/results/hw (a glob)")
    args = parse_outputs(ap, argv, folders=("--out",))
    todo = calls(args.runs)
    if not todo:
        print(f"posthoc_machine_factor: no registered call with a reference under bench/results/hw matches "
              f"{args.runs!r}", file=sys.stderr)
        return 2
    model = Model()
    refs, parts = [], []
    for call in todo:
        refs.append(machine_factor(model, call))
        parts.append(call_cases(model, call, refs[-1]))
    rf = pd.DataFrame(refs).set_index("call")
    d = errors(pd.concat(parts, ignore_index=True), rf)
    res = summary(d)
    dr = drift(d, rf)
    args.out.mkdir(parents=True, exist_ok=True)
    d.round(5).to_csv(args.out / "cases.csv", index=False)
    rf.round(5).to_csv(args.out / "refs.csv")
    res.round(3).to_csv(args.out / "summary.csv", index=False)
    dr.round(4).to_csv(args.out / "drift.csv", index=False)
    pd.set_option("display.width", 250)
    print(rf.round(4).to_string())
    print(res.round(2).to_string(index=False))
    if dr.empty:
        return 0
    pc = dr.groupby("call").agg(s=("s", "first"), n=("m", "size"), R1_drift=("R1_drift", "mean"),
                                R2_drift=("R2_drift", "mean"))
    print(pc.round(3).to_string())
    for k in ("R1", "R2"):
        x = dr[f"{k}_drift"]
        print(f"{k}: long drift mean {x.mean():+.2f}, mean|.| {x.abs().mean():.2f}, corr(drift, s) cases "
              f"{np.corrcoef(dr.s, x)[0, 1]:+.2f}, per call {np.corrcoef(pc.s, pc[f'{k}_drift'])[0, 1]:+.2f}, slope "
              f"{np.polyfit(dr.s - 1, x, 1)[0] / 100:+.2f} pts per pt of s (cases)")
    lg = d[d.band == "long"].groupby("call")[["R0_err", "R1_err", "R2_err"]].apply(lambda g: g.abs().mean())
    print("long MAPE, mean over calls:", lg.mean().round(2).to_dict())
    return 0


if __name__ == "__main__":
    sys.exit(main())
