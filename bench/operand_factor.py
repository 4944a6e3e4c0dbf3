"""A GEMM on a GeLU's output against the same GEMM on random operands, at rest: does the factor follow K or the
launch's length? Registered plan 43's tables (no GPU).

    python bench/operand_factor.py --register NAME=MxNxK,... --out bench/predictions/reg43-gelu-k-shapes
    python bench/operand_factor.py --judge bench/results/validation-registered43 \\
        --registered bench/predictions/reg43-gelu-k-shapes --out bench/results/validation-registered43
    python bench/operand_factor.py --elapsed bench/results/hw/2026-12-03-registered36-1gpu/probe/launches.csv.gz \\
        --out bench/results/posthoc-operand-elapsed

Registered plans 35 and 36 timed the 16384 x 8192 x K GEMM on a GeLU's output and on random normal operands at
K = 4096-28672 (``bench/hw/power_probe.py``; rested = the median of a back-to-back round's launches 1-3,
``ctahw.calibrate.rested_ms``): the GeLU'd kernel took 0.923 of the random one's time at K = 4096 and 1.007 at
28672. At one M and N the K and the launch's length (1.3-10 ms) move together, so two readings fit them alike:

* **by K** (:func:`by_k`): the factor is the tile's, set by K (the length of a tile's mainloop); linear in log2 K
  between the measured K (:func:`table`: the mean over plans 35 and 36 at each K), the end values outside;
* **by launch** (:func:`by_launch`): the factor is the launch's, set by its length; linear in the log of the
  random-operand launch's rested time between the measured launches, the end values outside. A new shape's launch
  time is estimated as its waves (ceil(tiles / 132)) times the measured time a wave at its K (linear in K between the
  measured K): an estimate, good to a few percent, which moves this reading's factor by much less.

``--register`` writes ``factors.csv`` (per pair: shape, both readings' factors, the launch estimate, the naive
factor 1 that the model uses today) into a registration folder and prints the ``bench/power_cycles.py --constant``
arguments that claim the by-K factor; ``--judge`` reads a judged probe's ``kernels.csv`` (``power_cycles.py
--probe``) and writes ``pairs.csv`` (measured factor, each reading's error) and ``factor_claims.csv`` (:data:`CLAIMS`;
beside ``power_cycles.py``'s own ``claims.csv`` in the same folder).
``--elapsed`` (post-hoc, on a probe's back-to-back launches): the GeLU'd over the random kernel's median launch per
bin of elapsed time since the round's start, so that the pairs are compared at the same time since rest.

Left out: why the factor moves (a limiter NVML does not report slows dense operands at rest, registered plans 32-34;
what sets its dependence on K is not modelled here); the sustained regime; operands other than a GeLU's output.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from hw.clock_trajectory import parse_kernels  # noqa: E402
from power_model import write_tables  # noqa: E402

SOURCES = (("reg36-gelu-k", "validation-registered36"), ("reg35-activation-operands", "validation-registered35"))
"""The registered measurements the table is built from: (registration under bench/predictions, judged tables under
bench/results). Only pairs of one shape, random normal against ``gelu_input``, are read."""
OP = "gelu_input"
SLOTS = 132
"""CTA slots of an H200 for the 128x256 tile (one CTA per SM): a launch's waves are ceil(tiles / SLOTS)."""
TILE = (128, 256)
TOL_PCT = 1.5
"""Claim (a): each pair's factor within this of the by-K reading (plans 35 and 36 at K = 8192: 0.966 and 0.970)."""
CLAIMS = {
    "a": f"every pair's measured factor within {TOL_PCT}% of the by-K reading",
    "b": "by K: MAPE of the factor at most half that of the naive factor 1",
    "c": "every separating pair (the readings more than 2 points apart) nearer the by-K reading than the by-launch one",
}


def _pairs_of(registration: pd.DataFrame, judged: pd.DataFrame) -> pd.DataFrame:
    """Per (m, n, k) with a random-operand and a GeLU'd kernel: both rested times and their ratio."""
    t = judged.merge(registration[["kernel", "m", "n", "k", "op"]], on="kernel")
    t["op"] = t["op"].fillna("")
    plain = t[t["op"] == ""].set_index(["m", "n", "k"])["rested_ms"]
    gelu = t[t["op"] == OP].set_index(["m", "n", "k"])["rested_ms"]
    both = plain.index.intersection(gelu.index)
    out = pd.DataFrame({"random_ms": plain[both], "gelu_ms": gelu[both]}).reset_index()
    out["factor"] = out["gelu_ms"] / out["random_ms"]
    return out


def table(root: Path = ROOT) -> pd.DataFrame:
    """The measured factors against K (16384 x 8192 x K): per K the mean factor and mean random-operand rested launch
    over :data:`SOURCES`, with how many measurements each holds. ValueError if a source is not in this checkout."""
    rows = []
    for reg, judged in SOURCES:
        r, j = root / "bench" / "predictions" / reg / "kernels.csv", root / "bench" / "results" / judged / "kernels.csv"
        if not (r.is_file() and j.is_file()):
            raise ValueError(f"no {r if not r.is_file() else j}")
        rows.append(_pairs_of(pd.read_csv(r), pd.read_csv(j)).assign(source=reg))
    t = pd.concat(rows)
    return (t.groupby("k").agg(factor=("factor", "mean"), random_ms=("random_ms", "mean"), n=("factor", "size"))
            .reset_index().sort_values("k", ignore_index=True))


def _interp(x: float, xs, ys) -> float:
    return float(np.interp(x, np.asarray(xs, float), np.asarray(ys, float)))  # the end values outside


def by_k(tab: pd.DataFrame, k: int) -> float:
    """The by-K reading: linear in log2 K between the table's K."""
    return _interp(math.log2(k), np.log2(tab["k"]), tab["factor"])


def waves(m: int, n: int) -> int:
    return math.ceil((m // TILE[0]) * (n // TILE[1]) / SLOTS)


def launch_ms(tab: pd.DataFrame, m: int, n: int, k: int) -> float:
    """A random-operand launch's rested time, estimated: its waves times the table's time a wave at its K (the table's
    launches are 16384 x 8192: ``waves(16384, 8192)`` waves), linear in K between the table's K."""
    per_wave = tab["random_ms"] / waves(16384, 8192)
    return waves(m, n) * _interp(k, tab["k"], per_wave)


def by_launch(tab: pd.DataFrame, ms: float) -> float:
    """The by-launch reading: linear in log(launch time) between the table's random-operand launches."""
    return _interp(math.log(ms), np.log(tab["random_ms"]), tab["factor"])


def register(kernels: dict[str, tuple], tab: pd.DataFrame) -> pd.DataFrame:
    """factors.csv of a registration: one row per pair of ``kernels`` (NAME random, NAME-gelu on a GeLU's output)."""
    rows = []
    for name, (m, n, k, ops) in kernels.items():
        if ops:
            continue
        other = kernels.get(f"{name}-gelu")
        if other is None or other[:3] != (m, n, k) or other[3] != (OP,):
            continue
        ms = launch_ms(tab, m, n, k)
        rows.append({"pair": name, "m": m, "n": n, "k": k, "waves": waves(m, n), "by_k": round(by_k(tab, k), 4),
                     "launch_ms_est": round(ms, 3), "by_launch": round(by_launch(tab, ms), 4), "naive": 1.0})
    if not rows:
        raise ValueError(f"no pair NAME=MxNxK, NAME-gelu=MxNxK+{OP} in the kernels")
    return pd.DataFrame(rows)


def judge(factors: pd.DataFrame, judged: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """pairs.csv and factor_claims.csv: each registered pair's measured factor (GeLU'd over random rested launch, from a
    judged probe's kernels.csv) against the two readings and the naive 1."""
    rested = judged.set_index("kernel")["rested_ms"]
    missing = [name for p in factors["pair"] for name in (p, f"{p}-gelu") if name not in rested.index]
    if missing:
        raise ValueError(f"the judged kernels lack {', '.join(missing)}")
    p = factors.copy()
    p["measured"] = [rested[f"{x}-gelu"] / rested[x] for x in p["pair"]]
    for col in ("by_k", "by_launch", "naive"):
        p[f"{col}_err_pct"] = 100 * (p[col] / p["measured"] - 1)
    p["separating"] = (p["by_k"] - p["by_launch"]).abs() > 0.02
    p["nearer"] = np.where(p["by_k_err_pct"].abs() <= p["by_launch_err_pct"].abs(), "by_k", "by_launch")
    mape = {c: float(p[f"{c}_err_pct"].abs().mean()) for c in ("by_k", "by_launch", "naive")}
    worst = float(p.loc[p["by_k_err_pct"].abs().idxmax(), "by_k_err_pct"])
    sep = p[p["separating"]]
    claims = pd.DataFrame([
        {"claim": "a", "rule": CLAIMS["a"], "value": f"worst {worst:+.2f}%",
         "met": bool(p["by_k_err_pct"].abs().max() <= TOL_PCT)},
        {"claim": "b", "rule": CLAIMS["b"],
         "value": f"by K {mape['by_k']:.2f}%, naive {mape['naive']:.2f}% (by launch {mape['by_launch']:.2f}%)",
         "met": bool(mape["by_k"] <= mape["naive"] / 2)},
        {"claim": "c", "rule": CLAIMS["c"],
         "value": f"{int((sep['nearer'] == 'by_k').sum())} of {len(sep)}",
         "met": bool(len(sep) > 0 and (sep["nearer"] == "by_k").all())},
    ])
    return {"pairs": p, "factor_claims": claims}


ELAPSED_BINS = (0, 2, 4, 6, 10, 15, 20, 30, 45, 60, 100, 150, 200, 300, 450)
"""Bins of elapsed time since a round's start, ms."""


def elapsed(launches: pd.DataFrame) -> pd.DataFrame:
    """Per bin of elapsed time (a launch's middle since its round's start; launch 0 dropped) and pair (NAME,
    NAME-gelu): the median GeLU'd launch over the median random one. Bins where either has no launch are empty."""
    d = launches[launches["i"] >= 1].copy()
    d["bin"] = pd.cut(d["t_start_ms"] + d["dur_ms"] / 2, list(ELAPSED_BINS))
    med = d.groupby(["kernel", "bin"], observed=False)["dur_ms"].median().unstack("kernel")
    pairs = sorted(k[: -len("-gelu")] for k in med.columns if k.endswith("-gelu") and k[: -len("-gelu")] in med.columns)
    out = pd.DataFrame({p: med[f"{p}-gelu"] / med[p] for p in pairs})
    out.index = [f"{b.left:g}-{b.right:g}" for b in out.index]
    return out.rename_axis("elapsed_ms").reset_index()


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/operand_factor.py", description=__doc__.splitlines()[0])
    ap.add_argument("--register", metavar="NAME=MxNxK[+OP],...")
    ap.add_argument("--judge", type=Path, metavar="DIR", help="a power_cycles.py --probe output (its kernels.csv)")
    ap.add_argument("--registered", type=Path, metavar="DIR")
    ap.add_argument("--elapsed", type=Path, metavar="CSV", help="a probe's launches.csv(.gz)")
    ap.add_argument("--out", type=Path, required=True)
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        if sum(x is not None for x in (args.register, args.judge, args.elapsed)) != 1:
            raise ValueError("give one of --register, --judge (with --registered) or --elapsed")
        if args.register:
            tab = table()
            tables = {"factors": register(parse_kernels(args.register), tab), "table": tab}
        elif args.judge:
            if args.registered is None:
                raise ValueError("--judge needs --registered DIR")
            for f in (args.registered / "factors.csv", args.judge / "kernels.csv"):
                if not f.is_file():
                    raise ValueError(f"no {f}")
            tables = judge(pd.read_csv(args.registered / "factors.csv"), pd.read_csv(args.judge / "kernels.csv"))
        else:
            if not args.elapsed.is_file():
                raise ValueError(f"no {args.elapsed}")
            tables = {"elapsed": elapsed(pd.read_csv(args.elapsed))}
    except ValueError as e:
        print(f"operand_factor: {e}", file=sys.stderr)
        return 2
    write_tables(args.out, tables)
    if args.register:
        f = tables["factors"]
        print("power_cycles.py --constant arguments (the by-K reading):")
        print(" ".join(f'--constant "{r.pair}-gelu/{r.pair}:rested_ms={r.by_k:.4f}+-{TOL_PCT}"' for r in f.itertuples()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
