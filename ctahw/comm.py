"""NCCL all-reduce over the GPUs of one process (one communicator per GPU, ``ncclCommInitAll``).

Through CuPy's NCCL binding (``cupy.cuda.nccl``). Where CuPy cannot load NCCL, the same calls
(``ncclCommInitAll``, ``ncclGroupStart``, ``ncclAllReduce``, ``ncclGroupEnd``, ``ncclCommDestroy``) are made
through ctypes on the ``libnccl.so.2`` that is there (the ``nvidia-nccl`` wheel's, or the system's); results
name the binding, and the fallback logs why CuPy's binding was not used. Only the failures that mean "CuPy's
binding cannot do it" fall back (ImportError, AttributeError, CuPy's ``NcclError``); anything else propagates.

An :class:`AllReduce` owns its communicators: :meth:`AllReduce.close` (or leaving a ``with`` block) destroys
them. ``ncclCommDestroy`` of the communicators of one ``ncclCommInitAll`` may be called one after another from
one thread: it only finalizes each one without blocking, and the last call frees the clique's resources.

The all-reduce of one buffer per GPU is issued as one NCCL group, each GPU's part on that GPU's stream.
NVLink SHARP (NVLS) must stay off on the shared machines: every device command exports
``NCCL_NVLS_ENABLE=0`` (../shared/DEVICE.md); :func:`check_nvls_off` refuses to start otherwise.
"""

from __future__ import annotations

import ctypes
import glob
import os
import sys
from typing import Callable, Sequence

from ctahw.device import DeviceError, require_cupy

__all__ = ["NcclError", "AllReduce", "check_nvls_off", "NCCL_BFLOAT16", "NCCL_SUM"]

# nccl.h (NCCL >= 2.10): ncclBfloat16 = 9, ncclSum = 0.
NCCL_BFLOAT16 = 9
NCCL_SUM = 0
REQUIRED_ENV = {"NCCL_NVLS_ENABLE": "0"}


class NcclError(DeviceError):
    """NCCL could not be loaded or a collective failed."""


def check_nvls_off(env=os.environ) -> None:
    for k, v in REQUIRED_ENV.items():
        if env.get(k) != v:
            raise NcclError(f"refusing to start NCCL without {k}={v} (NVLink multicast must stay off on shared hosts)")


class _CtypesNccl:
    """The four NCCL calls through ctypes, for machines where CuPy's binding cannot load NCCL."""

    def __init__(self):
        cands = []
        for p in sys.path:
            cands += glob.glob(os.path.join(p, "nvidia", "nccl", "lib", "libnccl.so*"))
        cands.append("libnccl.so.2")
        err = None
        for c in cands:
            try:
                self.lib = ctypes.CDLL(c)
                self.path = c
                break
            except OSError as e:
                err = e
        else:
            raise NcclError(f"cannot load libnccl.so.2: {err}")
        L = self.lib
        L.ncclCommInitAll.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
        L.ncclCommInitAll.restype = ctypes.c_int
        L.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                    ctypes.c_void_p, ctypes.c_void_p]
        L.ncclAllReduce.restype = ctypes.c_int
        L.ncclGroupStart.argtypes, L.ncclGroupStart.restype = [], ctypes.c_int
        L.ncclGroupEnd.argtypes, L.ncclGroupEnd.restype = [], ctypes.c_int
        L.ncclGetErrorString.argtypes, L.ncclGetErrorString.restype = [ctypes.c_int], ctypes.c_char_p
        L.ncclCommDestroy.argtypes, L.ncclCommDestroy.restype = [ctypes.c_void_p], ctypes.c_int

    def check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise NcclError(f"{what}: {self.lib.ncclGetErrorString(rc).decode()} ({rc})")

    def init_all(self, devices: Sequence[int]):
        comms = (ctypes.c_void_p * len(devices))()
        devs = (ctypes.c_int * len(devices))(*devices)
        self.check(self.lib.ncclCommInitAll(comms, len(devices), devs), "ncclCommInitAll")
        return list(comms)

    def destroy(self, comm) -> None:
        self.check(self.lib.ncclCommDestroy(comm), "ncclCommDestroy")


def _cupy_nccl_error(nccl) -> tuple[type[BaseException], ...]:
    """CuPy's ``NcclError`` (``cupy_backends.cuda.libs.nccl.NcclError``, a RuntimeError re-exported by
    ``cupy.cuda.nccl``), as a tuple for ``except``; empty where the module is missing or lacks it."""
    err = getattr(nccl, "NcclError", None) if nccl is not None else None
    return (err,) if isinstance(err, type) and issubclass(err, BaseException) else ()


def _cupy_fallback_errors(nccl) -> tuple[type[BaseException], ...]:
    """What CuPy's binding raises when it cannot do the job, so that ctypes is tried instead: ImportError
    (no ``cupy.cuda.nccl``, or its ``available`` is False), AttributeError (a binding without
    ``NcclCommunicator`` or ``initAll``) and CuPy's ``NcclError`` (``ncclCommInitAll`` failed inside CuPy)."""
    return (ImportError, AttributeError, *_cupy_nccl_error(nccl))


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr)


class AllReduce:
    """Sum-all-reduce of one bf16 buffer per GPU, in place, on the given per-GPU streams.

    Holds one NCCL communicator per GPU until :meth:`close` (idempotent) or the end of a ``with`` block."""

    def __init__(self, devices: Sequence[int], log: Callable[[str], None] = _stderr):
        check_nvls_off()
        self.devices = list(devices)
        cp = require_cupy()
        self.binding = "cupy"
        self._ct = None
        self.nccl = None
        self.comms: list = []
        self.closed = False
        try:
            from cupy.cuda import nccl  # noqa: PLC0415

            self.nccl = nccl
            if not getattr(nccl, "available", True):
                raise ImportError("cupy.cuda.nccl.available is False (CuPy could not load libnccl)")
            self.comms = nccl.NcclCommunicator.initAll(self.devices)
        except _cupy_fallback_errors(self.nccl) as e:
            reason = f"{type(e).__name__}: {e}"
            self.binding = f"ctypes (cupy: {reason})"
            log(f"ctahw.comm: NCCL through CuPy's binding failed ({reason}); using ctypes on libnccl.so.2")
            try:
                self._ct = _CtypesNccl()
            except NcclError as e2:
                raise NcclError(f"{e2} (after CuPy's binding failed: {reason})") from e
            self.comms = self._ct.init_all(self.devices)
        self.cp = cp

    def __call__(self, bufs, counts: int, streams) -> None:
        """bufs[i]: CuPy uint16 (bf16) array on devices[i]; counts: elements; streams[i] on devices[i]."""
        if self.closed:
            raise NcclError("all-reduce after close(): its communicators are destroyed")
        if self._ct is None:
            nccl = self.nccl
            nccl.groupStart()
            for c, b, s in zip(self.comms, bufs, streams):
                c.allReduce(b.data.ptr, b.data.ptr, counts, NCCL_BFLOAT16, NCCL_SUM, s.ptr)
            nccl.groupEnd()
        else:
            ct = self._ct
            ct.check(ct.lib.ncclGroupStart(), "ncclGroupStart")
            for c, b, s in zip(self.comms, bufs, streams):
                ct.check(ct.lib.ncclAllReduce(b.data.ptr, b.data.ptr, counts, NCCL_BFLOAT16, NCCL_SUM, c, s.ptr),
                         "ncclAllReduce")
            ct.check(ct.lib.ncclGroupEnd(), "ncclGroupEnd")

    def close(self) -> None:
        """Destroy every communicator (each one is tried; the first failure is raised after). Idempotent."""
        comms, self.comms, self.closed = self.comms, [], True
        errors = []
        for c in comms:
            try:
                if self._ct is None:
                    c.destroy()
                else:
                    self._ct.destroy(c)
            except (NcclError, *_cupy_nccl_error(self.nccl)) as e:
                errors.append(e)
        if errors:
            raise NcclError(f"destroying {len(errors)} of {len(comms)} NCCL communicators failed: "
                            f"{type(errors[0]).__name__}: {errors[0]}") from errors[0]

    def __enter__(self) -> "AllReduce":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
