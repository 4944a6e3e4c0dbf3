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
