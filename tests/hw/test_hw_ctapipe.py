"""GPU tests of CTA-pipelining (marked `hw`; need 2 sm_90 GPUs with peer access, skipped with a reason elsewhere).

Correctness on fresh random inputs with poisoned buffers, the invariant checker on a measured trace, 1,000
back-to-back runs without counter resets, and a producer that never signals one row-block (the consumer's
bounded wait reports a timeout; the GPUs stay usable). The stall runs in a process of its own per variant: a
process whose kernel timed out left the next stall and the next GEMM of the same process failing (2xH200,
2026-11-29), so that `pytest tests/hw` runs every test in one session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.hw

ALL_VARIANTS = ("cutlass_ctapipe", "cutlass_ctapipe_trace", "cutlass_ctapipe_c12", "cutlass_ctapipe_c12_trace",
                "cutlass_ctapipe_c21", "cutlass_ctapipe_c21_trace", "cutlass_ctapipe_p", "cutlass_ctapipe_p_trace",
                "cutlass_ctapipe_pr", "cutlass_ctapipe_pr_trace",
                "cutlass_ctapipe_pr21", "cutlass_ctapipe_pr21_trace", "cutlass_ctapipe_g21", "cutlass_ctapipe_g21_trace",
                "cutlass_ctapipe_w21", "cutlass_ctapipe_w21_trace", "cutlass_ctapipe_w21g4",
                "cutlass_ctapipe_w21g4_trace", "cutlass_ctapipe_w21g8", "cutlass_ctapipe_w21g8_trace",
                "cutlass_ctapipe_w21g8t", "cutlass_ctapipe_w21g8t_trace", "cutlass_ctapipe_w21g8tt",
                "cutlass_ctapipe_w21g8tt_trace", "cutlass_ctapipe_g21g8", "cutlass_ctapipe_g21g8_trace")
"""Every variant of ctahw.pipelined.VARIANTS (spelled out so that collection needs no import of ctahw)."""

B2B_MS = tuple(int(m) for m in os.environ.get("CTAHW_B2B_MS", "2048").split(",") if m)
"""M of the back-to-back test (CTAHW_B2B_MS, comma-separated; default 2048)."""


def _record(kind: str, res: dict) -> None:
    """Append a test's measured dict to $CTAHW_HW_RESULTS (JSON lines), if set: the device script keeps them."""
    path = os.environ.get("CTAHW_HW_RESULTS")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"test": kind, **res}, default=str) + "\n")


@pytest.fixture(scope="module")
def sweep():
    from ctahw.device import DeviceError, require_gpus

    try:
        require_gpus(2)
    except DeviceError as e:
        pytest.skip(f"needs 2 sm_90 GPUs: {e}")
    from ctahw.baselines import Session, SweepConfig

    seed = int.from_bytes(os.urandom(4), "little")  # fresh inputs each run
    return Session(SweepConfig(h=8192, gpus=2, backends=("cublas",), reps=2, warmup=1, gate_ms=1.0, seed=seed,
                             ctapipe_variants=_variants()), log=lambda s: None)


def _variants() -> tuple[str, ...]:
    """CTAHW_CTAPIPE_VARIANTS (comma-separated; the device script passes those that passed its smoke run)."""
    from ctahw.pipelined import VARIANTS

    env = os.environ.get("CTAHW_CTAPIPE_VARIANTS", "")
    return tuple(v for v in env.split(",") if v in VARIANTS) or tuple(VARIANTS)


def _need(variant: str) -> None:
    if variant not in _variants():
        pytest.skip(f"{variant} is not among CTAHW_CTAPIPE_VARIANTS (it failed the device script's smoke run)")


@pytest.mark.parametrize("m", [1024, 2048])
def test_ctapipe_matches_reference_and_its_trace_passes_the_checker(sweep, m):
    from ctahw.device import REL_TOL_BF16
    rows = sweep.ctapipe(m)
    assert {r["backend"] for r in rows} == set(_variants())
    for r in rows:
        _record("correctness", {k: r.get(k) for k in ("backend", "m", "rel_err", "median_ms", "trace_violations",
                                                      "trace_violations_other", "publish_inversion_us",
                                                      "first_rowblock_ms", "trace_makespan_ms", "epochs")})
        assert 1e-5 < r["rel_err"] <= REL_TOL_BF16, r
        # slots published out of index order by concurrent pushers (pipelined.PUBLISH_ORDER) are allowed,
        # up to a few us; nothing else
        assert r["trace_violations_other"] == 0, [t["violations"] for t in sweep.traces]
        assert r["publish_inversion_us"] < 5.0, r
        assert 0 < r["first_rowblock_ms"] < r["trace_makespan_ms"]
    assert abs(sweep.traces[-1]["offsets"][1]["offset_spread_ns"]) < 1000


@pytest.mark.parametrize("m", B2B_MS)
@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_thousand_back_to_back_runs_without_reset(sweep, variant, m):
    from ctahw.device import REL_TOL_BF16
    from ctahw.pipelined import back_to_back

    _need(variant)
    res = back_to_back(sweep, m, 1000, variant)
    _record("back_to_back", res)
    assert res["counters_exact"], res
    assert 1e-5 < res["rel_err"] <= REL_TOL_BF16, res


def _stall_in_own_process(variant: str, limit_s: float = 120.0) -> dict:
    """``ctahw.pipelined.stall`` (M=1024, row-block 3 never signalled, 100 ms timeout) in a fresh Python process
    (its own session, killed whole past ``limit_s``); its result dict. The kernel libraries are built here first, so
    that the child never compiles under the limit."""
    from pathlib import Path

    from ctahw import build, runner

    for name in {*runner.LIBRARY_OF_CLUSTER.values(), runner.PERSISTENT_LIBRARY}:
        build.library(name)
    code = textwrap.dedent(f"""
        import json, os
        from ctahw.baselines import Session, SweepConfig
        from ctahw.pipelined import stall
        sw = Session(SweepConfig(h=8192, gpus=2, backends=("cublas",), reps=2, warmup=1, gate_ms=1.0,
                               seed=int.from_bytes(os.urandom(4), "little"), ctapipe_variants=({variant!r},)),
                   log=lambda s: None)
        res = stall(sw, m=1024, row=3, timeout_ms=100.0, variant={variant!r})
        print("STALL_RESULT " + json.dumps(res, default=lambda o: o.item() if hasattr(o, "item") else str(o)))
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[2], start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # the whole session: a hung GPU process must not outlive the test
        out, err = proc.communicate()
        pytest.fail(f"{variant}: the stall process ran past {limit_s} s (a hang): {err[-2000:]}")
    lines = [ln for ln in out.splitlines() if ln.startswith("STALL_RESULT ")]
    assert proc.returncode == 0 and lines, f"stall process rc={proc.returncode}: {err[-2000:]}"
    return json.loads(lines[-1].removeprefix("STALL_RESULT "))


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_a_producer_that_never_signals_gives_a_timeout_not_a_hang(sweep, variant):
    from ctahw.pipelined import VARIANTS

    _need(variant)
    # M=1024, 8 x 32 consumer tiles; producer row-block 3 never signals, so its counter never completes: its 32
    # consumer tiles (64 when a counter covers 256 rows: g21) are never pushed and the consumers that pop those
    # slots wait: one record per CTA (consumer cluster 1x1) or per cluster leader (1x2: 16; g21's 2x1: 32); in
    # the persistent kernel (1x1) each unpublished slot is claimed by one pop of a different CTA (a CTA whose
    # pop timed out takes no more tiles): 32 as well. A wait consumer (w21: 2x1 clusters over row-block pairs)
    # has 32 clusters holding a tile of row-block 3, whose leaders report a wait timeout (code 8).
    v = VARIANTS[variant]
    stuck = 32 * max(1, v.counter_rows // 128)
    waiters = stuck if v.clusters[-1] == "1x1" else stuck // 2
    if v.consumer == "wait":
        waiters = 32
    res = _stall_in_own_process(variant)
    _record("stall", dict(res, variant=variant, waiters_expected=waiters))
    assert res["error_code"] == (8 if v.consumer == "wait" else 1), res  # wait / pop timeout
    assert res["error_count"] == waiters, res
    assert res["wall_s"] < 5.0 and res["recovered"], res
