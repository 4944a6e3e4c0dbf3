"""Registered plan 69: does an H100's own calibration predict that H100? (no GPU)

    python bench/plan69_h100_own.py --judge RUN_DIR [--out bench/results/validation-registered69]

The H100 profile a user has is ``h100-x1-datasheet``: the H200's measured profile with the H100's L2 size and HBM
rate from the datasheets, its reuse law since plan 67. ``ctahw calibrate --base h100-x1-datasheet`` is the one command
that measures an H100 into a profile. Plan 69's call (``bench/hw/run_own_h100.sh``, one H100) runs it, predicts with
the profile it writes (``h100-x1-own.toml``) before anything of them is timed, then times plan 67's twelve GEMMs at
every CUTLASS order (:func:`shapes`) and runs plan 68's two chain experiments (:data:`EXPERIMENTS`: 2-layer chains at
H = 4096 and 4608, M = 8192 and 16384, sequential and the chain kernel in four orders; 20 cases). The judge checks the
call: its ``env.txt`` names the code of a commit whose registration README is this one, and its ``log.txt`` has every
prediction done before the timing began (:func:`call_order`).

Predictors: ``own`` (the call's own profile, its predictions made in the call before the timing: ``reg69-own/EXP``
and ``predicted-own/predicted.csv``), ``datasheet`` (the committed ``h100-x1-datasheet`` as adopted: the chains'
registrations ``reg68-h100-*-reuse``, the GEMMs predicted in the call from the committed file), ``naive`` (the FLOPs
line fitted on H200 GEMMs, order-blind) and, for the GEMMs, ``naive_own`` (a FLOPs line through the calibration's own
tile-order timings). Claims (:data:`CLAIMS`), GEMMs (the eleven of :func:`held_out_shapes`: the reference GEMM,
inside the calibration's tile-order probe, left out), each predictor's time at the order it picks against the shape's
best measured time (``block_gemm_orders.judge``'s ``best_*``): (a) own's MAPE <= 3%, worst <= 6%; (b) own's MAPE below
the datasheet's; (c) own's at most half naive_own's; (d) every own pick within 2% of the measured best; chains over
every case and strategy: (e) own's makespan MAPE below the datasheet's; (f) own's within 3% / 6%. Written:
``gemm-shapes.csv``, ``gemm-claims.csv`` (every predictor), ``cases.csv`` (the chains), ``fields.csv`` (the own
profile's measured fields beside the datasheet's) and ``claims.csv``. A run that cannot be judged (no own profile,
a missing table, a profile that no longer gives the
registered GEMM times, a GEMM shape not timed, a log with the timing before a prediction, another commit's code)
is refused in one line, exit 2, nothing written. The chains are judged whole or not at all: where a registration, a
run or one of the 20 cases is missing, (e) and (f) are written "not judged" (and not met), and ``cases.csv`` is not
written. Left out: the sustained regime, per-CTA starts,
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
from ctasim.profiles import before_h100_adoptions  # noqa: E402

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
    "a": f"own: GEMM MAPE (its pick's time against the best measured) <= {MAPE:g}% and worst |error| <= {WORST:g}% "
         "(11 shapes)",
    "b": "own: GEMM MAPE below the datasheet profile's",
    "c": "own: GEMM MAPE at most half the naive line's through its own tile-order timings",
    "d": f"own: every GEMM pick measured within {PICK:g}% of the best order",
    "e": "own: chain makespan MAPE below the datasheet profile's over every case and strategy (20)",
    "f": f"own: chain makespan MAPE <= {MAPE:g}% and worst |error| <= {WORST:g}%",
}
CASES = 20
"""The chain cases each source is judged on (2 experiments x 2 M x 5 strategies)."""


def shapes(table: Path = GEMMS) -> list[tuple[int, int, int]]:
    """Plan 67's shapes (M, N, K), in its registration's order."""
    d = pd.read_csv(table)[["m", "n", "k"]].drop_duplicates()
    return [tuple(int(x) for x in r) for r in d.itertuples(index=False)]


def held_out_shapes() -> list[tuple[int, int, int]]:
    """:func:`shapes` less those inside the calibration's tile-order probe (N = K = 8192: the reference GEMM)."""
    from ctasim.calibration import is_calibration  # noqa: PLC0415

    return [s for s in shapes() if not is_calibration(*s)]


def call_order(run_dir: Path) -> str:
    """The call's commit (``env.txt``), checked: its registration README is this one (``git show``), and ``log.txt``
    logs every prediction's exit before the GEMM timing and the runs begin. :class:`JudgeError` otherwise."""
    import re  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    env, log = run_dir / "env.txt", run_dir / "log.txt"
    for f in (env, log):
        if not f.is_file():
            raise JudgeError(f"no {f} ({WHY})")
    m = re.search(r"^commit: (\S+)", env.read_text(errors="replace"), re.M)
    commit = m[1] if m else "unknown"
    readme = REGISTERED / "README.md"
    got = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{readme.relative_to(ROOT)}"],
                         capture_output=True, text=True)
    if got.returncode != 0 or got.stdout != readme.read_text():
        raise JudgeError(f"{env}: the call ran the code of {commit}, whose plan 69 registration is not "
                         f"{readme.relative_to(ROOT)} as committed")
    lines = log.read_text(errors="replace").splitlines()
    timing = [i for i, x in enumerate(lines) if "gemm_shape_probe (" in x or "ctahw run " in x]
    predicted = [i for i, x in enumerate(lines) if x.split(" ", 2)[-1].startswith("predict ") and x.endswith(" exit 0")]
    if len(predicted) != len(EXPERIMENTS) + 1 or not timing or max(predicted) > min(timing):
        raise JudgeError(f"{log}: not {len(EXPERIMENTS) + 1} predictions logged done (exit 0) before the timing began")
    return commit


def as_registered():
    """:data:`PROFILE` as plan 69 registered it: before registered plan 73's drift law and plan 76's exposed rate
    (``ctasim.profiles.before_h100_adoptions``; both adopted after, 2026-12-06)."""
    return before_h100_adoptions(PROFILE)


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

    table, reg = run_dir / "gemm_shapes.csv", run_dir / "predicted-own" / "predicted.csv"
    for f in (table, reg):
        if not f.is_file():
            raise JudgeError(f"no {f} ({WHY})")
    try:
        runs = pd.read_csv(table)
        keep = set(held_out_shapes())
        held = pd.Series([(m, n, k) in keep for m, n, k in zip(runs["m"], runs["n"], runs["k"])], index=runs.index)
        runs = runs[(runs["backend"] == "cutlass") & held]
        registered_plan.positive_times(runs["median_ms"], [f"{r.m}x{r.n}x{r.k} {r.order}" for r in runs.itertuples()],
                                       table, "the median")
        hws = {"own": own, "datasheet": as_registered()}
        registered = pd.read_csv(reg)
        need = [f"{c}_ms" for c in (*hws, "naive", "naive_own")] + [f"{c}_pick" for c in hws]
        lacking = [c for c in need if c not in registered.columns]
        if lacking:
            raise JudgeError(f"{reg}: no column {lacking[0]} (the call's predictions are not plan 69's)")
        got, claims = bgo.judge(runs, bgo.orders(runs, hws), registered, hws)
    except (KeyError, ValueError) as e:
        raise JudgeError(str(e).removeprefix("block_gemm_orders: ")) from None
    missing = set(held_out_shapes()) - {(int(r.m), int(r.n), int(r.k)) for r in got.itertuples()}
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
    c = p64.timed_cases(pred, timed).drop(columns="n_runs")
    for source in ("own", "datasheet"):
        d = c[c["source"] == source]
        if d["measured_ms"].isna().any() or len(d) != CASES:
            r = d[d["measured_ms"].isna()].iloc[0] if d["measured_ms"].isna().any() else None
            raise JudgeError(f"{run_dir}: {source} has {len(d) - int(d['measured_ms'].isna().sum())} of {CASES} "
                             "cases timed" + (f" (no ok run of {r['experiment']} {r['case']} {r['strategy']})"
                                              if r is not None else ""))
    return c


def fields(own) -> pd.DataFrame:
    """The own profile's fields of :data:`FIELDS`, :data:`CONFIG_FIELDS` (128x256) and the survival curve's share at
    :data:`CURVE_AT` (L2 sizes) beside the datasheet profile's."""
    from ctasim.l2 import survival_share  # noqa: PLC0415

    rows = []
    for label, hw in (("own", own), ("datasheet", as_registered())):
        cfg = hw.config(128, 256)
        vals = {f: getattr(hw, f) for f in FIELDS} | {f"128x256 {f}": getattr(cfg, f) for f in CONFIG_FIELDS}
        share = survival_share(pd.Series(CURVE_AT).to_numpy(), (hw.l2_survival_taken, hw.l2_survival_share))
        vals |= {f"l2 survival at {x:g}": float(s) for x, s in zip(CURVE_AT, share)}
        rows += [{"field": f, "profile": label, "value": v} for f, v in vals.items()]
    return pd.DataFrame(rows).pivot(index="field", columns="profile", values="value").reset_index()


def claims(gemm_claims: pd.DataFrame, c: pd.DataFrame | None, provenance: str, why_not: str = "") -> pd.DataFrame:
    """Claims (a)-(f) from the GEMM predictors' figures and the chain cases ``c``; where ``c`` is None (the chains could
    not be judged, ``why_not``), (e) and (f) are not judged, and not met."""
    if c is None:
        c = pd.DataFrame(columns=["source", "error_pct"])
    g = gemm_claims.set_index("predictor")
    own, ds, nv = (float(g.at[p, "best_mape_pct"]) for p in ("own", "datasheet", "naive_own"))
    worst, lost = float(g.at["own", "best_worst_pct"]), float(g.at["own", "pick_lost_max_pct"])
    by, mape, complete, _ = p64.by_source(c, ("own", "datasheet"), reference="own")
    cw = p64.signed_worst(by["own"])
    rows = [
        ("a", f"MAPE {own:.2f}%, worst {worst:+.2f}% over {int(g.at['own', 'shapes'])} shapes", True,
         own <= MAPE and abs(worst) <= WORST),
        ("b", f"{own:.2f} against the datasheet's {ds:.2f}%", True, own < ds),
        ("c", f"{own:.2f} against the own naive line's {nv:.2f}%", True, own <= nv / 2),
        ("d", f"the worst pick {lost:.2f}% over the best", True, lost <= PICK),
    ]
    if why_not:
        rows += [(x, f"not judged: {why_not}", False, False) for x in ("e", "f")]
    else:
        rows += [
            ("e", f"{mape['own']:.2f} against the datasheet's {mape['datasheet']:.2f}% over {len(by['own'])} cases",
             True, complete and mape["own"] < mape["datasheet"]),
            ("f", f"MAPE {mape['own']:.2f}%, worst {cw:+.2f}%", True,
             complete and mape["own"] <= MAPE and abs(cw) <= WORST),
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
        commit = call_order(args.judge)
        own = own_profile(args.judge)
        per_shape, gemm_claims = gemms(args.judge, own)
        try:
            c, why_not = chains(args.judge), ""
        except JudgeError as e:  # the chains are judged whole or not at all; the GEMM claims stand without them
            c, why_not = None, str(e)
        prov = provenance_order(REGISTERED / "README.md", args.judge / "gemm_shapes.csv")
        cl = claims(gemm_claims, c, ("registered: " if prov.registered else "post-hoc: ") + prov.why +
                    f"; the call ran {commit}", why_not)
        f = fields(own)
    except JudgeError as e:
        print(f"plan69_h100_own: {e}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    per_shape.to_csv(args.out / "gemm-shapes.csv", index=False, float_format="%.4f")
    gemm_claims.to_csv(args.out / "gemm-claims.csv", index=False, float_format="%.4f")
    if c is not None:
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
