"""ctahw.pipelined on the CPU: what the GPU tests of tests/hw/test_hw_ctapipe.py expect of the plans."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from ctahw import pipelined, runner

HW_TESTS = Path(__file__).resolve().parents[1] / "hw" / "test_hw_ctapipe.py"


def _hw_module():
    spec = importlib.util.spec_from_file_location("_test_hw_ctapipe", HW_TESTS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_gpu_tests_cover_every_variant():
    assert set(_hw_module().ALL_VARIANTS) == set(pipelined.VARIANTS)


def test_every_variant_plan_passes_its_cluster_check():
    base = pipelined.chain_plan(1024)
    for name, v in pipelined.VARIANTS.items():
        plan = pipelined.variant_plan(base, v)
        kernels, pipes = runner.plan_arrays(plan)
        cl = pipelined.clusters_of(plan, v)
        for k in kernels:
            runner.check_cluster(k, pipes, cl[k.op])


def test_a_stalled_row_block_leaves_one_row_of_consumer_tiles_unpushed():
    """The stall test's expected waiter count: producer row-block 3 at M=1024 completes one counter's worth of
    consumer tiles (a row of 32 tiles), whose slots are never published: 32 CTAs (1x1) or 16 clusters (1x2)."""
    plan = pipelined.chain_plan(1024)
    kernels, pipes = runner.plan_arrays(plan)
    prod, cons = sorted(kernels, key=lambda k: k.layer)
    p = pipes[prod.outbound]
    assert p.capacity == cons.tiles == 8 * 32
    row3 = [t for t in range(prod.tiles) if t // prod.tiles_n == 3]
    deps = set()
    for t in row3:
        deps |= set(p.prod_dep_idx[p.prod_dep_ptr[t]:p.prod_dep_ptr[t + 1]].tolist())
    unpushed = set()
    for d in deps:
        unpushed |= set(p.dep_tile_idx[p.dep_tile_ptr[d]:p.dep_tile_ptr[d + 1]].tolist())
    assert len(unpushed) == cons.tiles_n == 32
    # every other consumer tile depends on no counter of row-block 3
    others = np.setdiff1d(np.arange(cons.tiles), sorted(unpushed))
    assert len(others) == cons.tiles - 32


def test_persistent_variants_use_the_persistent_library_and_pop_only_with_clusters_1x1():
    base = pipelined.chain_plan(1024)
    names = [n for n, v in pipelined.VARIANTS.items() if v.persistent]
    assert {"cutlass_ctapipe_p", "cutlass_ctapipe_pr", "cutlass_ctapipe_pr21"} <= set(names)
    for name in names:
        v = pipelined.VARIANTS[name]
        plan = pipelined.variant_plan(base, v)
        kernels, _ = runner.plan_arrays(plan)
        cl = pipelined.clusters_of(plan, v)
        for k in kernels:
            runner.check_persistent(k, cl[k.op])
            assert runner.library_of(cl[k.op], True) == runner.PERSISTENT_LIBRARY
            code = runner.persistent_code(cl[k.op], v.persistent)
            assert code == runner.PERSISTENT_CLUSTERS[cl[k.op]] + runner.PERSISTENT_DESIGNS[v.persistent]
    kernels, _ = runner.plan_arrays(base)
    cons = max(kernels, key=lambda k: k.layer)
    assert cons.mode == runner.MODE_QUEUE
    import pytest

    with pytest.raises(ValueError, match="clusters 1x1 only"):
        runner.check_persistent(cons, "2x1")
    with pytest.raises(ValueError, match="clusters 1x1 only"):
        runner.persistent_code("2x1", "smem")
    assert runner.persistent_code("2x1", "ring") == 5
    with pytest.raises(ValueError, match="no cluster"):
        runner.library_of("1x2", True)
    assert runner.library_of("1x2") == "ctapipe_sm90_bf16_cluster"


def test_a_three_layer_chain_has_a_middle_kernel_that_consumes_and_produces():
    """L layers on L GPUs: the middle GPU's kernel pops (or waits) on its inbound pipe and signals its outbound
    one; its descriptor carries both sides (no 3-GPU machine has run it: this is the CPU half)."""
    ptrs = {n: 1000 + i for i, n in enumerate(runner.DESC_FIELDS)}
    for name in ("cutlass_ctapipe_c21", "cutlass_ctapipe_w21g4"):
        v = pipelined.VARIANTS[name]
        hw = "h200-x8"  # a profile with 3 or more GPUs; the arrays do not depend on it
        plan = pipelined.variant_plan(pipelined.chain_plan(1024, layers=3, hardware=hw), v, hardware=hw)
        kernels, pipes = runner.plan_arrays(plan)
        first, mid, last = sorted(kernels, key=lambda k: k.layer)
        assert (first.gpu, mid.gpu, last.gpu) == (0, 1, 2) and len(pipes) == 2
        assert mid.inbound == first.outbound and mid.outbound == last.inbound and mid.outbound != mid.inbound
        cl = pipelined.clusters_of(plan, v)
        for k in kernels:
            runner.check_cluster(k, pipes, cl[k.op])
        f = dict(zip(runner.DESC_FIELDS, runner.descriptor(mid, pipes, ptrs, epoch=1, timeout_ns=1).tolist()))
        assert f["mode"] == (runner.MODE_WAIT if v.consumer == "wait" else runner.MODE_QUEUE)
        assert f["out_counters"] and f["in_capacity"] == pipes[mid.inbound].capacity
        assert f["out_capacity"] == pipes[mid.outbound].capacity
        # the middle kernel's producer order is its consumer order: it signals the tiles it was handed
        assert sorted(mid.order.tolist()) == list(range(mid.tiles))


def test_median_index_picks_the_traced_run_with_the_median_makespan():
    # three traced runs, the first with a first-wave store stall: the median one is kept, not the first
    assert pipelined.median_index([3.89e6, 3.72e6, 3.70e6]) == 1
    assert pipelined.median_index([1.0, 2.0, 3.0]) == 1
    assert pipelined.median_index([5.0]) == 0
    assert pipelined.median_index([4.0, 1.0, 3.0, 2.0]) == 3  # lower middle of an even count
    with pytest.raises(ValueError):
        pipelined.median_index([])
    assert pipelined.TRACE_RUNS >= 3


def test_pick_traced_run_passes_over_a_stalled_run():
    # run 0 has a first-wave store stall (first row-block 290 us against 120): the median of the other two is kept
    assert pipelined.pick_traced_run([3.72e6, 3.70e6, 3.75e6], [290e3, 120e3, 121e3]) == 1
    # no stall: the median makespan
    assert pipelined.pick_traced_run([3.72e6, 3.70e6, 3.75e6], [120e3, 119e3, 121e3]) == 0
    # every run stalled (M = 32768 on 2xH200): the median of all
    assert pipelined.pick_traced_run([8.49e6, 8.72e6, 8.68e6], [302e3, 296e3, 290e3]) == 2
    with pytest.raises(ValueError):
        pipelined.pick_traced_run([1.0], [1.0, 2.0])


class _Made(Exception):
    """Raised by the fake runner: ctapipe_rows got as far as making its runners."""


def test_ctapipe_rows_hands_the_mlp_blocks_shapes_ops_and_residual_to_the_runners(monkeypatch):
    """ctapipe_rows on the MLP block (a workload, not the session's square chain): each runner gets the layers' K
    and N, GeLU on layer 0, the residual on layer 1 with the block's input placed on the consumer's GPU, one residual
    per input set; a persistent variant is refused by name before any runner is made."""
    import types

    from ctahw import device
    from ctasim.cases import expand, load_experiment

    made, placed = [], []

    class Arr:
        def __init__(self, dev, shape):
            self.dev, self.shape = dev, shape

    class FakeRunner:
        def __init__(self, plan, m, dims, x, ws, **kw):
            made.append(dict(m=m, dims=dims, x=x.shape, ws=[w.shape for w in ws], **kw))
            raise _Made

    class Dev:
        def __init__(self, d):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    cp = types.SimpleNamespace(cuda=types.SimpleNamespace(Device=Dev), empty=lambda shape, dtype=None: Arr(-1, shape),
                               uint16=None)
    session = types.SimpleNamespace(
        cp=cp, l2=60 << 20, cfg=types.SimpleNamespace(gpus=2, h=8192, ctapipe_variants=("cutlass_ctapipe_g21",)),
        data=types.SimpleNamespace(rand=lambda dev, shape, scale=1.0, salt=0: Arr(dev, shape)))
    monkeypatch.setattr(pipelined.rn, "CtaPipeRunner", FakeRunner)
    monkeypatch.setattr(device, "to_device", lambda cp_, a, dev: placed.append((a.shape, dev)) or Arr(dev, a.shape))
    wl = expand(load_experiment("reg-mlp"))[0].workload  # M = 4096: 8192 -> 28672 (gelu) -> 8192 (+ residual, LN)
    with pytest.raises(_Made):
        pipelined.ctapipe_rows(session, 4096, wl)
    r = made[0]
    assert r["dims"] == [8192, 28672, 8192] and r["x"] == (4096, 8192) and r["ws"] == [(28672, 8192), (8192, 28672)]
    assert r["epilogues"] == {0: ("gelu",), 1: ("residual",)}
    assert r["residual"].dev == 1 and r["residual"].shape == (4096, 8192)
    assert placed and all(p == ((4096, 8192), 1) for p in placed)  # one residual per input set, on GPU 1
    session.cfg.ctapipe_variants = ("cutlass_ctapipe_p",)
    with pytest.raises(ValueError, match="cutlass_ctapipe_p .*fuse no epilogue op"):
        pipelined.ctapipe_rows(session, 4096, wl)
    with pytest.raises(ValueError, match="M=4096"):
        pipelined.ctapipe_rows(session, 2048, wl)  # the workload's M is not the one asked for
