"""Post-hoc: why registered plan 74's H100 blocks were priced slow: the burst clock curve or the exposed HBM? (no GPU)

    python bench/posthoc_h100_blocks.py [--out bench/results/posthoc-h100-blocks]

Registered plan 74 timed four models' MLP blocks, plan 18's GeLU chains and the reference GEMM on two H100s
(:data:`CALLS`); ``h100-x1-datasheet`` priced all 20 cases slow on both, +0.9 to +5.3% on the first (the Llama-3.1-70B
block the more the longer it ran, +2.1% at 15 ms, +5.3% at 73 ms), +2.6 to +6.9% on the second, a faster machine. Two of
the profile's fields are copied or scaled from the H200 and were read on H100s before: the burst regime's clock curve
(the H200's, registered plan 71: H100s sustain a lower slowdown than it, 1.10-1.14 against 1.17), and the exposed share
of a wave's HBM time charged at the H100's datasheet rate (plan 64: compute-bound GEMMs priced 1.2-6.0% slow; plan 65's
twin at the H200's rate nearer on sequential GEMMs). Here the plan's six experiments are priced by the model with each
changed (:data:`VARIANTS`): ``model`` (the profile as registered), ``clock off`` (no clock curve, no step: every tile at
the rested clock), ``own69 clock`` (registered plan 69's H100's measured clock regime, as plan 71's twin), ``exposed at
H200 rate`` (``l2_hbm_exposed_gbps`` the H200's measured ``hbm_gbps``, as ``h100-x1-datasheet-latency`` but with the
absolute drift law), both of the last two changes (``both``: clock off and the exposed share at the H200's rate), and
``exposed, tile law`` (the exposed share at the H200's rate on ``h100-x1-datasheet-tile``: whether plan 73's drift
adoption still holds once the exposed share is not overcharged).

Writes ``cases.csv`` (per call, experiment, case, strategy and variant: measured, predicted, error) and ``summary.csv``
(per call, variant and part -- blocks, chains, reference, all: cases, MAPE, mean and worst error), and ``orders.csv``:
the model and ``exposed at H200 rate`` on every earlier committed one-GPU H100 call (plans 64-69: the chain kernel's
orders and sequential; ``posthoc_reuse_law.measurements`` through its H100 default), MAPE and mean error per class of
strategy (``posthoc_h100_exposed.call_cases``): what the change does where the chain kernel's orders lose reuse. Every
figure is post-hoc: the variants are read on the call they are set against. Left out: the sustained regime, other H100s.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan74_h100_blocks as p74  # noqa: E402
import posthoc_h100_exposed as pe  # noqa: E402
import posthoc_reuse_law as prl  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.profiles import H100_BEFORE_DRIFT, before_h100_exposed, before_h100_passes  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402

PROFILE = "h100-x1-datasheet"
CALLS = (ROOT / "bench/results/hw-h100/2026-12-06-registered74-1gpu",
         ROOT / "bench/results/hw-h100/2026-12-06-registered74-1gpu-run2")
"""Plan 74's two H100 calls (GPU-9013f759, GPU-c2b0e321)."""
OWN69 = ROOT / "bench/results/hw-h100/2026-12-06-registered69-1gpu/h100-x1-own.toml"
"""Registered plan 69's H100's own profile (``ctahw calibrate``): its measured clock regime."""
CLOCK = ("clock_onset_ns", "clock_sustained_slowdown", "clock_curve_ns", "clock_curve_factor")


def clock_off(hw):
    """``hw`` with no clock regime: every tile at the rested clock."""
    return dataclasses.replace(hw, clock_onset_ns=math.inf, clock_sustained_slowdown=1.0, clock_curve_ns=(),
                               clock_curve_factor=())


def exposed_h200(hw):
    """``hw`` with the exposed HBM share charged at the H200's measured rate (plan 65's twin's one change)."""
    return dataclasses.replace(hw, l2_hbm_exposed_gbps=load_hardware("h200-x1-calibrated").hbm_gbps)


def variants() -> dict:
    """Label -> the profile as :data:`VARIANTS` names it."""
    # the profile as plan 74 registered it: before registered plan 76's adoption of the exposed rate (2026-12-06)
    hw, own = before_h100_exposed(before_h100_passes(load_hardware(PROFILE))), load_hardware(OWN69)
    return {"model": hw, "clock off": clock_off(hw),
            "own69 clock": dataclasses.replace(hw, **{f: getattr(own, f) for f in CLOCK}),
            "exposed at H200 rate": exposed_h200(hw), "both": exposed_h200(clock_off(hw)),
            "exposed, tile law": exposed_h200(load_hardware(H100_BEFORE_DRIFT))}


VARIANTS = ("model", "clock off", "own69 clock", "exposed at H200 rate", "both", "exposed, tile law")


def part(exp: str) -> str:
    """The part of plan 74 ``exp`` belongs to: blocks, chains or reference."""
    return "blocks" if exp in p74.BLOCKS else "chains" if exp == p74.CHAIN else "reference"


def cases(calls=CALLS) -> pd.DataFrame:
    pred = pe.model_rows(variants(), p74.EXPERIMENTS).rename(columns={"profile": "variant"})
    c = pe.call_cases(pred, list(calls), p74.EXPERIMENTS)
    c["part"] = c["experiment"].map(part)
    return c[["call", "experiment", "case", "strategy", "part", "variant", "measured_ms", "predicted_ms", "error_pct"]]


def summary(c: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (call, v), d in c.groupby(["call", "variant"], sort=False):
        for name, g in [*d.groupby("part", sort=False), ("all", d)]:
            a = g["error_pct"].abs()
            rows.append(dict(call=call, variant=v, part=name, cases=len(g), mape_pct=a.mean(),
                             mean_pct=g["error_pct"].mean(), worst_pct=g.loc[a.idxmax(), "error_pct"]))
    return pd.DataFrame(rows)


ORDER_VARIANTS = ("model", "exposed at H200 rate")
"""The variants ``orders.csv`` prices the earlier H100 calls with."""


def orders() -> pd.DataFrame:
    """Per variant (``model``, ``exposed at H200 rate``) and class of strategy: cases, MAPE and mean error (%) over
    every earlier committed H100 call (plans 64-69) of every experiment it ran."""
    root, gpu = prl.GPUS["H100"][0], "H100"
    found = prl.measurements(root, gpu, prl.THROUGH[gpu])
    calls = sorted({f.parent for f, _ in found})  # each run's folder holds EXP/results.csv
    exps = sorted({e for _, e in found})
    v = variants()
    c = pe.call_cases(pe.model_rows({k: v[k] for k in ORDER_VARIANTS}, exps), calls, exps)
    rows = []
    groups = [*c.groupby(["profile", "class"]), *[((k, "all"), d) for k, d in c.groupby("profile")]]
    for (variant, cls), g in groups:
        rows.append(dict(variant=variant, cls=cls, cases=len(g), mape_pct=g["error_pct"].abs().mean(),
                         mean_pct=g["error_pct"].mean()))
    return pd.DataFrame(rows).rename(columns={"cls": "class"})


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_h100_blocks.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-h100-blocks")
    args = parse_outputs(ap, argv, folders=("--out",))
    c = cases()
    s = summary(c)
    args.out.mkdir(parents=True, exist_ok=True)
    c.to_csv(args.out / "cases.csv", index=False, float_format="%.4f")
    s.to_csv(args.out / "summary.csv", index=False, float_format="%.4f")
    o = orders()
    o.to_csv(args.out / "orders.csv", index=False, float_format="%.4f")
    with pd.option_context("display.width", 200):
        print(s.pivot_table(index=["call", "part"], columns="variant", values="mape_pct", sort=False).round(2))
        print(o.pivot_table(index="class", columns="variant", values="mape_pct").round(2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
