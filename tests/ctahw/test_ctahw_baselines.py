"""ctahw.baselines: the parts that decide what runs and how results are read (CPU only)."""

from __future__ import annotations

import pytest

from ctahw.baselines import (SweepConfig, breakdown, chain_flops, chunk_counts, mark_best, pick_schedule,
                             plan_sweep)
from ctahw.gemm import SCHEDULES, schedule_name


def test_chunk_counts_keep_whole_row_tiles():
    assert chunk_counts(1024, (1, 2, 4, 8, 16)) == [1, 2, 4, 8]
    assert chunk_counts(16384, (1, 2, 4, 8, 16)) == [1, 2, 4, 8, 16]
    assert chunk_counts(384, (1, 2, 3, 4)) == [1, 3]


def test_mark_best_per_backend_and_m_ignoring_errors():
    rows = [dict(experiment="microbatch", backend="cublas", m=1024, chunks=c, median_ms=t, error="")
            for c, t in ((1, 2.0), (2, 1.5), (4, 1.7))]
    rows.append(dict(experiment="microbatch", backend="cublas", m=1024, chunks=8, median_ms=0.1, error="boom"))
    rows.append(dict(experiment="microbatch", backend="cutlass", m=1024, chunks=1, median_ms=9.0, error=""))
    mark_best(rows)
    assert [r["chunks"] for r in rows if r["best"]] == [2, 1]


def test_plan_covers_the_issue_sweep():
    cases = plan_sweep(SweepConfig())
    ms = {c["m"] for c in cases}
    assert ms == {1024, 2048, 4096, 8192, 16384}
    kinds = {c["experiment"] for c in cases}
    assert kinds == {"gemm", "remote_d", "sequential", "microbatch", "tp"}
    mb = [c for c in cases if c["experiment"] == "microbatch" and c["m"] == 1024 and c["backend"] == "cublas"]
    assert [c["chunks"] for c in mb] == [1, 2, 4, 8]
    one = plan_sweep(SweepConfig(gpus=1))
    assert {c["experiment"] for c in one} == {"gemm", "sequential"}


def test_breakdown_of_a_two_gpu_run():
    # GPU 0: two GEMMs, a collective on its compute stream, a copy-engine transfer beside them; GPU 1: one GEMM
    parts = [("compute", 0, 1.0), ("compute", 0, 1.0), ("comm", 0, 0.5), ("copy", 0, 0.75), ("compute", 1, 2.0)]
    bd = breakdown(3.0, parts, [0, 1])
    assert bd["per_gpu"]["0"] == {"compute_ms": 2.0, "comm_ms": 0.5, "copy_ms": 0.75, "idle_ms": 0.5}
    assert bd["per_gpu"]["1"] == {"compute_ms": 2.0, "comm_ms": 0.0, "copy_ms": 0.0, "idle_ms": 1.0}
    # compute, comm, idle: means over GPUs; copy: the copy engines' total
    assert (bd["compute_ms"], bd["comm_ms"], bd["copy_ms"], bd["idle_ms"]) == (2.0, 0.25, 0.75, 0.75)
    with pytest.raises(ValueError):
        breakdown(1.0, [("launch", 0, 1.0)], [0])


def test_chain_flops():
    assert chain_flops(16384, 8192, 2) == 2 * 2 * 16384 * 8192 * 8192


def test_pick_schedule_takes_the_fastest_and_ties_go_to_the_default():
    med = {c: 3.0 for c in SCHEDULES}
    assert pick_schedule(med) == SCHEDULES[0] == (0, 1)
    med[(2, 8)] = 2.9
    assert pick_schedule(med) == (2, 8)
    assert schedule_name((2, 8)) == "along_n/swizzle8"
    assert len(SCHEDULES) == 12


def test_plan_times_cutlass_default_order_beside_the_tuned_one():
    gemm = [c["backend"] for c in plan_sweep(SweepConfig(ms=(1024,))) if c["experiment"] == "gemm"]
    assert gemm == ["cublas", "cutlass", "cutlass_default"]
    untuned = plan_sweep(SweepConfig(ms=(1024,), tune_rounds=0))
    assert [c["backend"] for c in untuned if c["experiment"] == "gemm"] == ["cublas", "cutlass"]
