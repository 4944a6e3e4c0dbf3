"""Python side of ``ctahw/kernels/probes.cu``: launch a probe kernel and check its return code.

The probes are small single-purpose kernels for calibration and timing: a %globaltimer stamp, a timed sleep
(to hold a stream while the host enqueues the work to time), 16-byte store streams, a flag ping-pong
between two GPUs, fence and atomic latency loops.
"""

from __future__ import annotations

import statistics
from typing import Sequence

from ctahw import build
from ctahw.device import DeviceError, require_cupy

__all__ = ["ProbeError", "call", "pingpong_stats"]


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


def pingpong_stats(init_stamps: Sequence[int], resp_stamps: Sequence[int], best_fraction: float = 0.1) -> dict:
    """Round trips and the responder-minus-initiator clock offset from a ping-pong.

    init_stamps: [send_0, recv_0, send_1, recv_1, ...] on the initiator's %globaltimer; resp_stamps[i]: when
    round i arrived at the responder, on its clock. Offset (NTP-style): resp - (send + recv)/2, the median over
    the ``best_fraction`` of rounds with the smallest round trip (queuing makes the others asymmetric).
    """
    n = len(resp_stamps)
    if len(init_stamps) != 2 * n or n == 0:
        raise ValueError("need 2 initiator stamps per responder stamp")
    rtt = [init_stamps[2 * i + 1] - init_stamps[2 * i] for i in range(n)]
    # Differences first: the stamps are ~1.8e18 ns, whose sum as a float is on a 256-512 ns grid.
    off = [(int(resp_stamps[i]) - int(init_stamps[2 * i])) - (int(init_stamps[2 * i + 1]) - int(init_stamps[2 * i])) / 2
           for i in range(n)]
    order = sorted(range(n), key=lambda i: rtt[i])
    best = order[: max(1, int(n * best_fraction))]
    offs = [off[i] for i in best]
    return {"rtt_min_ns": min(rtt), "rtt_median_ns": statistics.median(rtt), "offset_ns": statistics.median(offs),
            "offset_spread_ns": max(offs) - min(offs), "rounds": n}
