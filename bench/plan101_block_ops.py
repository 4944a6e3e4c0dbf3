"""Registered plan 101: registered plan 99's small blocks op by op on an H100 -- which op carries the shortfall (no GPU)

    python bench/plan101_block_ops.py --register [--out bench/predictions/reg101-block-ops]
    python bench/plan101_block_ops.py --judge RUN [--out bench/results/validation-registered101]

Registered plan 99 priced five small models' MLP blocks on an H100 (``h100-x1-datasheet``, the capped drift K law) at
1.00% mean |error|, short on Qwen2.5-3B at both M (-1.8, -1.6%) and on Phi-2 at M = 65536 (-2.5%). Plan 100 times the
blocks' GEMMs alone, plain, at every CUTLASS order. Plan 101 times every op of the same five blocks alone, as the block
runs it (``bench/hw/mlp_block_breakdown.py --model NAME``: the up GEMM with its fused activation or plain before the
SwiGLU pass, the SwiGLU pass, the down GEMM with the fused residual, the norm; the up and down GEMMs also without their
fused ops; the whole block), each behind the ``Timed`` harness, tile orders tuned in the call, so that the fused
epilogues and the memory passes are timed apart from the GEMMs' mainloops.

Predictions (:func:`predicted`): the model's own split of each block, not a new pricing -- each op's duration in the
simulated trace of the registered plan 99 experiment (``specs/experiments/reg99-NAME-1gpu.toml``, its profile, the
harness and seed plan 99 registered), plus the harness's ``run_ns`` (start event to the first kernel, the last to the
end event); an item without its fused op is the same trace with that op taken out of the layer's epilogue (the down
GEMM still reads a ReLU's output where the block's up GEMM applies one); ``block`` is the trace's timed makespan (plan
99's registered ``model`` time). The naive line: the registered FLOPs line for the GEMMs (blind to fused ops), the
passes at the profile's pass rates, the block by ``ctasim.predict.Naive``.

``--register`` writes ``predicted.csv``. ``--judge RUN`` reads the call's ``breakdown-NAME.csv`` of each block and its
``env.txt`` (an H100) and writes ``items.csv`` (each item measured, predicted and its error), ``fused.csv`` (each fused
op's cost: the item with it less the item without, measured and modelled, the difference as a share of the measured
fused GEMM), ``shortfall.csv`` (per block and M: the model's error on the block in ms and its share on the GEMMs, the
passes and what is between the kernels) and ``claims.csv`` (:data:`CLAIMS`). A missing file or item, a call on
another GPU or a registration the code no longer gives are refused in one line, exit 2, nothing written. No adoption
rule. Left out: the cuBLAS, square-GEMM and repeated-GEMM items the probe also times (read, not judged); the sustained
regime (the probe rests ``--rest-ms`` before every timed run).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

REGISTRATION = ROOT / "bench/predictions/reg101-block-ops"
RESULTS = ROOT / "bench/results/validation-registered101"
BLOCKS = ("qwen2.5-3b", "stablelm-2-1.6b", "phi-2", "pythia-1.4b", "opt-1.3b")
MS = (16384, 65536)
SHORT = ("qwen2.5-3b", "phi-2")
"""The blocks plan 99 priced 1.6-2.5% short at M = 65536."""
OWN = ("up", "pass", "down", "norm")
"""The block's own ops, each timed alone (the items the claims judge besides ``block``)."""
MAPE, WORST, FUSED, GEMM_SHARE = 3.0, 6.0, 1.0, 0.5
CLAIMS = {
    "a": f"model: MAPE over every block's own ops alone (the up GEMM as the block runs it, the SwiGLU pass, the down "
         f"GEMM with its residual, the norm) at both M <= {MAPE:g}%, worst |error| <= {WORST:g}%",
    "b": "model: that MAPE below the naive line's",
    "c": f"on Qwen2.5-3B and Phi-2 at M = 65536 the model is short on the block item, and its shortfall on their two "
         f"GEMM items (ms) is at least {GEMM_SHARE:.0%} of it (plan 99's shortfall is their GEMMs')",
    "d": f"model: every fused op's cost (the activation on Phi-2's, Pythia-1.4B's and OPT-1.3B's up GEMM, the residual "
         f"on every down GEMM; the item with it less the item without) within {FUSED:g}% of the measured fused GEMM",
    "e": f"model: MAPE over the memory passes alone (SwiGLU, the norms) <= {MAPE:g}% (the profile's pass rates, "
         "estimated from the H200's, hold on an H100)",
}
PLAN99 = ROOT / "bench/predictions"
"""Where plan 99's registrations are (``reg99-NAME-1gpu/registration.json``: the harness, naive line and seed)."""


def registered_experiment(plan: int, name: str):
    """Registered plan ``plan``'s experiment of block ``name`` (``specs/experiments/regPLAN-NAME-1gpu.toml``), its
    profile as registered: before plan 103's adoption of the H100's pass rates (``ctasim.profiles.before_h100_passes``;
    plans 99-103 registered before it)."""
    from ctasim.profiles import before_h100_passes
    from ctasim.spec import read_experiment

    exp = read_experiment(str(ROOT / f"specs/experiments/reg{plan}-{name}-1gpu.toml"))[0]
    return dataclasses.replace(exp, hardware=before_h100_passes(exp.hardware))


def experiment(name: str):
    """Plan 99's experiment of block ``name`` (:func:`registered_experiment`)."""
    return registered_experiment(99, name)


def _registration(name: str, where: Path = PLAN99) -> dict:
    return json.loads((where / f"reg99-{name}-1gpu" / "registration.json").read_text())


def items_of(exp) -> dict[str, tuple[str, str]]:
    """The probe's item names of experiment ``exp``'s block -> (role, what): ``up``/``pass``/``down``/``norm`` (the
    block's own ops), ``up_plain``/``down_plain`` (its GEMMs without their fused ops), ``block``."""
    l0, l1 = exp.workload.layers
    act = next((op for op in l0.epilogue if op in ("gelu", "relu")), None)
    items = {"gemm1_plain": ("up", "as in the block") if l0.gated else ("up_plain", "plain")}
    if l0.gated:
        items["swiglu"] = ("pass", "the SwiGLU pass")
    else:
        items[f"gemm1_{act}"] = ("up", f"{act} fused")
    items.update({"gemm2_residual": ("down", "residual fused"), "gemm2_plain": ("down_plain", "plain"),
                  l1.rowwise: ("norm", l1.rowwise), "block": ("block", "the whole block")})
    return items


def harness_of(reg: dict):
    """The ``Timed`` harness a ``ctasim predict`` registration recorded (``registration.json``'s ``harness``)."""
    from ctasim.harness import Harness

    h = reg["harness"]
    return Harness(**{k: h[k] for k in ("run_ns", "gap_ns", "copy_ns", "wait_ns", "hop_ns")})


def split(exp, reg: dict, hw=None) -> list[dict]:
    """Experiment ``exp``'s block split as the model prices it under the harness, naive line and seed of the
    registration record ``reg`` (and profile ``hw``; the experiment's own where None): per case and item of
    :func:`items_of`, the model's time (the op's duration in the simulated trace plus the harness's ``run_ns``; the
    block's timed makespan) and the naive line's."""
    from ctasim import costs
    from ctasim.harness import timed_makespan_ns, timed_plans
    from ctasim.predict import Naive, expand

    harness, naive = harness_of(reg), Naive(**reg["naive"])
    hw, s = hw or exp.hardware, exp.strategies[0]
    rows = []
    for case in expand(exp):
        wl, m = case.workload, case.workload.layers[0].m
        l0, l1 = wl.layers
        eb = wl.elem_bytes

        def trace(layers):
            plan = timed_plans(s, dataclasses.replace(wl, layers=layers), hw, case.gpus, case.label, harness)[0]
            ns, tr = timed_makespan_ns(plan, hw, harness, seed=reg["seed"], regime=exp.regime)
            return ns, {r.name.split()[0] + " " + r.name.split()[1]: (r.t_end - r.t_begin) for r in
                        tr.ops.itertuples()}

        block_ns, ops = trace((l0, l1))
        _, up_plain = trace((dataclasses.replace(l0, epilogue=tuple(e for e in l0.epilogue
                                                                   if e not in ("gelu", "relu"))), l1))
        _, down_plain = trace((l0, dataclasses.replace(l1, epilogue=())))
        model = {"up": ops["gemm L0"], "pass": ops.get("swiglu L0", float("nan")), "down": ops["gemm L1"],
                 "norm": ops[f"{l1.rowwise} L1"], "up_plain": up_plain["gemm L0"],
                 "down_plain": down_plain["gemm L1"]}
        passes = {"pass": costs.epilogue_pass_ns(l0, eb, hw) if l0.epilogue_pass else float("nan"),
                  "norm": costs.rowwise_ns(l1.m, l1.out_n, eb, hw)}
        gemm = {"up": naive.gemm_ms(m, l0.k, l0.n), "down": naive.gemm_ms(m, l1.k, l1.n)}
        naive_ms = {"up": gemm["up"], "up_plain": gemm["up"], "down": gemm["down"], "down_plain": gemm["down"],
                    **{k: v / 1e6 for k, v in passes.items()},
                    "block": naive.predict_ms(s, case, hw, {})}
        for item, (role, what) in items_of(exp).items():
            ms = block_ns / 1e6 if role == "block" else (model[role] + harness.run_ns) / 1e6
            nv = naive_ms[role] if role == "block" else naive_ms[role] + harness.run_ns / 1e6
            rows.append(dict(m=m, item=item, role=role, what=what, model_ms=ms, naive_ms=nv))
    return rows


def predicted(where: Path = PLAN99) -> pd.DataFrame:
    """Per block, M and item: the model's time (:func:`split`, under each block's plan 99 registration) and the
    naive line's."""
    return pd.DataFrame([dict(block=name, **r) for name in BLOCKS
                         for r in split(experiment(name), _registration(name, where))])


def register(out: Path) -> pd.DataFrame:
    p = predicted()
    out.mkdir(parents=True, exist_ok=True)
    p.round(6).to_csv(out / "predicted.csv", index=False)
    return p


def h100_env(run: Path, plan: str) -> str:
    """The call's ``env.txt``; ValueError (one line) where there is none or it names no H100."""
    if not (run / "env.txt").is_file():
        raise ValueError(f"no {run / 'env.txt'}")
    env = (run / "env.txt").read_text()
    if "H100" not in env:
        raise ValueError(f"{run / 'env.txt'} names no H100: {plan} is judged on an H100's call")
    return env


def read_call(run: Path, blocks=BLOCKS, plan: str = "plan 101") -> pd.DataFrame:
    """Every block's probe table of the call (``breakdown-NAME.csv``) with a ``block`` column. ValueError (one line)
    where ``env.txt`` names no H100 (:func:`h100_env`) or a table is missing."""
    h100_env(run, plan)
    tables = []
    for name in blocks:
        f = run / f"breakdown-{name}.csv"
        if not f.is_file():
            raise ValueError(f"no {f}")
        tables.append(pd.read_csv(f).assign(block=name))
    return pd.concat(tables, ignore_index=True)


def measured_items(runs: pd.DataFrame, reg: pd.DataFrame, sources=("model", "naive")) -> pd.DataFrame:
    """The registration's items ``reg`` with the call's medians (``measured_ms``) and each source's error (%,
    ``SOURCE_pct``). ValueError (one line) where the call timed no such item."""
    meas = runs.set_index(["block", "m", "item"])["median_ms"]
    rows = []
    for r in reg.itertuples(index=False):
        key = (r.block, r.m, r.item)
        if key not in meas.index:
            raise ValueError(f"the call timed no {r.item} of {r.block} at M = {r.m}")
        ms = float(meas.loc[key])
        d = dict(r._asdict(), measured_ms=ms)
        d.update({f"{s}_pct": (d[f"{s}_ms"] / ms - 1) * 100 for s in sources})
        rows.append(d)
    return pd.DataFrame(rows)


def items(runs: pd.DataFrame, reg: pd.DataFrame) -> pd.DataFrame:
    """The registered items with their measured medians and each predictor's error (%). ValueError (one line) where
    the call has no such item or the code no longer gives the registered times."""
    now = predicted()
    drift = (now.model_ms.round(6) - reg.model_ms).abs().max()
    if len(now) != len(reg) or drift > 2e-6:
        raise ValueError("the registration is not what the model gives now (the profile, the experiments or the "
                         "code moved since it was written)")
    return measured_items(runs, reg)


def fused(t: pd.DataFrame) -> pd.DataFrame:
    """Each fused op's cost (the item with it less the item without), measured and modelled, and the model's miss as a
    share of the measured fused GEMM (%). SwiGLU blocks' up GEMMs fuse nothing (their SwiGLU is a pass)."""
    rows = []
    for (block, m), g in t.groupby(["block", "m"], sort=False):
        g = g.set_index("role")
        pairs = [("residual", "down", "down_plain")]
        if "up_plain" in g.index:
            pairs.insert(0, (g.loc["up", "item"].removeprefix("gemm1_"), "up", "up_plain"))
        for op, with_, without in pairs:
            meas = g.loc[with_, "measured_ms"] - g.loc[without, "measured_ms"]
            mod = g.loc[with_, "model_ms"] - g.loc[without, "model_ms"]
            rows.append(dict(block=block, m=m, op=op, measured_ms=meas, model_ms=mod,
                             miss_pct=(mod - meas) / g.loc[with_, "measured_ms"] * 100))
    return pd.DataFrame(rows)


def shortfall(t: pd.DataFrame) -> pd.DataFrame:
    """Per block and M: the model's error on the block item (ms, %) and where it is: on the two GEMM items, on the
    passes, and the rest (the block less its own ops: launches and gaps between kernels)."""
    rows = []
    for (block, m), g in t.groupby(["block", "m"], sort=False):
        g = g.set_index("role")
        err = g.model_ms - g.measured_ms
        own = [r for r in OWN if r in g.index]
        rows.append(dict(block=block, m=m, block_ms=g.loc["block", "measured_ms"],
                         block_pct=g.loc["block", "model_pct"], block_err_ms=err["block"],
                         gemms_err_ms=err["up"] + err["down"], passes_err_ms=err[[r for r in own if r in
                                                                                 ("pass", "norm")]].sum(),
                         between_ms=g.loc["block", "measured_ms"] - g.loc[own, "measured_ms"].sum(),
                         between_model_ms=g.loc["block", "model_ms"] - g.loc[own, "model_ms"].sum()))
    return pd.DataFrame(rows)


def judge(runs: pd.DataFrame, registration: Path = REGISTRATION) -> dict[str, pd.DataFrame]:
    reg = pd.read_csv(registration / "predicted.csv")
    t = items(runs, reg)
    f, s = fused(t), shortfall(t)
    own = t[t.role.isin(OWN)]
    passes = t[t.role.isin(("pass", "norm"))]
    mape = {p: own[f"{p}_pct"].abs().mean() for p in ("model", "naive")}
    worst = own.loc[own.model_pct.abs().idxmax(), "model_pct"]
    short = s[s.block.isin(SHORT) & (s.m == 65536)]
    c_met = bool(((short.block_err_ms < 0) & (short.gemms_err_ms <= GEMM_SHARE * short.block_err_ms)).all())
    c_value = "; ".join(f"{r.block}: block {r.block_err_ms * 1e3:+.0f} us ({r.block_pct:+.2f}%), GEMMs "
                        f"{r.gemms_err_ms * 1e3:+.0f} us" for r in short.itertuples())
    fw = f.loc[f.miss_pct.abs().idxmax()]
    rows = [
        ("a", f"{mape['model']:.2f}%, worst {worst:+.2f}% over {len(own)} ops",
         mape["model"] <= MAPE and abs(worst) <= WORST),
        ("b", f"{mape['model']:.2f} against the naive line's {mape['naive']:.2f}%", mape["model"] < mape["naive"]),
        ("c", c_value, c_met),
        ("d", f"worst {fw.miss_pct:+.2f}% ({fw.op} on {fw.block} at M = {fw.m}) over {len(f)} fused ops",
         bool((f.miss_pct.abs() <= FUSED).all())),
        ("e", f"{passes.model_pct.abs().mean():.2f}% over {len(passes)} passes (worst "
              f"{passes.loc[passes.model_pct.abs().idxmax(), 'model_pct']:+.2f}%)",
         passes.model_pct.abs().mean() <= MAPE),
    ]
    claims = pd.DataFrame([dict(claim=c, rule=CLAIMS[c], value=v, met=bool(m)) for c, v, m in rows])
    return {"items": t, "fused": f, "shortfall": s, "claims": claims}


def breakdown_main(argv, name: str, description: str, registration: Path, results: Path, register, judge, read,
                   show: str = "claims") -> int:
    """The command line of a plan judged on ``mlp_block_breakdown.py`` calls (plans 101-103): ``--register [--out]``
    writes ``register(out)`` (never over a registration), ``--judge RUN [--out]`` writes ``judge(read(RUN))``'s
    tables and prints ``show``'s and the claims; a refusal is one line, exit 2, nothing written."""
    ap = OneLineParser(prog=f"python bench/{name}.py", description=description)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--register", action="store_true", help="write the registration")
    mode.add_argument("--judge", type=Path, metavar="RUN", help="the call's folder (breakdown-NAME.csv, env.txt)")
    ap.add_argument("--out", type=Path)
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        if args.register:
            out = args.out or registration
            if (out / "predicted.csv").exists():
                raise ValueError(f"{out / 'predicted.csv'} exists (a registration is never overwritten)")
            print(register(out).round(3).to_string(index=False))
            return 0
        tables = judge(read(args.judge))
    except ValueError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 2
    out = args.out or results
    out.mkdir(parents=True, exist_ok=True)
    for table, t in tables.items():
        t.round(4).to_csv(out / f"{table}.csv", index=False)
    with pd.option_context("display.width", 200, "display.max_colwidth", 100):
        if show != "claims":
            print(tables[show].round(3).to_string(index=False))
        print(tables["claims"].to_string(index=False))
    return 0


def main(argv=None) -> int:
    return breakdown_main(argv, "plan101_block_ops", __doc__.splitlines()[0], REGISTRATION, RESULTS, register, judge,
                          read_call, "shortfall")


if __name__ == "__main__":
    raise SystemExit(main())
