"""Registered plan 71: does an H100 keep the clock regime the H100 profile copies from an H200, or the one an H100
measured? (no GPU)

    python bench/plan71_h100_clock.py --judge RUN --out bench/results/validation-registered71 [--repeat]

``h100-x1-datasheet`` (and ``h100-x8-mechanism``, derived from it and from ``h200-x8-mechanism``) copies the H200's
clock regime: ``clock_sustained_slowdown`` 1.1683 and its clock curve. One H100 measured its own when registered plan 69
calibrated it (``bench/results/hw-h100/2026-12-06-registered69-1gpu/h100-x1-own.toml``: 1.1341, its own curve; post-hoc
for this plan, which was registered after it). The registration (``bench/predictions/reg71-h100-clock``) is
``bench/clock_kernels.py --predict`` of registered plan 29's six kernels under each: ``datasheet/`` and ``own69/``. The
call times the six kernels' clock trajectories on another H100 (``RUN/trajectory.csv``, ``RUN/env.txt``).

``--judge`` writes, under ``--out``, ``datasheet/`` and ``own69/`` (``clock_kernels.judge``'s tables: plan 29's claims
for each profile, reported) and ``claims.csv``: on the calibration kernels (``ctahw.calibrate.CLOCK_KERNELS``, the two
the profile's figures come from), their median sustained slowdown ``S`` and mean |curve difference| ``C`` --

* (a) the datasheet profile: ``|S - 1.1683| <= 0.03`` (reported);
* (b) the H100 twin: ``|S - 1.1341| <= 0.03``;
* (c) the twin nearer than the datasheet profile on ``S``;
* (d) the twin's curve nearer than the datasheet profile's on ``C``.

Adoption rule (``rule_holds`` in ``claims.csv``: (b), (c) and (d) all met on this call; ``adopt``: the rule holds and
the call is the one it was decided on, not a ``--repeat`` on another machine): where (b), (c) and (d) hold on plan 71's
first call, ``h100-x1-datasheet`` takes plan 69's H100's measured clock regime (``clock_onset_ns``,
``clock_sustained_slowdown``, ``clock_curve_ns``, ``clock_curve_factor``): two H100s then agree on it. The naive line
(no clock: 1.0) is reported beside each. Left out: the other kernels' draw (plan 29's claims, reported per profile), the
ReLU'd A's factor (reported there), and the burst regime's boost.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import clock_kernels  # noqa: E402
from ctahw.calibrate import CLOCK_KERNELS  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

REGISTRATION = ROOT / "bench/predictions/reg71-h100-clock"
SOURCES = ("datasheet", "own69")
"""The registration's two profiles: ``h100-x1-datasheet`` as committed and plan 69's H100's own (the twin)."""
TOL = 0.03
"""Claims (a) and (b): registered plan 29's tolerance on a sustained slowdown (``clock_kernels.SUSTAINED_TOL``)."""


def judge(traj: pd.DataFrame, registration: Path = REGISTRATION, repeat: bool = False) -> dict[str, pd.DataFrame]:
    """Per source, ``clock_kernels.judge``'s tables (keys ``<source>/<table>``), and ``claims`` (``repeat``: a call
    after the one the rule was decided on, whose ``adopt`` is False whatever it shows)."""
    out, level, curve, regd = {}, {}, {}, {}
    for src in SOURCES:
        reg = pd.read_csv(registration / src / "predicted.csv")
        tables = clock_kernels.judge(traj, reg, pd.read_csv(registration / src / "curve.csv"))
        out |= {f"{src}/{name}": t for name, t in tables.items()}
        k = tables["kernels"].set_index("kernel").loc[list(CLOCK_KERNELS)]
        level[src] = statistics.median(k.sustained_slowdown)
        curve[src] = float(k.curve_mean_abs_diff.mean())
        regd[src] = float(reg.model_sustained_slowdown.iloc[0])
    s = level["datasheet"]  # the measured level: the same trajectory under either source
    err = {src: abs(s - regd[src]) for src in SOURCES}
    claims = [
        {"claim": "a",
         "what": f"datasheet: calibration kernels' sustained slowdown within {TOL} of {regd['datasheet']}",
         "value": err["datasheet"], "limit": TOL, "met": err["datasheet"] <= TOL, "naive_value": abs(s - 1.0)},
        {"claim": "b", "what": f"twin (own69): calibration kernels' sustained slowdown within {TOL} of {regd['own69']}",
         "value": err["own69"], "limit": TOL, "met": err["own69"] <= TOL, "naive_value": abs(s - 1.0)},
        {"claim": "c", "what": "twin nearer than datasheet on the calibration kernels' sustained slowdown",
         "value": err["own69"], "limit": err["datasheet"], "met": err["own69"] < err["datasheet"],
         "naive_value": abs(s - 1.0)},
        {"claim": "d", "what": "twin's clock curve nearer than datasheet's (calibration kernels' mean |difference|)",
         "value": curve["own69"], "limit": curve["datasheet"], "met": curve["own69"] < curve["datasheet"],
         "naive_value": float("nan")},
    ]
    c = pd.DataFrame(claims)
    c["measured_sustained"] = s
    c["rule_holds"] = bool(c.set_index("claim").loc[["b", "c", "d"], "met"].all())
    c["adopt"] = c["rule_holds"] & (not repeat)
    out["claims"] = c
    return out


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/plan71_h100_clock.py", description=__doc__.splitlines()[0])
    ap.add_argument("--judge", type=Path, required=True, metavar="RUN",
                    help="the call's folder (trajectory.csv, env.txt)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeat", action="store_true",
                    help="a repeat on another machine: reported, the rule was decided by the first call (adopt False)")
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        for name in ("trajectory.csv", "env.txt"):
            if not (args.judge / name).is_file():
                raise ValueError(f"no {args.judge / name}")
        if "H100" not in (args.judge / "env.txt").read_text():
            raise ValueError(f"{args.judge / 'env.txt'} names no H100: plan 71 is judged on an H100's call")
        tables = judge(pd.read_csv(args.judge / "trajectory.csv"), repeat=args.repeat)
    except ValueError as e:
        msg = str(e).removeprefix("clock_kernels: ")
        print(f"plan71_h100_clock: {msg}", file=sys.stderr)
        return 2
    for name, t in tables.items():
        path = args.out / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        t.round(4).to_csv(path, index=False)
    pd.set_option("display.width", 200)
    print(tables["claims"].round(4).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
