"""Registered plan 67: one L2 capacity, the measured survival curve, for a GEMM panel's reuse across waves (no GPU)

    python bench/plan67_l2_reuse.py --register [--out bench/predictions/reg67-l2-reuse]
    python bench/plan67_l2_reuse.py --judge RUN_DIR [--registered bench/predictions/reg67-l2-reuse]
                                    [--out bench/results/validation-registered67]

The memory hierarchy (``ctasim.l2``) prices a panel's reuse across waves as an LRU of the whole L2: a k-slice hits
while its reuse distance fits ``l2_bytes``. The L2 survival probe (``ctahw.l2probe``, an H200 and two H100s) measured
what the L2 keeps of a line after ``B`` bytes came in: all of it to ~0.4 of ``l2_bytes``, half at ~0.6, nothing from
~0.75, an edge the ``"survival"`` ticket law already prices a chain kernel's later sharer by. The twins
``h200-x1-calibrated-reuse`` and ``h100-x1-datasheet-reuse`` (``ctasim.profiles``: ``l2_reuse_law = "survival"``,
``ctasim.l2.survival_mean``) price the reuse across waves by that curve too, nothing fitted (a ticket grid's later
sharers keep the curve; the CTAs' drift re-reads still count against the whole L2). Where a GEMM's reuse distances
fall between 0.4 and 1.0 of the L2 the two disagree, by up to 7% on one order; on the committed plain GEMM runs their
errors differ by more than 0.5 points on 25 of 2,160 (at most 0.83: the tile-order probes, the block and long-K GEMMs
have distances past the L2 or well inside it), and the twin's ``l2_sm_tflops`` and ``l2_hbm_exposed`` refit to the
profile's (6.72, 0.19) on the calibration split (post-hoc, :data:`SEEN`). The committed chain-kernel runs at H = 5120
(a layer's weights 0.83 of an H200's L2, registered plan 49) are where they part most, by up to 3.9 points of makespan,
the twin the nearer (read after the registration).

Plan 67 times GEMMs where they disagree (:data:`TESTS`, M x N x K: N = 4608-7168 at K = 3072-4096, weights 0.45-0.7
of an H200's L2) and where they agree (:data:`CONTROLS`, the reference GEMM among them), at CUTLASS's 8 orders
(``bench/hw/gemm_shape_probe.py``), on an H200 or an H100: the registration holds both GPUs' predictions, the judge
reads the GPU from the call's ``env.txt``. Sources (:data:`SOURCES`): ``model`` (the GPU's profile: h200-x1-calibrated
or h100-x1-datasheet), ``twin`` (its ``-reuse`` twin), ``naive`` (the FLOPs line fitted on H200 GEMMs, order-blind).
Claims on the test shapes' unpadded runs (:data:`CLAIMS`): (a) the twin's MAPE below the model's; (b) the order
effect, each run's error less its shape's mean error (machine speed and the shape's bias cancel), the twin's mean
|.| below the model's; (c) the errors over each source's mean ratio on the control shapes' unpadded runs (the
machine's speed), the twin's MAPE below the model's; (d) the twin's (c) MAPE <= 3% and worst <= 6%; (e) the twin's
MAPE at most half the naive line's; (f) on every test shape the twin's pick measures within 2% of the best unpadded
run. Adoption rule (:data:`ADOPT`): where (a), (b) and (c) all hold, the profile of the GPU measured takes
``l2_reuse_law = "survival"`` (h200-x1-calibrated, or h100-x1-datasheet's derivation); the other GPU's waits for its
own call. Left out: padded grids (the model prices them far too fast, docs/model.md), cuBLAS (timed, not judged),
the sustained regime.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import registered_plan  # noqa: E402
from plan64_h100_datasheet import as_registered, gpu_name  # noqa: E402

TESTS = ((8192, 4608, 3072), (8192, 5632, 3072), (8192, 6144, 3072), (8192, 7168, 3072), (16384, 7168, 3072),
         (4096, 4608, 4096), (4096, 5120, 4096), (16384, 5120, 4096))
"""M x N x K where the twins and the profiles disagree: on the unpadded orders the twin is 0.01-6.6% slower on an H200
and 0-7.4% on an H100, by order; at least 1.5% on some order of every shape on both GPUs."""
CONTROLS = ((16384, 8192, 8192), (8192, 6144, 8192), (8192, 7168, 6144), (8192, 5632, 5120))
"""M x N x K where they agree within 0.06% on every unpadded order: the reference GEMM and three at K = 5120-8192."""
GPUS = {"H200": ("h200-x1-calibrated", "h200-x1-calibrated-reuse"),
        "H100": ("h100-x1-datasheet", "h100-x1-datasheet-reuse")}
"""The GPU -> (the model's profile, its twin)."""
GPU_NAMES = {"NVIDIA H200": "H200", "NVIDIA H100 80GB HBM3": "H100"}
"""The nvidia-smi names of the GPUs the profiles are of (the SXM parts: the lent kinds), -> a key of :data:`GPUS`; an
H100 PCIe or NVL, an H200 NVL or a GH200 is another machine."""
SOURCES = ("model", "twin", "naive")
ORDERS = tuple(f"{r}/swizzle{s}" for r in ("along_m", "along_n") for s in (1, 2, 4, 8))
"""CUTLASS's orders the probe times (``ctahw.gemm.SCHEDULES`` less the heuristic raster, which resolves to one)."""
REGISTERED = ROOT / "bench/predictions/reg67-l2-reuse"
SEEN = "bench/results/hw (every gemm_shapes.csv and tile_orders.csv: 2,160 CUTLASS runs)"
"""What had been priced under both laws before the registration (post-hoc; none of :data:`TESTS` among them)."""
MAPE, WORST, PICK = 3.0, 6.0, 2.0
WHY = "plan 67's call runs bench/hw/gemm_shape_probe.py into RUN_DIR/gemm_shapes.csv"
JudgeError = registered_plan.JudgeError
CLAIMS = {
    "a": "twin: makespan MAPE below the model's over the test shapes' unpadded runs",
    "b": "twin: the order effect (each run's error less its shape's mean error) nearer than the model's, mean |.| "
         "over the test shapes' unpadded runs",
    "c": "twin: MAPE below the model's over the test shapes' unpadded runs, each source's errors taken over its mean "
         "ratio on the control shapes' unpadded runs (the machine's speed)",
    "d": f"twin: (c)'s MAPE <= {MAPE:g}% and worst |error| <= {WORST:g}%",
    "e": "twin: MAPE at most half the naive FLOPs line's over the test shapes' unpadded runs",
    "f": f"twin: on every test shape its pick (the fastest unpadded order it predicts) measures within {PICK:g}% of "
         "the shape's fastest unpadded run",
}
ADOPT = ("a", "b", "c")
"""The adoption rule: the measured GPU's profile takes ``l2_reuse_law = "survival"`` where these all hold."""


def register() -> pd.DataFrame:
    """Per GPU, shape, order and source (:data:`SOURCES`): the predicted time (ms), ``padded`` (CUTLASS's grid has
    padding slots) and ``kind`` (test or control); the model's and twin's times from ``ctasim.costs.cutlass_waves``
    (``block_gemm_orders.predicted``), the naive line's order-blind."""
    import block_gemm_orders as bgo  # noqa: PLC0415
    from ctasim.predict import Naive  # noqa: PLC0415
    from ctasim.spec import load_hardware  # noqa: PLC0415

    naive, parts = Naive.fit(bgo.NAIVE_FROM), []
    for gpu, (model, twin) in GPUS.items():
        hws = {"model": as_registered(model), "twin": load_hardware(twin)}  # the model as registered: the LRU
        d = bgo.predicted(list(TESTS + CONTROLS), hws, naive)
        for source in SOURCES:
            parts.append(pd.DataFrame({"gpu": gpu, "m": d["m"], "n": d["n"], "k": d["k"], "order": d["order"],
                                       "padded": d["padded"], "source": source,
                                       "predicted_ms": d[f"{source}_ms"]}))
    out = pd.concat(parts, ignore_index=True)
    tests = set(TESTS)
    out.insert(5, "kind", ["test" if s in tests else "control" for s in zip(out["m"], out["n"], out["k"])])
    return out


def call_gpu(run_dir: Path, why: str = WHY, plan: str = "plan 67 predicts") -> str:
    """The call's GPU (a key of :data:`GPUS`) from ``run_dir/env.txt`` (``plan64_h100_datasheet.gpu_name``);
    :class:`JudgeError` where missing (``why``: what should have written it) or another (``plan``: the judging plan's
    words for what it takes)."""
    name = gpu_name(run_dir, why)
    if name not in GPU_NAMES:
        raise JudgeError(f"{run_dir / 'env.txt'}: the call ran on an {name}; {plan} an {' or an '.join(GPU_NAMES)}")
    return GPU_NAMES[name]


def measured(run_dir: Path) -> pd.DataFrame:
    """The CUTLASS medians (gpu, m, n, k, order, measured_ms) of every registered shape and order;
    :class:`JudgeError` where the table, a shape or an order is missing, a median is not a positive number, a run is
    there twice, or the GPU is not one plan 67 predicts."""
    gpu = call_gpu(run_dir)
    table = run_dir / "gemm_shapes.csv"
    if not table.is_file():
        raise JudgeError(f"no {table} ({WHY})")
    try:
        r = pd.read_csv(table)
        r = r[r["backend"] == "cutlass"][["m", "n", "k", "order", "median_ms"]]
    except (OSError, KeyError, ValueError) as e:
        raise JudgeError(f"{table}: not a gemm_shape_probe.py table ({e})") from None
    labels = [f"{m}x{n}x{k} {o}" for m, n, k, o in zip(r["m"], r["n"], r["k"], r["order"])]
    r = r.assign(median_ms=registered_plan.positive_times(r["median_ms"], labels, table, "median_ms").to_numpy())
    have = set(zip(r["m"], r["n"], r["k"], r["order"]))
    for shape in TESTS + CONTROLS:
        for order in ORDERS:
            if (*shape, order) not in have:
                raise JudgeError(f"{table}: no CUTLASS run of {'x'.join(map(str, shape))} {order}")
    return r.rename(columns={"median_ms": "measured_ms"}).assign(gpu=gpu)


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per shape, order and source of the measured GPU: measured and predicted times, the error (%), and the error over
    the source's mean ratio on the control shapes' unpadded runs (``normalised_pct``)."""
    key = ["m", "n", "k", "order"]
    gpu = meas["gpu"].iloc[0]
    cols = {"gpu", "kind", *key, "padded", "source", "predicted_ms"}
    if not cols <= set(pred.columns) or gpu not in set(pred["gpu"]):
        raise JudgeError(f"the registration is not plan 67's (its predicted.csv has no {gpu} rows with {sorted(cols)})")
    c = pred[pred["gpu"] == gpu].merge(meas.drop(columns="gpu"), on=key, how="inner")
    c["error_pct"] = (c["predicted_ms"] / c["measured_ms"] - 1) * 100
    ratio = c["predicted_ms"] / c["measured_ms"]
    ctrl = c[(c["kind"] == "control") & ~c["padded"]].assign(ratio=ratio).groupby("source")["ratio"].mean()
    c["normalised_pct"] = (ratio / c["source"].map(ctrl) - 1) * 100
    return c[["gpu", "kind", *key, "padded", "source", "measured_ms", "predicted_ms", "error_pct", "normalised_pct"]]


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    t = c[(c["kind"] == "test") & ~c["padded"]]
    by = {s: t[t["source"] == s] for s in SOURCES}
    mape = {s: float(d["error_pct"].abs().mean()) for s, d in by.items()}
    norm = {s: float(d["normalised_pct"].abs().mean()) for s, d in by.items()}
    effect = {s: float((d["error_pct"] - d.groupby(["m", "n", "k"])["error_pct"].transform("mean")).abs().mean())
              for s, d in by.items()}
    tw = by["twin"]
    worst = float(tw.loc[tw["normalised_pct"].abs().idxmax(), "normalised_pct"]) if len(tw) else float("nan")
    lost = []
    for _, g in tw.groupby(["m", "n", "k"]):
        pick = g.loc[g["predicted_ms"].idxmin()]
        lost.append((pick["measured_ms"] / g["measured_ms"].min() - 1) * 100)
    ok = len(tw) > 0
    rows = [
        ("a", f"{mape['twin']:.2f} against the model's {mape['model']:.2f}% over {len(tw)} runs",
         ok and mape["twin"] < mape["model"]),
        ("b", f"{effect['twin']:.2f} against the model's {effect['model']:.2f} points",
         ok and effect["twin"] < effect["model"]),
        ("c", f"{norm['twin']:.2f} against the model's {norm['model']:.2f}%", ok and norm["twin"] < norm["model"]),
        ("d", f"MAPE {norm['twin']:.2f}%, worst {worst:.2f}%", ok and norm["twin"] <= MAPE and abs(worst) <= WORST),
        ("e", f"{mape['twin']:.2f} against the naive line's {mape['naive']:.2f}%",
         ok and mape["twin"] <= mape["naive"] / 2),
        ("f", f"worst pick {max(lost, default=float('nan')):.2f}% over the best ({len(lost)} shapes)",
         ok and max(lost) <= PICK),
    ]
    gpu = c["gpu"].iloc[0] if len(c) else "?"
    rule = (f"{GPUS.get(gpu, ('the profile',))[0]} takes l2_reuse_law = 'survival' where "
            f"{', '.join(ADOPT[:-1])} and {ADOPT[-1]} are all met")
    return registered_plan.with_adoption(registered_plan.claims_table(rows, CLAIMS), ADOPT, rule, provenance)


def tables(c: pd.DataFrame) -> dict:
    """``by-shape.csv``: per shape and source, the mean error and mean |error| over the unpadded runs."""
    u = c[~c["padded"]]
    g = u.groupby(["kind", "m", "n", "k", "source"], sort=False)
    return {"by-shape": pd.DataFrame({"runs": g.size(), "mean_error_pct": g["error_pct"].mean(),
                                      "mape_pct": g["error_pct"].apply(lambda s: s.abs().mean()),
                                      "normalised_mape_pct": g["normalised_pct"].apply(lambda s: s.abs().mean())}
                                     ).reset_index()}


PLAN = registered_plan.Plan(
    name="plan67_l2_reuse", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered67", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "gemm_shapes.csv", tables=tables)


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
