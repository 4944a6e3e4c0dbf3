"""The strategies' plans, op by op: what `python bench/mutation.py strategies.*` showed no test asserted.

Every figure is worked out by hand on the 4-SM profile of tests/helpers.py (1000 ns per 128x128 tile at K = 128,
HBM 1000 GB/s, kernel gap 10 ns, launch 100 ns, all-reduce bus 50 GB/s + 7 ns a step). Placement checks are also
called on hand-built workloads that spec validation would refuse (a K that is not the previous layer's N): the
checks take any workload, so each branch is tested on the input that reaches it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ctasim import costs
from ctasim.plan import Collective, Kernel, MemoryPass, Plan, Transfer
from ctasim.spec import Layer, Strategy, Workload
from ctasim.strategies import build_plans, check_placement, gpus_needed
from ctasim.strategies import common, ctapipe, hybrid, tp
from tests.helpers import TINY, chain, tiny_hw


def _ops(plan: Plan, cls) -> list:
    return [op for op in plan.ops if isinstance(op, cls)]


def _wl(*layers: Layer) -> Workload:
    return Workload("hand", "bf16", tuple(layers))


def _rowwise_ns(rows: int, cols: int) -> float:
    return 2.0 * rows * cols * 2 / 1000.0  # one read + one write of bf16 at 1000 GB/s


COLUMN_2x2 = [0, 2, 1, 3]  # column raster of a 2 x 2 grid


# ----------------------------------------------------------------------------------------------- common
def test_divides_needs_whole_tiles_per_part():
    assert common.divides(512, 4, 128)
    assert not common.divides(512, 3, 128)  # 512 % 3
    assert not common.divides(512, 8, 128)  # 64-row parts
    assert not common.divides(512, 0, 128)


def test_add_gemm_defaults_and_a_kernel_variant():
    hw = tiny_hw()
    two = dataclasses.replace(hw, kernel_configs=hw.kernel_configs + (
        dataclasses.replace(hw.kernel_configs[0], kernel="k2", sm_tflops=2 * hw.kernel_configs[0].sm_tflops,
                            kernel_fixed_ns=55.0),))
    wl = chain(1, m=256, n=256)
    plan = Plan("s", "c", 1)
    k = common.add_gemm(plan, two, wl, 0, wl.layers[0], 3)
    assert (k.start_ns, k.deps, k.row_offset, k.source, k.persistent, k.kernel) == (0.0, (), 0, "static", True, "")
    assert (k.name, k.gpu, k.tile_ns, k.fixed_ns) == ("gemm L0 gpu3", 3, 1000.0, 0.0)
    k2 = common.add_gemm(plan, two, wl, 0, wl.layers[0], 0, kernel="k2")
    assert (k2.kernel, k2.tile_ns, k2.fixed_ns) == ("k2", 500.0, 55.0)


def test_add_gemm_residual_epilogue_reads_a_tile_at_the_slots_share_of_hbm():
    hw = tiny_hw()
    wl = chain(1, m=256, n=256, epilogue=("residual",))
    k = common.add_gemm(Plan("s", "c", 1), hw, wl, 0, wl.layers[0], 0)
    # 1000 ns + 128 x 128 x 2 bytes at 1000 / 4 GB/s
    assert k.tile_ns == pytest.approx(1000.0 + 32768 / 250.0)


def test_unfused_epilogue_of_two_ops_is_refused_by_the_strategies_without_a_pass():
    wl = chain(2, epilogue=("gelu", "residual"), epilogue_fused=False)
    assert check_placement(Strategy("tp", tp_degree=2), wl, tiny_hw(), 2) == (
        "layer 0: tp runs fused epilogues only (epilogue_fused = false puts gelu+residual in a kernel of its own; "
        "modelled for sequential and microbatch)")


# ----------------------------------------------------------------------------------------------- sequential
def test_sequential_raster_override_and_rowwise_passes():
    hw = tiny_hw()
    wl = chain(2, m=256, n=256, rowwise="layernorm")
    (plan,) = build_plans(Strategy("sequential", raster="column"), wl, hw, 1, "c")
    g0, n0, g1, n1 = plan.ops
    assert [type(op) for op in plan.ops] == [Kernel, MemoryPass, Kernel, MemoryPass]
    assert g0.order.tolist() == g1.order.tolist() == COLUMN_2x2
    assert g1.deps == ((n0.id, 10.0),)
    for i, (gemm, norm) in enumerate(((g0, n0), (g1, n1))):
        assert (norm.name, norm.gpu, norm.deps) == (f"layernorm L{i} gpu0", 0, ((gemm.id, 10.0),))
        assert norm.ns == pytest.approx(_rowwise_ns(256, 256))
    (row,) = build_plans(Strategy("sequential"), wl, hw, 1, "c")
    assert row.ops[0].order.tolist() == [0, 1, 2, 3]


def test_sequential_unfused_epilogue_pass_of_two_ops():
    hw = tiny_hw()
    wl = chain(1, m=256, n=256, epilogue=("gelu", "residual"), epilogue_fused=False)
    (plan,) = build_plans(Strategy("sequential"), wl, hw, 1, "c")
    gemm, ep = plan.ops
    assert (ep.name, ep.gpu, ep.deps) == ("gelu+residual L0 gpu0", 0, ((gemm.id, 10.0),))
    # m x n read, m x n residual read, m x n written
    assert ep.ns == pytest.approx(3 * 256 * 256 * 2 / 1000.0)
    assert gemm.tile_ns == 1000.0  # the GEMM's epilogue only stores


# ----------------------------------------------------------------------------------------------- microbatch
def test_microbatch_message_names_the_rows_and_tile_of_a_layer_that_does_not_cut():
    hw = tiny_hw()
    assert check_placement(Strategy("microbatch", chunks=(3, 8)), chain(2, m=512), hw, 2) == (
        "no chunk count in (3, 8) cuts M=512 into whole 128-row tiles (layer 0)")
    assert check_placement(Strategy("microbatch", chunks=(3,)), chain(1, m=512), hw, 1) == (
        "no chunk count in (3,) cuts M=512 into whole 128-row tiles (layer 0)")  # one layer: no layer 1 to read
    tall = _wl(Layer(512, 128, 128, 256, 128), Layer(512, 128, 128, 128, 128))
    # 4 chunks: 128-row parts, not whole 256-row tiles of layer 0
    assert check_placement(Strategy("microbatch", chunks=(4,)), tall, hw, 2) == (
        "no chunk count in (4,) cuts M=512 into whole 256-row tiles (layer 0)")


def test_microbatch_message_names_the_layer_whose_tiles_do_not_fit():
    """(It named layer 0's tile height even when only a later layer's tiles did not fit.)"""
    hw = tiny_hw()
    wl = _wl(Layer(512, 128, 128, 128, 128), Layer(512, 128, 128, 256, 128))  # 4 chunks: layer 1's 256-row tiles
    msg = check_placement(Strategy("microbatch", chunks=(4,)), wl, hw, 2)
    assert msg == "no chunk count in (4,) cuts M=512 into whole 256-row tiles (layer 1)"


def test_microbatch_raster_override_epilogue_pass_and_rowwise_per_chunk():
    hw = tiny_hw()
    wl = chain(2, m=512, n=256, rowwise="rmsnorm", epilogue=("gelu",), epilogue_fused=False)
    (plan,) = build_plans(Strategy("microbatch", chunks=(2,), raster="column"), wl, hw, 2, "c")
    names = [op.name for op in plan.ops]
    assert names == [
        "gemm L0 chunk0", "gelu L0 gpu0", "rmsnorm L0 gpu0", "copy L0 chunk0 gpu0->gpu1",
        "gemm L1 chunk0", "gelu L1 gpu1", "rmsnorm L1 gpu1",
        "gemm L0 chunk1", "gelu L0 gpu0", "rmsnorm L0 gpu0", "copy L0 chunk1 gpu0->gpu1",
        "gemm L1 chunk1", "gelu L1 gpu1", "rmsnorm L1 gpu1",
    ]
    ops = plan.ops
    for k in _ops(plan, Kernel):
        assert k.order.tolist() == COLUMN_2x2  # 256-row chunks: 2 x 2 tiles
    for gemm, ep, norm in ((0, 1, 2), (4, 5, 6), (7, 8, 9), (11, 12, 13)):
        gpu = ops[gemm].gpu
        assert (ops[ep].gpu, ops[ep].deps) == (gpu, ((gemm, 10.0),))
        assert (ops[norm].gpu, ops[norm].deps) == (gpu, ((ep, 10.0),))
        assert ops[ep].ns == pytest.approx(2 * 256 * 256 * 2 / 1000.0)
        assert ops[norm].ns == pytest.approx(_rowwise_ns(256, 256))
    # the copy waits for the row-wise pass; the next chunk's GEMM for the pass on its stream
    assert ops[3].deps == ((2, 0.0),) and ops[10].deps == ((9, 0.0),)
    assert ops[7].deps == ((2, 10.0),)
    assert ops[11].deps == ((6, 10.0), (10, 30.0))
    assert [op.gpu for op in _ops(plan, Kernel)] == [0, 1, 0, 1]


# ----------------------------------------------------------------------------------------------- tp
def test_tp_degree_0_takes_every_gpu_of_the_case():
    hw = tiny_hw()
    assert gpus_needed(Strategy("tp"), chain(2), 4) == 4
    assert check_placement(Strategy("tp"), chain(2, n=256), hw, 4) == (
        "layer 0: N=256 does not split into 4 column slices of whole 128-wide tiles")
    (plan,) = build_plans(Strategy("tp"), chain(2, n=256), hw, 2, "c")
    assert plan.gpus == 2 and plan.params == {"tp_degree": 2}
    assert [k.gpu for k in _ops(plan, Kernel)] == [0, 1, 0, 1]


def test_tp_check_column_layers_are_the_even_ones():
    hw = tiny_hw()
    # layer 2 is column-parallel again: N=128 into 2 slices is 64 columns
    wl = _wl(Layer(256, 128, 256, 128, 128), Layer(256, 256, 128, 128, 128), Layer(256, 128, 128, 128, 128))
    assert check_placement(Strategy("tp", tp_degree=2), wl, hw, 2) == (
        "layer 2: N=128 does not split into 2 column slices of whole 128-wide tiles")


def test_tp_check_row_layers_are_the_odd_ones():
    hw = tiny_hw()
    # 3-way: every N = 384 splits into 3 column slices; layer 3's K = 256 does not split into 3 rows
    ok = Layer(256, 384, 384, 128, 128)
    wl = _wl(Layer(256, 384, 384, 128, 128), ok, ok, Layer(256, 256, 384, 128, 128))
    assert check_placement(Strategy("tp", tp_degree=3), wl, hw, 3) == "layer 3: K=256 does not split into 3 row slices"
    assert check_placement(Strategy("tp", tp_degree=3), _wl(ok, ok, ok, ok), hw, 3) is None


def test_tp_rowwise_inside_a_pair_is_refused_after_the_last_unpaired_layer_allowed():
    hw = tiny_hw()
    plain = Layer(256, 256, 256, 128, 128)
    normed = dataclasses.replace(plain, rowwise="layernorm")
    s = Strategy("tp", tp_degree=2)
    assert check_placement(s, _wl(plain, plain, normed, plain), hw, 2) == (
        "layer 2: a row-wise op (layernorm) between the column- and row-parallel layers of a tensor-parallel pair "
        "needs whole rows, which no GPU has there")
    assert check_placement(s, _wl(plain, plain, normed), hw, 2) is None  # layer 2 is unpaired: all-gathered
    assert check_placement(s, _wl(plain, normed, plain), hw, 2) is None  # after a pair's all-reduce


def test_tp_three_layers_pair_then_unpaired_column_layer_with_allgather():
    hw = tiny_hw()
    wl = chain(3, m=256, k=256, n=256)
    (plan,) = build_plans(Strategy("tp", tp_degree=2, raster="column"), wl, hw, 2, "c")
    kinds = [(type(op).__name__, op.name) for op in plan.ops]
    assert kinds == [
        ("Kernel", "gemm L0 gpu0 (column-parallel)"), ("Kernel", "gemm L0 gpu1 (column-parallel)"),
        ("Kernel", "gemm L1 gpu0 (row-parallel)"), ("Kernel", "gemm L1 gpu1 (row-parallel)"),
        ("Collective", "allreduce L1"),
        ("Kernel", "gemm L2 gpu0 (column-parallel)"), ("Kernel", "gemm L2 gpu1 (column-parallel)"),
        ("Collective", "allgather L2"),
    ]
    ops = plan.ops
    # column-parallel: N/2 = 128 columns (1 x ... tiles), row-parallel: the full N, K/2
    assert [(ops[i].tiles_m, ops[i].tiles_n, ops[i].tile_ns) for i in (0, 2, 5)] == [
        (2, 1, 2000.0), (2, 2, 1000.0), (2, 1, 2000.0)]
    assert ops[2].order.tolist() == COLUMN_2x2  # the strategy's raster, not the layer's row order
    assert ops[2].deps == ((0, 10.0),) and ops[3].deps == ((1, 10.0),)
    nbytes = 256.0 * 256 * 2
    ar = 2 / 2 * nbytes / 50.0 + 2 * 7.0  # ring all-reduce over 2 GPUs
    assert (ops[4].kind, ops[4].gpus, ops[4].nbytes, ops[4].deps) == ("allreduce", (0, 1), nbytes, ((2, 10.0), (3, 10.0)))
    assert ops[4].ns == pytest.approx(ar)
    assert ops[5].deps == ((4, 10.0),) and ops[6].deps == ((4, 10.0),)
    assert (ops[7].kind, ops[7].gpus, ops[7].nbytes, ops[7].deps) == ("allgather", (0, 1), nbytes, ((5, 10.0), (6, 10.0)))
    assert ops[7].ns == pytest.approx(0.5 * ar)


def test_tp_degree_1_has_no_collective():
    (plan,) = build_plans(Strategy("tp", tp_degree=1), chain(2), tiny_hw(), 1, "c")
    assert [type(op) for op in plan.ops] == [Kernel, Kernel]
    assert plan.ops[1].deps == ((0, 10.0),)


def test_tp_rowwise_runs_on_every_gpu_after_the_allreduce():
    hw = tiny_hw()
    plain = Layer(256, 128, 256, 128, 128)
    wl = _wl(plain, Layer(256, 256, 256, 128, 128, rowwise="rmsnorm"))
    (plan,) = build_plans(Strategy("tp", tp_degree=2), wl, hw, 2, "c")
    (coll,) = _ops(plan, Collective)
    norms = _ops(plan, MemoryPass)
    assert [(p.name, p.gpu, p.deps) for p in norms] == [
        ("rmsnorm L1 gpu0", 0, ((coll.id, 10.0),)), ("rmsnorm L1 gpu1", 1, ((coll.id, 10.0),))]
    assert all(p.ns == pytest.approx(_rowwise_ns(256, 256)) for p in norms)
    # a third, column-parallel layer waits for the row-wise pass on its GPU
    (plan3,) = build_plans(Strategy("tp", tp_degree=2), _wl(*wl.layers, Layer(256, 256, 256, 128, 128)),
                           hw, 2, "c")
    n3 = _ops(plan3, MemoryPass)
    l2 = [k for k in _ops(plan3, Kernel) if k.layer == 2]
    assert [k.deps for k in l2] == [((n3[0].id, 10.0),), ((n3[1].id, 10.0),)]


# ----------------------------------------------------------------------------------------------- hybrid
def test_hybrid_needs_two_stages_of_tp_degree_gpus():
    hw = tiny_hw()
    assert gpus_needed(Strategy("hybrid", tp_degree=2), chain(2), 8) == 4
    assert check_placement(Strategy("hybrid", tp_degree=2), chain(2), hw, 2) == (
        "hybrid needs 4 GPUs for 2 layers, but the case has 2")


def test_hybrid_t2_pairs_allreduce_and_rowwise():
    hw = tiny_hw()
    wl = _wl(Layer(256, 128, 256, 128, 128), Layer(256, 256, 256, 128, 128, rowwise="layernorm"))
    s = Strategy("hybrid", tp_degree=2, raster="column", persistent=False)
    (plan,) = build_plans(s, wl, hw, 4, "c")
    ks = _ops(plan, Kernel)
    assert [(k.name, k.gpu, k.persistent) for k in ks] == [
        ("hybrid L0 gpu0", 0, False), ("hybrid L1 gpu2", 2, False),
        ("hybrid L0 gpu1", 1, False), ("hybrid L1 gpu3", 3, False)]
    assert ks[0].order.tolist() == [0, 1]  # 2 x 1 tiles of 128 columns: column raster = row raster
    assert (ks[1].tiles_m, ks[1].tiles_n, ks[1].tile_ns) == (2, 2, 1000.0)  # K / 2 = 128
    (coll,) = _ops(plan, Collective)
    nbytes = 256.0 * 256 * 2
    assert (coll.kind, coll.gpus, coll.nbytes, coll.deps) == ("allreduce", (2, 3), nbytes, ((1, 10.0), (3, 10.0)))
    assert coll.ns == pytest.approx(nbytes / 50.0 + 14.0)
    norms = _ops(plan, MemoryPass)
    assert [(p.name, p.gpu, p.deps) for p in norms] == [
        ("layernorm L1 gpu2", 2, ((coll.id, 10.0),)), ("layernorm L1 gpu3", 3, ((coll.id, 10.0),))]
    assert all(p.ns == pytest.approx(_rowwise_ns(256, 256)) for p in norms)
    assert [(p.producer, p.consumer, p.src_gpu, p.dst_gpu) for p in plan.pipes] == [(0, 1, 0, 2), (2, 3, 1, 3)]


def test_hybrid_raster_override_reaches_the_producers():
    hw = tiny_hw()
    wl = _wl(Layer(256, 128, 512, 128, 128), Layer(256, 512, 256, 128, 128))  # 2 x 2 producer tiles per GPU
    (col,) = build_plans(Strategy("hybrid", tp_degree=2, raster="column"), wl, hw, 4, "c")
    (row,) = build_plans(Strategy("hybrid", tp_degree=2), wl, hw, 4, "c")
    assert [k.order.tolist() for k in _ops(col, Kernel) if k.layer == 0] == [COLUMN_2x2] * 2
    assert [k.order.tolist() for k in _ops(row, Kernel) if k.layer == 0] == [[0, 1, 2, 3]] * 2
    assert all(k.persistent is True for k in _ops(row, Kernel))
    layered = _wl(dataclasses.replace(wl.layers[0], raster="column"), wl.layers[1])
    (lay,) = build_plans(Strategy("hybrid", tp_degree=2), layered, hw, 4, "c")
    assert [k.order.tolist() for k in _ops(lay, Kernel) if k.layer == 0] == [COLUMN_2x2] * 2


def test_hybrid_t1_has_no_collective_and_rowwise_after_the_consumer():
    hw = tiny_hw()
    wl = _wl(Layer(256, 128, 256, 128, 128), Layer(256, 256, 256, 128, 128, rowwise="rmsnorm"))
    (plan,) = build_plans(Strategy("hybrid", tp_degree=1), wl, hw, 2, "c")
    assert [type(op) for op in plan.ops] == [Kernel, Kernel, MemoryPass]
    assert (plan.ops[2].name, plan.ops[2].gpu, plan.ops[2].deps) == ("rmsnorm L1 gpu1", 1, ((1, 10.0),))


# ----------------------------------------------------------------------------------------------- ctapipe
def _hw_tall():
    """The tiny profile with a 256 x 128 tile config too (2000 ns a tile at K = 128)."""
    hw = tiny_hw()
    c = hw.kernel_configs[0]
    return dataclasses.replace(hw, kernel_configs=(c, dataclasses.replace(c, tile_m=256)))


def test_chain_reason_messages():
    sq = Layer(512, 256, 256, 128, 128)
    assert ctapipe.chain_reason(_wl(sq)) is None
    assert ctapipe.chain_reason(_wl(sq, Layer(512, 256, 128, 128, 128))) == (
        "the chain kernel runs layers of one square shape (K = N = 256, M = 512); layer 1 is 512x256x128")
    assert ctapipe.chain_reason(_wl(Layer(512, 256, 128, 128, 128), sq)) == (
        "the chain kernel runs layers of one square shape (K = N = 256, M = 512); layer 0 is 512x256x128")
    assert ctapipe.chain_reason(_wl(sq, dataclasses.replace(sq, tile_m=256))) == (
        "the chain kernel runs one tile shape; layer 1 has 256x128")
    assert ctapipe.chain_reason(_wl(sq, dataclasses.replace(sq, epilogue=("gelu",)))) == (
        "the chain kernel fuses one epilogue for every layer (one batched kernel); layer 1 has gelu, layer 0 none")
    assert ctapipe.chain_reason(_wl(sq, dataclasses.replace(sq, rowwise="layernorm"))) == (
        "the chain kernel has no row-wise op (layer 1: layernorm)")
    assert ctapipe.chain_reason(_wl(dataclasses.replace(sq, epilogue=("relu",), rowwise="rmsnorm"))) == (
        "the chain kernel has no row-wise op (layer 0: rmsnorm)")
    gelu = dataclasses.replace(sq, epilogue=("gelu",))
    assert ctapipe.chain_reason(_wl(gelu, gelu)) is None  # one activation on every layer: the batched epilogue
    assert ctapipe.chain_reason(_wl(*(dataclasses.replace(sq, epilogue=("residual",)),) * 2)) == (
        "the chain kernel fuses one activation of gelu, silu, relu (layer 0: residual)")
    assert ctapipe.chain_reason(_wl(*(dataclasses.replace(gelu, epilogue_fused=False),) * 2)) == (
        "the chain kernel fuses one activation of gelu, silu, relu (layer 0: gelu, unfused)")
    with pytest.raises(ValueError) as e:
        ctapipe.build_chain(Strategy("ctapipe", gpus=1), _wl(sq, Layer(512, 256, 128, 128, 128)), tiny_hw(), "c")
    assert str(e.value) == "the chain kernel runs layers of one square shape (K = N = 256, M = 512); layer 1 is 512x256x128"


@pytest.mark.parametrize("layers", [1, 3])
def test_ctapipe_gpus_1_builds_the_chain_kernel(layers):
    hw = tiny_hw()
    wl = chain(layers, m=512, k=256, n=256)
    (plan,) = build_plans(Strategy("ctapipe", name="chain", gpus=1), wl, hw, 1, "the case")
    (k,) = plan.ops
    assert (plan.strategy, plan.case, plan.gpus, plan.pipes) == ("chain", "the case", 1, [])
    assert plan.params == {"gpus": 1, "order": "chain_group8", "tile_source": "tickets"}
    assert (k.name, k.source, k.gpu, k.persistent, k.chain_layers, k.start_ns) == (
        f"ctapipe chain L0-{layers - 1} gpu0", "chain", 0, True, layers, 100.0)
    assert (k.tiles_m, k.tiles_n, k.tile_ns) == (4, 2, 2000.0)
    # one layer's order: the 4 row-blocks as a group of 4, column by column; layer after layer
    one = [0, 2, 4, 6, 1, 3, 5, 7]
    assert k.order.tolist() == [t + 8 * l for l in range(layers) for t in one]


def test_ctapipe_variant_errors_are_the_variants_own():
    hw = tiny_hw()
    assert check_placement(Strategy("ctapipe", variant="cutlass_ctapipe_p"), chain(2), hw, 2) == (
        "ctapipe variant 'cutlass_ctapipe_p' has no kernel config in the hardware profiles (the simulator cannot "
        "model it)")
    assert check_placement(Strategy("ctapipe", variant="cutlass_ctapipe"), chain(2), hw, 2) == (
        "variant 'cutlass_ctapipe' runs kernel config 'ctapipe-1x1', which hardware 'tiny' does not have")
    c = hw.kernel_configs[0]
    with_1x1 = dataclasses.replace(hw, kernel_configs=(c, dataclasses.replace(c, kernel="ctapipe-1x1")))
    assert check_placement(Strategy("ctapipe", variant="cutlass_ctapipe"), chain(2), with_1x1, 2) is None


def test_ctapipe_counter_rows_message_names_the_consumer_layer():
    hw = tiny_hw()
    # 256 rows: a multiple of 128 but not a divisor of M = 384
    assert check_placement(Strategy("ctapipe", counter_rows=256), chain(3, m=384), hw, 3) == (
        "counter_rows=256 must be a multiple of layer 1's tile_m=128 and divide its M=384")
    # a multiple of layer 1's tile but not of layer 2's
    wl = _wl(Layer(512, 128, 256, 128, 128), Layer(512, 256, 256, 128, 128), Layer(512, 256, 256, 256, 128))
    assert check_placement(Strategy("ctapipe", counter_rows=128), wl, _hw_tall(), 3) == (
        "counter_rows=128 must be a multiple of layer 2's tile_m=256 and divide its M=512")
    assert check_placement(Strategy("ctapipe", counter_rows=256), wl, _hw_tall(), 3) is None


def test_ctapipe_three_layers_pipes_and_the_last_layers_rowwise():
    hw = _hw_tall()
    last = Layer(512, 256, 256, 256, 128, rowwise="layernorm")
    wl = _wl(Layer(512, 128, 256, 128, 128), Layer(512, 256, 256, 128, 128), last)
    (plan,) = build_plans(Strategy("ctapipe"), wl, hw, 3, "c")
    ks = _ops(plan, Kernel)
    assert [(k.name, k.gpu, k.source) for k in ks] == [
        ("ctapipe L0 gpu0", 0, "static"), ("ctapipe L1 gpu1", 1, "queue"), ("ctapipe L2 gpu2", 2, "queue")]
    (norm,) = _ops(plan, MemoryPass)
    assert (norm.name, norm.gpu, norm.deps) == ("layernorm L2 gpu2", 2, ((ks[2].id, 10.0),))
    assert norm.ns == pytest.approx(_rowwise_ns(512, 256))
    p0, p1 = plan.pipes
    assert (p0.producer, p0.consumer, p1.producer, p1.consumer) == (ks[0].id, ks[1].id, ks[1].id, ks[2].id)
    # layer 1 -> layer 2: 128-row producer tiles, 256-row consumer tiles: a counter waits for 2 row-blocks x 2 tiles
    assert p1.threshold.tolist() == [4, 4]
    assert p0.threshold.tolist() == [2, 2, 2, 2]
    # a row-wise op on a middle layer delays the push by a row-block's pass (the consumer's tile height)
    mid = _wl(wl.layers[0], dataclasses.replace(wl.layers[1], rowwise="rmsnorm"),
              dataclasses.replace(last, rowwise=""))
    (plan2,) = build_plans(Strategy("ctapipe"), mid, hw, 3, "c")
    assert plan2.pipes[0].ready_delay_ns == 0.0
    assert plan2.pipes[1].ready_delay_ns == pytest.approx(_rowwise_ns(256, 256))
    assert _ops(plan2, MemoryPass) == []  # a middle layer's row-wise op is in the pipe, not a kernel
