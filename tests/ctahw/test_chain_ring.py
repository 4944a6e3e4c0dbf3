"""The CPU side of the chain kernel on a ring (ctahw.chain: layer l on GPU l mod G, one kernel per GPU): the wiring
of input slots, outputs and counters (:func:`ring_layout`), the descriptors, the measured trace's parsing, and the
experiment rows it answers. The kernels themselves: tests/hw/test_hw_chain.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ctahw.chain import (DESC_FIELDS, chain_descriptor, chain_kernels, chain_slots, kernel_shape, output_place,
                         parse_chain_trace, ring_layout, slot_cols, wait_tiles)
from ctasim.engine import simulate
from ctasim.invariants import check_trace, find_violations
from ctasim.spec import Strategy, load_hardware, load_workload
from ctasim.strategies import ctapipe
from tests.helpers import chain_stamps

HW = load_hardware("h200-x2-calibrated")


def _wl(m: int, layers: int, h: int = 1024):
    wl = load_workload("chain2-16384")
    return dataclasses.replace(wl, layers=(dataclasses.replace(wl.layers[0], m=m, k=h, n=h),) * layers)


def _ring(m: int = 512, layers: int = 4, gpus: int = 2, h: int = 1024):
    return ctapipe.build_ring(Strategy(kind="ctapipe", gpus=gpus), _wl(m, layers, h), HW, f"m={m}")


def _run_layout(plan, layout, x, ws):
    """What the kernels compute when wired by ``layout``, in numpy: per GPU its input slots and counters; each
    kernel's local layer j (in the global order of layers) waits on its own counter set j, which must be complete
    (every row-block signalled by the layer before), reads its slot j and writes / signals the next GPU's
    slot j + s0. Returns the slots; AssertionError where a layer would read an input nobody completed."""
    ks = chain_kernels(plan)
    S, G = chain_slots(plan), len(ks)
    m, h = x.shape
    slots = [np.full((S, m, h), np.nan) for _ in range(G)]
    counts = [np.zeros(S, dtype=int) for _ in range(G)]  # row-block counter sets (a whole set per layer here)
    slots[0][0] = x
    for layer in range(len(ws)):
        g, j = layer % G, layer // G
        lay = layout[g]
        if layer > 0:
            assert counts[g][j] == 1, f"layer {layer} on GPU {g} waits on counter set {j}, signalled {counts[g][j]}x"
        t, s = lay["to"], j + lay["slot"]
        slots[t][s] = slots[g][j] @ ws[layer].T
        counts[t][s] += 1
    return slots


@pytest.mark.parametrize("layers,gpus", [(4, 2), (3, 2), (8, 2), (6, 3), (2, 1), (5, 1)])
def test_ring_layout_computes_the_chain(layers, gpus):
    plan = _ring(256, layers, gpus) if gpus > 1 else ctapipe.build_chain(Strategy(kind="ctapipe", gpus=1),
                                                                            _wl(256, layers), HW, "m=256")
    rng = np.random.default_rng(layers * 10 + gpus)
    x = rng.standard_normal((4, 8))
    ws = [rng.standard_normal((8, 8)) / 3 for _ in range(layers)]
    slots = _run_layout(plan, ring_layout(plan), x, ws)
    ref = x
    for w in ws:
        ref = ref @ w.T
    g, s = output_place(plan)
    np.testing.assert_allclose(slots[g][s], ref, rtol=1e-12)


def test_a_miswired_ring_is_caught():
    # the GPU that wraps around to GPU 0 writing slot j instead of j + 1: layer 2 would read layer 1's output
    # from a slot nobody wrote, or overwrite the chain's input -- the check above must see it
    plan = _ring(256, 4, 2)
    bad = [dict(p, slot=0) for p in ring_layout(plan)]
    x, ws = np.ones((2, 2)), [np.eye(2) * (i + 2) for i in range(4)]
    with pytest.raises(AssertionError):
        slots = _run_layout(plan, bad, x, ws)
        g, s = output_place(plan)
        np.testing.assert_allclose(slots[g][s], x * 120)


def test_ring_layout_and_descriptor_fields():
    plan = _ring(512, 5, 2)
    lay = ring_layout(plan)
    assert [(p["gpu"], p["to"], p["slot"], p["layers"], p["first_layer"]) for p in lay] == [(0, 1, 0, 3, 0),
                                                                                          (1, 0, 1, 2, 1)]
    assert chain_slots(plan) == 4 and output_place(plan) == (1, 2)  # layer 4 (GPU 0, local 2) writes GPU 1 slot 2
    assert slot_cols(plan) == [[1024] * 4] * 2  # square: every slot H columns, used or not (one [S, M, H] array)
    k1 = chain_kernels(plan)[1]
    v = dict(zip(DESC_FIELDS, chain_descriptor(k1, {"signals": 9}, grid=16, epoch=1, timeout_ns=5).tolist()))
    assert (v["first_layer"], v["layer_stride"], v["sys_scope"], v["layers"], v["signals"]) == (1, 2, 1, 2, 9)
    one = ctapipe.build_chain(Strategy(kind="ctapipe", gpus=1), _wl(512, 3), HW, "m=512")
    v = dict(zip(DESC_FIELDS, chain_descriptor(one.kernels()[0], {}, grid=16, epoch=1, timeout_ns=5).tolist()))
    assert (v["first_layer"], v["layer_stride"], v["sys_scope"]) == (0, 1, 0)
    assert ring_layout(one) == [{"gpu": 0, "to": 0, "slot": 1, "layers": 3, "first_layer": 0, "stride": 1}]


def test_measured_ring_trace_is_parsed_on_gpu0s_clock_and_checked():
    plan = _ring(512, 4, 2)
    sim = simulate(plan, HW)
    check_trace(sim, plan)
    ks = chain_kernels(plan)
    offset = 123_456_789  # GPU 1's clock runs ahead of GPU 0's
    stamps = [chain_stamps(sim, ks[0]), chain_stamps(sim, ks[1], 10**18 + offset)]
    tr = parse_chain_trace(plan, stamps, {"run": 0}, {1: float(offset)})
    assert len(tr.tiles) == sum(k.tiles for k in ks) and tr.meta["gpus"] == 2
    assert sorted(tr.tiles.layer.unique().tolist()) == [0, 1, 2, 3]
    check_trace(tr, plan, tol_ns=32.0)
    start = sim.tiles.t_start.min()
    np.testing.assert_allclose(np.sort(tr.tiles.t_signal.to_numpy()), np.sort(sim.tiles.t_signal.to_numpy()) - start,
                               atol=1.0)
    # without the offset GPU 1's tiles land 123 ms late: its layer-2 waiters (GPU 0) then start before their inputs
    assert any(v.check == "deps_visible" for v in find_violations(parse_chain_trace(plan, stamps), plan, 32.0))


def test_reg12_ring_is_planned_on_two_gpus_and_refused_on_one():
    from ctahw.experiment import plan_runs
    from ctasim.cases import load_experiment

    exp = load_experiment("reg12-ring")
    two = plan_runs(exp, gpus=2)
    assert (two["status"] == "planned").all()
    one = plan_runs(exp, gpus=1)
    ring = one[one["strategy"] == "ring"]
    assert len(ring) == 4 and (ring["status"] == "skipped").all()
    assert ring["reason"].str.contains("needs 2 GPUs").all()


def test_a_ring_of_unequal_layers_is_refused():
    from ctahw.experiment import reason_for
    from ctasim.cases import expand, load_experiment

    exp = load_experiment("reg-mlp")
    case = next(iter(expand(exp)))
    st = Strategy(kind="ctapipe", gpus=2)
    wl3 = dataclasses.replace(case.workload, layers=case.workload.layers + case.workload.layers[-1:])
    why = reason_for(st, dataclasses.replace(case, workload=wl3), 2)
    assert why and "one square shape" in why


def test_placement_ring_runs_a_two_layer_chain_as_the_persistent_pair():
    from ctasim.spec import SpecError, strategy_from_dict
    from ctasim.strategies import build_plans

    st = strategy_from_dict({"kind": "ctapipe", "gpus": 2, "placement": "ring"}, "t", "")
    plan = build_plans(st, _wl(1024, 2), HW, 2, "m=1024")[0]
    ks = chain_kernels(plan)
    assert [(k.gpu, k.layer, k.chain_layers, k.chain_stride) for k in ks] == [(0, 0, 1, 2), (1, 1, 1, 2)]
    assert [(p["to"], p["slot"]) for p in ring_layout(plan)] == [(1, 0), (0, 1)] and output_place(plan) == (0, 1)
    check_trace(simulate(plan, HW), plan)
    # without the placement the same strategy is variant (a)'s pair (no chain kernel)
    pair = build_plans(strategy_from_dict({"kind": "ctapipe", "gpus": 2}, "t", ""), _wl(1024, 2), HW, 2, "m")[0]
    assert all(k.source != "chain" for k in pair.kernels())
    for bad, msg in (({"gpus": 1, "placement": "ring"}, "gpus >= 2"), ({"gpus": 2, "placement": "tree"}, "one of"),
                     ({"gpus": 2, "placement": "ring", "variant": "cutlass_ctapipe"}, "variant")):
        with pytest.raises(SpecError, match=msg):
            strategy_from_dict({"kind": "ctapipe", **bad}, "t", "")


def test_reg15_plans_the_chain_pair_beside_variant_a():
    from ctahw.experiment import _chain_rows, plan_runs
    from ctasim.cases import load_experiment

    exp = load_experiment("reg15-chain-pair")
    df = plan_runs(exp, gpus=2)
    assert (df["status"] == "planned").all()
    chain = set(_chain_rows(exp, df))
    assert set(df.loc[sorted(chain), "strategy"]) == {"chain-pair"}  # the chain kernels; w21g4 through its session


def test_chain_streams_give_each_kernel_of_a_device_its_own_gated_stream():
    from types import SimpleNamespace

    from ctahw.baselines import Timed
    from ctahw.experiment import chain_streams
    from tests.helpers import FakeCudaDevice

    made = []

    class Stream:
        def __init__(self):
            made.append(self)

    t = object.__new__(Timed)  # the stream bookkeeping of Timed, without CuPy
    t.cp = SimpleNamespace(cuda=SimpleNamespace(Device=FakeCudaDevice, Stream=Stream))
    t.compute, t.copy, t.more = {0: "c0", 1: "c1"}, {0: "x0", 1: "x1"}, {0: [], 1: []}
    assert chain_streams(t, [0, 1]) == ["c0", "c1"]
    assert chain_streams(t, [0, 0]) == ["c0", "x0"]  # two kernels of a ring on one device run concurrently
    assert chain_streams(t, [0]) == ["c0"] and made == []
    four = chain_streams(t, [0, 0, 0, 0, 1])  # a 4-layer ring's kernels on device 0: two more streams there
    assert four[:2] == ["c0", "x0"] and four[4] == "c1" and four[2:4] == made and len(set(map(id, made))) == 2
    assert chain_streams(t, [0, 0, 0, 0]) == four[:4] and len(made) == 2  # made once, then reused
    assert t._streams(0) == ("c0", "x0", *made) and t._streams(1) == ("c1", "x1")  # every one gated by a run's start


def _mlp(m: int = 1024, h: int = 1024, ffn: int = 3584):
    """The MLP block (GeLU, residual, LayerNorm) at a small size."""
    wl = load_workload("mlp-block")
    a, b = wl.layers
    return dataclasses.replace(wl, layers=(dataclasses.replace(a, m=m, k=h, n=ffn),
                                           dataclasses.replace(b, m=m, k=ffn, n=h)))


def test_a_ring_of_one_layer_per_gpu_runs_the_mlp_block():
    from ctasim.strategies.ctapipe import ring_reason

    wl = _mlp()
    assert ring_reason(wl, 2) is None
    st = Strategy(kind="ctapipe", gpus=2, placement="ring")
    plan = ctapipe.build_ring(st, wl, HW, "m=1024")
    ks = chain_kernels(plan)
    assert [(k.tiles_m, k.tiles_n) for k in ks] == [(8, 14), (8, 4)]
    assert [kernel_shape(k) for k in ks] == [(1024, 3584, 1024), (1024, 1024, 3584)]
    # GPU 0: the input (K = 1024) and the output slot (N = 1024); GPU 1: layer 1's input (3584 columns)
    assert slot_cols(plan) == [[1024, 1024], [3584, 0]]
    # FC2 waits for FC1's 14 column tiles of a row-block, not its own 4 (and FC1, the first layer, waits on nothing)
    assert wait_tiles(plan) == [4, 14]
    tr = simulate(plan, HW)
    check_trace(tr, plan)
    norm = [o for o in plan.ops if getattr(o, "kind", "") == "rowwise" or "layernorm" in o.name.lower()]
    assert norm and norm[0].gpu == 0  # after the last layer, where its output lands
    # what a ring cannot run: an op between other layers' row-wise op, an unfused epilogue, shapes that do not chain
    a, b = wl.layers
    bad = {"rowwise": (dataclasses.replace(a, rowwise="layernorm"), b),
           "unfused": (dataclasses.replace(a, epilogue_fused=False), b),
           "reads K": (a, dataclasses.replace(b, k=2048)),
           "two ops": (dataclasses.replace(a, epilogue=("gelu", "relu")), b)}
    for what, layers in bad.items():
        why = ring_reason(dataclasses.replace(wl, layers=layers), 2)
        assert why, what
    # more layers than GPUs: one square shape only (the batched chain kernel)
    assert "one square shape" in ring_reason(dataclasses.replace(wl, layers=(a, b, a)), 2)


def test_epilogue_codes_follow_the_library_s_names():
    from types import SimpleNamespace

    from ctahw.chain import epilogue_codes

    lib = SimpleNamespace(ctahw_chain_epilogue_names=lambda: b"none,gelu,silu,relu,residual,")
    plan = ctapipe.build_ring(Strategy(kind="ctapipe", gpus=2, placement="ring"), _mlp(), HW, "m")
    ks = chain_kernels(plan)
    assert epilogue_codes(lib, ks, {0: "gelu", 1: "residual"}, "tickets", True) == [1, 4]
    assert epilogue_codes(lib, ks, {}, "tickets", False) == [0, 0]
    with pytest.raises(ValueError, match="no residual operand"):
        epilogue_codes(lib, ks, {1: "residual"}, "tickets", False)
    with pytest.raises(ValueError, match="no layer adds it"):
        epilogue_codes(lib, ks, {0: "gelu"}, "tickets", True)
    with pytest.raises(ValueError, match="tickets design only"):
        epilogue_codes(lib, ks, {0: "gelu"}, "static", False)
    with pytest.raises(ValueError, match="no fused epilogue op 'swish'"):
        epilogue_codes(lib, ks, {0: "swish"}, "tickets", False)
    ring4 = chain_kernels(_ring(512, 4, 2))
    with pytest.raises(ValueError, match="one op for all its layers"):
        epilogue_codes(lib, ring4, {0: "relu"}, "tickets", False)
    renamed = SimpleNamespace(ctahw_chain_epilogue_names=lambda: b"none,gelu,silu,relu,add,")
    with pytest.raises(RuntimeError, match="not 'residual'"):
        epilogue_codes(renamed, ks, {}, "tickets", False)


def test_invariants_count_a_row_block_by_its_own_layer_s_width():
    """A ring pair of different widths (FC1: 14 column tiles, FC2: 4): a layer-1 tile that starts after only part of
    its row-block of layer 0 (here: the first 4 of its 14 tiles, the narrower layer's width) is a violation."""
    wl = _mlp()
    plan = ctapipe.build_ring(Strategy(kind="ctapipe", gpus=2, placement="ring"), wl, HW, "m")
    tr = simulate(plan, HW)
    check_trace(tr, plan)
    t = tr.tiles
    short = t[~((t.layer == 0) & (t.tile_m == 0) & (t.tile_n >= 4))]  # row-block 0 of layer 0: 10 tiles dropped
    bad = dataclasses.replace(tr, tiles=short.reset_index(drop=True))
    assert any(v.check == "deps_visible" for v in find_violations(bad, plan, 32.0))


def test_a_ring_of_mixed_widths_passes_the_invariants():
    """Three layers on three GPUs, 14, 4 and 14 column tiles: layer 2 waits for a row-block of layer 1's 4 tiles, not
    of the first kernel's 14 (a correct schedule is no violation)."""
    hw = load_hardware("h200-x8")
    a = dataclasses.replace(load_workload("mlp-block").layers[0], m=1024, epilogue=(), rowwise="")
    wide, narrow = dataclasses.replace(a, k=1024, n=3584), dataclasses.replace(a, k=3584, n=1024)
    wl = dataclasses.replace(load_workload("mlp-block"), layers=(wide, narrow, wide))
    plan = ctapipe.build_ring(Strategy(kind="ctapipe", gpus=3, placement="ring"), wl, hw, "m")
    assert [k.tiles_n for k in chain_kernels(plan)] == [14, 4, 14]
    tr = simulate(plan, hw)
    assert find_violations(tr, plan, 32.0) == []
    t = tr.tiles
    short = t[~((t.layer == 1) & (t.tile_m == 0) & (t.tile_n == 3))]  # one of layer 1's 4 tiles of row-block 0 gone
    assert any(v.check == "deps_visible" for v in find_violations(dataclasses.replace(tr, tiles=short), plan, 32.0))


def test_layernorm_fold_ops_come_as_a_pair():
    """residual_stats on layer l and lnfold_gelu on layer l + 1 (the reader of its row statistics) only together, with
    the residual operand and the LayerNorm parameters each given exactly when an op uses them."""
    from types import SimpleNamespace

    from ctahw.chain import epilogue_codes

    lib = SimpleNamespace(
        ctahw_chain_epilogue_names=lambda: b"none,gelu,silu,relu,residual,residual_stats,lnfold_gelu,")
    plan = ctapipe.build_ring(Strategy(kind="ctapipe", gpus=2, placement="ring"), _mlp(), HW, "m")
    ks = chain_kernels(plan)
    ops = {0: "residual_stats", 1: "lnfold_gelu"}
    assert epilogue_codes(lib, ks, ops, "tickets", True, True) == [5, 6]
    with pytest.raises(ValueError, match="layer 1 does not read them"):
        epilogue_codes(lib, ks, {0: "residual_stats", 1: "gelu"}, "tickets", True, False)
    with pytest.raises(ValueError, match="layer 0 does not add its row statistics"):
        epilogue_codes(lib, ks, {0: "gelu", 1: "lnfold_gelu"}, "tickets", False, True)
    with pytest.raises(ValueError, match="no residual operand"):
        epilogue_codes(lib, ks, ops, "tickets", False, True)
    with pytest.raises(ValueError, match="no LayerNorm parameters"):
        epilogue_codes(lib, ks, ops, "tickets", True, False)
    with pytest.raises(ValueError, match="no layer folds them"):
        epilogue_codes(lib, ks, {0: "gelu", 1: "residual"}, "tickets", True, True)
    ring4 = chain_kernels(_ring(512, 4, 2))
    with pytest.raises(ValueError, match="one-layer kernel only"):
        epilogue_codes(lib, ring4, {0: "residual_stats", 2: "residual_stats"}, "tickets", True, False)


def _fold_epilogue(acc, stats_sum, stats_sq, c1, c2, n, eps):
    """What op lnfold_gelu computes before its GeLU (the kernel's LnFoldGelu, in float64)."""
    mean = stats_sum[:, None] / n
    var = np.maximum(stats_sq[:, None] / n - mean * mean, 0.0)
    return (acc - mean * c1[None, :]) / np.sqrt(var + eps) + c2[None, :]


def test_layernorm_fold_is_layernorm_then_the_gemm():
    """LN(y) W^T (gamma, beta) equals the fold's epilogue applied to y W'^T with the row sums of y, to bf16 accuracy
    of W' = W diag(gamma); a fold that drops gamma from c1, puts gamma into c2 or forgets beta does not."""
    from ctahw.chain import NORM_EPS, layernorm_fold
    from ctahw.device import bf16_bits_to_f32, f32_to_bf16_bits

    rng = np.random.default_rng(3)
    m, k, n = 64, 512, 96
    y = (rng.standard_normal((m, k)) * 2 + 0.3).astype(np.float32)
    w_bits = f32_to_bf16_bits(rng.standard_normal((n, k)).astype(np.float32) / np.sqrt(k), np)
    gamma = (1 + 0.2 * rng.standard_normal(k)).astype(np.float32)
    beta = (0.2 * rng.standard_normal(k)).astype(np.float32)
    w = bf16_bits_to_f32(w_bits, np).astype(np.float64)
    mu = y.mean(axis=1, keepdims=True)
    ln = (y - mu) / np.sqrt(y.var(axis=1, keepdims=True) + NORM_EPS) * gamma + beta
    ref = ln @ w.T
    folded, c1, c2 = layernorm_fold(w_bits, gamma, beta, np)
    assert folded.dtype == np.uint16 and c1.shape == c2.shape == (n,)
    acc = y.astype(np.float64) @ bf16_bits_to_f32(folded, np).astype(np.float64).T
    s1, s2 = y.astype(np.float64).sum(axis=1), (y.astype(np.float64) ** 2).sum(axis=1)

    def err(c1_, c2_):
        out = _fold_epilogue(acc, s1, s2, np.asarray(c1_, np.float64), np.asarray(c2_, np.float64), k, NORM_EPS)
        return np.abs(out - ref).max() / np.abs(ref).max()

    good = err(c1, c2)
    assert good < 5e-3
    for wrong in (err(w.sum(axis=1), c2),  # c1 without gamma
                  err(c1, (w * gamma).dot(beta)),  # gamma in c2 as well
                  err(c1, np.zeros(n))):  # beta forgotten
        assert wrong > 5 * good and wrong > 1e-2
    with pytest.raises(ValueError, match="gamma and beta of that length"):
        layernorm_fold(w_bits, gamma[:-1], beta, np)


def test_the_kernel_source_lists_the_fold_ops_and_fields():
    """The fold's ops continue ctapipe_gemm.cuh's codes in the kernel source (names by position), and its descriptor
    fields are in the one list ctahw.chain reads."""
    import re

    from ctahw.chain import DESC_FIELDS, NORM_OPS, SOURCE

    src = SOURCE.read_text()
    ops = re.search(r"#define CTAHW_CHAIN_NORM_OPS\(X\) (.*)", src).group(1)
    assert re.findall(r"X\((\d+), (\w+)\)", ops) == [("5", NORM_OPS[0]), ("6", NORM_OPS[1])]
    assert {"stats_out", "stats_in", "stats_clear", "fold_c1", "fold_c2", "norm_cols"} <= set(DESC_FIELDS)


def test_the_fold_pair_s_reference_is_layernorm_between_the_gemms():
    """reference_fold_pair (what the GPU tests and chain_probe --fold check against) equals an independent float64
    computation of GeLU(LayerNorm(bf16(res + x W0^T)) W1^T); fold_pair_plan is FC2 then FC1 on a ring pair."""
    from math import erf, sqrt

    from ctahw.chain import NORM_EPS, chain_kernels, fold_pair_plan, kernel_shape, reference_fold_pair
    from ctahw.device import bf16_bits_to_f32, f32_to_bf16_bits

    rng = np.random.default_rng(5)
    m, h, f = 8, 64, 96
    x = f32_to_bf16_bits(rng.standard_normal((m, f)).astype(np.float32), np)
    res = f32_to_bf16_bits(rng.standard_normal((m, h)).astype(np.float32), np)
    ws = [f32_to_bf16_bits((rng.standard_normal(s) / np.sqrt(s[1])).astype(np.float32), np) for s in ((h, f), (f, h))]
    gamma = (1 + 0.2 * rng.standard_normal(h)).astype(np.float32)
    beta = (0.2 * rng.standard_normal(h)).astype(np.float32)
    d = lambda b: bf16_bits_to_f32(b, np).astype(np.float64)  # noqa: E731
    y = d(f32_to_bf16_bits((d(res) + d(x) @ d(ws[0]).T).astype(np.float32), np))
    ln = (y - y.mean(1, keepdims=True)) / np.sqrt(y.var(1, keepdims=True) + NORM_EPS) * gamma + beta
    z = ln @ d(ws[1]).T
    want = 0.5 * z * (1 + np.vectorize(erf)(z / sqrt(2)))
    got = reference_fold_pair(np, x, res, ws, gamma, beta)
    assert np.abs(got - want).max() < 1e-4 * np.abs(want).max()
    no_beta = reference_fold_pair(np, x, res, ws, gamma, np.zeros(h, np.float32))
    assert np.abs(no_beta - want).max() > 1e-2 * np.abs(want).max()  # beta is applied
    plan = fold_pair_plan(1024, 2048, 4096)
    assert [kernel_shape(k) for k in chain_kernels(plan)] == [(1024, 2048, 4096), (1024, 4096, 2048)]


# -- a shared device (experiment.shared_device): a ring's kernels all on device 0, the one-GPU test of plan 40


def test_a_shared_device_plans_a_rings_kernels_on_one_gpu_and_refuses_other_strategies(tmp_path):
    from ctahw.experiment import plan_runs
    from ctasim.cases import load_experiment
    from ctasim.spec import SpecError

    exp = load_experiment("reg40-ring-shared-l4")
    df = plan_runs(exp, gpus=1)
    assert (df["status"] == "planned").all() and (df["gpus"] == 4).all() and len(df) == 8
    # the same rings without shared_device need their four GPUs
    alone = plan_runs(dataclasses.replace(exp, shared_device=False), gpus=1)
    assert (alone["status"] == "skipped").all() and alone["reason"].str.contains("needs 4 GPUs").all()
    bad = tmp_path / "bad.toml"
    bad.write_text('[experiment]\nname = "b"\nhardware = "h200-x1-shared4"\nworkload = "chain2-16384"\n'
                   'shared_device = true\n[[experiment.strategy]]\nkind = "sequential"\n')
    with pytest.raises(SpecError, match="shared device runs rings of chain kernels only"):
        load_experiment(str(bad))


def test_ctahw_run_puts_every_kernel_of_a_shared_ring_on_device_0(monkeypatch):
    import ctahw.device
    import ctahw.experiment as E
    from ctasim.cases import load_experiment

    seen = []

    class Machines:
        def __init__(self, cfg, log):
            pass

        def get(self, gpus):
            seen.append(("get", gpus))
            return "timed", None

    def chain_case(exp, case, st, cfg, timed, log, traces, devices=None):
        seen.append((case.label, st.label, devices))
        return {"makespan_ms": 1.0, "rel_err": 0.0, "ok": True}

    monkeypatch.setattr(ctahw.device, "gpus", lambda: [0])
    monkeypatch.setattr(E, "_Machines", Machines)
    monkeypatch.setattr(E, "chain_case", chain_case)
    monkeypatch.setattr(E, "_free", lambda n: None)
    df = E.run(load_experiment("reg40-ring-shared-l3"), E.RunConfig(), log=lambda s: None)
    assert (df["status"] == "ok").all() and len(df) == 8
    rows = [s for s in seen if s[0] != "get"]
    assert len(rows) == 8 and all(d == [0, 0, 0] for *_, d in rows)  # three plan GPUs, one device
    assert all(s == ("get", 1) for s in seen if s[0] == "get")  # the harness of one GPU


def test_a_shared_device_takes_only_rings_of_its_profiles_kernel_count(tmp_path):
    from ctasim.cases import load_experiment
    from ctasim.spec import SpecError

    from ctasim.spec import SPECS_DIR

    text = (SPECS_DIR / "experiments/reg40-ring-shared-l4.toml").read_text()
    (tmp_path / "l3.toml").write_text(text.replace("layers = [4]", "layers = [3]"))
    with pytest.raises(SpecError, match="a ring of 3 kernels, but 'h200-x1-shared4' is one share of a device split "
                                        "between 4"):
        load_experiment(str(tmp_path / "l3.toml"))
    (tmp_path / "x8.toml").write_text(text.replace('"h200-x1-shared4"', '"h200-x8-mechanism"'))
    with pytest.raises(SpecError, match="a shared device needs a profile of one share"):
        load_experiment(str(tmp_path / "x8.toml"))
