"""Fused GEMM epilogues and row-wise ops: which ops fuse, the fp32 references, the C API of the epilogue library
(CPU only: numpy; the GPU runs are in tests/hw/test_hw_gpu.py)."""

from __future__ import annotations

import ctypes
import math
import re
import sys

import numpy as np
import pytest

from ctahw import build, gemm, rowwise
from ctahw.gemm import EPILOGUE_OPS_FUSED, fused_epilogue_reason
from ctahw.rowwise import launch_config, reference_epilogue, reference_rowwise


# --------------------------------------------------------------------------------------------------
# Which epilogues run fused


@pytest.mark.parametrize("ops", [(), ("gelu",), ("silu",), ("relu",), ("residual",)])
def test_supported_epilogues_fuse(ops):
    assert fused_epilogue_reason(ops) is None
    assert fused_epilogue_reason(list(ops)) is None  # a TOML list works as well


def test_op_codes_match_the_kernel_source():
    assert EPILOGUE_OPS_FUSED == {(): 0, ("gelu",): 1, ("silu",): 2, ("relu",): 3, ("residual",): 4}
    src = (build.KERNELS_DIR / "gemm_sm90_bf16_epi.cu").read_text()
    for ops, code in EPILOGUE_OPS_FUSED.items():
        if code:
            assert re.search(rf'case {code}: return f\(\w+Gemm{{}}, OpInfo{{"{ops[0]}"', src), ops


@pytest.mark.parametrize("ops,why", [
    (("gelu", "residual"), "no fused CUTLASS epilogue for ('gelu', 'residual')"),
    (("residual", "relu"), "no fused CUTLASS epilogue for ('residual', 'relu')"),
    (("gelu", "gelu"), "no fused CUTLASS epilogue for ('gelu', 'gelu')"),
    (("tanh",), "unknown epilogue op(s) 'tanh'"),
    (("gelu", "swish"), "unknown epilogue op(s) 'swish'"),
])
def test_unsupported_epilogues_say_why(ops, why):
    reason = fused_epilogue_reason(ops)
    assert reason is not None and why in reason and "\n" not in reason


def test_a_single_op_name_is_a_one_op_sequence():
    assert fused_epilogue_reason("gelu") is None
    assert "unknown" in fused_epilogue_reason("g")


def test_the_cublas_backends_refuse_an_epilogue():
    with pytest.raises(gemm.GemmError, match="cuBLAS backend runs no fused epilogue"):
        gemm._no_epilogue("cublas", ("gelu",), None)
    with pytest.raises(gemm.GemmError, match="cuBLAS backend runs no fused epilogue"):
        gemm._no_epilogue("torch", (), object())
    gemm._no_epilogue("cublas", (), None)  # the plain GEMM is fine


def test_cutlass_refuses_an_unfused_epilogue_before_touching_the_gpu():
    with pytest.raises(gemm.GemmError, match=r"no fused CUTLASS epilogue for \('silu', 'residual'\)"):
        gemm.CutlassGemm._op(("silu", "residual"))
    assert gemm.CutlassGemm._op(()) == 0 and gemm.CutlassGemm._op(["residual"]) == 4


# --------------------------------------------------------------------------------------------------
# References against values worked out by hand (math.erf: 0.5 x (1 + erf(x / sqrt 2)))


def test_gelu_reference_is_the_erf_form():
    x = np.array([1.0, -3.0, 0.5, 2.0, 0.0], dtype=np.float64)
    erf_form = [0.8413447460685429, -0.00404969409489031, 0.34573123063700656, 1.9544997361036416, 0.0]
    tanh_form = [0.8411919906082768, -0.0036373920817729943, 0.34571400982514394, 1.954597694087775, 0.0]
    got = reference_epilogue(x, ("gelu",))
    np.testing.assert_allclose(got, erf_form, rtol=1e-12, atol=0)
    # the tanh approximation is 10% off at x = -3: a reference using it fails here
    assert abs(got[1] - tanh_form[1]) > 1e-4
    got32 = reference_epilogue(x.astype(np.float32), ["gelu"])
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, erf_form, rtol=1e-6, atol=1e-7)


def test_gelu_reference_without_scipy(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy.special", None)  # import fails: math.erfc element by element
    got = reference_epilogue(np.array([1.0, -3.0], dtype=np.float32), ("gelu",))
    np.testing.assert_allclose(got, [0.8413447460685429, -0.00404969409489031], rtol=1e-6)


def test_silu_relu_residual_references():
    x = np.array([[1.0, -3.0], [0.5, 2.0]], dtype=np.float32)
    np.testing.assert_allclose(reference_epilogue(x, ("silu",)),
                               [[0.7310585786300049, -0.14227761953270035], [0.3112296656009273, 1.7615941559557646]],
                               rtol=1e-6)
    np.testing.assert_array_equal(reference_epilogue(x, ("relu",)), [[1.0, 0.0], [0.5, 2.0]])
    r = np.array([[10.0, 20.0], [30.0, 40.0]], dtype=np.float32)
    np.testing.assert_array_equal(reference_epilogue(x, ("residual",), r), [[11.0, 17.0], [30.5, 42.0]])
    # ops apply in order: relu then residual differs from residual then relu
    np.testing.assert_array_equal(reference_epilogue(x, ("relu", "residual"), -r), [[-9.0, -20.0], [-29.5, -38.0]])
    np.testing.assert_array_equal(reference_epilogue(x, ("residual", "relu"), -r), [[0.0, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(reference_epilogue(x, ()), x)
    # no overflow warning (as an error) for very negative inputs
    with np.errstate(all="raise"):
        assert reference_epilogue(np.array([-1000.0, 1000.0], dtype=np.float32), ("silu",)).tolist() == [-0.0, 1000.0]


def test_reference_epilogue_errors():
    x = np.zeros((2, 2), dtype=np.float32)
    with pytest.raises(ValueError, match="residual_f32"):
        reference_epilogue(x, ("residual",))
    with pytest.raises(ValueError, match="unknown epilogue op 'tanh'"):
        reference_epilogue(x, ("tanh",))


def test_layernorm_reference_subtracts_the_mean():
    y = np.array([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]], dtype=np.float32)
    s = 1 / math.sqrt(1.25 + 1e-5)  # mean 2.5, biased variance 1.25
    want = [[-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s], [0.0, 0.0, 0.0, 0.0]]
    got = reference_rowwise(y, "layernorm")
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    # forgetting the mean gives x / sqrt(var + eps) = [0.89, 1.79, ...]: far from the above
    assert got[0, 0] < 0
    np.testing.assert_allclose(reference_rowwise(y, "layernorm", eps=1.0)[0], np.array([-1.5, -0.5, 0.5, 1.5]) / 1.5,
                               rtol=1e-6)


def test_rmsnorm_reference():
    y = np.array([[1.0, 2.0, 3.0, 4.0], [-2.0, 2.0, -2.0, 2.0]], dtype=np.float32)
    s = 1 / math.sqrt(7.5 + 1e-5)  # mean of squares 30 / 4
    want = [[s, 2 * s, 3 * s, 4 * s], [-2 / math.sqrt(4 + 1e-5), 2 / math.sqrt(4 + 1e-5)] * 2]
    np.testing.assert_allclose(reference_rowwise(y, "rmsnorm"), want, rtol=1e-6)
    with pytest.raises(ValueError, match="unknown row-wise op"):
        reference_rowwise(y, "batchnorm")


def test_references_keep_float64_and_take_bf16_rounded_input():
    from ctahw.device import bf16_bits_to_f32, f32_to_bf16_bits

    y = np.array([[1.0, 2.0, 3.0, 4.0]])
    assert reference_rowwise(y, "rmsnorm").dtype == np.float64
    bits = f32_to_bf16_bits(y.astype(np.float32), np)
    assert reference_rowwise(bf16_bits_to_f32(bits, np), "layernorm").dtype == np.float32


# --------------------------------------------------------------------------------------------------
# Row-wise kernel launch shapes (pure)


@pytest.mark.parametrize("cols", [4096, 5120, 8192, 14336, 28672])
def test_launch_config_at_model_widths(cols):
    vec, threads, nv = launch_config(cols)
    assert vec == 8 and threads % 32 == 0 and threads <= 1024 and nv <= 8
    assert threads * nv * vec >= cols > (threads * nv - threads) * vec  # covers the row, no all-idle round


def test_launch_config_narrows_the_vector_for_odd_widths_and_alignment():
    assert launch_config(4100)[0] == 4
    assert launch_config(4097)[0] == 1
    assert launch_config(4096, align_bytes=4)[0] == 2
    assert launch_config(1) == (1, 32, 1)
    with pytest.raises(ValueError, match="at most 32"):
        launch_config(8 * 1024 * 33)
    with pytest.raises(ValueError):
        launch_config(0)


def test_rowwise_imports_without_cupy():
    # the module is imported above; CuPy is only needed to run a kernel
    assert rowwise.ROWWISE_OPS == {"layernorm": 0, "rmsnorm": 1}
    assert "#include" not in rowwise._SOURCE  # NVRTC compiles it with no headers


# --------------------------------------------------------------------------------------------------
# Every library's ctypes signatures match the extern "C" definitions in its source


_C_TYPES = {
    "int": ctypes.c_int, "unsigned": ctypes.c_uint, "unsigned int": ctypes.c_uint, "float": ctypes.c_float,
    "long long": ctypes.c_longlong, "unsigned long long": ctypes.c_ulonglong, "cudaStream_t": ctypes.c_void_p,
}


def _ctype(decl: str, named: bool = True):
    """The ctypes type of a C parameter declaration (``named``: it ends with the parameter's name)."""
    decl = re.sub(r"\b(const|__restrict__)\b", " ", decl)
    if "*" in decl:
        return ctypes.c_char_p if decl.split("*")[0].strip() == "char" else ctypes.c_void_p
    words = decl.split()
    return _C_TYPES[" ".join(words[:-1] if named else words)]


def _extern_c_functions(lib) -> dict[str, tuple[object, tuple[object, ...]]]:
    """name -> (restype, argtypes) of each function defined in the library's extern "C" blocks."""
    text = "\n".join(p.read_text() for p in (lib.source, *lib.headers))
    out = {}
    for block in re.findall(r'extern "C" \{(.*?)\}\s*// extern "C"', text, flags=re.S):
        block = re.sub(r"//[^\n]*", "", block)
        for ret, name, params in re.findall(r"^((?:const\s+)?[\w ]+?\s*\*?)\s*\b(ctahw_\w+)\s*\(([^)]*)\)\s*\{",
                                            block, flags=re.M):
            params = " ".join(params.split())
            args = tuple(_ctype(p) for p in params.split(",")) if params and params != "void" else ()
            out[name] = (_ctype(ret, named=False), args)
    return out


@pytest.mark.parametrize("name", sorted(build.LIBRARIES))
def test_signatures_match_the_extern_c_definitions(name):
    lib = build.LIBRARIES[name]
    defined = _extern_c_functions(lib)
    assert lib.abi_symbol in lib.signatures
    for sym, (restype, argtypes) in lib.signatures.items():
        assert sym in defined, f"{name}: {sym} is declared but not defined in an extern \"C\" block"
        assert defined[sym] == (restype, tuple(argtypes)), sym
    if name.startswith("gemm_"):  # the GEMM libraries declare every launcher they export
        assert set(defined) == set(lib.signatures)


def test_the_epilogue_library_is_registered():
    lib = build.LIBRARIES["gemm_sm90_bf16_epi"]
    assert lib.needs_cutlass and lib.abi_version == 1 and lib.abi_symbol == "ctahw_gemm_epi_abi_version"
    assert set(lib.signatures) == {f"ctahw_gemm_epi_{s}" for s in (
        "abi_version", "describe", "workspace_bytes", "can_implement", "bf16_128x256x64_coop", "status_string")}


# --------------------------------------------------------------------------------------------------
# CutlassGemm's dispatch, with fake libraries and a fake CuPy (no GPU, no build)


class _Arr:
    def __init__(self, ptr, shape=(0, 0), dtype="uint16", device=0, contiguous=True):
        self.data = type("M", (), {"ptr": ptr})()
        self.shape, self.dtype = shape, dtype
        self.device = type("D", (), {"id": device})()
        self.flags = type("F", (), {"c_contiguous": contiguous})()


class _FakeLib:
    def __init__(self, name):
        self.name, self.calls = name, []

    def __getattr__(self, sym):
        def fn(*args):
            self.calls.append((sym, args))
            if sym.endswith("status_string"):
                return b"boom"
            return 0
        return fn


@pytest.fixture
def fake_cutlass(monkeypatch):
    import contextlib

    loaded = []

    def library(name, build=True):
        loaded.append(name)
        return _FakeLib(name)

    fake_cp = type("cp", (), {"uint8": "uint8", "empty": staticmethod(lambda n, dtype: _Arr(999)),
                              "cuda": type("cuda", (), {"Device": staticmethod(lambda i: contextlib.nullcontext())})})
    monkeypatch.setattr(gemm.build, "library", library)
    monkeypatch.setattr(gemm, "require_cupy", lambda: fake_cp)
    return loaded


def test_cutlass_plain_gemm_never_loads_the_epilogue_library(fake_cutlass):
    g = gemm.CutlassGemm(0)
    g.schedule[(256, 512, 128)] = (2, 4)
    stream = type("S", (), {"ptr": 77})()
    g(_Arr(1), _Arr(2), _Arr(3), 256, 512, 128, stream)
    assert fake_cutlass == ["gemm_sm90_bf16"]
    sym, args = g.lib.calls[-1]
    assert sym == "ctahw_gemm_bf16_128x256x64_coop" and args[:7] == (1, 2, 3, 256, 512, 128, 1.0)
    assert args[-3:] == (2, 4, 77)  # the tuned schedule, the stream


@pytest.mark.parametrize("ops,code", [(("gelu",), 1), (("silu",), 2), (("relu",), 3), (("residual",), 4)])
def test_cutlass_epilogue_ops_load_the_epilogue_library_once(fake_cutlass, ops, code):
    g = gemm.CutlassGemm(0)
    g.schedule[(256, 512, 128)] = (1, 8)
    stream = type("S", (), {"ptr": 77})()
    c = _Arr(4, shape=(256, 512)) if ops == ("residual",) else None
    for _ in range(2):
        g(_Arr(1), _Arr(2), _Arr(3), 256, 512, 128, stream, epilogue=ops, c=c)
    assert fake_cutlass == ["gemm_sm90_bf16", "gemm_sm90_bf16_epi"]
    sym, args = g.epi_lib.calls[-1]
    assert sym == "ctahw_gemm_epi_bf16_128x256x64_coop"
    assert args[:8] == (code, 1, 2, 4 if c else None, 3, 256, 512, 128)
    assert args[-3:] == (1, 8, 77)
    assert not [s for s, _ in g.lib.calls if s.endswith("_coop")]  # the plain kernel did not run


def test_cutlass_residual_checks_c(fake_cutlass):
    g = gemm.CutlassGemm(0)
    s = type("S", (), {"ptr": 0})()
    run = lambda **kw: g(_Arr(1), _Arr(2), _Arr(3), 256, 512, 128, s, **kw)  # noqa: E731
    with pytest.raises(gemm.GemmError, match="needs c"):
        run(epilogue=("residual",))
    for bad in (_Arr(4, shape=(512, 256)), _Arr(4, shape=(256, 512), dtype="float32"),
                _Arr(4, shape=(256, 512), device=1), _Arr(4, shape=(256, 512), contiguous=False)):
        with pytest.raises(gemm.GemmError, match="C-contiguous 256x512 uint16"):
            run(epilogue=("residual",), c=bad)
    with pytest.raises(gemm.GemmError, match="has no residual"):
        run(epilogue=("gelu",), c=_Arr(4, shape=(256, 512)))
    with pytest.raises(gemm.GemmError, match="no fused CUTLASS epilogue"):
        run(epilogue=("relu", "residual"), c=_Arr(4, shape=(256, 512)))
    assert fake_cutlass == ["gemm_sm90_bf16"]  # refused before loading anything


def test_cutlass_epilogue_failure_carries_the_status_string(fake_cutlass):
    g = gemm.CutlassGemm(0)
    lib = g.epi_lib
    lib.ctahw_gemm_epi_bf16_128x256x64_coop = lambda *a: -1002
    with pytest.raises(gemm.GemmError, match=r"epilogue \('gelu',\) on GPU 0: boom \(code -1002\)"):
        g(_Arr(1), _Arr(2), _Arr(3), 256, 512, 128, type("S", (), {"ptr": 0})(), epilogue=("gelu",))


# --------------------------------------------------------------------------------------------------
# Unfused epilogues (Layer.epilogue_fused = false): the elementwise kernel's op codes and the swiglu reference


def test_the_epilogue_kernel_runs_every_spec_op_and_its_codes_match_the_source():
    from ctasim.spec import EPILOGUE_OPS

    assert set(rowwise.EPILOGUE_OP_CODES) == set(EPILOGUE_OPS) == set(gemm.EPILOGUE_OPS)
    for name, code in rowwise.EPILOGUE_OP_CODES.items():
        lines = [ln for ln in rowwise._SOURCE.splitlines() if re.search(rf"\b{code}u\b", ln) and name in ln]
        assert lines, (name, code)
    assert rowwise.epilogue_code(("gelu",)) == 1
    assert rowwise.epilogue_code("swiglu") == 5
    assert rowwise.epilogue_code(["relu", "residual"]) == 3 | 4 << 4  # first op in the lowest 4 bits
    for bad, why in ((("tanh",), "1 to 4 of"), ((), "1 to 4 of"), (("relu",) * 5, "1 to 4 of"),
                     (("swiglu", "residual"), "swiglu stands alone")):
        with pytest.raises(ValueError, match=why):
            rowwise.epilogue_code(bad)


def test_swiglu_reference_pairs_gate_and_up_within_each_tile():
    rng = np.random.default_rng(5)
    y = rng.standard_normal((3, 16)).astype(np.float32)
    got = reference_epilogue(y, ("swiglu",), tile_n=8)
    want = np.empty((3, 8), dtype=np.float32)
    for t in range(2):  # tile t: columns 8t..8t+3 gate, 8t+4..8t+7 up -> output columns 4t..4t+3
        for c in range(4):
            g, u = y[:, 8 * t + c].astype(np.float64), y[:, 8 * t + 4 + c].astype(np.float64)
            want[:, 4 * t + c] = g / (1 + np.exp(-g)) * u
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    # another tile width pairs other columns: the pairing is the tile's, not the matrix's halves
    assert not np.allclose(reference_epilogue(y, ("swiglu",), tile_n=16), got)
    with pytest.raises(ValueError, match="do not tile"):
        reference_epilogue(y, ("swiglu",), tile_n=6)
    with pytest.raises(ValueError, match="do not tile"):
        reference_epilogue(y[:, :15], ("swiglu",), tile_n=15)
