"""bf16 GEMM backends on one GPU: the project's CUTLASS kernel and cuBLAS (through CuPy).

Every backend computes ``D[M,N] = A[M,K] @ W[N,K]^T`` with A, W and D row-major bf16 (stored as uint16
CuPy arrays), fp32 accumulation, on a given stream of the GPU that holds A and W. D may live on another
GPU with peer access enabled (the CUTLASS epilogue then stores over NVLink).

Backends (by name, see :data:`BACKENDS`):

* ``cutlass``: ``ctahw/kernels/gemm_sm90_bf16.cu`` (128x256x64 cooperative, persistent, cluster 2x1).
* ``cublas``: ``cublasGemmEx`` with CUDA_R_16BF operands and CUBLAS_COMPUTE_32F, called through
  ``cupy_backends.cuda.libs.cublas`` on CuPy's per-device handle (CuPy's ``matmul`` has no bf16 path).
* ``torch``: ``torch.matmul`` on the same memory (DLPack): cuBLAS too, only a fallback where the CuPy
  binding is missing; the results say which one ran.
"""

from __future__ import annotations

import ctypes
from typing import Protocol

from ctahw import build
from ctahw.device import DeviceError, require_cupy

__all__ = ["GemmError", "GemmBackend", "CutlassGemm", "CublasGemm", "TorchGemm", "BACKENDS", "make_backend",
           "SCHEDULES", "RASTER_NAMES", "schedule_name"]

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

    def __call__(self, a, w, d, m: int, n: int, k: int, stream) -> None: ...


def _ptr(x) -> int:
    return int(x.data.ptr)


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
        self._ws = None
        self._ws_bytes = 0

    def describe(self) -> str:
        buf = ctypes.create_string_buffer(512)
        self.lib.ctahw_gemm_describe(buf, 512)
        return buf.value.decode()

    def __call__(self, a, w, d, m, n, k, stream) -> None:
        cp = require_cupy()
        need = self.lib.ctahw_gemm_workspace_bytes(m, n, k, self.device, self.sm_count)
        if need > self._ws_bytes:
            with cp.cuda.Device(self.device):
                self._ws = cp.empty(max(need, 1), dtype=cp.uint8)
            self._ws_bytes = need
        ws_ptr = _ptr(self._ws) if self._ws is not None else None
        raster, swizzle = self.schedule.get((m, n, k), (0, 1))
        with cp.cuda.Device(self.device):
            rc = self.lib.ctahw_gemm_bf16_128x256x64_coop(_ptr(a), _ptr(w), _ptr(d), m, n, k, 1.0, ws_ptr,
                                                         self._ws_bytes, self.device, self.sm_count, raster, swizzle,
                                                         stream.ptr)
        if rc != 0:
            msg = self.lib.ctahw_gemm_status_string(rc).decode()
            raise GemmError(f"cutlass GEMM {m}x{n}x{k} on GPU {self.device}: {msg} (code {rc})")


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

    def __call__(self, a, w, d, m, n, k, stream) -> None:
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

    def __call__(self, a, w, d, m, n, k, stream) -> None:
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
