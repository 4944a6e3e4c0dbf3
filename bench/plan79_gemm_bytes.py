"""Registered plan 79: the plain CUTLASS GEMM's DRAM bytes per tile order and the drift's re-reads at long K, counted

    python bench/plan79_gemm_bytes.py --register [--out bench/predictions/reg79-gemm-bytes]
    python bench/plan79_gemm_bytes.py --judge RUN_DIR [--registered bench/predictions/reg79-gemm-bytes]
                                      [--out bench/results/validation-registered79]
    # the measurement (one GPU, Nsight Compute):
    #   python -m ctahw.counters RUN_DIR bench/predictions/reg79-gemm-bytes/predicted.csv --probe gemm

Registered plan 78 counted the chain kernel's bytes: groups of 8 read what ``ctasim.l2`` says, the orders that lose
reuse more. The sequential strategy's GEMMs, the project's most used path, run CUTLASS's persistent kernel, whose CTAs
keep a fixed share of the tiles and drift apart (``cta_drift``): the model charges the later sharers of a panel a
re-read once the drift parts them (``drift_hbm``), and how that charge grows with K is what registered plans 45, 46,
72 and 73 judged by times only (the H100 profile takes the drift as the same time a round at every K, the H200's as
the same share of a tile). Plan 79 counts them: the GEMM (``ctahw.gemm.CutlassGemm``) at four shapes (:data:`SHAPES`:
the reference, a wide gate-and-up, two long-K downs) in four tile orders (:data:`ORDERS`: CUTLASS's default, along M
and along N with swizzle 8, along M with swizzle 1), 16 launches, each once under ncu (``ctahw.counters``,
``bench/hw/gemm_bytes_probe.py``). Per launch and GPU profile (:data:`plan78_hbm_bytes.PROFILES`) the registration
holds ``model`` (``ctasim.costs.cutlass_traffic``: misses across waves, the drift's re-reads, stores), ``lockstep``
(the same with no drift: what the drift adds) and ``compulsory`` (A and W once: the naive predictor). Claims
(:data:`CLAIMS`): (a), (b) the model's bytes read against the counted and the compulsory; (c) the order effect;
(d) the drift's re-reads at long K; (e) the writes. No adoption rule: nothing here changes a profile. Left out: the
fused-epilogue GEMMs, the kernel's time (one cold launch), cuBLAS.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan78_hbm_bytes as p78  # noqa: E402
import registered_plan  # noqa: E402

SHAPES = ((16384, 8192, 8192), (16384, 28672, 8192), (16384, 8192, 28672), (8192, 8192, 45056))
"""(M, N, K): the reference GEMM, a wide gate-and-up GEMM, two long-K down GEMMs (a layer's weights 0.27-1.5 GB)."""
ORDERS = (("heuristic", 1), ("along_m", 8), ("along_n", 8), ("along_m", 1))
"""(raster, swizzle): CUTLASS's default, along M and along N in swizzles of 8, along M unswizzled."""
REFERENCE_ORDER = ("along_m", 8)
CASES = tuple((m, n, k, r, s) for m, n, k in SHAPES for r, s in ORDERS)
LONG_K = 28672
REGISTERED = ROOT / "bench/predictions/reg79-gemm-bytes"
JudgeError = registered_plan.JudgeError
MAPE = 10.0
RATIO_TOL, RATIO_SHARE = 0.10, 0.75
DRIFT_SHARE = 6
WHY = "plan 79's call runs `python -m ctahw.counters RUN_DIR predicted.csv --probe gemm` on one GPU"
CLAIMS = {
    "a": f"model: MAPE of the DRAM bytes read <= {MAPE:g}% over the 16 launches (the call's GPU's profile)",
    "b": "model: that MAPE at most half the compulsory predictor's (A and W read once)",
    "c": f"the order effect: of the 12 ratios of an order's bytes read to along M / swizzle 8's at the same shape, the "
         f"model's within {RATIO_TOL:.0%} of the counted in at least {RATIO_SHARE:.0%}",
    "d": f"the drift's re-reads: at the two long-K shapes (K >= {LONG_K}), the model's bytes nearer the counted than "
         f"its lockstep twin's (no drift) in at least {DRIFT_SHARE} of the 8 launches",
    "e": f"every launch's DRAM bytes written between the model's stores less the L2's bytes and {p78.WRITE_OVER:g} "
         "times the stores",
}


def layer(m: int, n: int, k: int):
    """The GEMM's layer (128 x 256 tiles, bf16, no epilogue), from the chain workload's layer."""
    from ctasim.spec import load_workload  # noqa: PLC0415

    return dataclasses.replace(load_workload("chain2-16384").layers[0], m=m, n=n, k=k)


def register() -> pd.DataFrame:
    """Per GPU profile and launch: the model's DRAM bytes read and written, its lockstep twin's bytes read, the
    compulsory bytes read, and the profile's L2 bytes."""
    from ctasim import costs  # noqa: PLC0415
    from ctasim.spec import load_hardware  # noqa: PLC0415

    rows = []
    for gpu, name in p78.PROFILES.items():
        hw = load_hardware(name)
        lockstep = dataclasses.replace(hw, kernel_configs=tuple(dataclasses.replace(c, cta_drift=0.0)
                                                                for c in hw.kernel_configs))
        for m, n, k, raster, swizzle in CASES:
            lay = layer(m, n, k)
            t = costs.cutlass_traffic(lay, hw, p78.ELEM, raster, swizzle)
            t0 = costs.cutlass_traffic(lay, lockstep, p78.ELEM, raster, swizzle)
            rows.append(dict(gpu=gpu, profile=name, m=m, n=n, k=k, raster=raster, swizzle=swizzle,
                             model_read_gb=p78.read_gb(t), lockstep_read_gb=p78.read_gb(t0),
                             model_write_gb=float(t.store.sum()) / 1e9,
                             compulsory_read_gb=(m * k + n * k) * p78.ELEM / 1e9, l2_gb=hw.l2_bytes / 1e9))
    return pd.DataFrame(rows)


KEYS = ["m", "n", "k", "raster", "swizzle"]


def measured(run_dir: Path) -> pd.DataFrame:
    """Per launch the counted bytes (GB) and duration, and the call's GPU (``gpu``)."""
    return p78.counted(run_dir, KEYS, why=WHY)[["gpu", *KEYS, "read_gb", "write_gb", "duration_ns"]]


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per registered launch of the call's GPU: counted and predicted bytes and errors (%). :class:`JudgeError` where
    the registration lacks the GPU's rows or a launch was not counted."""
    c = p78.gpu_rows(pred, meas, KEYS, lambda r: f"{r.m}x{r.n}x{r.k} {r.raster}/{r.swizzle}")
    for src in ("model", "lockstep", "compulsory"):
        c[f"{src}_err_pct"] = (c[f"{src}_read_gb"] / c["read_gb"] - 1) * 100
    c["read_over_model"] = c["read_gb"] / c["model_read_gb"]
    return c


def order_ratios(c: pd.DataFrame) -> pd.DataFrame:
    """Per shape and order other than :data:`REFERENCE_ORDER`: its bytes read over the reference order's."""
    is_reference = (c["raster"] == REFERENCE_ORDER[0]) & (c["swizzle"] == REFERENCE_ORDER[1])
    return p78.ratios_to(c, is_reference, ["m", "n", "k"], KEYS)


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    shared = p78.bytes_claims(c, len(CASES), MAPE, "launches")
    r = order_ratios(c)
    near = int((r["off"].abs() <= RATIO_TOL).sum())
    long_k = c[c["k"] >= LONG_K]
    drift_wins = int((long_k["model_err_pct"].abs() < long_k["lockstep_err_pct"].abs()).sum())
    rows = [
        shared["a"], shared["b"],
        ("c", f"{near} of {len(r)} within {RATIO_TOL:.0%}", len(r) == 12 and near >= RATIO_SHARE * len(r)),
        ("d", f"{drift_wins} of {len(long_k)} (model MAPE {long_k['model_err_pct'].abs().mean():.2f}%, lockstep "
              f"{long_k['lockstep_err_pct'].abs().mean():.2f}%)", len(long_k) == 8 and drift_wins >= DRIFT_SHARE),
        shared["e"],
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan79_gemm_bytes", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered79", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "counters.csv",
    tables=lambda c: {"orders": order_ratios(c)})


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
