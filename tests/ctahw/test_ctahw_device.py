"""ctahw.device helpers on numpy (the same code runs on CuPy arrays on the GPU)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ctahw import device as dv


def test_bf16_round_trip_is_exact_for_bf16_values():
    bits = np.arange(0, 0x7F80, 7, dtype=np.uint16)  # positive finite bf16 values
    assert np.array_equal(dv.f32_to_bf16_bits(dv.bf16_bits_to_f32(bits, np), np), bits)


def test_bf16_rounds_to_nearest_even():
    one = np.float32(1.0)
    ulp = np.float32(2.0 ** -7)  # bf16 has 7 mantissa bits
    x = np.array([one + ulp / 2, one + 3 * ulp / 2, one + ulp * 0.49, -(one + ulp * 0.51)], dtype=np.float32)
    got = dv.bf16_bits_to_f32(dv.f32_to_bf16_bits(x, np), np)
    assert got.tolist() == [1.0, 1.0 + 2 * 2.0 ** -7, 1.0, -(1.0 + 2.0 ** -7)]


def test_nan_stays_nan_and_poison_is_nan():
    b = dv.f32_to_bf16_bits(np.array([np.nan, np.inf], dtype=np.float32), np)
    f = dv.bf16_bits_to_f32(b, np)
    assert math.isnan(f[0]) and f[1] == np.inf
    buf = np.zeros(5, dtype=np.uint16)
    dv.poison(buf)
    assert np.isnan(dv.bf16_bits_to_f32(buf, np)).all()


def test_rel_error_catches_an_unwritten_element():
    rng = np.random.default_rng(0)
    ref = rng.standard_normal((64, 32)).astype(np.float32)
    out = dv.f32_to_bf16_bits(ref, np)
    err = dv.rel_error(out, ref, np)
    assert 0 < err < 2.0 ** -8  # bf16 rounding alone
    dv.poison(out[3:4, 5:6])
    assert dv.rel_error(out, ref, np) == math.inf


def test_rel_error_of_a_wrong_result_fails_the_bf16_tolerance():
    rng = np.random.default_rng(1)
    ref = rng.standard_normal(1000).astype(np.float32)
    wrong = ref.copy()
    wrong[::10] = 0.0
    assert dv.rel_error(dv.f32_to_bf16_bits(wrong, np), ref, np) > dv.REL_TOL_BF16


def test_random_bf16_is_not_zero_and_fresh():
    a = dv.random_bf16((128,), np, np.random.default_rng(1))
    b = dv.random_bf16((128,), np, np.random.default_rng(2))
    assert a.dtype == np.uint16 and np.count_nonzero(a) > 120 and not np.array_equal(a, b)


def test_rotation_sets_cover_three_l2():
    l2 = 60 << 20
    assert dv.rotation_sets(16 << 20, l2) == 8  # capped
    assert dv.rotation_sets(100 << 20, l2) == 2
    assert dv.rotation_sets(1 << 30, l2) == 2  # never fewer than two
    with pytest.raises(ValueError):
        dv.rotation_sets(0, l2)


def test_summarize_is_the_median():
    t = dv.summarize([3.0, 1.0, 2.0, 10.0, 2.5])
    assert (t.median_ms, t.min_ms, t.max_ms, t.n) == (2.5, 1.0, 10.0, 5)
    assert t.p25_ms <= t.median_ms <= t.p75_ms


def test_require_cupy_error_names_the_extras(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_cupy(name, *a, **k):
        if name == "cupy":
            raise ImportError("no cupy here")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_cupy)
    with pytest.raises(dv.NoCupyError, match=r"\.\[hw\]"):
        dv.require_cupy()


def test_importing_ctahw_does_not_import_cupy():
    import subprocess
    import sys

    code = "import sys, ctahw.cli, ctahw.baselines, ctahw.calibrate, ctahw.gemm, ctahw.comm; print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_relu_bf16_bits_zeroes_the_negative_values_only():
    """The ReLU'd A of the clock and activation probes: negative bf16 values (sign bit set, -0.0 included) become +0,
    the rest keep their bits; the same array module in and out."""
    x = np.array([-2.5, -0.0, 0.0, 1.0, 3.0e-3, -1e-30, np.inf, -np.inf], dtype=np.float32)
    bits = dv.f32_to_bf16_bits(x, np)
    out = dv.relu_bf16_bits(bits, np)
    assert out.dtype == np.uint16 and out.shape == bits.shape
    np.testing.assert_array_equal(dv.bf16_bits_to_f32(out, np), np.maximum(dv.bf16_bits_to_f32(bits, np), 0))
    assert (out[x > 0] == bits[x > 0]).all() and (out[np.signbit(x)] == 0).all()


def test_no_gpus_is_none_with_the_gpus_and_one_line_and_2_without(monkeypatch, capsys):
    from ctahw import device

    monkeypatch.setattr(device, "require_gpus", lambda n: [object()] * n)
    assert device.no_gpus("probe", 2) is None
    assert capsys.readouterr().err == ""

    def missing(n):
        raise device.NoGpuError(f"need {n} GPUs, found 0: []")

    monkeypatch.setattr(device, "require_gpus", missing)
    assert device.no_gpus("probe", 2) == 2
    assert capsys.readouterr().err == "probe: need 2 GPUs, found 0: []\n"
