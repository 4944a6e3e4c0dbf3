"""GPU tests of CTA-pipelining (marked `hw`; need 2 sm_90 GPUs with peer access, skipped with a reason elsewhere).

Correctness on fresh random inputs with poisoned buffers, the invariant checker on a measured trace, 1,000
back-to-back runs without counter resets, and a producer that never signals one row-block (the consumer's
bounded wait reports a timeout; the GPUs stay usable).
"""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.hw


@pytest.fixture(scope="module")
def sweep():
    from ctahw.device import DeviceError, require_gpus

    try:
        require_gpus(2)
    except DeviceError as e:
        pytest.skip(f"needs 2 sm_90 GPUs: {e}")
    from ctahw.baselines import Sweep, SweepConfig

    seed = int.from_bytes(os.urandom(4), "little")  # fresh inputs each run
    return Sweep(SweepConfig(h=8192, gpus=2, backends=("cublas",), reps=2, warmup=1, gate_ms=1.0, seed=seed),
                 log=lambda s: None)


@pytest.mark.parametrize("m", [1024, 2048])
def test_ctapipe_matches_reference_and_its_trace_passes_the_checker(sweep, m):
    from ctahw.device import REL_TOL_BF16

    rows = sweep.ctapipe(m)
    assert {r["backend"] for r in rows} == {"cutlass_ctapipe", "cutlass_ctapipe_trace"}
    for r in rows:
        assert 1e-5 < r["rel_err"] <= REL_TOL_BF16, r
        assert r["trace_violations"] == 0, sweep.traces[-1]["violations"]
        assert 0 < r["first_rowblock_ms"] < r["trace_makespan_ms"]
    assert abs(sweep.traces[-1]["offsets"][1]["offset_spread_ns"]) < 1000


def test_thousand_back_to_back_runs_without_reset(sweep):
    from ctahw.device import REL_TOL_BF16
    from ctahw.pipelined import back_to_back

    res = back_to_back(sweep, 2048, 1000)
    assert res["counters_exact"], res
    assert res["rel_err"] <= REL_TOL_BF16, res


def test_a_producer_that_never_signals_gives_a_timeout_not_a_hang(sweep):
    from ctahw.pipelined import stall

    res = stall(sweep, m=1024, row=3, timeout_ms=100.0)
    assert res["error_code"] == 1, res  # pop timeout
    assert res["error_count"] == 8192 // 256, res  # the row-block's consumer tiles, one record each
    assert res["wall_s"] < 5.0 and res["recovered"], res
