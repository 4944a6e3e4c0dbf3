"""Registered plan 69: does an H100's own calibration predict that H100? (no GPU)

    python bench/plan69_h100_own.py --judge RUN_DIR [--out bench/results/validation-registered69]

The H100 profile a user has is ``h100-x1-datasheet``: the H200's measured profile with the H100's L2 size and HBM
rate from the datasheets, its reuse law since plan 67. ``ctahw calibrate --base h100-x1-datasheet`` is the one command
that measures an H100 into a profile. Plan 69's call (``bench/hw/run_own_h100.sh``, one H100) runs it, predicts with
the profile it writes (``h100-x1-own.toml``) before anything of them is timed, then times plan 67's twelve GEMMs at
every CUTLASS order (:func:`shapes`) and runs plan 68's two chain experiments (:data:`EXPERIMENTS`: 2-layer chains at
H = 4096 and 4608, M = 8192 and 16384, sequential and the chain kernel in four orders; 20 cases).

Predictors: ``own`` (the call's own profile, its predictions made in the call before the timing: ``reg69-own/EXP``
and ``predicted-own/predicted.csv``), ``datasheet`` (the committed ``h100-x1-datasheet`` as adopted: the chains'
registrations ``reg68-h100-*-reuse``, the GEMMs predicted in the call from the committed file), ``naive`` (the FLOPs
line fitted on H200 GEMMs, order-blind) and, for the GEMMs, ``naive_own`` (a FLOPs line through the calibration's own
tile-order timings). Claims (:data:`CLAIMS`), GEMMs at each shape's best measured order (``block_gemm_orders.judge``):
(a) own's MAPE <= 3%, worst <= 6%; (b) own's MAPE below the datasheet's; (c) own's at most half naive_own's; chains
over every case and strategy: (d) own's makespan MAPE below the datasheet's; (e) own's within 3% / 6%; (f) every own
GEMM pick within 2% of the measured best. Written: ``gemm-shapes.csv``, ``gemm-claims.csv`` (every predictor),
``cases.csv`` (the chains), ``fields.csv`` (the own profile's measured fields beside the datasheet's) and
``claims.csv``. A run that cannot be judged (no own profile, a missing table, a profile that no longer gives the
registered GEMM times) is refused in one line, exit 2, nothing written. Left out: the sustained regime, per-CTA starts,
GPUs other than an H100 SXM.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan64_h100_datasheet as p64  # noqa: E402
import registered_plan  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

EXPERIMENTS = ("reg68-chain-reuse-h4096", "reg68-chain-reuse-h4608")
DATASHEET = {e: e.replace("chain-reuse", "h100") + "-reuse" for e in EXPERIMENTS}
"""Experiment -> the committed ``h100-x1-datasheet`` registration of it (bench/predictions/; plan 68's twin, the profile
as adopted)."""
GEMMS = ROOT / "bench/predictions/reg67-l2-reuse/predicted.csv"
"""Plan 67's registration, whose shapes plan 69 times again."""
REGISTERED = ROOT / "bench/predictions/reg69-h100-own"
PROFILE, OWN = "h100-x1-datasheet", "h100-x1-own.toml"
MAPE, WORST, PICK = 3.0, 6.0, 2.0
WHY = "plan 69's call writes it with bench/hw/run_own_h100.sh"
FIELDS = ("hbm_gbps", "l2_hbm_exposed", "l2_reuse_law", "local_signal_ns", "launch_ns")
"""Hardware fields set beside the datasheet's in ``fields.csv`` (with the 128x256 config's :data:`CONFIG_FIELDS`
and the L2 survival curve's share at :data:`CURVE_AT`)."""
CONFIG_FIELDS = ("sm_tflops", "tile_fixed_ns", "l2_sm_tflops", "cta_drift", "ticket_spread", "ticket_mainloop_factor")
CURVE_AT = (0.5, 0.625, 0.75)
JudgeError = registered_plan.JudgeError
CLAIMS = {
    "a": f"own: GEMM MAPE at the best measured orders <= {MAPE:g}% and worst |error| <= {WORST:g}% (12 shapes)",
    "b": "own: GEMM MAPE at the best measured orders below the datasheet profile's",
    "c": "own: GEMM MAPE at the best measured orders at most half the naive line's through its own tile-order timings",
    "d": "own: chain makespan MAPE below the datasheet profile's over every case and strategy (20)",
    "e": f"own: chain makespan MAPE <= {MAPE:g}% and worst |error| <= {WORST:g}%",
    "f": f"own: every GEMM pick within {PICK:g}% of the measured best order",
}


def shapes(table: Path = GEMMS) -> list[tuple[int, int, int]]:
    """Plan 67's shapes (M, N, K), in its registration's order."""
    d = pd.read_csv(table)[["m", "n", "k"]].drop_duplicates()
    return [tuple(int(x) for x in r) for r in d.itertuples(index=False)]


def own_profile(run_dir: Path):
    """The call's own profile; :class:`JudgeError` where it is missing or does not load."""
    from ctasim.spec import SpecError, load_hardware  # noqa: PLC0415

    path = run_dir / OWN
    if not path.is_file():
        raise JudgeError(f"no {path} ({WHY}; calibrate.log says why it is missing)")
    try:
        return load_hardware(path)
    except (SpecError, OSError, ValueError) as e:
        raise JudgeError(f"{path}: not a hardware profile ({str(e).splitlines()[0]})") from None


def gemms(run_dir: Path, own) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``block_gemm_orders.judge`` of the call's GEMMs for ``own`` and the datasheet profile: per shape, and per
    predictor (with the naive lines); :class:`JudgeError` where a table is missing, a registered shape was not timed
    or a profile no longer gives the registered times."""
    import block_gemm_orders as bgo  # noqa: PLC0415
    from ctasim.spec import load_hardware  # noqa: PLC0415

    table, reg = run_dir / "gemm_shapes.csv", run_dir / "predicted-own" / "predicted.csv"
    for f in (table, reg):
        if not f.is_file():
            raise JudgeError(f"no {f} ({WHY})")
    try:
        runs = pd.read_csv(table)
        runs = runs[runs["backend"] == "cutlass"]
        registered_plan.positive_times(runs["median_ms"], [f"{r.m}x{r.n}x{r.k} {r.order}" for r in runs.itertuples()],
                                       table, "the median")
        hws = {"own": own, "datasheet": load_hardware(PROFILE)}
        got, claims = bgo.judge(runs, bgo.orders(runs, hws), pd.read_csv(reg), hws)
    except (KeyError, ValueError) as e:
        raise JudgeError(str(e).removeprefix("block_gemm_orders: ")) from None
    missing = set(shapes()) - {(int(r.m), int(r.n), int(r.k)) for r in got.itertuples()}
    if missing:
        m, n, k = sorted(missing)[0]
        raise JudgeError(f"{table}: no timed run of {m}x{n}x{k} ({len(missing)} of plan 67's shapes missing)")
    return got, claims


def chains(run_dir: Path) -> pd.DataFrame:
    """Per experiment, case, strategy and source (own, datasheet, naive): measured and predicted makespans and the
    error (%); :class:`JudgeError` where a registration or a timed run is missing."""
    parts = []
    for exp in EXPERIMENTS:
        for root, reg, sources in ((run_dir / "reg69-own", exp, {"model": "own", "naive": "naive"}),
                                   (p64.PREDICTIONS, DATASHEET[exp], {"model": "datasheet"})):
            if not (root / reg / "predictions.csv").is_file():
                raise JudgeError(f"no {root / reg / 'predictions.csv'} ({WHY})")
            parts.append(p64._rows(reg, sources, root))
    pred = pd.concat(parts, ignore_index=True).rename(columns={"makespan_ms": "predicted_ms"}).assign(n_runs=1)
    timed = pd.concat([registered_plan.timed_makespans(run_dir, e, WHY).rename("measured_ms").reset_index()
                       .assign(experiment=e) for e in EXPERIMENTS], ignore_index=True)
    return p64.timed_cases(pred, timed).drop(columns="n_runs")


def fields(own) -> pd.DataFrame:
    """The own profile's fields of :data:`FIELDS`, :data:`CONFIG_FIELDS` (128x256) and the survival curve's share at
    :data:`CURVE_AT` (L2 sizes) beside the datasheet profile's."""
    from ctasim.l2 import survival_share  # noqa: PLC0415
    from ctasim.spec import load_hardware  # noqa: PLC0415

    rows = []
    for label, hw in (("own", own), ("datasheet", load_hardware(PROFILE))):
        cfg = hw.config(128, 256)
        vals = {f: getattr(hw, f) for f in FIELDS} | {f"128x256 {f}": getattr(cfg, f) for f in CONFIG_FIELDS}
        share = survival_share(pd.Series(CURVE_AT).to_numpy(), (hw.l2_survival_taken, hw.l2_survival_share))
        vals |= {f"l2 survival at {x:g}": float(s) for x, s in zip(CURVE_AT, share)}
        rows += [{"field": f, "profile": label, "value": v} for f, v in vals.items()]
    return pd.DataFrame(rows).pivot(index="field", columns="profile", values="value").reset_index()


def claims(gemm_claims: pd.DataFrame, c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    g = gemm_claims.set_index("predictor")
    own, ds, nv = (float(g.at[p, "best_mape_pct"]) for p in ("own", "datasheet", "naive_own"))
    worst, lost = float(g.at["own", "best_worst_pct"]), float(g.at["own", "pick_lost_max_pct"])
    by = {s: c[(c["source"] == s) & c["error_pct"].notna()] for s in ("own", "datasheet", "naive")}
    mape = {s: float(d["error_pct"].abs().mean()) if len(d) else float("nan") for s, d in by.items()}
    complete = len(by["own"]) > 0 and len(by["own"]) == len(by["datasheet"])
    cw = float(by["own"].loc[by["own"]["error_pct"].abs().idxmax(), "error_pct"]) if len(by["own"]) else float("nan")
    rows = [
        ("a", f"MAPE {own:.2f}%, worst {worst:+.2f}% over {int(g.at['own', 'shapes'])} shapes",
         own <= MAPE and abs(worst) <= WORST),
        ("b", f"{own:.2f} against the datasheet's {ds:.2f}%", own < ds),
        ("c", f"{own:.2f} against the own naive line's {nv:.2f}%", own <= nv / 2),
        ("d", f"{mape['own']:.2f} against the datasheet's {mape['datasheet']:.2f}% over {len(by['own'])} cases",
         complete and mape["own"] < mape["datasheet"]),
        ("e", f"MAPE {mape['own']:.2f}%, worst {cw:+.2f}%", complete and mape["own"] <= MAPE and abs(cw) <= WORST),
        ("f", f"the worst pick {lost:.2f}% over the best", lost <= PICK),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


def main(argv: list[str] | None = None) -> int:
    from ctasim.accuracy import provenance_order  # noqa: PLC0415

    ap = OneLineParser(prog="python bench/plan69_h100_own.py", description=__doc__.splitlines()[0])
    ap.add_argument("--judge", type=Path, metavar="RUN_DIR", required=True, help="the plan's call (its folder)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/validation-registered69")
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        gpu = p64.gpu_name(args.judge, WHY)
        if gpu != "NVIDIA H100 80GB HBM3":
            raise JudgeError(f"{args.judge / 'env.txt'}: the call ran on an {gpu}; plan 69 is for an H100 SXM")
        own = own_profile(args.judge)
        per_shape, gemm_claims = gemms(args.judge, own)
        c = chains(args.judge)
        prov = provenance_order(REGISTERED / "README.md", args.judge / "gemm_shapes.csv")
        cl = claims(gemm_claims, c, ("registered: " if prov.registered else "post-hoc: ") + prov.why)
        f = fields(own)
    except JudgeError as e:
        print(f"plan69_h100_own: {e}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    per_shape.to_csv(args.out / "gemm-shapes.csv", index=False, float_format="%.4f")
    gemm_claims.to_csv(args.out / "gemm-claims.csv", index=False, float_format="%.4f")
    c.to_csv(args.out / "cases.csv", index=False, float_format="%.4f")
    f.to_csv(args.out / "fields.csv", index=False)
    cl.to_csv(args.out / "claims.csv", index=False)
    with pd.option_context("display.width", 250, "display.max_colwidth", 120):
        print(gemm_claims.round(2).to_string(index=False))
        print()
        print(f.to_string(index=False))
        print()
        print(cl.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
