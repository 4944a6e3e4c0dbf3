"""Post-hoc: the chain kernel against sequential under the profile (its reuse law pinned), on every measured case.

    python bench/posthoc_chain_vs_sequential.py [--out bench/results/posthoc-chain-vs-sequential]

Whether the chain kernel (groups of 8, ``intragpu``) beats sequential on one GPU is the decision the one-GPU plans
put to the model, and registered plans 54 and 59 found it priced within a point of the measured ratio on average
only narrowly (1.24 and 1.06 points, the chain kernel too fast). The registered record judges each plan's profile of
its day; this reads every committed measurement of the two strategies in one run (``bench/results/hw/*/EXP/
results.csv`` of the chain-kernel experiments, :data:`EXPERIMENTS`), simulates both under the experiment's profile as
it was before registered plan 67's adoption on an H200, 2026-12-06 (``posthoc_order_mainloop.simulated`` with
``ctasim.profiles.before_h200_reuse``: a panel's reuse across waves an LRU of the whole L2; the rest as it is now), and
sets per case the ratio error: (predicted chain / predicted sequential) over (measured chain / measured sequential),
less 1, in percent (points of the ratio). Writes ``cases.csv`` (one row per run and case, with each strategy's
makespan error) and ``summary.csv`` (over all, by H and by M range).

Left out: the other orders, the rings and the shared GPU, the 4-layer chains' deeper cases where sequential was not
run. Every case was seen before the profile took its present form (the survival law since plan 53, its gap spread and
touched bytes since plan 58): the figures are post-hoc.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import posthoc_order_mainloop as pom  # noqa: E402
import registered_plan  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.profiles import before_h200_reuse  # noqa: E402

EXPERIMENTS = re.compile(r"reg(9|10|49|5\d)-chain-(?!rate-)|reg58-gap-law-|reg59-adopted-")
"""The chain-kernel experiment folders read (registered plans 9, 10, 49-59): those with sequential and groups of 8;
not the one-layer microbenchmarks (``reg51-chain-rate-*``, ``reg53-chain-rate-*``) the tickets mainloop factor was
measured on."""
CHAIN, SEQ = pom.REFERENCE, "sequential"
HW = ROOT / "bench/results/hw"
OUT = ROOT / "bench/results/posthoc-chain-vs-sequential"
M_BINS = [0, 4096, 8192, 12288, 1 << 20]


def h_of(experiment: str) -> int:
    """The chain's width H from the experiment's name (``-h<H>``; 8192 where it names none: plans 9 and 10's
    reference shapes)."""
    m = re.search(r"-h(\d+)", experiment)
    return int(m.group(1)) if m else 8192


def cases(root: Path = HW) -> pd.DataFrame:
    """Per run and case measured under both strategies: the measured and modelled makespans and the errors."""
    rows = []
    for res in sorted(root.glob("*/reg*/results.csv")):
        exp = res.parent.name
        if not EXPERIMENTS.match(exp):
            continue
        r = registered_plan.timed_makespans(res.parent.parent, exp, "a committed run")
        both = [c for c in dict.fromkeys(r.index.get_level_values(0)) if (c, SEQ) in r.index and (c, CHAIN) in r.index]
        if not both:
            continue
        # a record made before plan 67's adoption on an H200, 2026-12-06
        sim = pom.simulated(exp, [(c, s) for c in both for s in (SEQ, CHAIN)], profile=before_h200_reuse)
        for c in both:
            ms, mc = float(r[(c, SEQ)]), float(r[(c, CHAIN)])
            ps, pc = sim[(c, SEQ)].makespan_ns / 1e6, sim[(c, CHAIN)].makespan_ns / 1e6
            rows.append(dict(run=res.parent.parent.name, experiment=exp, h=h_of(exp), case=c,
                             m=int(c.split("=")[1]), seq_ms=ms, chain_ms=mc, seq_model_ms=ps, chain_model_ms=pc,
                             seq_err_pct=(ps / ms - 1) * 100, chain_err_pct=(pc / mc - 1) * 100,
                             ratio_err_pts=((pc / ps) / (mc / ms) - 1) * 100,
                             faster_right=(pc < ps) == (mc < ms)))
    return pd.DataFrame(rows)


def summary(c: pd.DataFrame) -> pd.DataFrame:
    """Over all cases, by H and by M range: cases, the ratio error's mean, mean |.|, share within a point, extremes,
    and the faster of the two right."""
    def one(scope, key, d):
        e = d["ratio_err_pts"]
        return dict(scope=scope, key=key, cases=len(d), mean_pts=e.mean(), mean_abs_pts=e.abs().mean(),
                    within_1_pct=(e.abs() <= 1).mean() * 100, min_pts=e.min(), max_pts=e.max(),
                    faster_right=int(d["faster_right"].sum()))
    rows = [one("all", "", c)]
    rows += [one("h", str(h), d) for h, d in c.groupby("h")]
    bins = pd.cut(c["m"], M_BINS)
    rows += [one("m", str(b), d) for b, d in c.groupby(bins, observed=True)]
    return pd.DataFrame(rows).round(3)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_chain_vs_sequential.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = parse_outputs(ap, argv, folders=("--out",))
    c = cases().round(4)
    if c.empty:
        print(f"posthoc_chain_vs_sequential: no run under {HW} holds both strategies", file=sys.stderr)
        return 2
    s = summary(c)
    args.out.mkdir(parents=True, exist_ok=True)
    c.to_csv(args.out / "cases.csv", index=False)
    s.to_csv(args.out / "summary.csv", index=False)
    with pd.option_context("display.width", 200):
        print(s.to_string(index=False))
    a = s.iloc[0]
    rho = np.corrcoef(c["h"].rank(), c["ratio_err_pts"].rank())[0, 1]
    print(f"\nchain / sequential under the profile (LRU reuse): {int(a.cases)} cases, mean {a.mean_pts:+.2f} points, "
          f"mean |.| {a.mean_abs_pts:.2f}, {a.within_1_pct:.0f}% within a point, the faster right in "
          f"{int(a.faster_right)}; rank correlation with H {rho:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
