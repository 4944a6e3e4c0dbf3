"""GPUs, peer access, buffers, streams, timing and correctness checks (CuPy, imported lazily).

What this module answers: which GPUs are there and may they be used (compute capability 9.0 for the
SM90 kernels), can they reach each other's memory, how to time device work honestly, and how to check a
result.

Timing (``../shared/DEVICE.md``, ``METHOD.md``): CUDA events around the region on the stream that runs it;
warm-up launches first; the median of many repetitions; inputs rotated among enough sets that their bytes
exceed the L2 several times (:func:`rotation_sets`); random inputs, never zeros; variants compared
interleaved (A B A B ...) in one process, and reported as ratios.

Correctness: outputs are poisoned (bf16 NaN) before a run, so an element the kernel did not write fails
the check; the result is compared with an fp32 reference of the same bf16-rounded inputs by
``||out - ref|| / ||ref||``. bf16 outputs of a K = 8192 product land near 2e-3 (bf16 rounding of the
output alone is 2^-9 relative per element); the default tolerance 1e-2 is METHOD.md's upper bound for bf16.

The array helpers take ``xp`` (numpy or cupy) so that their logic is tested on the CPU.
"""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import dataclass
from typing import Sequence

__all__ = [
    "CUDA_FAULTS",
    "relu_bf16_bits",
    "is_cuda_fault",
    "to_device",
    "chain_flops",
    "reference_chain",
    "output_error",
    "DeviceError",
    "NoCupyError",
    "NoGpuError",
    "UnsupportedGpuError",
    "PeerAccessError",
    "GpuInfo",
    "require_cupy",
    "gpus",
    "no_gpus",
    "require_gpus",
    "enable_peer_access",
    "f32_to_bf16_bits",
    "bf16_bits_to_f32",
    "BF16_NAN_BITS",
    "random_bf16",
    "poison",
    "rel_error",
    "rotation_sets",
    "summarize",
    "Timing",
    "REL_TOL_BF16",
]

BF16_NAN_BITS = 0x7FC1
"""A quiet-NaN bf16 bit pattern used to poison outputs (exponent all ones, non-zero mantissa)."""

REL_TOL_BF16 = 1e-2
"""Upper bound for ||out-ref||/||ref|| with bf16 operands (METHOD.md: 'bf16 operands between 1e-3 and 1e-2')."""


class DeviceError(RuntimeError):
    """The GPU side cannot run: subclasses say why."""


class NoCupyError(DeviceError):
    """CuPy is not installed (extras ``hw`` for CUDA 12, ``hw-cu13`` for CUDA 13)."""


class NoGpuError(DeviceError):
    """No CUDA GPU is visible (or the driver cannot be reached)."""


class UnsupportedGpuError(DeviceError):
    """A GPU is there but is not sm_90 (the SM90 CUTLASS kernels need a Hopper GPU)."""


class PeerAccessError(DeviceError):
    """Two GPUs that must reach each other's memory cannot."""


CUDA_FAULTS = ("CUDARuntimeError", "CUDADriverError", "CUBLASError", "NCCLError")
"""CuPy's exception types (by name: no CuPy import needed) that mean the GPU context may be broken: a run stops."""


def is_cuda_fault(e: BaseException) -> bool:
    """True for a CuPy CUDA runtime/driver, cuBLAS or NCCL error (:data:`CUDA_FAULTS`)."""
    return type(e).__name__ in CUDA_FAULTS


def require_cupy():
    """Import and return cupy, or raise NoCupyError with the install line."""
    try:
        import cupy  # noqa: PLC0415 - lazy on purpose: ctahw imports without cupy
    except ImportError as e:
        raise NoCupyError(
            "CuPy is not installed: pip install '.[hw]' (CUDA 12) or '.[hw-cu13]' (CUDA 13) from the repository"
        ) from e
    return cupy


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    cc: tuple[int, int]
    sm_count: int
    l2_bytes: int
    mem_bytes: int
    smem_optin_bytes: int

    @property
    def is_sm90(self) -> bool:
        return self.cc == (9, 0)


def gpus() -> list[GpuInfo]:
    """Every visible GPU; raises NoCupyError or NoGpuError (with the driver's message)."""
    cp = require_cupy()
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # CUDARuntimeError, or a missing libcuda (ImportError / RuntimeError)
        raise NoGpuError(f"the CUDA driver reports no usable device ({type(e).__name__}: {e})") from e
    if n == 0:
        raise NoGpuError("the CUDA driver reports 0 devices")
    out = []
    for i in range(n):
        p = cp.cuda.runtime.getDeviceProperties(i)
        name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
        out.append(GpuInfo(i, name, (int(p["major"]), int(p["minor"])), int(p["multiProcessorCount"]),
                           int(p["l2CacheSize"]), int(p["totalGlobalMem"]), int(p.get("sharedMemPerBlockOptin", 0))))
    return out


def no_gpus(name: str, n: int = 1) -> int | None:
    """A script's check before its work: None where :func:`require_gpus` finds ``n`` usable GPUs, else 2 after one
    line on stderr, ``name: why`` (no CuPy, too few GPUs, not sm_90)."""
    try:
        require_gpus(n)
    except DeviceError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 2
    return None


def require_gpus(n: int, sm90: bool = True) -> list[GpuInfo]:
    """The first ``n`` GPUs, checked; raises NoGpuError / UnsupportedGpuError with what was found."""
    found = gpus()
    if len(found) < n:
        raise NoGpuError(f"need {n} GPUs, found {len(found)}: {[g.name for g in found]}")
    use = found[:n]
    if sm90:
        bad = [g for g in use if not g.is_sm90]
        if bad:
            raise UnsupportedGpuError(
                "the SM90 kernels need compute capability 9.0 (sm_90a); found "
                + ", ".join(f"GPU {g.index} {g.name} sm_{g.cc[0]}{g.cc[1]}" for g in bad))
    return use


def enable_peer_access(devices: Sequence[int]) -> None:
    """Enable peer access between every ordered pair; PeerAccessError if a pair cannot reach the other."""
    cp = require_cupy()
    rt = cp.cuda.runtime
    for a in devices:
        for b in devices:
            if a == b:
                continue
            if not rt.deviceCanAccessPeer(a, b):
                raise PeerAccessError(f"GPU {a} cannot access GPU {b}'s memory (no P2P path; check nvidia-smi topo -m)")
            with cp.cuda.Device(a):
                try:
                    rt.deviceEnablePeerAccess(b)
                except rt.CUDARuntimeError as e:
                    if "AlreadyEnabled" not in str(e) and "already" not in str(e).lower():
                        raise PeerAccessError(f"enabling peer access {a} -> {b} failed: {e}") from e


# --------------------------------------------------------------------------------------------------
# bf16 as uint16 bits (CuPy has no bf16 dtype for matmul; the kernels take raw pointers)


def f32_to_bf16_bits(x, xp):
    """Round float32 to bf16 (round to nearest even), returned as uint16 bits. NaN stays NaN."""
    u = xp.ascontiguousarray(x, dtype=xp.float32).view(xp.uint32)
    rounded = ((u + xp.uint32(0x7FFF) + ((u >> xp.uint32(16)) & xp.uint32(1))) >> xp.uint32(16)).astype(xp.uint16)
    nan = (u & xp.uint32(0x7FFFFFFF)) > xp.uint32(0x7F800000)
    return xp.where(nan, xp.uint16(BF16_NAN_BITS), rounded)


def bf16_bits_to_f32(b, xp):
    return (xp.ascontiguousarray(b, dtype=xp.uint16).astype(xp.uint32) << xp.uint32(16)).view(xp.float32)


def random_bf16(shape, xp, rng, scale: float = 1.0):
    """Fresh random bf16 bits, normal(0, scale). ``rng``: numpy Generator or cupy.random.Generator."""
    x = rng.standard_normal(shape, dtype=xp.float32)
    if scale != 1.0:
        x *= xp.float32(scale)
    return f32_to_bf16_bits(x, xp)


def relu_bf16_bits(bits, xp):
    """bf16 bits with every negative value zeroed, as a ReLU leaves them (a set sign bit is a negative value;
    -0.0 becomes +0.0). ``xp``: numpy or cupy, the array's module."""
    return xp.where(bits >= 0x8000, xp.uint16(0), bits).astype(xp.uint16)


def poison(bits) -> None:
    """Fill a bf16 buffer with NaN bits, so that every element a kernel leaves unwritten fails the check.
    A CuPy array is filled by its own GPU (on that GPU's default stream)."""
    dev = getattr(bits, "device", None)
    if hasattr(dev, "__enter__"):  # cupy.cuda.Device
        with dev:
            bits.fill(BF16_NAN_BITS)
    else:
        bits.fill(BF16_NAN_BITS)


def rel_error(out_bits, ref_f32, xp) -> float:
    """||out - ref|| / ||ref|| in float64; inf if out has any NaN/inf (an unwritten or broken element)."""
    out = bf16_bits_to_f32(out_bits, xp).astype(xp.float64)
    ref = xp.asarray(ref_f32, dtype=xp.float64)
    if not bool(xp.isfinite(out).all()):
        return math.inf
    den = float(xp.linalg.norm(ref))
    return float(xp.linalg.norm(out - ref)) / (den if den > 0 else 1.0)


def to_device(cp, arr, device: int):
    """CuPy array ``arr`` on ``device``, C-contiguous (a peer copy; ``arr`` itself if it is there and contiguous)."""
    if arr.data.device_id == device:
        with cp.cuda.Device(device):
            return cp.ascontiguousarray(arr)
    src = arr
    if not arr.flags.c_contiguous:
        with cp.cuda.Device(arr.data.device_id):
            src = cp.ascontiguousarray(arr)
    with cp.cuda.Device(device):
        out = cp.empty(src.shape, dtype=src.dtype)
    cp.cuda.runtime.memcpyPeer(out.data.ptr, device, src.data.ptr, src.data.device_id, src.nbytes)
    return out


def chain_flops(m: int, h: int, layers: int) -> float:
    """FLOPs of a chain of ``layers`` square m x h x h GEMMs."""
    return 2.0 * m * h * h * layers


def reference_chain(cp, x_bits, weights_bits: Sequence, device: int = 0):
    """fp32 reference of the chain ``x @ W0.T @ W1.T ...`` on ``device``; activations rounded to bf16 between layers
    (as the kernels store them)."""
    with cp.cuda.Device(device):
        act = bf16_bits_to_f32(to_device(cp, x_bits, device), cp)
        out = act
        for i, w in enumerate(weights_bits):
            w32 = bf16_bits_to_f32(to_device(cp, w, device), cp)
            out = act @ w32.T
            if i + 1 < len(weights_bits):
                act = bf16_bits_to_f32(f32_to_bf16_bits(out, cp), cp)
            del w32
        return out


def output_error(cp, out_bits, ref, device: int = 0) -> float:
    """:func:`rel_error` of bf16 output ``out_bits`` (on any GPU) against ``ref`` on ``device``."""
    with cp.cuda.Device(device):
        return rel_error(to_device(cp, out_bits, device), ref, cp)


# --------------------------------------------------------------------------------------------------
# Timing


def rotation_sets(bytes_per_set: int, l2_bytes: int, factor: float = 3.0, cap: int = 8) -> int:
    """How many input sets to rotate so that one pass touches at least ``factor`` x L2 (at least 2)."""
    if bytes_per_set <= 0:
        raise ValueError("bytes_per_set must be positive")
    return max(2, min(cap, math.ceil(factor * l2_bytes / bytes_per_set)))


@dataclass(frozen=True)
class Timing:
    """Summary of repeated measurements in ms: median, min, max, and the interquartile spread."""

    median_ms: float
    min_ms: float
    max_ms: float
    p25_ms: float
    p75_ms: float
    n: int

    def as_dict(self, prefix: str = "") -> dict:
        return {f"{prefix}median_ms": self.median_ms, f"{prefix}min_ms": self.min_ms, f"{prefix}max_ms": self.max_ms,
                f"{prefix}p25_ms": self.p25_ms, f"{prefix}p75_ms": self.p75_ms, f"{prefix}n": self.n}


def summarize(samples_ms: Sequence[float]) -> Timing:
    if not samples_ms:
        raise ValueError("no samples")
    s = sorted(samples_ms)
    q = statistics.quantiles(s, n=4, method="inclusive") if len(s) >= 2 else [s[0], s[0], s[0]]
    return Timing(statistics.median(s), s[0], s[-1], q[0], q[2], len(s))
