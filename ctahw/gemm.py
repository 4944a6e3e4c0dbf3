"""bf16 GEMM backends on one GPU: the project's CUTLASS kernel and cuBLAS (through CuPy).

Every backend computes ``D[M,N] = A[M,K] @ W[N,K]^T`` with A, W and D row-major bf16 (stored as uint16
CuPy arrays), fp32 accumulation, on a given stream of the GPU that holds A and W. D may live on another
GPU with peer access enabled (the CUTLASS epilogue then stores over NVLink).

Backends (by name, see :data:`BACKENDS`):

* ``cutlass``: ``ctahw/kernels/gemm_sm90_bf16.cu`` (128x256x64 cooperative, persistent, cluster 2x1); with a
  fused epilogue op (``epilogue=("gelu",)`` etc., see :data:`EPILOGUE_OPS_FUSED`) the same kernel with CUTLASS's
  fusion epilogue, ``ctahw/kernels/gemm_sm90_bf16_epi.cu`` (loaded the first time an op asks for it). Measured on
  one H200 (2026-12-01, 8192x8192x8192, 8192x28672x4096, 8192x4096x14336; variants interleaved, default tile
  order): against the plain kernel, relu 1-5 % slower, residual 2-8 %, gelu 4-11 %, silu 5-17 % (CUTLASS's
  sigmoid divides in full precision; GELU's erff spills 20 bytes of the 168 registers a consumer thread has).
* ``cublas``: ``cublasGemmEx`` with CUDA_R_16BF operands and CUBLAS_COMPUTE_32F, called through
  ``cupy_backends.cuda.libs.cublas`` on CuPy's per-device handle (CuPy's ``matmul`` has no bf16 path).
* ``torch``: ``torch.matmul`` on the same memory (DLPack): cuBLAS too, only a fallback where the CuPy
  binding is missing; the results say which one ran.

The cuBLAS backends run no fused epilogue: asked for one they raise :class:`GemmError`.
"""

from __future__ import annotations

import ctypes
from typing import Protocol

from ctahw import build
from ctahw.device import DeviceError, require_cupy
from ctasim.spec import EPILOGUE_OPS as SPEC_EPILOGUE_OPS

__all__ = ["GemmError", "GemmBackend", "CutlassGemm", "CublasGemm", "TorchGemm", "BACKENDS", "make_backend",
           "SCHEDULES", "RASTER_NAMES", "schedule_name", "EPILOGUE_OPS", "EPILOGUE_OPS_FUSED",
           "fused_epilogue_reason", "residual_problem", "parse_mnk"]

# cuBLAS / CUDA constants (library_types.h: CUDA_R_16BF = 14; cublas_api.h: CUBLAS_COMPUTE_32F = 68,
# CUBLAS_GEMM_DEFAULT = -1, CUBLAS_OP_N = 0, CUBLAS_OP_T = 1).
CUDA_R_16BF = 14
CUBLAS_COMPUTE_32F = 68
CUBLAS_GEMM_DEFAULT = -1
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1


class GemmError(DeviceError):
    """A GEMM launch failed; the message carries the backend's status string."""


class GemmBackend(Protocol):
    name: str

    def __call__(self, a, w, d, m: int, n: int, k: int, stream, epilogue: tuple[str, ...] = (), c=None) -> None: ...


def _ptr(x) -> int:
    return int(x.data.ptr)


EPILOGUE_OPS: tuple[str, ...] = SPEC_EPILOGUE_OPS
"""The epilogue ops a workload layer may name (``ctasim.spec.EPILOGUE_OPS``; ``ctahw.rowwise.reference_epilogue``
computes every sequence, ``ctahw.rowwise.epilogue`` runs every one as a kernel of its own)."""

EPILOGUE_OPS_FUSED: dict[tuple[str, ...], int] = {(): 0, ("gelu",): 1, ("silu",): 2, ("relu",): 3, ("residual",): 4}
"""Epilogue op sequences the CUTLASS backend runs fused into the GEMM, with their op code: 0 is the plain kernel
(library ``gemm_sm90_bf16``), 1-4 the ops of ``gemm_sm90_bf16_epi`` (gelu: erf form; residual: D = A@W^T + C)."""


def _ops_tuple(ops) -> tuple[str, ...]:
    return (ops,) if isinstance(ops, str) else tuple(ops)


def parse_mnk(text: str, flag: str) -> tuple[int, int, int]:
    """``"16384x8192x8192"`` -> (M, N, K) of a GEMM; ValueError naming ``flag`` and the text when it is not three
    positive integers joined by x (the probes' command lines)."""
    parts = text.strip().split("x")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"{flag}: {text.strip()!r} is not MxNxK with positive integers (e.g. 16384x8192x8192)")
    return int(parts[0]), int(parts[1]), int(parts[2])


def fused_epilogue_reason(ops) -> str | None:
    """None when the CUTLASS kernel runs the epilogue ``ops`` (applied in order) fused; else one line saying why
    not. Pure: loads nothing. A single op name given as a string counts as a one-op sequence."""
    ops = _ops_tuple(ops)
    if ops in EPILOGUE_OPS_FUSED:
        return None
    unknown = [o for o in ops if o not in EPILOGUE_OPS]
    if unknown:
        return f"unknown epilogue op(s) {', '.join(map(repr, unknown))} (known: {', '.join(EPILOGUE_OPS)})"
    fused = ", ".join(repr(t) for t in EPILOGUE_OPS_FUSED if t)
    return (f"no fused CUTLASS epilogue for {ops!r} (fused: one op alone: {fused}); epilogue_fused = false runs "
            f"the ops as a kernel of their own")


def _no_epilogue(backend: str, epilogue, c) -> None:
    """The cuBLAS backends run the plain GEMM only."""
    ops = _ops_tuple(epilogue)
    if ops or c is not None:
        raise GemmError(f"{backend}: the cuBLAS backend runs no fused epilogue (asked for {ops!r}"
                        f"{' with a C operand' if c is not None else ''}); use the cutlass backend")


RASTER_NAMES = {0: "heuristic", 1: "along_m", 2: "along_n"}
SWIZZLES = (1, 2, 4, 8)
SCHEDULES: tuple[tuple[int, int], ...] = tuple((r, s) for r in RASTER_NAMES for s in SWIZZLES)
"""Every (raster, swizzle) tile order of the persistent scheduler; (0, 1) is CUTLASS's default."""


class CutlassGemm:
    """The project's CUTLASS SM90 kernel on ``device``; ``sm_count`` > 0 limits the persistent grid.

    ``schedule`` maps a problem shape (m, n, k) to its (raster, swizzle) tile order, as chosen by
    :func:`ctahw.baselines.tune_schedule`; shapes not in it run CUTLASS's default order (0, 1).
    """

    name = "cutlass"

    def __init__(self, device: int, sm_count: int = 0):
        self.device, self.sm_count = device, sm_count
        self.schedule: dict[tuple[int, int, int], tuple[int, int]] = {}
        self.lib = build.library("gemm_sm90_bf16")
        self._epi_lib = None  # gemm_sm90_bf16_epi, loaded (built if needed) when an epilogue op first runs
        self._ws = None
        self._ws_bytes = 0

    @property
    def epi_lib(self):
        """The fused-epilogue library, loaded on first use."""
        if self._epi_lib is None:
            self._epi_lib = build.library("gemm_sm90_bf16_epi")
        return self._epi_lib

    def _workspace(self, need: int):
        cp = require_cupy()
        if need > self._ws_bytes:
            with cp.cuda.Device(self.device):
                self._ws = cp.empty(max(need, 1), dtype=cp.uint8)
            self._ws_bytes = need
        return _ptr(self._ws) if self._ws is not None else None

    def describe(self) -> str:
        buf = ctypes.create_string_buffer(512)
        self.lib.ctahw_gemm_describe(buf, 512)
        return buf.value.decode()

    def describe_epilogue(self, epilogue) -> str:
        """describe() of the kernel that runs ``epilogue`` fused (loads the epilogue library for a non-empty one)."""
        op = self._op(epilogue)
        if op == 0:
            return self.describe()
        buf = ctypes.create_string_buffer(512)
        self.epi_lib.ctahw_gemm_epi_describe(op, buf, 512)
        return buf.value.decode()

    @staticmethod
    def _op(epilogue) -> int:
        ops = _ops_tuple(epilogue)
        reason = fused_epilogue_reason(ops)
        if reason is not None:
            raise GemmError(f"cutlass: {reason}")
        return EPILOGUE_OPS_FUSED[ops]

    def __call__(self, a, w, d, m, n, k, stream, epilogue=(), c=None) -> None:
        """D = epilogue(A @ W^T). ``epilogue`` (): the plain kernel; ("gelu",), ("silu",), ("relu",): the activation
        fused; ("residual",): D = A @ W^T + c, with ``c`` an M x N uint16 (bf16) CuPy array on this GPU."""
        cp = require_cupy()
        op = self._op(epilogue)
        if op == EPILOGUE_OPS_FUSED[("residual",)]:
            self._check_c(c, m, n)
        elif c is not None:
            raise GemmError(f"cutlass GEMM {m}x{n}x{k}: a C operand was given but the epilogue "
                            f"{_ops_tuple(epilogue)!r} has no residual")
        raster, swizzle = self.schedule.get((m, n, k), (0, 1))
        if op == 0:
            need = self.lib.ctahw_gemm_workspace_bytes(m, n, k, self.device, self.sm_count)
            ws_ptr = self._workspace(need)
            with cp.cuda.Device(self.device):
                rc = self.lib.ctahw_gemm_bf16_128x256x64_coop(_ptr(a), _ptr(w), _ptr(d), m, n, k, 1.0, ws_ptr,
                                                             self._ws_bytes, self.device, self.sm_count, raster,
                                                             swizzle, stream.ptr)
            if rc != 0:
                msg = self.lib.ctahw_gemm_status_string(rc).decode()
                raise GemmError(f"cutlass GEMM {m}x{n}x{k} on GPU {self.device}: {msg} (code {rc})")
            return
        lib = self.epi_lib
        need = lib.ctahw_gemm_epi_workspace_bytes(op, m, n, k, self.device, self.sm_count)
        if need < 0:
            raise GemmError(f"cutlass GEMM {m}x{n}x{k} epilogue {_ops_tuple(epilogue)!r}: "
                            f"{lib.ctahw_gemm_epi_status_string(int(need)).decode()} (code {need})")
        ws_ptr = self._workspace(need)
        c_ptr = _ptr(c) if c is not None else None
        with cp.cuda.Device(self.device):
            rc = lib.ctahw_gemm_epi_bf16_128x256x64_coop(op, _ptr(a), _ptr(w), c_ptr, _ptr(d), m, n, k, ws_ptr,
                                                         self._ws_bytes, self.device, self.sm_count, raster, swizzle,
                                                         stream.ptr)
        if rc != 0:
            msg = lib.ctahw_gemm_epi_status_string(rc).decode()
            raise GemmError(f"cutlass GEMM {m}x{n}x{k} epilogue {_ops_tuple(epilogue)!r} on GPU {self.device}: "
                            f"{msg} (code {rc})")

    def _check_c(self, c, m: int, n: int) -> None:
        why = residual_problem(c, m, n, self.device, "c")
        if why:
            raise GemmError(f"cutlass: {why}")


def residual_problem(c, m: int, n: int, device: int, name: str = "C", whose: str = "") -> str | None:
    """Why ``c`` cannot be the residual operand ``name`` of an epilogue ``D = acc + C`` (an ``m x n`` output on GPU
    ``device``, ``whose`` said after it): it must be a C-contiguous ``m x n`` uint16 (bf16) CuPy array on that GPU,
    TMA-loaded with D's row-major stride. None if it can. The CUTLASS GEMM's and the CTA-pipelined kernels' one
    check."""
    if c is None:
        return f"the residual epilogue needs {name}, the {m}x{n} bf16 (uint16) residual; got None"
    dtype, shape = getattr(c, "dtype", None), tuple(getattr(c, "shape", ()))
    dev = getattr(getattr(c, "device", None), "id", None)
    contiguous = getattr(getattr(c, "flags", None), "c_contiguous", False)
    if str(dtype) != "uint16" or shape != (m, n) or dev != device or not contiguous:
        return (f"the residual {name} must be a C-contiguous {m}x{n} uint16 CuPy array on GPU {device}{whose}; got "
                f"{type(c).__name__} dtype={dtype} shape={shape} device={dev} c_contiguous={contiguous}")
    return None


class CublasGemm:
    """cublasGemmEx (bf16 in/out, fp32 compute) through CuPy's binding and CuPy's handle for ``device``."""

    name = "cublas"

    def __init__(self, device: int):
        cp = require_cupy()
        from cupy_backends.cuda.libs import cublas  # noqa: PLC0415

        self.device, self.cublas = device, cublas
        with cp.cuda.Device(device):
            self.handle = cp.cuda.device.get_cublas_handle()
        import numpy as np  # noqa: PLC0415

        self._one = np.array(1.0, dtype=np.float32)  # host scalars (pointer mode host, CuPy's default)
        self._zero = np.array(0.0, dtype=np.float32)

    def __call__(self, a, w, d, m, n, k, stream, epilogue=(), c=None) -> None:
        _no_epilogue(self.name, epilogue, c)
        cp = require_cupy()
        # Row-major D[M,N] is column-major D^T[N,M]: D^T = W (col-major K x N, transposed) @ A^T (col-major K x M).
        with cp.cuda.Device(self.device), stream:
            self.cublas.setStream(self.handle, stream.ptr)
            try:
                self.cublas.gemmEx(self.handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, self._one.ctypes.data,
                                   _ptr(w), CUDA_R_16BF, k, _ptr(a), CUDA_R_16BF, k, self._zero.ctypes.data,
                                   _ptr(d), CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
            except Exception as e:  # CUBLASError
                raise GemmError(f"cublasGemmEx {m}x{n}x{k} on GPU {self.device}: {e}") from e


class TorchGemm:
    """torch.matmul on the CuPy buffers (cuBLAS underneath): a fallback, named as such in results."""

    name = "torch"

    def __init__(self, device: int):
        import torch  # noqa: PLC0415

        self.torch, self.device = torch, device

    def _t(self, x, rows, cols):
        return self.torch.from_dlpack(x).view(self.torch.bfloat16).view(rows, cols)

    def __call__(self, a, w, d, m, n, k, stream, epilogue=(), c=None) -> None:
        _no_epilogue(self.name, epilogue, c)
        torch = self.torch
        with torch.cuda.device(self.device), torch.cuda.stream(torch.cuda.ExternalStream(stream.ptr)):
            torch.matmul(self._t(a, m, k), self._t(w, n, k).t(), out=self._t(d, m, n))


def schedule_name(sched: tuple[int, int]) -> str:
    return f"{RASTER_NAMES[sched[0]]}/swizzle{sched[1]}"


BACKENDS = {"cutlass": CutlassGemm, "cublas": CublasGemm, "torch": TorchGemm}


def make_backend(name: str, device: int) -> GemmBackend:
    try:
        cls = BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown GEMM backend {name!r} (known: {', '.join(BACKENDS)})") from None
    return cls(device)
