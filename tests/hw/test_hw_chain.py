"""GPU tests of the chain kernel (intra-GPU CTA-pipelining, ctahw.chain): correctness against fp32, back-to-back
epochs, an injected stall ending in a reported timeout, the protocol-off baseline (marked `hw`; one GPU)."""

from __future__ import annotations

import dataclasses
import math
import os

import pytest

pytestmark = pytest.mark.hw


def _setup(cp, m: int, layers: int, h: int = 2048, **kw):
    from ctahw.chain import ChainRunner
    from ctahw.device import random_bf16
    from ctasim.spec import Strategy, load_hardware, load_workload
    from ctasim.strategies.ctapipe import build_chain

    wl = load_workload("chain2-16384")
    wl = dataclasses.replace(wl, layers=(dataclasses.replace(wl.layers[0], m=m, k=h, n=h),) * layers)
    plan = build_chain(Strategy(kind="ctapipe", gpus=1), wl, load_hardware("h200-x2-calibrated"), f"m={m}")
    rng = cp.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    x = random_bf16((m, h), cp, rng)
    ws = [random_bf16((h, h), cp, rng, 1 / math.sqrt(h)) for _ in range(layers)]
    return ChainRunner(plan, x, ws, **kw), x, ws


def _runs(r, n: int = 1, poison: bool = False) -> None:
    """``n`` runs back to back (outputs poisoned first if asked), then the GPUs' end and the error and ticket checks."""
    if poison:
        r.poison_outputs()
    for _ in range(n):
        r.launch()
    r.synchronize()
    r.check_errors()


def _err(cp, runner, x, ws):
    from ctahw.device import output_error, reference_chain

    return output_error(cp, runner.out, reference_chain(cp, x, ws, 0), 0)


@pytest.mark.parametrize("design", ["tickets", "static", "static2x1"])
@pytest.mark.parametrize("m,layers,h", [(1024, 2, 2048), (3072, 4, 2048), (640, 3, 1024), (1024, 1, 8192)])
def test_chain_kernel_matches_fp32_chain(cp, m, layers, h, design):
    from ctahw.device import REL_TOL_BF16, poison

    if design == "static2x1" and (m // 128) % 2:
        pytest.skip("2x1 clusters pair row-blocks: needs an even count")
    r, x, ws = _setup(cp, m, layers, h, design=design)
    poison(r.x[1:])
    r.launch()
    r.stream.synchronize()
    r.check_errors()
    assert _err(cp, r, x, ws) <= REL_TOL_BF16


@pytest.mark.parametrize("design", ["tickets", "static2x1"])
def test_chain_kernel_back_to_back_and_traced(cp, design):
    from ctahw.device import REL_TOL_BF16, poison
    from ctasim.invariants import check_trace

    r, x, ws = _setup(cp, 1024, 3, design=design)
    for _ in range(1000):  # epochs 1..1000, nothing reset: the ticket and counters keep counting
        r.launch()
    r.stream.synchronize()
    r.check_errors()  # also: the ticket counter is exactly 1000 x (tiles + grid)
    assert r.epoch == 1001
    poison(r.x[1:])
    r.launch()
    r.stream.synchronize()
    r.check_errors()
    assert _err(cp, r, x, ws) <= REL_TOL_BF16
    t, _, _ = _setup(cp, 1024, 3, trace=True, design=design)
    t.x[:] = r.x
    t.w[:] = r.w
    t.launch()
    t.stream.synchronize()
    t.check_errors()
    tr = t.read_trace()
    check_trace(tr, t.plan, tol_ns=32.0)


@pytest.mark.parametrize("design", ["tickets", "static2x1"])
def test_stalled_row_ends_in_a_reported_timeout(cp, design):
    import time

    from ctahw.device import REL_TOL_BF16, poison
    from ctahw.runner import ProtocolError

    r, x, ws = _setup(cp, 1024, 2, timeout_ns=50_000_000, design=design)
    t0 = time.perf_counter()
    r.launch(stall_row=0)
    r.stream.synchronize()
    assert time.perf_counter() - t0 < 5.0  # the kernel ended: bounded waits
    with pytest.raises(ProtocolError, match="wait timeout"):
        r.check_errors()
    r.reset()
    poison(r.x[1:])
    r.launch()
    r.stream.synchronize()
    r.check_errors()
    assert _err(cp, r, x, ws) <= REL_TOL_BF16


def test_protocol_off_is_the_plain_gemm(cp):
    from ctahw.device import REL_TOL_BF16, poison

    r, x, ws = _setup(cp, 2048, 1, 4096)
    poison(r.x[1:])
    r.launch(protocol=False)
    r.stream.synchronize()
    r.check_errors()
    assert _err(cp, r, x, ws) <= REL_TOL_BF16
    assert int(r.counters.sum()) == 0  # no signals


def test_static_grid_is_refused_beyond_residency(cp):
    r, _, _ = _setup(cp, 1024, 2, design="static2x1")
    resident = int(r.lib.ctahw_chain_resident_ctas(2, 0))
    assert 0 < resident <= 132 and r.grid <= resident and r.grid % 2 == 0
    if resident + 2 > 132:
        pytest.skip("every SM can hold a CTA of a 2x1 cluster: no grid between residency and the SM count")
    r.grid = resident + 2  # more CTAs than can be resident: a static order could deadlock, so the launcher refuses
    with pytest.raises(RuntimeError, match="resident"):
        r.launch()


# ---- the ring (layer l on GPU l mod G, one chain kernel per GPU): on one device, each kernel with half the SMs
# (the one-GPU check of the ring's wiring and system-scope protocol); on two devices where there are two.


def _ring(cp, m: int, layers: int, h: int = 2048, devices=(0, 0), **kw):
    from ctahw.chain import ChainRunner
    from ctahw.device import random_bf16
    from ctasim.spec import Strategy, load_hardware, load_workload
    from ctasim.strategies.ctapipe import build_ring

    wl = load_workload("chain2-16384")
    wl = dataclasses.replace(wl, layers=(dataclasses.replace(wl.layers[0], m=m, k=h, n=h),) * layers)
    plan = build_ring(Strategy(kind="ctapipe", gpus=len(devices), placement="ring"), wl,
                      load_hardware("h200-x2-calibrated"), f"m={m}")
    rng = cp.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    with cp.cuda.Device(devices[0]):
        x = random_bf16((m, h), cp, rng)
        ws = [random_bf16((h, h), cp, rng, 1 / math.sqrt(h)) for _ in range(layers)]
    return ChainRunner(plan, x, ws, devices=devices, **kw), x, ws


def _ring_err(cp, r, x, ws):
    from ctahw.chain import output_place
    from ctahw.device import output_error, reference_chain

    g = r.gpus[output_place(r.plan)[0]].device
    return output_error(cp, r.out, reference_chain(cp, x, ws, g), g)


@pytest.mark.parametrize("m,layers,h", [(1024, 4, 2048), (3072, 3, 2048), (640, 8, 1024), (2048, 2, 2048)])
def test_ring_on_one_gpu_matches_fp32_chain(cp, m, layers, h):
    """(2 layers: the persistent pair of registered plan 15, placement = "ring" with as many GPUs as layers.)"""
    from ctahw.device import REL_TOL_BF16

    r, x, ws = _ring(cp, m, layers, h)
    assert [p.grid for p in r.gpus] == [min(66, p.k.tiles) for p in r.gpus]  # half the SMs each: both resident
    r.poison_outputs()
    r.launch()
    r.synchronize()
    r.check_errors()
    assert _ring_err(cp, r, x, ws) <= REL_TOL_BF16


def test_ring_on_one_gpu_back_to_back_traced_and_stalled(cp):
    import time

    from ctahw.device import REL_TOL_BF16
    from ctahw.runner import ProtocolError
    from ctasim.invariants import check_trace

    r, x, ws = _ring(cp, 1024, 4)
    for _ in range(1000):  # epochs 1..1000 on both kernels, nothing reset
        r.launch()
    r.synchronize()
    r.check_errors()  # and each kernel's ticket count is exactly 1000 x (its tiles + its grid)
    r.poison_outputs()
    r.launch()
    r.synchronize()
    r.check_errors()
    assert _ring_err(cp, r, x, ws) <= REL_TOL_BF16
    t, _, _ = _ring(cp, 1024, 4, trace=True)
    for a, b in zip(t.gpus, r.gpus):
        a.x[:] = b.x
        a.w[:] = b.w
    t.launch()
    t.synchronize()
    t.check_errors()
    check_trace(t.read_trace(), t.plan, tol_ns=32.0)
    s, xs, wss = _ring(cp, 1024, 4, timeout_ns=50_000_000)
    t0 = time.perf_counter()
    s.launch(stall_row=0)  # GPU 0's layer 0 never completes row-block 0: layer 1 (GPU 1) and layer 2 (GPU 0) wait
    s.synchronize()
    assert time.perf_counter() - t0 < 5.0  # both kernels ended: bounded waits
    with pytest.raises(ProtocolError, match="wait timeout"):
        s.check_errors()
    s.reset()
    s.poison_outputs()
    s.launch()
    s.synchronize()
    s.check_errors()
    assert _ring_err(cp, s, xs, wss) <= REL_TOL_BF16


def test_ring_on_two_gpus_matches_fp32_chain(cp):
    from ctahw.device import REL_TOL_BF16, enable_peer_access, gpus

    if len(gpus()) < 2:
        pytest.skip("needs 2 GPUs (the ring's one-GPU check runs above)")
    enable_peer_access([0, 1])
    r, x, ws = _ring(cp, 2048, 4, 2048, devices=(0, 1))
    _runs(r, 100)
    _runs(r, poison=True)
    assert _ring_err(cp, r, x, ws) <= REL_TOL_BF16


@pytest.mark.parametrize("layers", [2, 4])
def test_the_experiment_path_runs_a_ring_with_its_kernels_on_one_gpu(cp, layers):
    """ctahw run's chain-kernel path (ctahw.experiment.chain_case) with a ring's two kernels on device 0 (the
    harness's compute and copy streams): correct, timed, its trace on one clock through ctasim's invariants -- what
    the 2-GPU call runs for registered plans 12 (4 layers) and 15 (the 2-layer pair), short of the second device."""
    from ctahw.baselines import Timed
    from ctahw.experiment import RunConfig, chain_case
    from ctasim.cases import expand, load_experiment
    from ctasim.invariants import check_trace
    from ctasim.strategies.ctapipe import build_ring

    exp = load_experiment("reg15-chain-pair")
    case = next(iter(expand(exp)))
    layer = dataclasses.replace(case.workload.layers[0], m=1024, k=2048, n=2048)
    case = dataclasses.replace(case, label="m=1024", workload=dataclasses.replace(case.workload, layers=(layer,) * layers))
    st = next(s for s in exp.strategies if s.label == "chain-pair")
    traces = {}
    res = chain_case(exp, case, st, RunConfig(reps=3, warmup=1, rest_ms=0.0), Timed([0], 1.0), lambda s: None, traces,
                     devices=[0, 0])
    assert res["ok"] and res["makespan_ms"] > 0
    (tr,) = traces.values()
    check_trace(tr, build_ring(st, case.workload, exp.hardware, case.label), tol_ns=32.0)
    assert sorted(tr.tiles.gpu.unique().tolist()) == [0, 1] and tr.meta["offsets_ns"] == {}


@pytest.mark.parametrize("layers", [3, 8])
def test_the_fig4_ring_of_one_gpu_per_layer_runs_with_its_kernels_on_one_gpu(cp, layers):
    """Registered plan 38's Fig. 4 ring (placement "ring", one GPU per layer) through ctahw run's path with all of
    its L kernels on device 0, each on its own stream with its share of the SMs (8 layers: 16 CTAs each): correct
    against the fp32 chain, timed, its trace through ctasim's invariants on L plan GPUs -- what a 4- or 8-GPU call
    runs, short of the devices."""
    from ctahw.baselines import Timed
    from ctahw.experiment import RunConfig, chain_case
    from ctasim.cases import expand, load_experiment
    from ctasim.invariants import check_trace
    from ctasim.strategies.ctapipe import build_ring

    exp = load_experiment("reg38-fig4-x8")
    case = next(c for c in expand(exp) if c.label == f"layers={layers}")
    layer = dataclasses.replace(case.workload.layers[0], m=1024, k=2048, n=2048)
    case = dataclasses.replace(case, workload=dataclasses.replace(case.workload, layers=(layer,) * layers))
    st = next(s for s in exp.strategies if s.label == "ring")
    traces = {}
    res = chain_case(exp, case, st, RunConfig(reps=3, warmup=1, rest_ms=0.0), Timed([0], 1.0), lambda s: None, traces,
                     devices=[0] * layers)
    assert res["ok"] and res["makespan_ms"] > 0, res["rel_err"]
    (tr,) = traces.values()
    check_trace(tr, build_ring(st, case.workload, exp.hardware, case.label), tol_ns=32.0)
    assert sorted(tr.tiles.gpu.unique().tolist()) == list(range(layers))


def _pair_case(cp, experiment: str, dims):
    """A 2-layer experiment's first case with its layers at ``dims`` ((K, N) per layer, M = 1024) as a ring pair
    through ctahw run's path (``ctahw.experiment.chain_case``), both kernels on device 0: the result row, the trace
    checked against ctasim's invariants, and the plan."""
    from ctahw.baselines import Timed
    from ctahw.experiment import RunConfig, chain_case
    from ctasim.cases import expand, load_experiment
    from ctasim.invariants import check_trace
    from ctasim.spec import Strategy
    from ctasim.strategies.ctapipe import build_ring

    exp = load_experiment(experiment)
    case = next(iter(expand(exp)))
    wl = dataclasses.replace(case.workload, layers=tuple(dataclasses.replace(l, m=1024, k=k, n=n)
                                                         for l, (k, n) in zip(case.workload.layers, dims)))
    case = dataclasses.replace(case, label="m=1024", workload=wl)
    st = Strategy(kind="ctapipe", name="chain-pair", gpus=2, placement="ring")
    traces = {}
    res = chain_case(exp, case, st, RunConfig(reps=3, warmup=1, rest_ms=0.0), Timed([0], 1.0), lambda s: None, traces,
                     devices=[0, 0])
    assert res["ok"], res["rel_err"]
    (tr,) = traces.values()
    plan = build_ring(st, wl, exp.hardware, case.label)
    check_trace(tr, plan, tol_ns=32.0)
    return res, plan


def test_the_mlp_block_runs_on_a_ring_pair_with_its_kernels_on_one_gpu(cp):
    """The MLP block (1024 x 1024 -> 3584 GeLU -> 1024 + the input, LayerNorm) as a ring of one layer per GPU, both
    chain kernels on device 0 (GeLU fused into the first, the residual into the second, LayerNorm after on the GPU
    the output lands on) through ctahw run's path: correct against the fp32 block, traced through the invariants."""
    _pair_case(cp, "reg-mlp", [(1024, 3584), (3584, 1024)])


def test_a_block_boundary_folds_its_layernorm_through_the_experiment_path_on_one_gpu(cp):
    """A block boundary (mlp-boundary at 1024 x 3584 -> 1024 + the residual stream, LayerNorm, -> 3584 GeLU) as a ring
    pair through ctahw run's path, both kernels on device 0: the ring folds the LayerNorm (ops residual_stats and
    lnfold_gelu, no pass between), checked against the workload's fp32 reference with the LayerNorm as a pass, traced
    through the invariants."""
    _, plan = _pair_case(cp, "reg19-fold-boundary", [(3584, 1024), (1024, 3584)])
    assert plan.params["norm_fold"] == "0"


def test_the_mlp_ring_pair_back_to_back_and_stalled_on_one_gpu(cp):
    """The MLP pair's two kernels (different shapes and ops) on device 0: 300 back-to-back runs with exact ticket
    counts, then correct; FC1 withholding row-block 0 ends in a reported timeout of FC2 within 5 s; a reset run is
    correct again."""
    import time

    from ctahw.chain import ChainRunner
    from ctahw.device import REL_TOL_BF16, output_error, random_bf16
    from ctahw.executor import reference_bf16
    from ctahw.runner import ProtocolError
    from ctasim.spec import Strategy, load_hardware, load_workload
    from ctasim.strategies.ctapipe import build_ring

    wl = load_workload("mlp-block")
    a, b = wl.layers
    layers = (dataclasses.replace(a, m=1024, k=1024, n=3584, rowwise=""),
              dataclasses.replace(b, m=1024, k=3584, n=1024, rowwise=""))
    wl = dataclasses.replace(wl, layers=layers)
    plan = build_ring(Strategy(kind="ctapipe", gpus=2, placement="ring"), wl, load_hardware("h200-x2-calibrated"), "m")
    rng = cp.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    x = random_bf16((1024, 1024), cp, rng)
    ws = [random_bf16((l.n, l.k), cp, rng, 1 / math.sqrt(l.k)) for l in layers]
    kw = {"devices": (0, 0), "epilogues": {0: "gelu", 1: "residual"}, "residual": x}
    ref = reference_bf16(cp, x, ws, layers, 0)

    def check(r):
        r.poison_outputs()
        r.launch()
        r.synchronize()
        r.check_errors()
        assert output_error(cp, r.out, ref, 0) <= REL_TOL_BF16

    r = ChainRunner(plan, x, ws, **kw)
    for _ in range(300):
        r.launch()
    r.synchronize()
    r.check_errors()
    check(r)
    s = ChainRunner(plan, x, ws, timeout_ns=50_000_000, **kw)
    t0 = time.perf_counter()
    s.launch(stall_row=0)
    s.synchronize()
    assert time.perf_counter() - t0 < 5.0
    with pytest.raises(ProtocolError, match="wait timeout"):
        s.check_errors()
    s.reset()
    check(s)


# ---- the LayerNorm fold on a ring pair: layer 0 (a block's FC2) adds the residual and its rows' statistics,
# layer 1 (the next block's FC1) folds LayerNorm of its input into its epilogue, then GeLU.


def _fold_inputs(cp, m: int, h: int, f: int):
    """Fresh random inputs of the fold pair: FC2's input (m x f), the residual (m x h), both weights, gamma, beta."""
    from ctahw.device import random_bf16

    layers = [(f, h), (h, f)]  # (K, N) of FC2, FC1
    rng = cp.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    x = random_bf16((m, f), cp, rng)  # the hidden activations FC2 reads
    res = random_bf16((m, h), cp, rng)  # the block's input: FC2's residual
    ws = [random_bf16((n, k), cp, rng, 1 / math.sqrt(k)) for k, n in layers]
    gamma = 1 + 0.2 * rng.standard_normal(h, dtype=cp.float32)
    beta = 0.2 * rng.standard_normal(h, dtype=cp.float32)
    return x, res, ws, gamma, beta


def _fold_pair(cp, m: int, h: int, f: int, devices=(0, 0), data=None, **kw):
    """The fold pair's runner (ops residual_stats, lnfold_gelu) on ``data`` (default: fresh :func:`_fold_inputs`)."""
    from ctahw.chain import FOLD_PAIRS, ChainRunner, fold_pair_plan

    x, res, ws, gamma, beta = data or _fold_inputs(cp, m, h, f)
    r = ChainRunner(fold_pair_plan(m, h, f), x, ws, devices=devices, epilogues=FOLD_PAIRS["fold"], residual=res,
                    layernorm=(gamma, beta), **kw)
    return r, (x, res, ws, gamma, beta)


def _offset_rows(cp, res, offset: float):
    """The residual with ``offset`` added to every element (rows whose mean is ``offset`` against a spread of ~1.4 in
    FC2's output), as bf16 bits."""
    from ctahw.device import bf16_bits_to_f32, f32_to_bf16_bits

    return f32_to_bf16_bits(bf16_bits_to_f32(res, cp) + cp.float32(offset), cp)


def _fold_reference(cp, x, res, ws, gamma, beta):
    from ctahw.chain import reference_fold_pair

    return reference_fold_pair(cp, x, res, ws, gamma, beta)


@pytest.mark.parametrize("m,h,f", [(1024, 1024, 3584), (2048, 2048, 4096)])
def test_layernorm_fold_on_a_ring_pair_matches_fp32(cp, m, h, f):
    """Correct against fp32 on fresh inputs with poisoned outputs, in both epochs' row-statistics buffers (runs 1-4
    alternate them; each run's reader zeroes the other), then after 200 back-to-back runs."""
    from ctahw.device import REL_TOL_BF16, output_error

    r, data = _fold_pair(cp, m, h, f)
    ref = _fold_reference(cp, *data)
    for _ in range(4):
        _runs(r, poison=True)
        assert output_error(cp, r.out, ref, 0) <= REL_TOL_BF16
    _runs(r, 200)
    _runs(r, poison=True)
    assert output_error(cp, r.out, ref, 0) <= REL_TOL_BF16


@pytest.mark.parametrize("offset", [8.0, -8.0])
def test_layernorm_fold_holds_for_rows_whose_mean_is_several_times_their_spread(cp, offset):
    """The fold's variance is E[x^2] - mean^2 in fp32 (the statistics are sums): rows of FC2's output whose mean is
    ~5.7 times their spread (offset 8 against a spread of ~1.4) still match the fp32 reference (which centres
    first). Where it stops holding is measured by `bench/hw/chain_probe.py --fold-mean` (docs/hardware.md)."""
    from ctahw.device import REL_TOL_BF16, output_error

    x, res, ws, gamma, beta = _fold_inputs(cp, 1024, 1024, 3584)
    r, data = _fold_pair(cp, 1024, 1024, 3584, data=(x, _offset_rows(cp, res, offset), ws, gamma, beta))
    _runs(r, poison=True)
    assert output_error(cp, r.out, _fold_reference(cp, *data), 0) <= REL_TOL_BF16


def test_layernorm_fold_needs_its_row_statistics(cp):
    """The row statistics are the fold's: after a run this epoch's buffer holds every row's sum and sum of squares of
    FC2's output and the other buffer is zero (the reader cleared it); FC2 run without adding them (op residual, set
    behind the runner's back) gives a wrong output; a stalled FC2 row-block ends in a reported timeout."""
    from ctahw.chain import RESIDUAL_CODE
    from ctahw.device import REL_TOL_BF16, bf16_bits_to_f32, output_error
    from ctahw.runner import ProtocolError

    r, data = _fold_pair(cp, 1024, 1024, 3584, timeout_ns=50_000_000)
    x, res, ws = data[:3]
    ref = _fold_reference(cp, *data)
    y = bf16_bits_to_f32(res, cp) + bf16_bits_to_f32(x, cp) @ bf16_bits_to_f32(ws[0], cp).T
    for _ in range(2):
        parity = r.epoch % 2
        _runs(r)
        stats = r.gpus[1].stats
        assert float(cp.abs(stats[1 - parity]).max()) == 0.0
        for got, want in ((stats[parity][0], y.sum(axis=1)), (stats[parity][1], (y * y).sum(axis=1))):
            assert float(cp.abs(got - want).max() / cp.abs(want).max()) < 1e-3
    assert output_error(cp, r.out, ref, 0) <= REL_TOL_BF16
    r.gpus[0].op = RESIDUAL_CODE  # FC2 adds the residual but no row statistics
    r.load_kernels()
    _runs(r, poison=True)
    assert output_error(cp, r.out, ref, 0) > REL_TOL_BF16
    s, _ = _fold_pair(cp, 1024, 1024, 3584, timeout_ns=50_000_000)
    s.launch(stall_row=0)
    s.synchronize()
    with pytest.raises(ProtocolError, match="wait timeout"):
        s.check_errors()


def test_layernorm_fold_on_two_gpus_matches_fp32(cp):
    """The fold across NVLink: FC2 on GPU 0 adds its row statistics into GPU 1's memory (red.relaxed.sys), FC1 on GPU 1
    reads them; 100 back-to-back runs, then correct."""
    from ctahw.device import REL_TOL_BF16, enable_peer_access, gpus, output_error

    if len(gpus()) < 2:
        pytest.skip("needs 2 GPUs (the fold's one-GPU check runs above)")
    enable_peer_access([0, 1])
    r, data = _fold_pair(cp, 2048, 2048, 4096, devices=(0, 1))
    _runs(r, 100)
    _runs(r, poison=True)
    with cp.cuda.Device(0):
        assert output_error(cp, r.out, _fold_reference(cp, *data), 0) <= REL_TOL_BF16
