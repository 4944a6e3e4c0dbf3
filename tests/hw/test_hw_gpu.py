"""GPU tests: the kernels and baselines on real GPUs (marked `hw`; skipped with a reason elsewhere)."""

from __future__ import annotations

import math
import os

import pytest

pytestmark = pytest.mark.hw


def _gpus_or_skip(n: int):
    from ctahw.device import DeviceError, require_gpus

    try:
        return require_gpus(n)
    except DeviceError as e:
        pytest.skip(f"needs {n} sm_90 GPU(s): {e}")


@pytest.fixture
def cp():
    _gpus_or_skip(1)
    import cupy

    return cupy


@pytest.mark.parametrize("backend", ["cutlass", "cublas"])
@pytest.mark.parametrize("m,n,k", [(256, 512, 1024), (1000, 768, 2048)])  # 1000: rows not a tile multiple
def test_gemm_matches_fp32_reference(cp, backend, m, n, k):
    from ctahw.device import REL_TOL_BF16, bf16_bits_to_f32, poison, random_bf16, rel_error
    from ctahw.gemm import make_backend

    rng = cp.random.default_rng(int.from_bytes(os.urandom(4), "little"))  # fresh inputs each run
    a, w = random_bf16((m, k), cp, rng), random_bf16((n, k), cp, rng, 1 / math.sqrt(k))
    d = cp.empty((m, n), dtype=cp.uint16)
    poison(d)
    # the inputs and the poison are made on CuPy's default stream, which a non-blocking stream does not wait
    # for: without this the GEMM could run before them (seen after the CTA-pipelining tests: the poison landed
    # on top of the GEMM's output)
    cp.cuda.Device().synchronize()
    s = cp.cuda.Stream(non_blocking=True)
    make_backend(backend, 0)(a, w, d, m, n, k, s)
    s.synchronize()
    ref = bf16_bits_to_f32(a, cp) @ bf16_bits_to_f32(w, cp).T
    err = rel_error(d, ref, cp)
    assert err < REL_TOL_BF16, err
    assert err > 1e-5  # bf16 output rounding alone is ~1e-3: a zero error would mean the check saw nothing


def test_cutlass_rejects_misaligned_k(cp):
    from ctahw.gemm import CutlassGemm, GemmError

    g = CutlassGemm(0)
    a = cp.zeros((128, 1001), dtype=cp.uint16)
    w = cp.zeros((256, 1001), dtype=cp.uint16)
    d = cp.zeros((128, 256), dtype=cp.uint16)
    with pytest.raises(GemmError, match="cutlass"):
        g(a, w, d, 128, 256, 1001, cp.cuda.Stream())


def test_peer_access_and_pingpong():
    _gpus_or_skip(2)
    from ctahw.calibrate import measure

    res = measure(quick=True, reps=3)
    assert 0 < res["pingpong_store"]["rtt_min_ns"] < 100_000
    assert res["link_gbps"] > 10 and res["copy_engine_gbps"] > 10
    assert res["tile_fit_128x256"]["sm_tflops"] > 0


def test_small_sweep_is_correct():
    _gpus_or_skip(1)
    from ctahw.baselines import SweepConfig, run_sweep
    from ctahw.device import gpus

    g = 2 if sum(x.is_sm90 for x in gpus()) >= 2 else 1
    rows = run_sweep(SweepConfig(ms=(1024,), h=2048, gpus=g, chunks=(1, 2), reps=2, warmup=1, gate_ms=0.5))
    assert rows and all(r["ok"] for r in rows), [(r.get("experiment"), r.get("error"), r.get("rel_err")) for r in rows]
