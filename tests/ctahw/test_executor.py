"""The plan executor's data flow, on the numpy reference machine: every strategy's plan of every workload shape
computes the workload's output (CPU only)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ctahw.executor import Inputs, PlanExecutor, ReferenceMachine, plan_reason, reference_output, stage_names
from ctasim.plan import Collective, Kernel, Region, Transfer
from ctasim.spec import Layer, Strategy, Workload, load_hardware
from ctasim.strategies import build_plans

HW = load_hardware("h200-x2")


def wl(*layers: Layer) -> Workload:
    return Workload(name="t", layers=tuple(layers))


M = 512
SQUARE = wl(Layer(m=M, k=256, n=512), Layer(m=M, k=512, n=256))
MLP = wl(Layer(m=M, k=256, n=1024, epilogue=("gelu",)),
         Layer(m=M, k=1024, n=256, epilogue=("residual",), rowwise="layernorm"))
SWIGLU = wl(Layer(m=M, k=256, n=1024, epilogue=("swiglu",), epilogue_fused=False),
            Layer(m=M, k=512, n=256, epilogue=("residual",), rowwise="rmsnorm"))
DEEP = wl(*(Layer(m=M, k=256, n=512, epilogue=("relu",)) if i % 2 == 0 else
            Layer(m=M, k=512, n=256, epilogue=("residual",), rowwise="rmsnorm" if i == 1 else "") for i in range(4)))
UNFUSED = wl(Layer(m=M, k=256, n=512, epilogue=("silu",), epilogue_fused=False, rowwise="layernorm"),
             Layer(m=M, k=512, n=256, epilogue=("residual",), epilogue_fused=False))

STRATEGIES = [Strategy(kind="sequential"), Strategy(kind="microbatch", chunks=(1, 2, 4)),
              Strategy(kind="tp", tp_degree=2)]


def inputs(w: Workload, seed: int = 3) -> Inputs:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((w.layers[0].m, w.layers[0].k)).astype(np.float32)
    ws = [(rng.standard_normal((l.n, l.k)) / np.sqrt(l.k)).astype(np.float32) for l in w.layers]
    return Inputs(x, ws)


def run(plan, w: Workload, data: Inputs) -> tuple[dict, ReferenceMachine]:
    machine = ReferenceMachine()
    ex = PlanExecutor(plan, w, machine, data)
    ex.issue()
    return ex.outputs(), machine


def plans_of(strategy: Strategy, w: Workload) -> list:
    gpus = max(len(w.layers), 2)
    return build_plans(strategy, w, dataclasses.replace(HW, gpus=gpus), gpus, "t")


CASES = [(s, name, w) for s in STRATEGIES for name, w in
         [("square", SQUARE), ("mlp", MLP), ("swiglu", SWIGLU), ("deep", DEEP), ("unfused", UNFUSED)]
         if not (s.kind == "tp" and name in ("swiglu", "unfused"))]  # TP fuses epilogues only (ctasim refuses)


@pytest.mark.parametrize("strategy,name,w", CASES, ids=[f"{s.kind}-{n}" for s, n, _ in CASES])
def test_every_plan_computes_the_workload(strategy, name, w):
    data = inputs(w)
    ref = reference_output(np, data.x, data.weights, w.layers)
    for plan in plans_of(strategy, w):
        assert plan_reason(plan, w) is None
        outs, _ = run(plan, w, data)
        assert outs, "no GPU ends with the output"
        for g, out in outs.items():
            err = np.linalg.norm(out - ref) / np.linalg.norm(ref)
            assert err < 1e-5, (plan.strategy, plan.params, g, err)


BOUNDARY = wl(Layer(m=M, k=1024, n=256, epilogue=("residual",), residual_source="stream", rowwise="layernorm"),
              Layer(m=M, k=256, n=1024, epilogue=("gelu",)))
"""A block boundary: the residual stream added by the first layer, LayerNorm between the layers (mlp-boundary)."""


@pytest.mark.parametrize("strategy", STRATEGIES[:2], ids=["sequential", "microbatch"])
def test_a_block_boundary_adds_the_residual_stream_not_the_input(strategy):
    rng = np.random.default_rng(5)
    base = inputs(BOUNDARY)
    data = Inputs(base.x, base.weights, rng.standard_normal((M, 256)).astype(np.float32))
    ref = reference_output(np, data.x, data.weights, BOUNDARY.layers, stream32=data.stream)
    other = reference_output(np, data.x, data.weights, BOUNDARY.layers, stream32=0 * data.stream)
    assert np.linalg.norm(other - ref) > 0.1 * np.linalg.norm(ref)  # the stream matters to the output
    for plan in plans_of(strategy, BOUNDARY):
        assert plan_reason(plan, BOUNDARY) is None
        outs, machine = run(plan, BOUNDARY, data)
        for out in outs.values():
            assert np.linalg.norm(out - ref) / np.linalg.norm(ref) < 1e-5, plan.params
        assert "rowwise" in [c[0] for c in machine.calls]  # LayerNorm as a pass of its own between the layers
    with pytest.raises(ValueError, match="residual stream, but input set 0 has none"):
        PlanExecutor(plans_of(strategy, BOUNDARY)[0], BOUNDARY, ReferenceMachine(), base)
    with pytest.raises(ValueError, match="no stream was given"):
        reference_output(np, data.x, data.weights, BOUNDARY.layers)


STREAM_MLP = dataclasses.replace(MLP, layers=(MLP.layers[0], dataclasses.replace(MLP.layers[1],
                                                                                 residual_source="stream")))
"""The MLP block with its residual from the stream (as wide as the input, so that adding the input instead is a
wrong number, not a shape error); layer 1 runs on GPU 1 under micro-batching and row-parallel under TP."""


@pytest.mark.parametrize("strategy", STRATEGIES, ids=[s.kind for s in STRATEGIES])
def test_the_residual_stream_reaches_the_layer_that_adds_it_on_every_gpu(strategy):
    base = inputs(STREAM_MLP)
    data = Inputs(base.x, base.weights, np.random.default_rng(9).standard_normal(base.x.shape).astype(np.float32))
    ref = reference_output(np, data.x, data.weights, STREAM_MLP.layers, stream32=data.stream)
    wrong = reference_output(np, data.x, data.weights, MLP.layers)  # the input added instead
    assert np.linalg.norm(wrong - ref) > 0.1 * np.linalg.norm(ref)
    for plan in plans_of(strategy, STREAM_MLP):
        outs, _ = run(plan, STREAM_MLP, data)
        assert outs
        for g, out in outs.items():
            assert np.linalg.norm(out - ref) / np.linalg.norm(ref) < 1e-5, (plan.params, g)


def test_where_the_output_ends():
    assert set(run(plans_of(Strategy(kind="sequential"), MLP)[0], MLP, inputs(MLP))[0]) == {0}
    assert set(run(plans_of(Strategy(kind="microbatch", chunks=(2,)), DEEP)[0], DEEP, inputs(DEEP))[0]) == {3}
    assert set(run(plans_of(Strategy(kind="tp", tp_degree=2), MLP)[0], MLP, inputs(MLP))[0]) == {0, 1}


def test_tp_adds_the_residual_once_and_reduces_partial_sums():
    plan = plans_of(Strategy(kind="tp", tp_degree=2), MLP)[0]
    _, machine = run(plan, MLP, inputs(MLP))
    gemms = [c for c in machine.calls if c[0] == "gemm"]
    # layer 0 column slices (512 of 1024 columns, gelu), layer 1 K slices (512 of 1024), residual on one only
    assert [(c[3], c[4], c[5], c[6]) for c in gemms] == [(M, 512, 256, ("gelu",))] * 2 + [
        (M, 256, 512, ("residual",)), (M, 256, 512, ())]
    assert [c[0] for c in machine.calls if c[0] in ("allreduce", "rowwise")] == ["allreduce", "rowwise", "rowwise"]


def test_cross_stream_dependencies_become_waits():
    """Micro-batching: each chunk's copy waits for its GEMM (compute -> copy stream), the next GPU's GEMM for the copy
    (copy -> the other GPU's compute stream); stream order needs no wait."""
    plan = plans_of(Strategy(kind="microbatch", chunks=(2,)), SQUARE)[0]
    _, machine = run(plan, SQUARE, inputs(SQUARE))
    waits = [(c[1], plan.ops[c[2]].name) for c in machine.calls if c[0] == "wait"]
    assert waits == [((0, "copy"), "gemm L0 chunk0"), ((1, "compute"), "copy L0 chunk0 gpu0->gpu1"),
                     ((0, "copy"), "gemm L0 chunk1"), ((1, "compute"), "copy L0 chunk1 gpu0->gpu1")]


def _broken(plan, **change):
    """``plan`` with its first op of each named type changed (a deliberately wrong plan)."""
    plan = dataclasses.replace(plan, ops=list(plan.ops))
    for i, op in enumerate(plan.ops):
        for typ, fields in change.items():
            if type(op).__name__ == typ:
                plan.ops[i] = dataclasses.replace(op, **fields(op))
                change = {k: v for k, v in change.items() if k != typ}
                break
    return plan


def test_a_wrong_region_gives_a_wrong_output():
    """The check is strict enough to see a plan that computes the wrong thing: a chunk's rows shifted, the residual
    on both K slices, a transfer of the wrong rows."""
    data = inputs(MLP)
    ref = reference_output(np, data.x, data.weights, MLP.layers)
    mb = plans_of(Strategy(kind="microbatch", chunks=(2,)), MLP)[0]
    shifted = _broken(mb, Kernel=lambda k: {"region": dataclasses.replace(k.region, row0=k.region.row0 + 128)})
    moved = _broken(mb, Transfer=lambda t: {"region": dataclasses.replace(t.region, row0=256)})
    tp = plans_of(Strategy(kind="tp", tp_degree=2), MLP)[0]
    # the second row-parallel slice claims k0 = 0 too: it adds the residual again (and sums the wrong K)
    second = [k for k in tp.kernels() if k.layer == 1][1]
    twice = dataclasses.replace(tp, ops=[dataclasses.replace(o, region=dataclasses.replace(o.region, k0=0))
                                         if o.id == second.id else o for o in tp.ops])
    for plan in (shifted, moved):
        outs, _ = run(plan, MLP, data)
        out = outs[1]
        assert not np.isfinite(out).all() or np.linalg.norm(out - ref) / np.linalg.norm(ref) > 0.1
    assert plan_reason(twice, MLP) is not None  # GPU 1 does not hold K 0..512 of its input


def test_plan_reasons():
    tp = plans_of(Strategy(kind="tp", tp_degree=2), wl(Layer(m=M, k=256, n=512)))[0]  # unpaired: all-gather
    assert "allgather" in plan_reason(tp, wl(Layer(m=M, k=256, n=512)))
    mb = plans_of(Strategy(kind="microbatch", chunks=(2,)), SQUARE)[0]
    no_region = _broken(mb, Transfer=lambda t: {"region": None})
    assert "names no layer region" in plan_reason(no_region, SQUARE)
    with pytest.raises(ValueError, match="names no layer region"):
        PlanExecutor(no_region, SQUARE, ReferenceMachine(), inputs(SQUARE))
    pipe = build_plans(Strategy(kind="ctapipe"), SQUARE, HW, 2, "t")[0]
    assert "pipes" in plan_reason(pipe, SQUARE)


def test_tp_refuses_an_activation_on_a_partial_sum():
    from ctasim.strategies import check_placement

    act = wl(Layer(m=M, k=256, n=512), Layer(m=M, k=512, n=256, epilogue=("gelu",)))
    assert "partial sum" in check_placement(Strategy(kind="tp", tp_degree=2), act, HW, 2)
    assert check_placement(Strategy(kind="tp", tp_degree=2), MLP, HW, 2) is None


def test_regions_cover_each_layer_once():
    """Every strategy's kernels of a layer tile its rows x columns exactly, K split only by TP."""
    for s in STRATEGIES:
        for plan in plans_of(s, MLP):
            for l, layer in enumerate(MLP.layers):
                cover = np.zeros((layer.m, layer.n), dtype=int)
                for k in plan.kernels():
                    if k.layer == l:
                        r = k.region
                        cover[r.row0:r.row0 + r.m, r.n0:r.n0 + r.n] += 1
                per_k = {k.region.k for k in plan.kernels() if k.layer == l}
                slices = layer.k // min(per_k)
                assert (cover == slices).all(), (s.kind, plan.params, l)


def test_stage_names():
    assert stage_names(UNFUSED.layers[0]) == ("gemm", "act", "norm")
    assert stage_names(MLP.layers[0]) == ("act",)


def test_collective_names_its_layer():
    plan = plans_of(Strategy(kind="tp", tp_degree=2), MLP)[0]
    assert [o.layer for o in plan.ops if isinstance(o, Collective)] == [1]
    assert Region.of(MLP.layers[1], row0=128) == Region(128, M, 0, 256, 0, 1024)
    assert all(isinstance(o.region, Region) for o in plan.ops if isinstance(o, (Kernel, Transfer)))


def test_input_sets_rotate_and_share_the_activations():
    """Two input sets: issue(k) computes set k's output (k modulo the sets), in the same output buffers."""
    sets = [inputs(MLP, seed=3), inputs(MLP, seed=4)]
    plan = plans_of(Strategy(kind="microbatch", chunks=(2,)), MLP)[0]
    ex = PlanExecutor(plan, MLP, ReferenceMachine(), sets)
    for k in (1, 0, 3):
        ex.issue(k)
        ref = reference_output(np, sets[k % 2].x, sets[k % 2].weights, MLP.layers)
        assert np.allclose(ex.outputs()[1], ref, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="no input sets"):
        PlanExecutor(plan, MLP, ReferenceMachine(), [])


def test_issue_returns_every_stream_it_used():
    plan = plans_of(Strategy(kind="microbatch", chunks=(2,)), SQUARE)[0]
    ex = PlanExecutor(plan, SQUARE, ReferenceMachine(), inputs(SQUARE))
    assert ex.issue() == [(0, "compute"), (0, "copy"), (1, "compute")]
    tp = plans_of(Strategy(kind="tp", tp_degree=2), MLP)[0]
    assert PlanExecutor(tp, MLP, ReferenceMachine(), inputs(MLP)).issue() == [(0, "compute"), (1, "compute")]


# -- the CUDA machine's streams and events, on a fake CuPy (no GPU)


class _FakeArray:
    """A device buffer of the fake CuPy: an address per element row, row slices, bytes."""

    def __init__(self, dev, shape, ptr):
        self.dev, self.shape, self.ptr0 = dev, shape, ptr
        self.data = type("P", (), {"ptr": ptr, "device_id": dev})()
        self.nbytes = shape[0] * shape[1] * 2

    def __getitem__(self, sl):
        r0 = sl.start or 0
        return _FakeArray(self.dev, (sl.stop - r0, self.shape[1]), self.ptr0 + r0 * self.shape[1] * 2)


class _FakeCuda:
    def __init__(self, log):
        self.log, self.current, self.next_ptr = log, 0, 1 << 20
        fake = self

        class Device:
            def __init__(self, d):
                self.d = d

            def __enter__(self):
                self.prev, fake.current = fake.current, self.d

            def __exit__(self, *a):
                fake.current = self.prev

        self.Device = Device
        self.runtime = type("R", (), {"memcpyPeerAsync": lambda _s, *a: log.append(("memcpy",) + a)})()

    def empty(self, shape, dtype=None):
        self.next_ptr += 1 << 30
        return _FakeArray(self.current, shape, self.next_ptr)


class _FakeStream:
    def __init__(self, name, log):
        self.name, self.log, self.ptr = name, log, hash(name) & 0xFFFF

    def wait_event(self, ev):
        self.log.append(("wait", self.name, ev.where))


class _FakeEvent:
    def __init__(self, dev, log):
        self.dev, self.log, self.where = dev, log, None

    def record(self, stream):
        self.where = stream.name


class _FakeTimed:
    def __init__(self, devices, log):
        self.log = log
        self.compute = {d: _FakeStream(f"compute{d}", log) for d in devices}
        self.copy = {d: _FakeStream(f"copy{d}", log) for d in devices}

    def event(self, dev):
        return _FakeEvent(dev, self.log)

    def part(self, kind, dev, stream, fn):
        fn()

    def add_part(self, kind, dev, a, b):
        self.log.append(("part", kind, dev))


def _cuda_machine(monkeypatch, devices, plan, w):
    from ctahw import executor

    log = []
    cuda = _FakeCuda(log)
    cp = type("CP", (), {"cuda": cuda, "empty": cuda.empty, "uint16": None})()
    gemms = [(lambda d: lambda a, w_, out, m, n, k, st, **kw: log.append(("gemm", d, st.name, m, n, k,
                                                                          kw.get("epilogue", ()))))(d)
             for d in devices]
    machine = executor.CudaMachine(cp, devices, gemms, log=lambda s: None)
    monkeypatch.setattr(machine, "place", lambda g, arr, rows=None, cols=None: cuda.empty(
        (rows[1], cols[1]) if rows else arr.shape))
    x = _FakeArray(0, (w.layers[0].m, w.layers[0].k), 1)
    ws = [_FakeArray(0, (l.n, l.k), 2) for l in w.layers]
    ex = PlanExecutor(plan, w, machine, Inputs(x, ws))
    machine.bind(_FakeTimed(sorted(set(devices)), log))
    return ex, machine, log


def test_cuda_machine_orders_micro_batching_by_events_and_peer_copies(monkeypatch):
    plan = plans_of(Strategy(kind="microbatch", chunks=(2,)), SQUARE)[0]
    ex, machine, log = _cuda_machine(monkeypatch, [0, 1], plan, SQUARE)
    streams = ex.issue()
    assert [machine.stream(s).name for s in streams] == ["compute0", "copy0", "compute1"]
    steps = [e for e in log if e[0] in ("gemm", "wait", "memcpy")]
    half = M // 2 * SQUARE.layers[0].n * 2  # one chunk of layer 0's output, bf16
    assert {e[6] for e in steps if e[0] == "memcpy"} == {machine.t.copy[0].ptr}  # on the source GPU's copy stream
    assert [e[:3] if e[0] != "memcpy" else ("memcpy", e[2], e[4], e[5]) for e in steps] == [
        ("gemm", 0, "compute0"), ("wait", "copy0", "compute0"), ("memcpy", 1, 0, half),
        ("wait", "compute1", "copy0"), ("gemm", 1, "compute1"),
        ("gemm", 0, "compute0"), ("wait", "copy0", "compute0"), ("memcpy", 1, 0, half),
        ("wait", "compute1", "copy0"), ("gemm", 1, "compute1")]


def test_cuda_machine_all_reduces_on_nccl_across_devices_and_locally_on_one(monkeypatch):
    from ctahw import comm, executor

    made = []

    class FakeAllReduce:
        binding = "fake"

        def __init__(self, devices, log=None):
            made.append(list(devices))

        def __call__(self, bufs, count, streams):
            made.append((count, [s.name for s in streams]))

        def close(self):
            made.append("closed")

    from ctahw import rowwise

    monkeypatch.setattr(comm, "AllReduce", FakeAllReduce)
    monkeypatch.setattr(rowwise, "rowwise", lambda op, x, out, m, cols, st: made.append(("rowwise", op, st.name)))
    plan = plans_of(Strategy(kind="tp", tp_degree=2), MLP)[0]
    ex, machine, log = _cuda_machine(monkeypatch, [0, 1], plan, MLP)
    ex.issue()
    assert made == [[0, 1], (M * MLP.layers[1].n, ["compute0", "compute1"]), ("rowwise", "layernorm", "compute0"),
                    ("rowwise", "layernorm", "compute1")] and machine.nccl_binding == "fake"
    assert [e for e in log if e[0] == "part"] == [("part", "comm", 0), ("part", "comm", 1)]
    machine.close()
    assert made[-1] == "closed"
    local = []
    monkeypatch.setattr(executor.CudaMachine, "_local_sum", lambda self, devs, bufs, streams: local.append(devs))
    ex, machine, log = _cuda_machine(monkeypatch, [0, 0], plan, MLP)
    ex.issue()
    assert local == [[0, 0]] and made[-3] == "closed"  # no communicator for two plan GPUs on one device


def test_only_what_another_stream_waits_for_records_its_completion():
    """Sequential records nothing; micro-batching records each chunk's GEMM (its copy waits) and each copy (the next
    GPU waits), nothing on the last GPU."""
    seq = plans_of(Strategy(kind="sequential"), MLP)[0]
    _, machine = run(seq, MLP, inputs(MLP))
    assert [c for c in machine.calls if c[0] in ("done", "wait")] == []
    mb = plans_of(Strategy(kind="microbatch", chunks=(2,)), SQUARE)[0]
    _, machine = run(mb, SQUARE, inputs(SQUARE))
    done = [(c[1], mb.ops[c[2]].name) for c in machine.calls if c[0] == "done"]
    assert done == [((0, "compute"), "gemm L0 chunk0"), ((0, "copy"), "copy L0 chunk0 gpu0->gpu1"),
                    ((0, "compute"), "gemm L0 chunk1"), ((0, "copy"), "copy L0 chunk1 gpu0->gpu1")]
