"""Does the clock slow every kernel alike? Registered plan 29's trajectories of GEMMs with other power draws (no GPU).

    python bench/clock_kernels.py --predict NAME=MxNxK[+OP],... --out bench/predictions/reg29-clock-kernels
    python bench/clock_kernels.py --spec bench/predictions/reg29-clock-kernels        # the --kernels line to time
    python bench/clock_kernels.py --trajectory TRAJECTORY.csv --registered bench/predictions/reg29-clock-kernels \\
        --out bench/results/validation-registered29/clock-kernels

The model (``ctasim.engine.clock_steps``) slows every kernel of a burst run by one clock curve per machine, and a
sustained run by one ratio, ``clock_sustained_slowdown``, whatever the kernel draws; a GEMM on a ReLU'd A (half of
A zero) takes ``relu_input_tile_factor`` of the plain GEMM's time in either regime. Under a power cap a kernel that
draws less should lose less clock: this plan times kernels whose draw differs (a half-zero A, a wide N, a long K,
the fused GeLU) from rested to sustained, as ``bench/hw/clock_trajectory.py --kernels`` does.

``--predict`` writes ``predicted.csv`` (per kernel: its shape and op, the model's rested time at CUTLASS's default
order under ``h200-x1-calibrated`` (``--profile`` another: registered plan 71's H100 profiles) -- with ``--before-reuse-adoption`` as plans 29-31 were registered (2026-12-03; a
panel's reuse across waves an LRU of the whole L2, as before registered plan 67's adoption on an H200:
``ctasim.profiles.before_h200_reuse``), which it writes in ``reuse_pricing.PRICING_FILE`` -- plain GEMMs only; a fused
epilogue is priced per tile by the engine, not here -- its sustained slowdown and the ReLU'd-A factor; the naive
line: no clock, factor 1) and ``curve.csv`` (the profile's clock curve). ``--trajectory ... --registered`` judges:
``kernels.csv`` (per kernel, medians over its rounds: rested time, onset, sustained slowdown, sustained time; its own
mean curve's mean |difference| from the profile's over the knots to 150 ms), ``relu.csv`` (each ReLU'd-A kernel over
the plain kernel of its shape, rested and sustained), ``curves.csv`` (each kernel's curve beside the profile's at
every knot) and ``claims.csv`` (the rules in the registration's README). Every figure is the registration's against
one machine's trajectory. ``--smi SMI.csv[.gz] --smi-start TIME`` adds ``smi.csv``, a diagnostic outside the rules:
each kernel's SM clock in its rounds from the call's nvidia-smi samples (:func:`smi_rounds`).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

from ctahw.calibrate import CLOCK_KERNELS, CURVE_HORIZON_MS, CURVE_STEP_MS, clock_curve, clock_regime  # noqa: E402
from ctasim import costs  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.engine import step_factor  # noqa: E402
from ctasim.spec import Layer, load_hardware  # noqa: E402
from hw.clock_trajectory import parse_kernels  # noqa: E402
import reuse_pricing  # noqa: E402

PROFILE = "h200-x1-calibrated"
SUSTAINED_TOL = 0.03
"""Claim (a): every kernel's sustained slowdown within this of the profile's (the three calibration kernels on the
machines timed so far: 1.139-1.179 about 1.168)."""
RELU_TOL = 0.02
"""Claim (b): the ReLU'd A's factor, sustained, within this of the profile's (measured rested: 0.934-0.949)."""
CURVE_TOL = 0.03
"""Claim (c): the other kernels' pooled mean curve within this of the calibration kernels' on the same machine (mean
|difference| over the knots to 150 ms). One kernel's three rounds are too few for a curve of its own: the calibration
kernels' per-kernel curves differ from their machine's pooled one by 0.016-0.033 on the machines timed so far."""
SAME_MACHINE_TOL = 0.03
"""Claim (d): every other kernel's sustained slowdown within this of the calibration kernels' median on the same
machine (the machine's own level, so what is left is the kernel)."""


def _curve(records: list[dict], kernels) -> tuple[list[float], list[float]]:
    """The mean clock curve (:func:`ctahw.calibrate.clock_curve`) of ``kernels``' rounds as steps (knots in ms,
    factors) for :func:`ctasim.engine.step_factor`."""
    fields, _ = clock_curve(records, kernels=tuple(kernels))
    return [t / 1e6 for t in fields["clock_curve_ns"]], list(fields["clock_curve_factor"])


def _ops(reg: pd.DataFrame) -> pd.DataFrame:
    """A registration with its ``op`` column as strings ('' for a plain kernel, which a CSV reads back as NaN)."""
    return reg.assign(op=reg.op.fillna(""))


def predicted(kernels: dict[str, tuple], hw) -> pd.DataFrame:
    """Per kernel: the model's rested time at CUTLASS's default order (heuristic raster, swizzle 1; plain GEMMs, a
    ReLU'd A times ``relu_input_tile_factor``), its sustained slowdown and ReLU'd-A factor, and the naive line's."""
    rows = []
    for name, (m, n, k, ops) in kernels.items():
        rested = float("nan")
        if ops in ((), ("relu_input",)):
            _, _, waves = costs.cutlass_waves(Layer(m=m, n=n, k=k), hw, 2, "heuristic", 1)
            rested = waves.sum() / 1e6 * (hw.relu_input_tile_factor if ops else 1.0)
        rows.append({"kernel": name, "m": m, "n": n, "k": k, "op": "+".join(ops), "model_rested_ms": rested,
                     "model_sustained_slowdown": hw.clock_sustained_slowdown,
                     "model_relu_input_factor": hw.relu_input_tile_factor, "naive_sustained_slowdown": 1.0,
                     "naive_relu_input_factor": 1.0})
    return pd.DataFrame(rows)


def spec(reg: pd.DataFrame) -> str:
    """The ``clock_trajectory.py --kernels`` line of a registration (its kernels, in its order)."""
    return ",".join(f"{r.kernel}={r.m}x{r.n}x{r.k}" + (f"+{r.op}" if r.op else "") for r in _ops(reg).itertuples())


def judge(traj: pd.DataFrame, reg: pd.DataFrame, curve: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Registered plan 29's tables from one trajectory table and the registration. ValueError if the trajectory
    lacks a registered kernel or times one at another shape."""
    reg = _ops(reg)
    records = traj.to_dict("records")
    _, per_round = clock_regime(records, kernels=tuple(reg.kernel))
    per = pd.DataFrame(per_round)
    ts, fs = list(curve.t_ms), list(curve.factor)
    knots = [j * CURVE_STEP_MS for j in range(int(CURVE_HORIZON_MS // CURVE_STEP_MS) + 1)]
    rows, curves = [], []
    for r in reg.itertuples():
        got = traj[traj.kernel == r.kernel]
        if got.empty:
            raise ValueError(f"clock_kernels: the trajectory has no kernel {r.kernel!r}")
        if (got[["m", "n", "k"]].drop_duplicates().values.tolist() != [[r.m, r.n, r.k]]):
            raise ValueError(f"clock_kernels: {r.kernel!r} was timed at another shape than registered")
        pr = per[per.kernel == r.kernel]
        own = _curve(records, (r.kernel,))
        diffs = []
        for t in knots:
            here, there = step_factor(*own, t), step_factor(ts, fs, t)
            curves.append({"kernel": r.kernel, "t_ms": t, "factor": here, "profile_factor": there})
            diffs.append(abs(here - there))
        rested = statistics.median(pr.rested_ms)
        sustained = statistics.median(pr.sustained_slowdown)
        rows.append({"kernel": r.kernel, "m": r.m, "n": r.n, "k": r.k, "op": r.op,
                     "rounds": len(pr), "rested_ms": rested, "model_rested_ms": r.model_rested_ms,
                     "rested_err_pct": 100 * (r.model_rested_ms / rested - 1), "onset_ms": statistics.median(pr.onset_ms),
                     "sustained_slowdown": sustained, "model_sustained_slowdown": r.model_sustained_slowdown,
                     "sustained_diff": r.model_sustained_slowdown - sustained,
                     "naive_sustained_diff": r.naive_sustained_slowdown - sustained,
                     "sustained_ms": statistics.median(pr.rested_ms * pr.sustained_slowdown),
                     "curve_mean_abs_diff": statistics.fmean(diffs)})
    kern = pd.DataFrame(rows)
    by = kern.set_index("kernel")
    rows = []
    regd = reg.set_index("kernel")
    for name, r in regd.iterrows():  # each ReLU'd-A kernel beside the plain kernel of its shape
        if r.op != "relu_input":
            continue
        plain = regd[(regd.m == r.m) & (regd.n == r.n) & (regd.k == r.k) & (regd.op == "")].index
        if not len(plain):
            raise ValueError(f"clock_kernels: {name!r} has no plain kernel of its shape registered beside it")
        for regime, col in (("rested", "rested_ms"), ("sustained", "sustained_ms")):
            f = by[col][name] / by[col][plain[0]]
            rows.append({"kernel": name, "plain": plain[0], "regime": regime, "factor": f,
                         "model_factor": r.model_relu_input_factor, "diff": r.model_relu_input_factor - f,
                         "naive_diff": 1.0 - f})
    relu = pd.DataFrame(rows)
    claims = [{"claim": "a", "what": f"every kernel's sustained slowdown within {SUSTAINED_TOL} of the profile's",
               "value": float(kern.sustained_diff.abs().max()), "limit": SUSTAINED_TOL,
               "met": bool((kern.sustained_diff.abs() <= SUSTAINED_TOL).all()),
               "naive_value": float(kern.naive_sustained_diff.abs().max())}]
    if not relu.empty:
        sus = relu[relu.regime == "sustained"]
        worst = sus.loc[sus["diff"].abs().idxmax()]
        claims.append({"claim": "b", "what": f"every ReLU'd A's factor, sustained, within {RELU_TOL} of the profile's",
                       "value": float(abs(worst["diff"])), "limit": RELU_TOL,
                       "met": bool((sus["diff"].abs() <= RELU_TOL).all()),
                       "naive_value": float(sus["naive_diff"].abs().max())})
    calib = [k for k in reg.kernel if k in CLOCK_KERNELS]
    others = [k for k in reg.kernel if k not in CLOCK_KERNELS]
    if calib and others:
        pooled = {"calibration": _curve(records, calib), "others": _curve(records, others)}
        gap = statistics.fmean(abs(step_factor(*pooled["others"], t) - step_factor(*pooled["calibration"], t))
                               for t in knots)
        level = statistics.median(per[per.kernel.isin(calib)].sustained_slowdown)
        off = kern[kern.kernel.isin(others)].set_index("kernel").sustained_slowdown - level
        claims += [{"claim": "c", "what": f"the other kernels' pooled curve within {CURVE_TOL} of the calibration "
                    f"kernels' on this machine (mean |difference| to {CURVE_HORIZON_MS:g} ms)", "value": gap,
                    "limit": CURVE_TOL, "met": bool(gap <= CURVE_TOL), "naive_value": float("nan")},
                   {"claim": "d", "what": f"every other kernel's sustained slowdown within {SAME_MACHINE_TOL} of the "
                    f"calibration kernels' median on this machine ({level:.4f})", "value": float(off.abs().max()),
                    "limit": SAME_MACHINE_TOL, "met": bool((off.abs() <= SAME_MACHINE_TOL).all()),
                    "naive_value": float("nan")}]
    return {"kernels": kern, "relu": relu, "curves": pd.DataFrame(curves), "claims": pd.DataFrame(claims)}


LOW_MHZ = 1900.0
"""nvidia-smi samples below this SM clock mark a trajectory round's back-to-back run (the GPU holds ~1965 MHz through
the 2 s rests between rounds: it does not idle down that fast)."""


IDLE_MHZ = 345.0
"""An idle H200's SM clock (before the first kernel): not a round."""


def smi_rounds(smi: pd.DataFrame, kernels: list[str], rounds: int, start: str, min_samples: int = 4,
               max_gap: int = 10) -> pd.DataFrame:
    """A diagnostic beside the judgement, from the call's nvidia-smi samples (every 50 ms): after ``start``
    (``YYYY/MM/DD HH:MM:SS``, the trajectory's log line), each run of at least ``min_samples`` samples above
    :data:`IDLE_MHZ` and under :data:`LOW_MHZ` (samples at or above it for at most ``max_gap`` in a row do not end a run) is one round, in the order ``kernels`` ran (``rounds`` each); per kernel the median over its rounds
    of the round's median and lowest SM clock. ValueError if the count of such runs is not ``len(kernels) * rounds``."""
    cols = {c: c.strip() for c in smi.columns}
    d = smi.rename(columns=cols)
    d = d[d.timestamp >= start]
    mhz = d["clocks.current.sm [MHz]"].astype(str).str.replace(" MHz", "").astype(float).to_numpy()
    runs, cur, gap = [], [], 0
    for m in mhz:
        if IDLE_MHZ < m < LOW_MHZ:
            cur.append(m)
            gap = 0
        elif cur:
            gap += 1
            if gap > max_gap:  # a rest between rounds (40 samples at 50 ms), not a blip inside one
                if len(cur) >= min_samples:
                    runs.append(cur)
                cur, gap = [], 0
    if len(cur) >= min_samples:
        runs.append(cur)
    if len(runs) != len(kernels) * rounds:
        raise ValueError(f"clock_kernels: {len(runs)} runs of the clock under {LOW_MHZ:g} MHz after {start}, "
                         f"expected {len(kernels) * rounds} ({len(kernels)} kernels x {rounds} rounds)")
    rows = []
    for i, name in enumerate(kernels):
        mine = runs[i * rounds:(i + 1) * rounds]
        rows.append({"kernel": name, "rounds": rounds, "samples": sum(len(r) for r in mine),
                     "median_mhz": statistics.median(statistics.median(r) for r in mine),
                     "lowest_mhz": statistics.median(min(r) for r in mine)})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/clock_kernels.py", description=__doc__.splitlines()[0])
    ap.add_argument("--predict", metavar="NAME=MxNxK[+OP],...", help="write predicted.csv and curve.csv into --out")
    ap.add_argument("--spec", type=Path, metavar="DIR", help="print a registration's --kernels line")
    ap.add_argument("--trajectory", type=Path, help="a clock_trajectory.py table to judge (with --registered)")
    ap.add_argument("--registered", type=Path, metavar="DIR", help="a --predict folder")
    ap.add_argument("--smi", type=Path, help="with --trajectory: the call's nvidia-smi samples, for smi.csv (diagnostic)")
    ap.add_argument("--smi-start", default=None, metavar="'YYYY/MM/DD HH:MM:SS'", help="when the trajectory began")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--profile", default=PROFILE, metavar="NAME|PATH",
                    help=f"with --predict: the hardware profile that prices the kernels (default {PROFILE})")
    ap.add_argument("--before-reuse-adoption", action="store_true",
                    help=f"with --predict: {reuse_pricing.FLAG_HELP} (plans 29-31 were)")
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        if args.before_reuse_adoption and not args.predict:
            raise ValueError(f"{reuse_pricing.BEFORE_ADOPTION_FLAG} goes with --predict")
        if args.profile != PROFILE and not args.predict:
            raise ValueError("--profile goes with --predict (a registration holds what its profile gave)")
        if args.spec:
            if not (args.spec / "predicted.csv").is_file():
                raise ValueError(f"no {args.spec / 'predicted.csv'}")
            print(spec(pd.read_csv(args.spec / "predicted.csv")))
            return 0
        if args.out is None:
            raise ValueError("--out is needed with --predict or --trajectory")
        if args.predict:
            pricing = reuse_pricing.chosen(args.before_reuse_adoption)
            hw = reuse_pricing.priced(load_hardware(args.profile), pricing)
            reg = predicted(parse_kernels(args.predict), hw)
            curve = pd.DataFrame({"t_ms": [t / 1e6 for t in hw.clock_curve_ns], "factor": list(hw.clock_curve_factor)})
            args.out.mkdir(parents=True, exist_ok=True)
            reg.round(4).to_csv(args.out / "predicted.csv", index=False)
            curve.to_csv(args.out / "curve.csv", index=False)
            reuse_pricing.write(args.out, pricing)
            print(reg.round(4).to_string(index=False))
            return 0
        if not (args.trajectory and args.registered):
            raise ValueError("give --predict, --spec, or --trajectory with --registered")
        for p in (args.trajectory, args.registered / "predicted.csv", args.registered / "curve.csv"):
            if not p.is_file():
                raise ValueError(f"no {p}")
        reg = pd.read_csv(args.registered / "predicted.csv")
        traj = pd.read_csv(args.trajectory)
        tables = judge(traj, reg, pd.read_csv(args.registered / "curve.csv"))
        if args.smi:
            if not args.smi.is_file() or not args.smi_start:
                raise ValueError("--smi needs an existing file and --smi-start")
            tables["smi"] = smi_rounds(pd.read_csv(args.smi), list(reg.kernel), int(traj["round"].nunique()),
                                       args.smi_start)
    except ValueError as e:
        msg = str(e)
        print(msg if msg.startswith("clock_kernels:") else f"clock_kernels: {msg}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    pd.set_option("display.width", 200)
    for name, t in tables.items():
        if not t.empty:
            t.round(4).to_csv(args.out / f"{name}.csv", index=False)
            if name != "curves":
                print(t.round(4).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
