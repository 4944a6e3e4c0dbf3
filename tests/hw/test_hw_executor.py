"""GPU tests of the plan executor (ctahw.executor) on one GPU: sequential, micro-batching and TP plans of MLP-style
workloads issued with CUDA streams and events, checked against the fp32 workload with poisoned outputs. A machine
with one GPU runs the multi-GPU plans with every plan GPU on device 0 (peer copies to itself, the all-reduce as a
local sum), which exercises the executor's streams, events and slices; NCCL and real peer links need two GPUs
(marked `hw`)."""

from __future__ import annotations

import dataclasses
import math
import os

import pytest

pytestmark = pytest.mark.hw


@pytest.fixture(scope="module")
def gpu(cp):
    from ctahw.baselines import Timed
    from ctahw.gemm import CutlassGemm

    return cp, Timed([0], gate_ms=0.1), CutlassGemm(0)


def _wl(*layers):
    from ctasim.spec import Workload

    return Workload(name="t", layers=tuple(layers))


def _layers():
    from ctasim.spec import Layer

    M = 1024
    return {
        "mlp": _wl(Layer(m=M, k=1024, n=3584, epilogue=("gelu",)),
                   Layer(m=M, k=3584, n=1024, epilogue=("residual",), rowwise="layernorm")),
        "swiglu": _wl(Layer(m=M, k=1024, n=4096, epilogue=("swiglu",), epilogue_fused=False),
                      Layer(m=M, k=2048, n=1024, epilogue=("residual",), rowwise="rmsnorm")),
        # activations on the column-parallel (even) layers, residuals on the row-parallel ones: what TP allows
        "deep": _wl(*(Layer(m=M, k=1024, n=1024, epilogue=("relu",) if i % 2 == 0 else ("residual",),
                            rowwise="rmsnorm" if i == 1 else "") for i in range(4))),
        # wide enough for TP8 (N and K in 8 slices of whole 256-wide tiles)
        "wide": _wl(Layer(m=M, k=2048, n=2048, epilogue=("relu",)),
                    Layer(m=M, k=2048, n=2048, epilogue=("residual",), rowwise="rmsnorm")),
    }


def _plans(kind, wl):
    from ctasim.spec import Strategy, load_hardware
    from ctasim.strategies import build_plans

    s = {"sequential": Strategy(kind="sequential"), "microbatch": Strategy(kind="microbatch", chunks=(1, 2, 8)),
         "tp": Strategy(kind="tp", tp_degree=2), "tp8": Strategy(kind="tp", tp_degree=8)}[kind]
    gpus = max(2, len(wl.layers), s.tp_degree)
    return build_plans(s, wl, dataclasses.replace(load_hardware("h200-x2"), gpus=gpus), gpus, "t")


def _run(gpu, plan, wl):
    """(relative error of every output, the executor): one poisoned run on device 0."""
    from ctahw.device import output_error, poison, random_bf16
    from ctahw.executor import CudaMachine, Inputs, PlanExecutor, reference_bf16

    cp, timed, gemm = gpu
    rng = cp.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    layers = wl.layers
    x = random_bf16((layers[0].m, layers[0].k), cp, rng)
    ws = [random_bf16((l.n, l.k), cp, rng, 1 / math.sqrt(l.k)) for l in layers]
    machine = CudaMachine(cp, [0] * plan.gpus, [gemm] * plan.gpus)
    ex = PlanExecutor(plan, wl, machine, Inputs(x, ws))
    for b in ex.written():
        poison(b)

    def enqueue(t):
        machine.bind(t)
        return [(machine.stream(s), 0) for s in ex.issue()]

    timed.run(enqueue)
    ref = reference_bf16(cp, x, ws, layers)
    return {g: output_error(cp, out, ref, 0) for g, out in ex.outputs().items()}, ex


@pytest.mark.parametrize("kind", ["sequential", "microbatch", "tp", "tp8"])
@pytest.mark.parametrize("name", ["mlp", "swiglu", "deep", "wide"])
def test_plan_executor_matches_the_fp32_workload(gpu, kind, name):
    from ctahw.device import REL_TOL_BF16

    wl = _layers()[name]
    if kind.startswith("tp") and name == "swiglu":
        pytest.skip("TP fuses epilogues only (ctasim refuses an unfused one)")
    if kind == "tp8" and name != "wide":
        pytest.skip("TP8 splits N into 8 slices of whole 256-wide tiles: the wide workload's")
    for plan in _plans(kind, wl):
        errs, _ = _run(gpu, plan, wl)
        assert errs and all(e <= REL_TOL_BF16 for e in errs.values()), (kind, name, plan.params, errs)


def test_a_plan_that_computes_the_wrong_rows_fails_the_check(gpu):
    """The check sees a wrong plan: micro-batching's second chunk of layer 0 computing the first chunk's rows again
    leaves rows of the output poisoned (inf) or wrong."""
    wl = _layers()["mlp"]
    plan = next(p for p in _plans("microbatch", wl) if p.params["chunks"] == 2)
    k = [o for o in plan.kernels() if o.layer == 0][1]
    bad = dataclasses.replace(plan, ops=[dataclasses.replace(o, region=dataclasses.replace(o.region, row0=0))
                                         if o.id == k.id else o for o in plan.ops])
    errs, _ = _run(gpu, bad, wl)
    assert all(e > 0.1 for e in errs.values())
