"""Python side of ``ctahw/kernels/probes.cu``: launch a probe kernel and check its return code.

The probes are small single-purpose kernels for calibration and timing: a %globaltimer stamp, a timed sleep
(to hold a stream while the host enqueues the work to time), 16-byte store streams, a flag ping-pong
between two GPUs, fence and atomic latency loops.
"""

from __future__ import annotations

from ctahw import build
from ctahw.device import DeviceError, require_cupy

__all__ = ["ProbeError", "call"]


class ProbeError(DeviceError):
    """A probe kernel failed to launch (or reported a timeout)."""


def call(name: str, *args, stream, device: int) -> None:
    """Launch probe ``ctahw_probe_<name>(*args, stream)`` on ``device``; raise ProbeError on a bad return code."""
    cp = require_cupy()
    lib = build.library("probes")
    with cp.cuda.Device(device):
        rc = getattr(lib, f"ctahw_probe_{name}")(*args, stream.ptr)
    if rc != 0:
        raise ProbeError(f"probe {name} on GPU {device}: launch failed with cudaError {-rc}")
