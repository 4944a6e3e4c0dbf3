"""GPU test of the CTA-pipelined kernels with fused epilogue ops (marked `hw`; needs one sm_90 GPU, skipped with the
reason elsewhere): a transformer MLP block, X[M, K0] -> GeLU(X @ W0^T) [M, N0] -> (. @ W1^T + X) [M, N1], the producer
(layer 0) with GeLU fused into its epilogue and the consumer (layer 1) with the residual add fused (C = X).

Both kernels of the variant's 2-GPU ctasim plan and its pipe run on GPU 0, each on a stream of its own, as
bench/hw/ctapipe_onegpu.py runs them (its ``OneGpuRunner``): the consumer (64 tiles: 64 CTAs, or 32 clusters of 2)
is resident while the producer's 224 tiles run on the other SMs, so every step of the protocol happens, on local
memory. Checked: the output against the fp32 workload with bf16 rounding between layers (ctahw.executor.
reference_output, as ctahw.experiment runs planned rows) on fresh inputs with poisoned outputs, a few runs back to
back (epochs) with exact counters and queue indices, and, for a traced twin, the trace against ctasim's invariants.
Variants: ``cutlass_ctapipe`` (1x1 clusters, queue pops) and ``cutlass_ctapipe_g21`` (2x1 clusters on both sides;
its two kernels have one cluster shape, which ran side by side on one H200, unlike c21's 2x1 / 1x2). Not timed.

    python -m pytest -m hw -q tests/hw/test_hw_ctapipe_epilogue.py
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.hw

M, K0, N0, N1 = 1024, 2048, 7168, 2048
EPOCHS = 4
"""Runs per runner: one on poisoned outputs, then back to back without resets (each after the previous finished)."""


def _record(kind: str, res: dict) -> None:
    """Append a test's measured dict to $CTAHW_HW_RESULTS (JSON lines), if set (as tests/hw/test_hw_ctapipe.py)."""
    path = os.environ.get("CTAHW_HW_RESULTS")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"test": kind, **res}, default=str) + "\n")


def _one_gpu_runner():
    """bench/hw/ctapipe_onegpu.py's OneGpuRunner (bench/ is not a package: loaded from its file)."""
    path = Path(__file__).resolve().parents[2] / "bench" / "hw" / "ctapipe_onegpu.py"
    spec = importlib.util.spec_from_file_location("ctapipe_onegpu", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.OneGpuRunner


def _workload(act: str):
    from ctasim.spec import Layer, Workload

    return Workload("mlp-epilogue", "bf16", (Layer(m=M, k=K0, n=N0, epilogue=(act,)),
                                             Layer(m=M, k=N0, n=N1, epilogue=("residual",))))


def _run(cp, variant: str, act: str = "gelu") -> dict:
    from ctahw.device import REL_TOL_BF16, output_error, poison, random_bf16
    from ctahw.executor import reference_bf16
    from ctahw.pipelined import TRACE_TOL_NS, other_violations
    from ctasim.invariants import find_violations
    from ctasim.spec import Strategy, load_hardware
    from ctasim.strategies import build_plans
    from ctasim.variants import VARIANTS, clusters_of

    wl = _workload(act)
    plan = build_plans(Strategy(kind="ctapipe", variant=variant), wl, load_hardware("h200-x2-calibrated"), 2,
                       "mlp")[0]
    v = VARIANTS[variant]
    rng = cp.random.default_rng(int.from_bytes(os.urandom(4), "little"))  # fresh inputs each run
    with cp.cuda.Device(0):
        x = random_bf16((M, K0), cp, rng)
        ws = [random_bf16((l.n, l.k), cp, rng, 1 / math.sqrt(l.k)) for l in wl.layers]
        ref = reference_bf16(cp, x, ws, wl.layers)
    r = _one_gpu_runner()(plan, M, [K0, N0, N1], x, ws, trace=v.trace, clusters=clusters_of(plan, v),
                          epilogues={i: l.epilogue for i, l in enumerate(wl.layers)}, residual=x)
    res = {"variant": variant, "act": act, "m": M, "k0": K0, "n0": N0, "n1": N1,
           "kernels": [r.describe(k) for k in sorted(r.kernels, key=lambda k: k.layer)]}
    try:
        for buf in [r.out] + [b for b in r.inputs.values() if b is not x]:
            poison(buf)
        r.sync()
        r.launch()
        r.sync()
        r.check_errors()
        res["rel_err_first"] = output_error(cp, r.out, ref)
        if v.trace:
            trace = r.read_trace({0: 0.0}, {"variant": variant, "m": M})
            res["violations"] = other_violations(find_violations(trace, plan, TRACE_TOL_NS))
        for _ in range(EPOCHS - 1):
            r.launch()
            r.sync()  # the next run's producer overwrites the consumer's input: runs in order
        r.check_errors()
        res["rel_err_last"] = output_error(cp, r.out, ref)
        res["counts_exact"] = all(
            bool((r.pobj[p.id].arrays["counters"].get() == EPOCHS * p.threshold).all())
            and int(r.pobj[p.id].arrays["tail"].get()[0]) == EPOCHS * p.capacity
            and int(r.pobj[p.id].arrays["head"].get()[0]) == EPOCHS * p.capacity for p in r.pipes)
    finally:
        r.sync()  # never free buffers a kernel in flight still writes
    _record("ctapipe_epilogue", res)
    assert res["rel_err_first"] <= REL_TOL_BF16, res
    assert res["rel_err_last"] <= REL_TOL_BF16, res
    assert res["counts_exact"], res
    assert not res.get("violations"), res
    return res


@pytest.mark.parametrize("variant", ["cutlass_ctapipe", "cutlass_ctapipe_trace", "cutlass_ctapipe_g21",
                                     "cutlass_ctapipe_g21_trace"])
def test_mlp_block_gelu_then_residual_matches_the_fp32_workload(cp, variant):
    res = _run(cp, variant)
    prod, cons = res["kernels"]
    assert "epilogue=gelu" in prod and "epilogue=residual" in cons


@pytest.mark.parametrize("act", ["silu", "relu"])
def test_the_other_activations_fuse_into_the_producer(cp, act):
    res = _run(cp, "cutlass_ctapipe", act)
    assert f"epilogue={act}" in res["kernels"][0]


def test_variant_b_refuses_epilogue_ops_before_touching_the_gpu(cp):
    from ctasim.spec import Strategy, load_hardware
    from ctasim.strategies import build_plans

    plan = build_plans(Strategy(kind="ctapipe", variant="cutlass_ctapipe"), _workload("gelu"),
                       load_hardware("h200-x2-calibrated"), 2, "mlp")[0]
    with pytest.raises(ValueError, match=r"variant \(b\)"):
        _one_gpu_runner()(plan, M, [K0, N0, N1], None, [None, None], persistent="ring", epilogues={0: ("gelu",)})
