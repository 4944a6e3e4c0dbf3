"""Fused epilogue ops of the CTA-pipelined kernels (variant (a)) on the CPU: the op codes (one Python table, one kernel
list, compared by name), the runner's argument checks, and which launcher a kernel goes through with which op and C
(a fake CuPy and a fake library: no GPU). The GPU run is tests/hw/test_hw_ctapipe_epilogue.py."""

from __future__ import annotations

import dataclasses
import re
import types
from pathlib import Path

import pytest

from ctahw import gemm, rowwise, runner
from ctasim.spec import Layer, Strategy, Workload, load_hardware
from ctasim.strategies import build_plans
from tests.helpers import FakeCudaDevice

KERNELS = Path(runner.__file__).resolve().parent / "kernels"
M, K0, N0, N1 = 1024, 2048, 7168, 2048  # the MLP block of the GPU test: 2048 -> 7168 (gelu) -> 2048 (+ X)


def mlp_plan(variant: str = "cutlass_ctapipe"):
    wl = Workload("mlp", "bf16", (Layer(m=M, k=K0, n=N0, epilogue=("gelu",)),
                                  Layer(m=M, k=N0, n=N1, epilogue=("residual",))))
    return build_plans(Strategy(kind="ctapipe", variant=variant), wl, load_hardware("h200-x2-calibrated"), 2, "mlp")[0]


def mlp_kernels():
    kernels, _ = runner.plan_arrays(mlp_plan())
    return sorted(kernels, key=lambda k: k.layer)


# --------------------------------------------------------------------------------------------------
# One list of op codes


def test_epilogue_names_are_the_fused_table_by_code_and_share_rowwise_codes():
    assert runner.EPILOGUE_NAMES == ("none", "gelu", "silu", "relu", "residual")
    for code, name in enumerate(runner.EPILOGUE_NAMES):
        assert gemm.EPILOGUE_OPS_FUSED[() if name == "none" else (name,)] == code
        if name != "none":  # the unfused elementwise kernel numbers its ops the same way
            assert rowwise.EPILOGUE_OP_CODES[name] == code


def test_the_kernel_list_is_the_python_table_code_by_code():
    gemm_cuh = (KERNELS / "ctapipe_gemm.cuh").read_text()
    body = re.search(r"#define CTAPIPE_EPILOGUE_OPS\(X\)(.*)", gemm_cuh).group(1)
    listed = [(int(c), n) for c, n in re.findall(r"\bX\((\d+),\s*(\w+)\)", body)]
    assert listed == list(enumerate(runner.EPILOGUE_NAMES))
    # each code's specialization is the CUTLASS fusion its name says
    fusion = {"none": r"LinearCombination<ElementD, ElementAccumulator, void,", "gelu": r"ActivationFusion<act::GELU>",
              "silu": r"ActivationFusion<act::SiLu>", "relu": r"ActivationFusion<act::ReLu>",
              "residual": r"using ElementC = cutlass::bfloat16_t;.*\n.*LinearCombination<ElementD, ElementAccumulator, "
                          r"ElementC,"}
    for code, name in listed:
        spec = re.search(rf"struct EpilogueOp<{code}> \{{(.*?)\n\}};", gemm_cuh, re.S).group(1)
        assert f'name = "{name}"' in spec and re.search(fusion[name], spec), name
    # both classical libraries export the list and the launcher that takes it
    for tu in ("ctapipe_sm90_bf16.cu", "ctapipe_sm90_bf16_cluster.cu"):
        text = (KERNELS / tu).read_text()
        assert "#define CTAHW_CTAPIPE_EPILOGUE_LIBRARY" in text and "int ctahw_ctapipe_gemm_epi(int op," in text
    assert "CTAHW_CTAPIPE_EPILOGUE_LIBRARY" not in (KERNELS / "ctapipe_sm90_bf16_persistent.cu").read_text()


@pytest.mark.parametrize("table, why", [
    ({(): 0, ("gelu",): 1, ("silu",): 1}, "code 1 is used twice"),
    ({(): 0, ("gelu",): 2}, r"codes \[0, 2\] are not 0, 1"),
    ({(): 0, ("gelu", "residual"): 1}, "every other code one op alone"),
    ({("gelu",): 0}, "code 0 is the plain epilogue"),
])
def test_a_table_the_kernel_list_cannot_hold_is_refused(table, why):
    with pytest.raises(ValueError, match=why):
        runner.epilogue_names_of(table)


@pytest.mark.parametrize("lib_names, what", [
    ("none,silu,gelu,relu,residual", "code 1 is 'gelu' in Python but 'silu' in the library"),  # swapped
    ("none,gelu,silu,relu,add", "code 4 is 'residual' in Python but 'add' in the library"),  # renamed
    ("none,gelu,silu,relu", "code 4 is 'residual' in Python but nothing (the list ends)"),  # dropped
    ("none,gelu,silu,relu,residual,tanh", "code 5 is nothing (the list ends) in Python but 'tanh'"),  # added
])
def test_a_library_whose_op_list_differs_is_refused_naming_the_first_code(lib_names, what):
    runner.check_epilogue_names(b"none,gelu,silu,relu,residual,", "lib")  # the library's trailing comma
    with pytest.raises(RuntimeError, match=re.escape(what)):
        runner.check_epilogue_names(lib_names.encode() + b",", "lib")


# --------------------------------------------------------------------------------------------------
# The runner's arguments


def test_each_layer_gets_its_op_code():
    prod, cons = mlp_kernels()
    assert runner.epilogue_codes([prod, cons], {0: ("gelu",), 1: ("residual",)}) == {prod.op: 1, cons.op: 4}
    assert runner.epilogue_codes([prod, cons], {1: "relu"}) == {prod.op: 0, cons.op: 3}  # a name alone; layer 0 plain
    assert runner.epilogue_codes([prod, cons], {0: ["silu"], 1: ()}) == {prod.op: 2, cons.op: 0}
    assert runner.epilogue_codes([prod, cons], None) == {prod.op: 0, cons.op: 0}


@pytest.mark.parametrize("epilogues, persistent, why", [
    ({0: ("tanh",)}, "", r"ctapipe L0 gpu0 \(layer 0\): unknown epilogue op 'tanh' \(the CTA-pipelined kernels fuse: "
                         r"gelu, silu, relu, residual\)"),
    ({0: ("none",)}, "", "unknown epilogue op 'none'"),  # code 0 is asked for with (), not by its kernel-side name
    ({1: ("gelu", "residual")}, "", r"epilogue \('gelu', 'residual'\): the CTA-pipelined kernels fuse one op alone"),
    ({2: ("gelu",)}, "", "epilogues name layer 2, but the plan's kernels run layers 0, 1"),
    ({0: ("gelu",)}, "ring", r"asked of variant \(b\), the persistent kernels \(ctapipe_sm90_bf16_persistent\)"),
    ({1: ("residual",)}, "smem", r"asked of variant \(b\)"),
])
def test_an_epilogue_the_kernels_cannot_run_is_refused_in_one_line(epilogues, persistent, why):
    with pytest.raises(ValueError, match=why) as e:
        runner.epilogue_codes(mlp_kernels(), epilogues, persistent)
    assert "\n" not in str(e.value)


def test_variant_b_still_runs_the_plain_epilogue():
    prod, cons = mlp_kernels()
    assert runner.epilogue_codes([prod, cons], {0: (), 1: ()}, "ring") == {prod.op: 0, cons.op: 0}


@dataclasses.dataclass
class FakeArray:
    """What the residual check reads of a CuPy array."""

    shape: tuple
    dtype: str = "uint16"
    gpu: int = 0
    contiguous: bool = True

    @property
    def device(self):
        return types.SimpleNamespace(id=self.gpu)

    @property
    def flags(self):
        return types.SimpleNamespace(c_contiguous=self.contiguous)


def _codes(prod, cons, p=1, c=4):
    return {prod.op: p, cons.op: c}


def test_the_residual_fits_its_kernel():
    prod, cons = mlp_kernels()  # the consumer on GPU 1, N1 columns
    runner.check_residuals([prod, cons], _codes(prod, cons), FakeArray((M, N1), gpu=1), M, [K0, N0, N1])
    runner.check_residuals([prod, cons], _codes(prod, cons, c=0), None, M, [K0, N0, N1])  # no residual, none given


@pytest.mark.parametrize("codes, c, why", [
    ((1, 4), None, r"ctapipe L1 gpu1 \(layer 1\): the residual epilogue needs C, the 1024x2048 bf16"),
    ((1, 0), FakeArray((M, N1), gpu=1), r"a residual was given, but no kernel's epilogue reads C \(layer 0: gelu, "
                                        r"layer 1: none\)"),
    ((1, 4), FakeArray((M, N0), gpu=1), r"C-contiguous 1024x2048 uint16 CuPy array on GPU 1.*shape=\(1024, 7168\)"),
    ((1, 4), FakeArray((M, N1), gpu=0), r"on GPU 1 \(the kernel's\).*device=0"),
    ((1, 4), FakeArray((M, N1), dtype="float32", gpu=1), "dtype=float32"),
    ((1, 4), FakeArray((M, N1), gpu=1, contiguous=False), "c_contiguous=False"),
    ((4, 0), FakeArray((M, N0), gpu=0), None),  # a residual on layer 0 reads an M x N0 C on GPU 0
])
def test_a_residual_that_does_not_fit_is_refused(codes, c, why):
    prod, cons = mlp_kernels()
    args = ([prod, cons], _codes(prod, cons, *codes), c, M, [K0, N0, N1])
    if why is None:
        runner.check_residuals(*args)
        return
    with pytest.raises(ValueError, match=why) as e:
        runner.check_residuals(*args)
    assert "\n" not in str(e.value)


# --------------------------------------------------------------------------------------------------
# The runner end to end on fakes: which launcher, which op, which C


class _Ptr:
    def __init__(self, ptr):
        self.ptr = ptr
        self.device_id = 0


class _Buf:
    """A device buffer of the fake CuPy: a distinct address, nothing stored."""

    _next = [0x10000]

    def __init__(self, shape=(1,), gpu=0):
        _Buf._next[0] += 0x10000
        self.data = _Ptr(_Buf._next[0])
        self.shape, self.dtype = shape, "uint16"
        self.device = types.SimpleNamespace(id=gpu)
        self.flags = types.SimpleNamespace(c_contiguous=True)

    def fill(self, v):
        pass


class _Stream:
    def __init__(self, *a, **k):
        self.ptr = id(self)


def _fake_cupy():
    def alloc(shape=(1,), dtype=None, **k):  # zeros / empty take a shape; asarray an array (its shape unused)
        return _Buf(shape if isinstance(shape, tuple) else (1,))

    runtime = types.SimpleNamespace(getDeviceProperties=lambda g: {"multiProcessorCount": 132},
                                    deviceSynchronize=lambda: None)
    return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime, Device=FakeCudaDevice, Stream=_Stream),
                                 zeros=alloc, empty=alloc, asarray=alloc, uint32=None, uint64=None, int32=None,
                                 uint16=None)


class _FakeClassicalLib:
    """Variant (a)'s library as ctypes shows it: records every launch."""

    def __init__(self, names=b"none,gelu,silu,relu,residual,"):
        self.names, self.calls = names, []

    def ctahw_ctapipe_desc_names(self):
        return ",".join(runner.DESC_FIELDS).encode() + b","

    def ctahw_ctapipe_epilogue_names(self):
        return self.names

    def ctahw_ctapipe_gemm(self, a, w, d, m, n, k, alpha, desc, ndesc, trace, cluster, device, stream):
        self.calls.append(("gemm", a, w, d, m, n, k, alpha, trace, cluster))
        return 0

    def ctahw_ctapipe_gemm_epi(self, op, a, w, c, d, m, n, k, desc, ndesc, trace, cluster, device, stream):
        self.calls.append(("gemm_epi", op, a, w, c, d, m, n, k, trace, cluster))
        return 0

    def ctahw_ctapipe_load(self, op, cluster, trace, device):
        self.loads = getattr(self, "loads", []) + [(op, cluster, trace, device)]
        return getattr(self, "load_rc", 0)

    def ctahw_ctapipe_status_string(self, rc):
        return b"fake status"


def _runner(monkeypatch, lib, variant="cutlass_ctapipe", **kw):
    from ctahw import build, device
    from ctasim.variants import VARIANTS, clusters_of

    monkeypatch.setattr(device, "require_cupy", _fake_cupy)
    monkeypatch.setattr(build, "library", lambda name, build=True: lib)
    plan = mlp_plan(variant)
    x = _Buf((M, K0), gpu=0)
    ws = [_Buf((N0, K0), gpu=0), _Buf((N1, N0), gpu=1)]
    return runner.CtaPipeRunner(plan, M, [K0, N0, N1], x, ws, clusters=clusters_of(plan, VARIANTS[variant]), **kw), x


def test_fused_ops_go_through_the_new_launcher_with_their_code_and_c(monkeypatch):
    lib = _FakeClassicalLib()
    res = _Buf((M, N1), gpu=1)
    r, x = _runner(monkeypatch, lib, "cutlass_ctapipe_g21", epilogues={0: ("gelu",), 1: ("residual",)}, residual=res)
    r.launch()
    prod, cons = sorted(r.kernels, key=lambda k: k.layer)
    mid, out = r.outputs[prod.op], r.out
    # consumers first (they wait); cluster 2x1 is launcher code 1; the residual's C is the array given
    assert lib.calls == [
        ("gemm_epi", 4, mid.data.ptr, r.weights[1].data.ptr, res.data.ptr, out.data.ptr, M, N1, N0, 0, 1),
        ("gemm_epi", 1, x.data.ptr, r.weights[0].data.ptr, None, mid.data.ptr, M, N0, K0, 0, 1),
    ]


def test_the_plain_epilogue_stays_on_the_old_launcher(monkeypatch):
    lib = _FakeClassicalLib()
    r, x = _runner(monkeypatch, lib, trace=True, epilogues={0: ("relu",)})
    r.launch()
    prod, cons = sorted(r.kernels, key=lambda k: k.layer)
    assert lib.calls == [
        ("gemm", r.inputs[cons.op].data.ptr, r.weights[1].data.ptr, r.out.data.ptr, M, N1, N0, 1.0, 1, 0),
        ("gemm_epi", 3, x.data.ptr, r.weights[0].data.ptr, None, r.inputs[cons.op].data.ptr, M, N0, K0, 1, 0),
    ]
    lib.calls.clear()
    r, _ = _runner(monkeypatch, lib)  # no epilogues at all: both kernels as before the ops existed
    r.launch()
    assert [c[0] for c in lib.calls] == ["gemm", "gemm"]


def test_the_runner_refuses_before_it_allocates(monkeypatch):
    with pytest.raises(ValueError, match="the residual epilogue needs C"):
        _runner(monkeypatch, _FakeClassicalLib(), epilogues={1: ("residual",)})
    with pytest.raises(ValueError, match=r"variant \(b\)"):
        _runner(monkeypatch, _FakeClassicalLib(), epilogues={0: ("gelu",)}, persistent="ring")
    with pytest.raises(RuntimeError, match="code 1 is 'gelu' in Python but 'silu' in the library"):
        _runner(monkeypatch, _FakeClassicalLib(b"none,silu,gelu,relu,residual,"))


def test_every_kernel_is_loaded_before_the_first_launch(monkeypatch):
    """Lazy loading would load a kernel at its first launch, which may wait for a consumer already spinning on the
    same GPU: the runner loads each kernel (its op, cluster, trace build, GPU) when it is made, and a failed load is
    one RuntimeError naming the kernel."""
    lib = _FakeClassicalLib()
    res = _Buf((M, N1), gpu=1)
    r, _ = _runner(monkeypatch, lib, "cutlass_ctapipe_g21", trace=True, epilogues={0: ("gelu",), 1: ("residual",)},
                   residual=res)
    prod, cons = sorted(r.kernels, key=lambda k: k.layer)
    assert sorted(lib.loads) == sorted([(1, 1, 1, prod.gpu), (4, 1, 1, cons.gpu)]) and lib.calls == []
    bad = _FakeClassicalLib()
    bad.load_rc = -2
    with pytest.raises(RuntimeError, match="loading its kernel failed: fake status"):
        _runner(monkeypatch, bad)
