"""Registered plan 95: K apart from N -- does the first wave's excess follow W's size, the tiles a row, or K?

    python bench/plan95_k_apart.py --register [--out bench/predictions/reg95-k-apart]
    python bench/plan95_k_apart.py --judge RUN_DIR [--registered bench/predictions/reg95-k-apart]
                                   [--out bench/results/validation-registered95]
    # the measurement (one H100, one call): per (H, K) of :data:`HK`,
    # python -m ctahw.percta RUN_DIR/OUT_H<h>_K<k> --h <h> --k <k> --ms 16384 --variants <VARIANTS> --reps 5

Every producer-alone call so far ran K = N = H, so three things moved together: W's size (H x H x 2 bytes), the tiles
a row (n = H / 256) and K. Two first-wave excesses over the model's mainloop were read against them:

* the 1x1 row-order producer's (``cutlass_ctapipe``) first wave runs 7-12% over the 2x1 pairs' from 18-19 tiles a
  row on and not at all up to 15-16 (registered plans 91-94; the step's place differs by unit), which plans 92-94
  read as the L2-to-SM supply of the GEMM's tensor copies (the probe's rate steps from 12.8 to 8.2-8.9 TB/s at 13-14
  tiles a row) -- but W crosses 0.5-0.8 of the H100's 50 MB L2 at the same H;
* the 2x1 pairs' (``_w21``) first wave runs within 1.1% of the model's mainloop while W is under 70 MB and 2.1-9.0%
  over it from 75 MB on (``bench/posthoc_first_wave_hbm.py``, 31 cases, post-hoc), read as the first wave's cold HBM
  reads -- but n crosses 23-24 and K 5888-6144 at the same H.

Plan 95 runs both producers at M = 16384 with K != N (``ctahw.percta --k``), at six (n, K) (:data:`HK`) that put W at
25-26 MB (under both steps) or 100-101 MB (over both) at n = 12 (under both n steps) and n = 32 or 40 (over both), so
that each reading names its own set of cases with an excess (:data:`PATTERNS`): ``W`` the three at 100 MB, ``n`` the
four at 32 or 40 tiles a row, ``K`` the two at K >= 6144. An excess is the pairs' measured wave-0 mainloop over the
model's at least :data:`PAIRS_ON` (none: at most :data:`PAIRS_OFF`), and the 1x1's over the pairs' at least :data:`ROW_ON`
(none: at most :data:`ROW_OFF`); a case between them matches no reading.

Predictors of each producer's wave-0 median mainloop (:data:`PREDICTORS`, as plan 93's at this K): ``flat`` and
``model`` (the H100 mechanism profile's wave-0 tile time at spread 0, less ``tile_fixed_ns``) and ``by_n`` (``model``
floored at the wave's L2-to-SM reads at the tensor-copy probe's rate at its tiles a row, plan 93's
``rate_by_n``; the floor's bytes grow with K as the mainloop does, so it predicts the 1x1's excess by n alone).

Claims (:data:`CLAIMS`), the readings as registered: (a) the pairs' excess is W's, (b) the 1x1's excess over the
pairs is n's, (c) ``by_n`` nearer than ``model`` on the 1x1, (d) the model within 2% of the pairs at 25 MB (nothing
binds there: K != N alone does not move it). No adoption rule: what it finds says which term a model would need.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import registered_plan  # noqa: E402
from plan83_alone_edge import call_rows  # noqa: E402
from plan90_cluster_wave0 import first_waves  # noqa: E402
from plan93_tile_rate_domain import fixed_us, rate_by_n  # noqa: E402

M = 16384
ROW, W21 = "cutlass_ctapipe", "cutlass_ctapipe_w21"
VARIANTS = (ROW, W21)
RUNS = 5
HK = ((3072, 4096), (8192, 1536), (10240, 1280), (3072, 16384), (8192, 6144), (10240, 4864))
"""(H = N, K): n = 12, 32, 40 tiles a row with W at 25.2-26.2 MB, then n = 12, 32, 40 with W at 99.6-100.7 MB; K at
6144 or more only at (12, 16384) and (32, 6144). No producer-alone call ran K != N before."""
HS = tuple(h for h, _ in HK)
GPUS = {"H100": "h100-x8-mechanism"}
PREDICTORS = ("flat", "model", "by_n")
CLUSTER = {ROW: "1x1", W21: "2x1"}
PAIRS_ON, PAIRS_OFF = 2.5, 1.5
"""The pairs' wave-0 mainloop over the model's: an excess from +2.5%, none up to +1.5% (the square cases: within
1.1% under 70 MB, 2.1-9.0% over from 75 MB)."""
ROW_ON, ROW_OFF = 1.04, 1.02
"""The 1x1's wave 0 over the pairs': an excess from 1.04, none up to 1.02 (plans 92-94: 0.99-1.02 up to 15-16 tiles a
row, 1.07-1.12 from 19)."""
W_BIG_MB, K_LONG = 70.0, 6144
PATTERNS = {
    "W": lambda n, k, w_mb: w_mb >= W_BIG_MB,
    "n": lambda n, k, w_mb: n >= 24,
    "K": lambda n, k, w_mb: k >= K_LONG,
}
"""Each reading's cases with an excess: W at least 70 MB, at least 24 tiles a row, K at least 6144 (the square
cases' steps: 69-75 MB, 23-24 tiles a row, K 5888-6144 for the pairs; the 1x1's step at 15-19 tiles a row lies
under 24 too, and 0.5-0.8 of the L2 under 70 MB)."""
PAIRS_MODEL = 2.0
REGISTERED = ROOT / "bench/predictions/reg95-k-apart"
JudgeError = registered_plan.JudgeError
WHY = (f"plan 95's call runs python -m ctahw.percta RUN_DIR/OUT_H<h>_K<k> --h <h> --k <k> --ms {M} --variants "
       + ",".join(VARIANTS) + " per (H, K), and writes RUN_DIR/env.txt")
CLAIMS = {
    "a": "the pairs' excess over the model's mainloop is W's: at every (n, K) on or off as W's pattern says",
    "b": "the 1x1's excess over the pairs' wave 0 is n's: at every (n, K) on or off as n's pattern says",
    "c": "by_n's mean |error| of the 1x1 wave-0 mainloop over the six (n, K) under model's",
    "d": f"model's |error| of the pairs' wave-0 mainloop at most {PAIRS_MODEL:g}% at the three (n, K) of W at 25 MB",
}


def layer(h: int, k: int):
    from ctasim.spec import Layer  # noqa: PLC0415

    return Layer(M, k, h, 128, 256)


def mainloops(h: int, k: int, variant: str, hw) -> dict:
    """The three predictors' wave-0 mainloops (us) of ``variant``'s producer at (H, K) on profile ``hw``, and the
    floor's rate (GB/s, by n)."""
    from ctasim import costs  # noqa: PLC0415
    from percta_predict import SLOTS, order_of  # noqa: PLC0415
    from posthoc_cluster_mainloop import cluster_of  # noqa: PLC0415

    lay, fixed, rate = layer(h, k), fixed_us(hw), rate_by_n(h // 256)
    order = order_of(variant, lay.tiles_m, lay.tiles_n)
    t = costs.order_tile_times(lay, hw, 2, order, SLOTS, kernel="ctapipe", drift=0.0, ticket_spread=0.0)
    model = float(t[0]) / 1e3 - fixed
    floor = SLOTS * costs.l2_sm_reads(lay, 2, *cluster_of(variant)) / rate / 1e3
    return dict(flat=costs.gemm_tile_ns(lay, hw, 2, "ctapipe") / 1e3 - fixed, model=model, by_n=max(model, floor),
                rate=rate)


def register() -> pd.DataFrame:
    """Per GPU, (H, K), variant and predictor: the predicted wave-0 median mainloop (us) and the floor's rate (by_n's;
    0 for the others)."""
    from ctasim.spec import load_hardware  # noqa: PLC0415

    rows = []
    for gpu, profile in GPUS.items():
        hw = load_hardware(profile)
        for h, k in HK:
            for v in VARIANTS:
                p = mainloops(h, k, v, hw)
                base = dict(gpu=gpu, profile=profile, h=h, k=k, m=M, variant=v)
                rows += [dict(base, predictor=name, rate_gbps=p["rate"] if name == "by_n" else 0.0,
                              wave0_us=p[name]) for name in PREDICTORS]
    return pd.DataFrame(rows).round({"wave0_us": 4, "rate_gbps": 1})


def measured(run_dir: Path) -> pd.DataFrame:
    """Per (H, K) and variant: :func:`plan90_cluster_wave0.first_waves` at M = 16384 (wave-0 median mainloop, us)."""
    return first_waves(run_dir, HS, VARIANTS, M, RUNS, CLUSTER, WHY, ks=[k for _, k in HK])


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per (H, K), variant and predictor: the measured and predicted wave-0 mainloop and its error (%, predicted over
    measured), and the 1x1's over the pairs', measured."""
    gpu, p = call_rows(pred, meas)
    rows = []
    for (h, k), g in meas.groupby(["h", "k"], sort=False):
        m = g.set_index("variant")["wave0_us"]
        for name in PREDICTORS:
            q = p[(p["h"] == h) & (p["k"] == k) & (p["predictor"] == name)].set_index("variant")
            if sorted(q.index) != sorted(VARIANTS):
                raise JudgeError(f"the registration has no single {name} prediction of every producer at {gpu} "
                                 f"H = {h}, K = {k}")
            for v in VARIANTS:
                rows.append(dict(gpu=gpu, h=h, k=k, n=h // 256, w_mb=h * k * 2 / 1e6, variant=v, predictor=name,
                                 rate_gbps=float(q.loc[v, "rate_gbps"]), measured_us=float(m[v]),
                                 predicted_us=float(q.loc[v, "wave0_us"]),
                                 err_pct=float((q.loc[v, "wave0_us"] / m[v] - 1) * 100),
                                 row_over=float(m[ROW] / m[W21])))
    return pd.DataFrame(rows).round(4)


def excesses(c: pd.DataFrame) -> pd.DataFrame:
    """Per (n, K): the pairs' excess (their measured wave 0 over the model's mainloop, %) and the 1x1's over the pairs'
    (ratio), each read on (True), off (False) or neither (NaN) by :data:`PAIRS_ON` / :data:`ROW_ON`, and what each
    reading of :data:`PATTERNS` says of the case."""
    pairs = c[(c["variant"] == W21) & (c["predictor"] == "model")].set_index(["n", "k"])
    out = pairs[["w_mb"]].copy()
    out["pairs_over_pct"] = pairs["measured_us"] / pairs["predicted_us"] * 100 - 100
    out["row_over"] = pairs["row_over"]

    def on(x, hi, lo):
        return np.where(x >= hi, 1.0, np.where(x <= lo, 0.0, np.nan))

    out["pairs_on"] = on(out["pairs_over_pct"], PAIRS_ON, PAIRS_OFF)
    out["row_on"] = on(out["row_over"], ROW_ON, ROW_OFF)
    for name, rule in PATTERNS.items():
        out[f"says_{name}"] = [float(rule(n, k, w)) for (n, k), w in zip(out.index, out["w_mb"])]
    return out.reset_index()


def patterns(c: pd.DataFrame) -> pd.DataFrame:
    """Per producer (``pairs``: their excess over the model; ``row``: the 1x1's over the pairs') and reading: at how
    many of the six (n, K) the excess is on or off as the reading says (a case read neither matches none)."""
    e = excesses(c)
    return pd.DataFrame([dict(excess=who, reading=name, matched=int((e[f"{who}_on"] == e[f"says_{name}"]).sum()),
                              cases=len(e))
                         for who in ("pairs", "row") for name in PATTERNS])


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    e, pt = excesses(c), patterns(c).set_index(["excess", "reading"])
    one = c[c["variant"] == ROW]
    mae = {n: float(g["err_pct"].abs().mean()) for n, g in one.groupby("predictor")}
    small = c[(c["variant"] == W21) & (c["predictor"] == "model") & (c["w_mb"] < W_BIG_MB)].set_index(["n", "k"])
    fmt = lambda s, f: ", ".join(f"{n}/{k}: {x:{f}}" for (n, k), x in s.items())  # noqa: E731
    by = e.set_index(["n", "k"])

    def matched(who: str, reading: str) -> str:
        r = pt.loc[(who, reading)]
        others = ", ".join(f"{x} {int(pt.loc[(who, x), 'matched'])}" for x in PATTERNS if x != reading)
        return f"{int(r['matched'])} of {int(r['cases'])} (others: {others})"

    rows = [
        ("a", f"{matched('pairs', 'W')}; {fmt(by['pairs_over_pct'], '+.2f')}%",
         pt.loc[("pairs", "W"), "matched"] == len(e)),
        ("b", f"{matched('row', 'n')}; {fmt(by['row_over'], '.3f')}", pt.loc[("row", "n"), "matched"] == len(e)),
        ("c", f"{mae['by_n']:.2f}% against {mae['model']:.2f}% (flat {mae['flat']:.2f}%)", mae["by_n"] < mae["model"]),
        ("d", fmt(small["err_pct"], "+.2f"), bool((small["err_pct"].abs() <= PAIRS_MODEL).all())),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan95_k_apart", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered95", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "env.txt",
    tables=lambda c: {"excess": excesses(c), "patterns": patterns(c)})


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
