"""Plans: raster orders and the dependency arrays of GEMM chains."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ctasim.plan import raster_order
from ctasim.spec import Strategy
from ctasim.strategies import build_plans, check_placement
from tests.helpers import chain, tiny_hw


def test_raster_orders():
    assert raster_order(2, 3, "row").tolist() == [0, 1, 2, 3, 4, 5]
    assert raster_order(2, 3, "column").tolist() == [0, 3, 1, 4, 2, 5]


def test_row_block_dependencies_same_tile_height():
    hw = tiny_hw()
    plan = build_plans(Strategy("ctapipe"), chain(2, m=512, n=384), hw, 2, "c")[0]
    (pipe,) = plan.pipes
    # producer 4 row-blocks x 3 columns; consumer 4 x 3. Counter r waits for the 3 producer tiles of row r.
    assert pipe.threshold.tolist() == [3, 3, 3, 3]
    assert [pipe.prod_dep_idx[pipe.prod_dep_ptr[t]:pipe.prod_dep_ptr[t + 1]].tolist() for t in range(12)] == \
        [[r] for r in range(4) for _ in range(3)]
    assert pipe.consumer_dep.tolist() == [r for r in range(4) for _ in range(3)]
    assert pipe.dep_tile_idx[pipe.dep_tile_ptr[2]:pipe.dep_tile_ptr[3]].tolist() == [6, 7, 8]
    assert pipe.capacity == 12 and pipe.store_bytes == 128 * 128 * 2


def test_row_block_dependencies_taller_consumer_tiles():
    # Producer 128-row tiles, consumer 256-row tiles: each consumer counter needs two producer row-blocks.
    from ctasim.plan import Kernel, row_block_pipe
    from ctasim.spec import Layer

    pl, cl = Layer(512, 128, 256, 128, 128), Layer(512, 256, 128, 256, 128)
    prod = Kernel(id=0, name="p", tiles_m=4, tiles_n=2)
    cons = Kernel(id=1, name="c", tiles_m=2, tiles_n=1, gpu=1)
    pipe = row_block_pipe(0, prod, cons, pl, cl, 1.0)
    assert pipe.threshold.tolist() == [4, 4]
    assert np.diff(pipe.prod_dep_ptr).tolist() == [1] * 8
    assert pipe.prod_dep_idx.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]


def test_microbatch_builds_one_plan_per_usable_chunk_count():
    hw = tiny_hw()
    plans = build_plans(Strategy("microbatch", chunks=(1, 2, 3, 4, 8)), chain(2, m=512), hw, 2, "c")
    # 512 rows = 4 tiles of 128: 3 and 8 chunks do not cut into whole tiles.
    assert [p.params["chunks"] for p in plans] == [1, 2, 4]
    p4 = plans[-1]
    kinds = [type(op).__name__ for op in p4.ops]
    assert kinds.count("Kernel") == 8 and kinds.count("Transfer") == 4


def test_placement_errors_are_explained():
    hw = tiny_hw()
    assert "needs 3 GPUs" in check_placement(Strategy("ctapipe"), chain(3), hw, 2)
    assert "column slices" in check_placement(Strategy("tp", tp_degree=4), chain(2, n=256), hw, 4)
    assert "2-layer block" in check_placement(Strategy("hybrid", tp_degree=1), chain(3), hw, 8)
    small = dataclasses.replace(hw, gpus=2)
    assert "profile 'tiny' has 2" in check_placement(Strategy("tp", tp_degree=4), chain(2, n=512), small, 4)


def test_counter_rows_groups_row_blocks_and_pushes_column_by_column():
    from ctasim.plan import Kernel, row_block_pipe
    from ctasim.spec import Layer

    pl = cl = Layer(512, 128, 256, 128, 128)  # 4 row-blocks x 2 columns on both sides
    prod = Kernel(id=0, name="p", tiles_m=4, tiles_n=2)
    cons = Kernel(id=1, name="c", tiles_m=4, tiles_n=2, gpu=1)
    pipe = row_block_pipe(0, prod, cons, pl, cl, 1.0, counter_rows=256)
    # Two counters of 256 rows, each waiting for both producer row-blocks of its rows (2 x 2 tiles).
    assert pipe.threshold.tolist() == [4, 4]
    assert pipe.prod_dep_idx.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    # Push order: (0,0), (1,0), (0,1), (1,1) -- consecutive pops share a column.
    assert pipe.dep_tile_ptr.tolist() == [0, 4, 8]
    assert pipe.dep_tile_idx.tolist() == [0, 2, 1, 3, 4, 6, 5, 7]
    assert pipe.consumer_dep.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    # 0 and one row-block's rows are the per-row-block plan.
    a = row_block_pipe(0, prod, cons, pl, cl, 1.0)
    b = row_block_pipe(0, prod, cons, pl, cl, 1.0, counter_rows=128)
    assert a.dep_tile_idx.tolist() == b.dep_tile_idx.tolist() == list(range(8))
    assert a.threshold.tolist() == [2, 2, 2, 2]
    with pytest.raises(ValueError, match="counter_rows=192"):
        row_block_pipe(0, prod, cons, pl, cl, 1.0, counter_rows=192)
    with pytest.raises(ValueError, match="counter_rows=384"):
        row_block_pipe(0, prod, cons, pl, cl, 1.0, counter_rows=384)


def test_counter_rows_plan_simulates_cleanly_and_bad_values_are_explained():
    from ctasim.engine import simulate
    from ctasim.invariants import find_violations

    hw = tiny_hw()
    wl = chain(2, m=1024)
    st = Strategy("ctapipe", persistent=False, counter_rows=256)
    plan = build_plans(st, wl, hw, 2, "c")[0]
    pipe = plan.pipes[0]
    assert len(pipe.threshold) == 4 and plan.params["counter_rows"] == 256
    tr = simulate(plan, hw)
    assert find_violations(tr, plan) == []
    # The consumer pops in the pushed order: its first two tiles share a column.
    cons = max(plan.kernels(), key=lambda k: k.layer)
    t = tr.tiles[tr.tiles["kernel"] == cons.id].sort_values("slot")
    rows, cols = t["tile_m"].to_numpy(), t["tile_n"].to_numpy()
    assert cols[0] == cols[1] and rows[0] != rows[1]
    assert t["slot"].tolist() == list(range(cons.tiles))
    assert "counter_rows=192" in check_placement(dataclasses.replace(st, counter_rows=192), wl, hw, 2)


# Tile orders below are written out by hand from each function's docstring (tile id = row_block x tiles_n + col).


def test_unknown_raster_order_is_refused():
    with pytest.raises(ValueError, match="unknown raster order 'diagonal'"):
        raster_order(2, 2, "diagonal")


def test_pair_rows_order_by_hand():
    from ctasim.plan import pair_rows_order

    # 4 row-blocks x 2 columns: pair (0,1): (0,0),(1,0),(0,1),(1,1) = 0,2,1,3; pair (2,3): 4,6,5,7
    assert pair_rows_order(4, 2).tolist() == [0, 2, 1, 3, 4, 6, 5, 7]
    with pytest.raises(ValueError, match="^pair_rows_order needs an even number of row-blocks$"):
        pair_rows_order(3, 2)


def test_grouped_rows_order_by_hand():
    from ctasim.plan import grouped_rows_order

    # groups of 4 row-blocks, 2 columns: rows 0-3 column 0 (0,2,4,6), column 1 (1,3,5,7); then rows 4-7
    assert grouped_rows_order(8, 2, 4).tolist() == [0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15]
    # head 2 and tail 2 row-blocks in pairs, the 4 between as one group
    assert grouped_rows_order(8, 2, 4, tail_rows=2, head_rows=2).tolist() == \
        [0, 2, 1, 3] + [4, 6, 8, 10, 5, 7, 9, 11] + [12, 14, 13, 15]
    # groups of 2 over the first 4 row-blocks, then a tail of 4 row-blocks as one group of 4
    assert grouped_rows_order(8, 2, 2, tail_rows=4, tail_group=4).tolist() == \
        [0, 2, 1, 3, 4, 6, 5, 7] + [8, 10, 12, 14, 9, 11, 13, 15]
    # an odd tail_group is fine when there are no tail or head rows to use it
    assert grouped_rows_order(4, 2, 4, tail_group=3).tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    assert grouped_rows_order(4, 2, 4, tail_group=0).tolist() == [0, 2, 4, 6, 1, 3, 5, 7]  # not even divided by
    for args, kw in (((4, 2, 3), {}),                            # odd group
                     ((6, 2, 4), {}),                            # 4 does not divide 6
                     ((4, 2, 0), {}),                            # group < 2
                     ((4, 2, 2), {"tail_rows": 4, "head_rows": 2}),  # head + tail > rows: a negative body
                     ((8, 2, 4), {"tail_rows": 4, "tail_group": 3}),  # odd tail group
                     ((8, 2, 4), {"tail_rows": 2, "tail_group": 4})):  # tail group does not divide the tail
        with pytest.raises(ValueError, match="grouped_rows_order needs an even group"):
            grouped_rows_order(*args, **kw)


def test_named_orders_by_hand():
    from ctasim.plan import named_order

    assert named_order("pair_rows", 4, 2).tolist() == [0, 2, 1, 3, 4, 6, 5, 7]
    assert named_order("group4", 4, 2).tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    # group8_taper2 on 32 x 2: head and tail of 8 row-blocks ((32 // 4) // 8 x 8 = 8) in pairs, 16 between in groups of 8
    o = named_order("group8_taper2", 32, 2).tolist()
    assert o[:4] == [0, 2, 1, 3] and o[12:16] == [12, 14, 13, 15]  # pairs (0,1) ... (6,7)
    assert o[16:32] == [16, 18, 20, 22, 24, 26, 28, 30, 17, 19, 21, 23, 25, 27, 29, 31]  # rows 8-15, group of 8
    assert o[48:52] == [48, 50, 49, 51] and o[60:] == [60, 62, 61, 63]  # tail pairs (24,25) ... (30,31)
    # group8_taper on 32 x 2: no head, 24 row-blocks in groups of 8, the tail of 8 in pairs
    o = named_order("group8_taper", 32, 2).tolist()
    assert o[:16] == [0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15]
    assert o[48:52] == [48, 50, 49, 51]
    # 16 row-blocks: (16 // 4) // 8 x 8 = 0, no taper: two groups of 8
    assert named_order("group8_taper2", 16, 1).tolist() == list(range(16))
    assert named_order("group8_taper2", 16, 2)[:16].tolist() == [0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15]


def test_kernel_and_plan_tile_counts_and_with_order():
    from ctasim.plan import Kernel, MemoryPass, Plan, with_order

    plan = Plan("s", "c", 1)
    a = plan.add(Kernel, name="a", tiles_m=2, tiles_n=3)
    b = plan.add(Kernel, name="b", tiles_m=2, tiles_n=2, chain_layers=3, source="chain")
    m = plan.add(MemoryPass, name="ln", ns=5.0)
    assert (a.id, b.id, m.id) == (0, 1, 2) and plan.kernels() == [a, b]
    assert b.tiles == 12 and plan.total_tiles == 6 + 12  # tiles_m x tiles_n x chain_layers
    new = with_order(plan, 0, np.array([5, 4, 3, 2, 1, 0], dtype=np.int32))  # stored as int64, as ctahw uploads it
    assert new.ops[0].order.tolist() == [5, 4, 3, 2, 1, 0] and new.ops[0].order.dtype == np.int64
    assert new.params == {"order_op0": "custom"} and plan.params == {} and plan.ops[0].order.tolist() == []
    assert new.ops[1] is b and len(plan.ops) == 3
    with pytest.raises(ValueError, match="order for 'a' is not a permutation of its 6 tiles"):
        with_order(plan, 0, [0, 1, 2, 3, 4, 4])


def test_pipe_counts_and_shorter_consumer_tiles():
    from ctasim.plan import Kernel, row_block_pipe
    from ctasim.spec import Layer

    # producer 256-row tiles (2 row-blocks), consumer 128-row tiles (4 row-blocks x 3 columns): producer
    # row-block r overlaps consumer row-blocks 2r and 2r+1, so each producer tile decrements two counters,
    # and each counter waits for the 2 producer tiles (2 columns) of its producer row-block
    pl, cl = Layer(512, 128, 256, 256, 128), Layer(512, 256, 384, 128, 128)
    prod = Kernel(id=3, name="p", tiles_m=2, tiles_n=2, gpu=1)
    cons = Kernel(id=4, name="c", tiles_m=4, tiles_n=3, gpu=2)
    pipe = row_block_pipe(7, prod, cons, pl, cl, 64.0, ready_delay_ns=9.0)
    assert pipe.prod_dep_ptr.tolist() == [0, 2, 4, 6, 8]
    assert pipe.prod_dep_idx.tolist() == [0, 1, 0, 1, 2, 3, 2, 3]
    assert pipe.threshold.tolist() == [2, 2, 2, 2] and pipe.deps == 4 and pipe.capacity == 12
    assert pipe.dep_tile_ptr.tolist() == [0, 3, 6, 9, 12] and pipe.dep_tile_idx.tolist() == list(range(12))
    assert (pipe.id, pipe.producer, pipe.consumer, pipe.src_gpu, pipe.dst_gpu) == (7, 3, 4, 1, 2)
    assert pipe.store_bytes == 64.0 and pipe.ready_delay_ns == 9.0
    with pytest.raises(ValueError, match="producer rows 512 != consumer rows 384"):
        row_block_pipe(0, prod, Kernel(id=1, name="c", tiles_m=3, tiles_n=3), pl, cl, 1.0)


def test_pipe_arrays_are_int64_and_the_defaults():
    from ctasim.plan import Kernel, row_block_pipe
    from ctasim.spec import Layer

    pl = cl = Layer(512, 128, 256, 128, 128)
    pipe = row_block_pipe(0, Kernel(id=0, name="p", tiles_m=4, tiles_n=2), Kernel(id=1, name="c", tiles_m=4, tiles_n=2),
                          pl, cl, 1.0)
    assert pipe.ready_delay_ns == 0.0
    for name in ("prod_dep_ptr", "prod_dep_idx", "threshold", "dep_tile_ptr", "dep_tile_idx", "consumer_dep"):
        assert getattr(pipe, name).dtype == np.int64, name  # the arrays ctahw uploads as 64-bit integers


def test_producer_tiles_that_straddle_consumer_row_blocks():
    from ctasim.plan import Kernel, row_block_pipe
    from ctasim.spec import Layer

    # 6 rows: producer tiles of 3 rows (rows 0-2, 3-5), consumer tiles of 2 rows (0-1, 2-3, 4-5). Producer
    # row-block 0 overlaps consumer blocks 0 and 1 (row 2), row-block 1 overlaps blocks 1 (row 3) and 2.
    pl, cl = Layer(6, 8, 4, 3, 4), Layer(6, 4, 4, 2, 4)
    pipe = row_block_pipe(0, Kernel(id=0, name="p", tiles_m=2, tiles_n=1), Kernel(id=1, name="c", tiles_m=3, tiles_n=1),
                          pl, cl, 1.0)
    assert pipe.prod_dep_idx.tolist() == [0, 1, 1, 2] and pipe.prod_dep_ptr.tolist() == [0, 2, 4]
    assert pipe.threshold.tolist() == [1, 2, 1]


def test_counter_rows_error_names_the_rows():
    from ctasim.plan import Kernel, row_block_pipe
    from ctasim.spec import Layer

    pl = cl = Layer(512, 128, 256, 128, 128)
    with pytest.raises(ValueError, match=r"counter_rows=192 must be a multiple of the consumer's tile_m=128 that "
                                         r"divides its 512 rows$"):
        row_block_pipe(0, Kernel(id=0, name="p", tiles_m=4, tiles_n=2), Kernel(id=1, name="c", tiles_m=4, tiles_n=2),
                       pl, cl, 1.0, counter_rows=192)


def test_chain_order_takes_the_largest_even_group_down_to_pairs():
    from ctasim.plan import chain_order

    # 2 row-blocks: pairs, (0,0),(1,0),(0,1),(1,1) = 0,2,1,3; 10 row-blocks with group 8: 8, 6, 4 do not divide 10, 2 does
    assert chain_order(1, 2, 2).tolist() == [0, 2, 1, 3]
    assert chain_order(1, 10, 2)[:4].tolist() == [0, 2, 1, 3]
    # group 3 on 4 row-blocks: 3 is odd, so 2 (every candidate from 3 down to 2, not every other one)
    assert chain_order(2, 4, 2, group=3).tolist() == [0, 2, 1, 3, 4, 6, 5, 7] + [8, 10, 9, 11, 12, 14, 13, 15]
