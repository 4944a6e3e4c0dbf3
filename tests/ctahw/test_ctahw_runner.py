"""ctahw.runner on the CPU: plans -> device arrays, descriptors, error records, stamp buffers -> traces."""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from ctasim import plan as ctasim_plan
import pandas as pd
from pathlib import Path

import pytest

from ctahw import runner
from ctasim.invariants import InvariantError, check_trace
from ctasim.spec import Strategy, load_hardware, load_workload
from ctasim.strategies import build_plans
from tests.helpers import FakeCudaDevice, load_bench


def chain_plan(m: int = 1024, source: str = "queue"):
    hw = load_hardware("h200-x2")
    wl = load_workload("chain2-16384")
    wl = dataclasses.replace(wl, layers=tuple(dataclasses.replace(l, m=m) for l in wl.layers))
    return build_plans(Strategy(kind="ctapipe", persistent=False, tile_source=source), wl, hw, 2, f"m={m}")[0]


def test_plan_arrays_are_the_plans_arrays():
    plan = chain_plan()
    kernels, pipes = runner.plan_arrays(plan)
    assert [k.mode for k in kernels] == [runner.MODE_STATIC, runner.MODE_QUEUE]
    assert kernels[0].outbound == 0 and kernels[1].inbound == 0
    p, src = pipes[0], plan.pipes[0]
    for name in ("prod_dep_ptr", "prod_dep_idx", "threshold", "dep_tile_ptr", "dep_tile_idx", "consumer_dep"):
        got = getattr(p, name)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, getattr(src, name))
    np.testing.assert_array_equal(kernels[0].order, plan.ops[0].order)
    assert p.capacity == 8 * 32 and p.deps == 8 and (p.threshold == 32).all()


def test_plan_arrays_of_the_wait_variant():
    plan = chain_plan(source="static")
    kernels, pipes = runner.plan_arrays(plan)
    assert [k.mode for k in kernels] == [runner.MODE_STATIC, runner.MODE_WAIT]
    np.testing.assert_array_equal(kernels[1].order, plan.ops[1].order)
    bad = dataclasses.replace(plan, ops=[plan.ops[0], dataclasses.replace(plan.ops[1], source="pull")])
    with pytest.raises(ValueError, match="tile source 'pull' is not built"):
        runner.plan_arrays(bad)
    bad = dataclasses.replace(plan, ops=[plan.ops[0], dataclasses.replace(plan.ops[1], order=plan.ops[1].order[:-1])])
    with pytest.raises(ValueError, match="not a permutation"):
        runner.plan_arrays(bad)


def test_descriptor_of_a_wait_consumer_and_its_producer():
    kernels, pipes = runner.plan_arrays(chain_plan(source="static"))
    prod, cons = kernels
    ptrs = {n: 1000 + i for i, n in enumerate(runner.DESC_FIELDS)}
    f = dict(zip(runner.DESC_FIELDS, runner.descriptor(cons, pipes, ptrs, epoch=2, timeout_ns=5).tolist()))
    assert f["mode"] == runner.MODE_WAIT and f["in_counters"] == ptrs["in_counters"]
    assert f["in_consumer_dep"] == ptrs["in_consumer_dep"] and f["in_threshold"] == ptrs["in_threshold"]
    with pytest.raises(ValueError, match="wait kernel needs in_counters"):
        runner.descriptor(cons, pipes, {"order": 1, "error": 1, "in_counters": 1, "in_threshold": 1},
                          epoch=1, timeout_ns=1)
    # its producer counts without pushing: no slots, tail or push arrays -- all or none of them
    count_only = {n: ptrs[n] for n in ("order", "error", "out_counters", "prod_dep_ptr", "prod_dep_idx", "threshold")}
    f = dict(zip(runner.DESC_FIELDS, runner.descriptor(prod, pipes, count_only, epoch=1, timeout_ns=1).tolist()))
    assert f["out_slots"] == 0 and f["out_tail"] == 0 and f["out_counters"] == ptrs["out_counters"]
    with pytest.raises(ValueError, match="all or, for a wait consumer, none"):
        runner.descriptor(prod, pipes, dict(count_only, out_slots=7), epoch=1, timeout_ns=1)


def test_descriptor_layout():
    plan = chain_plan()
    kernels, pipes = runner.plan_arrays(plan)
    prod_ptrs = {n: 1000 + i for i, n in enumerate(runner.DESC_FIELDS)}
    d = runner.descriptor(kernels[0], pipes, prod_ptrs, epoch=3, timeout_ns=5, stall_row=2)
    f = dict(zip(runner.DESC_FIELDS, d.tolist()))
    assert d.dtype == np.int64 and len(d) == len(runner.DESC_FIELDS) == 27
    assert f["mode"] == 0 and f["num_tiles"] == 256 and f["tiles_n"] == 32
    assert f["epoch"] == 3 and f["timeout_ns"] == 5 and f["stall_row"] == 2
    assert f["out_capacity"] == 256 and f["in_capacity"] == 0
    assert f["out_counters"] == prod_ptrs["out_counters"] and f["error"] == prod_ptrs["error"]
    with pytest.raises(ValueError, match="queue kernel needs"):
        runner.descriptor(kernels[1], pipes, {"error": 1}, epoch=1, timeout_ns=1)
    with pytest.raises(ValueError, match="producer kernel needs"):
        runner.descriptor(kernels[0], pipes, {"order": 1, "error": 1}, epoch=1, timeout_ns=1)
    with pytest.raises(ValueError, match="epochs start at 1"):
        runner.descriptor(kernels[0], pipes, prod_ptrs, epoch=0, timeout_ns=1)
    with pytest.raises(ValueError, match="timeout_ns must be positive"):
        runner.descriptor(kernels[0], pipes, prod_ptrs, epoch=1, timeout_ns=0)
    with pytest.raises(ValueError, match="error buffer is required"):
        runner.descriptor(kernels[0], pipes, dict(prod_ptrs, error=0), epoch=1, timeout_ns=1)


def test_parse_error():
    assert runner.parse_error(np.zeros(runner.ERROR_WORDS, np.int32), "k") is None
    seen = (4 << 32) | 7
    err = np.array([32, 1, 17, 5, seen & 0xFFFFFFFF, seen >> 32, 5, 0], dtype=np.int64).astype(np.int32)
    e = runner.parse_error(err, "ctapipe L1")
    assert isinstance(e, runner.ProtocolError)
    assert (e.code, e.cta, e.index, e.seen, e.epoch, e.count) == (1, 17, 5, seen, 5, 32)
    assert "pop timeout" in str(e) and "CTA 17" in str(e) and "epoch 4" in str(e)


def test_clock_offsets_from_pingpong():
    # GPU 1's clock runs 4700 ns behind GPU 0's; one-way latency 600 ns; some rounds queue longer.
    rng = np.random.default_rng(0)
    init, resp = [], []
    t = 1_000_000
    for i in range(200):
        extra = int(rng.integers(0, 2000)) if i % 3 else 0
        send = t
        arrive = send + 600 + extra
        back = arrive + 600
        init += [send, back]
        resp.append(arrive - 4700)
        t = back + 100
    off = runner.clock_offsets({1: (init, resp)})
    assert off[0]["offset_ns"] == 0.0
    assert off[1]["offset_ns"] == pytest.approx(-4700, abs=1)


def synthetic_buffers(plan, offset1: float = -4700.0, shuffle_seed: int = 1):
    """Stamp buffers of a plausible run: producer tiles row by row on 132 SMs, pushes, consumer pops."""
    kernels, pipes = runner.plan_arrays(plan)
    prod, cons = kernels
    pipe = pipes[0]
    w = runner.TILE_STAMP_WORDS
    base0, base1 = 10_000_000, 10_000_000 + offset1  # GPU 0 and GPU 1 clocks at the same instant
    tile_ns = 40_000
    ps = np.zeros((prod.tiles, w), np.uint64)
    sig = np.zeros(prod.tiles)
    for i, tile in enumerate(prod.order):
        wave, sm = divmod(i, 132)
        t0 = base0 + wave * (tile_ns + 1000)
        stamps = [t0, t0 + 200, t0 + tile_ns - 3000, t0 + tile_ns, t0 + tile_ns + 800, t0 + tile_ns + 1400]
        ps[tile, :6] = stamps
        ps[tile, 6] = (sm << 32) | i
        ps[tile, 7] = np.uint64(2**64 - 1)
        sig[tile] = stamps[5]
    zero = np.zeros(pipe.deps, np.uint64)
    push = np.zeros((pipe.capacity, 2), np.uint64)
    slot = 0
    # counter d completes at the latest signal of its producer tiles
    latest = np.zeros(pipe.deps)
    for tile in range(prod.tiles):
        for j in range(pipe.prod_dep_ptr[tile], pipe.prod_dep_ptr[tile + 1]):
            latest[pipe.prod_dep_idx[j]] = max(latest[pipe.prod_dep_idx[j]], sig[tile])
    for d in np.argsort(latest, kind="stable"):
        zero[d] = int(latest[d])
        for j in range(pipe.dep_tile_ptr[d], pipe.dep_tile_ptr[d + 1]):
            tile = pipe.dep_tile_idx[j]
            push[tile] = (int(latest[d]) + 300 + 10 * slot, slot)
            slot += 1
    cs = np.zeros((cons.tiles, w), np.uint64)
    slot_tile = {int(push[t, 1]): t for t in range(cons.tiles)}
    for s in range(cons.tiles):
        tile = slot_tile[s]
        vis_gpu1 = int(push[tile, 0]) + offset1 + 700  # a one-way hop later, on GPU 1's clock
        wave, sm = divmod(s, 132)
        t0 = min(vis_gpu1 - 100, base1 + wave * tile_ns)
        stamps = [t0, vis_gpu1 + 50, vis_gpu1 + tile_ns - 3000, vis_gpu1 + tile_ns, vis_gpu1 + tile_ns + 700,
                  vis_gpu1 + tile_ns + 700]
        cs[tile, :6] = [max(0, int(v)) for v in stamps]
        cs[tile, 6] = (sm << 32) | s
        cs[tile, 7] = s
    return kernels, pipes, {prod.op: ps.ravel(), cons.op: cs.ravel()}, {0: push.ravel()}, {0: zero}


def test_parse_trace_passes_the_invariant_checker():
    plan = chain_plan()
    kernels, pipes, stamps, push, zero = synthetic_buffers(plan)
    tr = runner.parse_trace(plan, kernels, pipes, stamps, push, zero, {0: 0.0, 1: -4700.0}, {"m": 1024})
    assert len(tr.tiles) == 512 and set(tr.tiles["source"]) == {"hw"}
    assert tr.tiles["t_start"].min() == 0.0
    assert (tr.events["kind"] == "zero").sum() == 8 and (tr.events["kind"] == "push").sum() == 256
    assert tr.meta["m"] == 1024
    check_trace(tr, plan, tol_ns=64.0)
    cons = tr.tiles[tr.tiles["kernel"] == 1]
    assert (cons["slot"] >= 0).all() and (tr.tiles[tr.tiles["kernel"] == 0]["slot"] == -1).all()


def test_parse_trace_with_a_wrong_clock_offset_is_caught():
    plan = chain_plan()
    kernels, pipes, stamps, push, zero = synthetic_buffers(plan)
    # Pretend GPU 1 runs 5 us ahead instead of behind: consumers then seem to start before their inputs.
    tr = runner.parse_trace(plan, kernels, pipes, stamps, push, zero, {0: 0.0, 1: 5000.0})
    with pytest.raises(InvariantError):
        check_trace(tr, plan, tol_ns=64.0)


def test_trace_round_trips_through_files(tmp_path):
    plan = chain_plan()
    kernels, pipes, stamps, push, zero = synthetic_buffers(plan)
    tr = runner.parse_trace(plan, kernels, pipes, stamps, push, zero, {0: 0.0, 1: -4700.0})
    tr.save(tmp_path / "t", fmt="csv")
    from ctasim.trace import Trace

    back = Trace.load(tmp_path / "t")
    check_trace(back, plan, tol_ns=64.0)


def test_saved_raw_buffers_load_back_as_checked_traces(tmp_path):
    from ctahw import pipelined

    plan = pipelined.chain_plan(1024)
    kernels, pipes, stamps, push, zero = synthetic_buffers(plan)
    entry = dict(m=1024, h=8192, gpus=2, offsets={0: {"offset_ns": 0.0}, 1: {"offset_ns": -4700.0}}, violations=[])
    entry.update({f"stamps_{op}": v for op, v in stamps.items()})
    entry.update({f"push_{p}": v for p, v in push.items()}, **{f"zero_{p}": v for p, v in zero.items()})
    path = pipelined.save_raw_traces([entry], tmp_path / "traces.npz")
    (tr, plan2, info), = pipelined.load_raw_traces(path).values()
    assert info["m"] == 1024 and len(tr.tiles) == 512
    check_trace(tr, plan2, tol_ns=64.0)


def test_a_saved_trace_rebuilds_the_plan_it_ran(tmp_path):
    """What ctahw run saves (a ctasim bundle) is enough to rebuild the plan, tile order included, and check it."""
    from ctahw import pipelined
    from ctasim.trace import load_traces, save_traces

    v = pipelined.VARIANTS["cutlass_ctapipe_c21"]
    plan = pipelined.variant_plan(pipelined.chain_plan(1024), v)
    kernels, pipes, stamps, push, zero = synthetic_buffers(plan)
    tr = runner.parse_trace(plan, kernels, pipes, stamps, push, zero, {0: 0.0, 1: -4700.0})
    tr.meta.update(m=1024, h=8192, gpus=2, variant="cutlass_ctapipe_c21_trace", run=0, kept=True)
    (back,) = load_traces(save_traces({"k": tr}, tmp_path / "t.trace.npz")).values()
    plan2 = pipelined.plan_of_trace(back)
    first = min(plan2.kernels(), key=lambda k: k.layer)
    assert list(plan2.ops[first.id].order) == list(plan.ops[first.id].order) != sorted(plan.ops[first.id].order)
    check_trace(back, plan2, tol_ns=64.0)
    back.meta["variant"] = "cutlass_ctapipe_trace"  # the wrong variant: row order, not pairs, is rebuilt
    plan3 = pipelined.plan_of_trace(back)
    assert list(plan3.ops[first.id].order) == list(plan.ops[first.id].order)  # the order is read from the tiles


def test_committed_trace_bundles_are_the_conversion_of_the_raw_stamps():
    """bench/results/hw/*-ctapipe*/ctapipe_traces.trace.npz (what ctasim reads) against a fresh conversion of the
    raw stamp file beside it, for the smallest run; bench/hw/convert_raw_traces.py --check does every folder."""
    root = Path(__file__).resolve().parents[2]
    mod = load_bench("hw/convert_raw_traces")
    assert mod.main([str(root / "bench/results/hw/2026-11-29-ctapipe-run1"), "--check"]) == 0


def test_pair_rows_order_pairs_one_column_and_completes_rows_in_pairs():
    o = ctasim_plan.pair_rows_order(4, 3)
    assert o.tolist() == [0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11]
    with pytest.raises(ValueError):
        ctasim_plan.pair_rows_order(3, 2)


def test_grouped_rows_order_walks_groups_column_by_column():
    o = ctasim_plan.grouped_rows_order(4, 2, 4)  # tiles (r, c) = 2r + c
    assert o.tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    np.testing.assert_array_equal(ctasim_plan.grouped_rows_order(4, 3, 2), ctasim_plan.pair_rows_order(4, 3))
    for bad in (3, 8, 0):
        with pytest.raises(ValueError, match="even group"):
            ctasim_plan.grouped_rows_order(4, 2, bad)
    # a taper: the first 4 row-blocks in one group, the last 2 as a pair
    o = ctasim_plan.grouped_rows_order(6, 2, 4, tail_rows=2)
    assert o.tolist() == [0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 9, 11]
    assert ctasim_plan.named_order("group8_taper", 128, 32)[-64:].tolist() == ctasim_plan.pair_rows_order(2, 32).__add__(126 * 32).tolist()
    assert sorted(ctasim_plan.named_order("group8_taper", 8, 4).tolist()) == list(range(32))
    # head and tail in pairs: first and last 8 row-blocks of 128
    o = ctasim_plan.named_order("group8_taper2", 128, 32)
    assert o[:64].tolist() == ctasim_plan.pair_rows_order(2, 32).tolist()
    assert o[8 * 32:9 * 32 + 1].tolist()[:2] == [8 * 32, 9 * 32] and sorted(o.tolist()) == list(range(4096))
    assert o[-64:].tolist() == (ctasim_plan.pair_rows_order(2, 32) + 126 * 32).tolist()
    assert ctasim_plan.grouped_rows_order(8, 1, 4, tail_rows=2, head_rows=2).tolist() == [0, 1, 2, 3, 4, 5, 6, 7]
    with pytest.raises(ValueError, match="head 2"):
        ctasim_plan.grouped_rows_order(8, 1, 4, head_rows=2)


def test_check_cluster_accepts_what_the_kernels_can_pair():
    plan = chain_plan()
    kernels, pipes = runner.plan_arrays(plan)
    prod, cons = kernels
    runner.check_cluster(prod, pipes, "1x2")  # row order: consecutive tiles share a row
    with pytest.raises(ValueError, match="not in one column"):
        runner.check_cluster(prod, pipes, "2x1")
    runner.check_cluster(cons, pipes, "1x2")  # row-block pushes in column order pair up in one row
    with pytest.raises(ValueError, match="cannot pair in one column"):
        runner.check_cluster(cons, pipes, "2x1")
    with pytest.raises(ValueError, match="unknown cluster"):
        runner.check_cluster(cons, pipes, "2x2")
    plan2 = ctasim_plan.with_order(plan, prod.op, ctasim_plan.pair_rows_order(prod.tiles_m, prod.tiles_n))
    k2, p2 = runner.plan_arrays(plan2)
    runner.check_cluster(k2[0], p2, "2x1")
    assert plan.ops[0].order.tolist() == list(range(256))  # the original plan is untouched
    np.testing.assert_array_equal(p2[0].prod_dep_idx, pipes[0].prod_dep_idx)
    with pytest.raises(ValueError, match="not a permutation"):
        ctasim_plan.with_order(plan, prod.op, np.zeros(256, dtype=np.int64))


def test_pair_order_plan_simulates_and_passes_the_checker():
    from ctasim.engine import simulate

    plan = chain_plan(2048)
    plan2 = ctasim_plan.with_order(plan, 0, ctasim_plan.pair_rows_order(plan.ops[0].tiles_m, plan.ops[0].tiles_n))
    hw = load_hardware("h200-x2")
    tr = simulate(plan2, hw)
    check_trace(tr, plan2)


def test_parse_trace_keeps_the_timer_tick_at_real_globaltimer_values():
    # %globaltimer reads ~1.8e18 ns, where float64 has a 256 ns grid; parsing must not round stamps to it.
    plan = chain_plan()
    kernels, pipes, stamps, push, zero = synthetic_buffers(plan)
    epoch = np.uint64(1_796_000_000_000_000_032)
    w = runner.TILE_STAMP_WORDS
    big = {}
    for op, buf in stamps.items():
        b = buf.reshape(-1, w).copy()
        b[:, :6] += epoch
        big[op] = b.ravel()
    bpush = {}
    for p, v in push.items():
        b = v.reshape(-1, 2).copy()
        b[:, 0] += epoch
        bpush[p] = b.ravel()
    bzero = {p: v + epoch for p, v in zero.items()}
    offsets = {0: 0.0, 1: -4700.0}
    small = runner.parse_trace(plan, kernels, pipes, stamps, push, zero, offsets)
    large = runner.parse_trace(plan, kernels, pipes, big, bpush, bzero, offsets)
    pd.testing.assert_frame_equal(small.tiles, large.tiles)
    pd.testing.assert_frame_equal(small.events, large.events)


def test_clock_offset_keeps_the_timer_tick():
    from ctahw.calibrate import pingpong_stats

    t0 = 1_796_000_000_000_000_000
    init = [t0, t0 + 1344, t0 + 10_000, t0 + 11_344]
    resp = [t0 + 672 + 32 - 179_712, t0 + 10_672 + 32 - 179_712]  # responder 179,712 ns behind, +32 ns skew
    assert pingpong_stats(init, resp, best_fraction=1.0)["offset_ns"] == 32 - 179_712


def wait_buffers(plan, offset1: float = -4700.0, early_ns: float = 0.0):
    """Stamp buffers of a wait-consumer run: the producer as in synthetic_buffers (no pushes, no zero stamps:
    its reductions return nothing); each consumer tile of the fixed order starts when an SM frees and acquires
    a one-way hop after its counter's last producer signal (``early_ns`` earlier: a broken run)."""
    kernels, pipes, stamps, _push, _zero = synthetic_buffers(plan, offset1)
    prod, cons = kernels
    pipe = pipes[0]
    sig = stamps[prod.op].reshape(prod.tiles, runner.TILE_STAMP_WORDS)[:, 5].astype(np.float64)
    latest = np.zeros(pipe.deps)
    np.maximum.at(latest, pipe.prod_dep_idx, np.repeat(sig, np.diff(pipe.prod_dep_ptr)))
    w, tile_ns = runner.TILE_STAMP_WORDS, 40_000
    cs = np.zeros((cons.tiles, w), np.uint64)
    for i, tile in enumerate(cons.order):
        wave, sm = divmod(i, 132)
        t0 = 10_000_000 + offset1 + wave * tile_ns
        vis = max(t0, latest[pipe.consumer_dep[tile]] + offset1 + 700) - early_ns
        cs[tile, :6] = [int(t0), int(vis), int(vis + tile_ns - 3000), int(vis + tile_ns), int(vis + tile_ns + 700),
                        int(vis + tile_ns + 700)]
        cs[tile, 6] = (sm << 32) | i
        cs[tile, 7] = np.uint64(2**64 - 1)
    stamps[cons.op] = cs.ravel()
    return kernels, pipes, stamps, {0: np.zeros(2 * pipe.capacity, np.uint64)}, {0: np.zeros(pipe.deps, np.uint64)}


def test_parse_trace_of_a_wait_consumer():
    plan = chain_plan(source="static")
    kernels, pipes, stamps, push, zero = wait_buffers(plan)
    tr = runner.parse_trace(plan, kernels, pipes, stamps, push, zero, {0: 0.0, 1: -4700.0})
    assert (tr.events["kind"] == "zero").sum() == 8 and (tr.events["kind"] == "push").sum() == 0
    cons = tr.tiles[tr.tiles["kernel"] == kernels[1].op]
    assert (cons["slot"] == -1).all()
    # a tile's t_ready is its counter's completion: the last signal of the counter's producer tiles
    prod = tr.tiles[tr.tiles["kernel"] == kernels[0].op].sort_values("tile_m")
    last_row0 = prod[prod["tile_m"] == 0]["t_signal"].max()
    assert (cons[cons["tile_m"] == 0]["t_ready"] == last_row0).all()
    check_trace(tr, plan, tol_ns=64.0)
    # consumers that start 5 us before their counter completed are caught
    kernels, pipes, stamps, push, zero = wait_buffers(plan, early_ns=5000.0)
    bad = runner.parse_trace(plan, kernels, pipes, stamps, push, zero, {0: 0.0, 1: -4700.0})
    with pytest.raises(InvariantError):
        check_trace(bad, plan, tol_ns=64.0)


# -- the ring design's scratch words against the grid it launches (fake CuPy, fake library)


class _Reached(Exception):
    """Raised by the fake CuPy at the first allocation: the constructor got past its checks."""


class _FakeRingLib:
    def __init__(self):
        self.asked = []

    def ctahw_ctapipe_desc_fields(self):
        return len(runner.DESC_FIELDS)

    def ctahw_ctapipe_desc_names(self):
        return ",".join(runner.DESC_FIELDS).encode() + b","

    def ctahw_ctapipe_ring_words(self, grid):  # as the persistent library: 2 u64 per CTA
        self.asked.append(grid)
        return grid * 2 * 2

    def ctahw_ctapipe_load(self, op, cluster, trace, device):  # loads each kernel before its first launch
        self.loaded = getattr(self, "loaded", []) + [(op, cluster, trace, device)]
        return 0


def _fake_runner_env(monkeypatch, sms):
    import types

    from ctahw import build, device

    def alloc(*a, **k):
        raise _Reached

    props = types.SimpleNamespace(getDeviceProperties=lambda g: {"multiProcessorCount": sms})
    cp = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=props, Device=FakeCudaDevice, Stream=alloc),
                               zeros=alloc, empty=alloc, asarray=alloc, uint32=None, uint64=None, int32=None,
                               uint16=None)
    lib = _FakeRingLib()
    monkeypatch.setattr(device, "require_cupy", lambda: cp)
    monkeypatch.setattr(build, "library", lambda name, build=True: lib)
    return lib


def test_ring_runner_refuses_a_grid_wider_than_its_ring_scratch(monkeypatch):
    plan = chain_plan(m=16384)  # 128 x 32 = 4096 tiles per kernel
    lib = _fake_runner_env(monkeypatch, sms=2000)  # a grid of 2000 CTAs: 8000 words > RING_WORDS
    with pytest.raises(ValueError, match=r"grid of 2000 CTAs needs 8000 int32 ring words.*RING_WORDS = 4096"):
        runner.CtaPipeRunner(plan, 16384, [8192, 8192, 8192], None, [None, None], persistent="ring")
    assert lib.asked == [2000]


def test_ring_runner_takes_an_h200_grid_and_smem_is_not_checked(monkeypatch):
    plan = chain_plan(m=16384)
    lib = _fake_runner_env(monkeypatch, sms=132)
    with pytest.raises(_Reached):  # past the checks, at the first allocation
        runner.CtaPipeRunner(plan, 16384, [8192, 8192, 8192], None, [None, None], persistent="ring")
    assert lib.asked == [132, 132]
    lib = _fake_runner_env(monkeypatch, sms=2000)
    with pytest.raises(_Reached):  # the smem design has no ring
        runner.CtaPipeRunner(plan, 16384, [8192, 8192, 8192], None, [None, None], persistent="smem")
    assert lib.asked == []


def test_ring_grid_is_whole_clusters_of_at_most_one_cta_per_sm():
    assert runner.ring_grid(4096, 132, "1x1") == 132
    assert runner.ring_grid(4096, 131, "2x1") == 130
    assert runner.ring_grid(64, 132, "1x1") == 64
    assert runner.check_ring_words(object(), 1024) == runner.RING_WORDS  # no symbol: 2 u64 per CTA
    with pytest.raises(ValueError, match="1025 CTAs"):
        runner.check_ring_words(object(), 1025)


# -- one field list for the descriptor: ctapipe.cuh's X-macro, checked by name against a library


KERNELS = Path(runner.__file__).resolve().parent / "kernels"
CTAPIPE_SOURCES = ("ctapipe.cuh", "ctapipe_gemm.cuh", "ctapipe_sm90_bf16.cu", "ctapipe_sm90_bf16_cluster.cu",
                   "ctapipe_sm90_bf16_persistent.cu")


def test_desc_fields_are_the_x_macro_of_ctapipe_cuh_and_the_cpp_side_has_no_other_list():
    import re

    header = (KERNELS / "ctapipe.cuh").read_text()
    assert runner.DESC_FIELDS == runner.desc_fields_from_source(header, "CTAPIPE_DESC_FIELDS")
    assert len(set(runner.DESC_FIELDS)) == len(runner.DESC_FIELDS)
    # Params, the field count, the exported names and from_desc are all expansions of the one list
    params = re.search(r"struct Params \{(.*?)\n\};", header, re.S).group(1)
    assert re.sub(r"#define.*|#undef.*|\s", "", params) == "CTAPIPE_DESC_FIELDS(CTAPIPE_MEMBER)"
    gemm = (KERNELS / "ctapipe_gemm.cuh").read_text()
    for gen in ("CTAPIPE_COUNT", "CTAPIPE_NAME", "CTAPIPE_READ"):
        assert f"CTAPIPE_DESC_FIELDS({gen})" in gemm
    # no descriptor word read by a hand-kept index anywhere in the ctapipe kernels
    for name in CTAPIPE_SOURCES:
        text = (KERNELS / name).read_text()
        assert not re.search(r"\b(desc|f)\[\d+\]", text), name


@pytest.mark.parametrize("lib_names, what", [
    ("mode,order,tiles_n,num_tiles", "field 2 is 'num_tiles' in the source but 'tiles_n'"),  # swapped
    ("mode,order,n_tiles,tiles_n", "field 2 is 'num_tiles' in the source but 'n_tiles'"),  # renamed
    ("mode,order,num_tiles", "field 3 is 'tiles_n' in the source but nothing"),  # dropped
    ("mode,order,num_tiles,tiles_n,spare", "field 4 is nothing (the list ends) in the source but 'spare'"),  # added
])
def test_a_library_whose_field_list_differs_is_refused_naming_the_first_difference(lib_names, what):
    fields = ("mode", "order", "num_tiles", "tiles_n")
    runner.check_desc_names(b"mode,order,num_tiles,tiles_n,", fields, "ctapipe")  # the library's trailing comma
    with pytest.raises(RuntimeError, match=re.escape(what)):
        runner.check_desc_names(lib_names.encode() + b",", fields, "ctapipe")


def test_the_whole_list_checked_against_one_moved_field():
    names = list(runner.DESC_FIELDS)
    names[3], names[4] = names[4], names[3]
    with pytest.raises(RuntimeError, match=rf"field 3 is '{runner.DESC_FIELDS[3]}' in the source but "
                                           rf"'{runner.DESC_FIELDS[4]}' in the library \(27 vs 27 fields\)"):
        runner.check_desc_names(",".join(names).encode(), runner.DESC_FIELDS, "ctapipe")


def test_descriptor_refuses_a_name_the_field_list_lacks(monkeypatch):
    kernels, pipes = runner.plan_arrays(chain_plan())
    prod = kernels[0]
    ptrs = {"order": 8, "error": 16, "cta_tile": 24}
    with pytest.raises(ValueError, match="'ordr' is not a field of the launcher's descriptor"):
        runner.descriptor(prod, pipes, {**ptrs, "ordr": 32}, epoch=1, timeout_ns=1)
    # ctapipe.cuh renaming a field the descriptor sets itself: an error, not a word silently left 0
    renamed = tuple("n_tiles" if n == "num_tiles" else n for n in runner.DESC_FIELDS)
    monkeypatch.setattr(runner, "DESC_FIELDS", renamed)
    with pytest.raises(ValueError, match="'num_tiles' is not a field"):
        runner.descriptor(prod, pipes, ptrs, epoch=1, timeout_ns=1)


# -- the ring design's depth against K (the library's launch check, through the runner)


class _FakeRingCheckLib(_FakeRingLib):
    """The persistent library with a ring check that refuses a queue-fed ring kernel below ``min_k``."""

    def __init__(self, min_k):
        super().__init__()
        self.min_k, self.checked = min_k, []

    def ctahw_ctapipe_ring_check(self, cluster, mode, k):
        self.checked.append((cluster, mode, k))
        return -2005 if cluster >= 4 and mode == runner.MODE_QUEUE and k < self.min_k else 0

    def ctahw_ctapipe_status_string(self, code):
        return b"K too small for the persistent ring design's hand-off ring"


def test_ring_runner_refuses_a_k_the_launcher_would_refuse(monkeypatch):
    from ctahw import build

    plan = chain_plan(m=1024)
    _fake_runner_env(monkeypatch, sms=132)
    lib = _FakeRingCheckLib(min_k=16384)
    monkeypatch.setattr(build, "library", lambda name, build=True: lib)
    with pytest.raises(ValueError, match=r"K = 8192 refused by the launcher \(-2005\): K too small for the "
                                         r"persistent ring design's hand-off ring"):
        runner.CtaPipeRunner(plan, 1024, [8192, 8192, 8192], None, [None, None], persistent="ring")
    assert lib.checked == [(4, runner.MODE_STATIC, 8192), (4, runner.MODE_QUEUE, 8192)]  # producer passes
    ok = _FakeRingCheckLib(min_k=0)
    monkeypatch.setattr(build, "library", lambda name, build=True: ok)
    with pytest.raises(_Reached):  # past the checks and the loads, at the first allocation
        runner.CtaPipeRunner(plan, 1024, [8192, 8192, 8192], None, [None, None], persistent="ring")
    assert sorted(ok.loaded) == [(0, 4, 0, 0), (0, 4, 0, 1)]  # the ring design's 1x1 kernel on each GPU, op 0
    lib = _FakeRingCheckLib(min_k=8192)
    monkeypatch.setattr(build, "library", lambda name, build=True: lib)
    with pytest.raises(_Reached):  # past the checks
        runner.CtaPipeRunner(plan, 1024, [8192, 8192, 8192], None, [None, None], persistent="ring")
    assert runner.check_ring_depth(object(), 4, runner.MODE_QUEUE, 64) is None  # no check in the library: passes
