"""What a kernel draws: NVML's energy counter (nvidia-ml-py) around paced and back-to-back launches of one GPU.

What is measured (``bench/hw/power_probe.py``; the model that uses it is ``ctasim.power``)
    * **Energy over whole counter periods.** NVML's total-energy counter (mJ) changes in steps some milliseconds
      apart, so a window starts and ends at a step (:func:`next_step`: the first read that differs from the one
      before, polled every 0.5 ms): its energy is exact to the counter and its length to the polling interval.
    * **Duty windows** (:func:`power_probe`): after a rest, a kernel launched every ``period`` (host-paced: launch,
      wait for its event, sleep to the next period) for ``window_s``, at several periods; each window's mean power
      against its launch rate is a line, ``P = between_w + energy_j x rate`` (:func:`energy_fit`): ``energy_j`` is a
      launch's energy above the draw between launches, and over the launch's median time it is the kernel's draw
      above that (``dynamic_w``). The SM clock is read while each launch runs.
    * **Back-to-back rounds**: after a rest, launches back to back for ``run_ms`` with an event between them (the
      rows of ``bench/hw/clock_trajectory.py``), the energy counter and SM clock sampled every ~5 ms meanwhile (two
      NVML reads and a 1 ms sleep; plans 32-35's probe, commit b6aeae8, slept 5 ms and stamped before the reads:
      ~10 ms apart);
      :func:`step_power` gives the draw over the round's second half (the sustained level, where the power limit
      should hold it).
    * The device: enforced power limit, maximum SM clock, the idle draw over a window with nothing queued.

Left out
    What the counter integrates inside a step (its steps are taken as the energy of their interval: on driver 580 they
    come ~100 ms apart, so a round's second half holds only a few and its power is uncertain by about a sample
    interval over a step); the host's pacing jitter (a launch rate is launches over the window's measured length);
    the GPU's temperature (a window's rest before it is the only control); the clock between samples.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable, Mapping, Sequence

from ctahw.calibrate import linfit

__all__ = ["Nvml", "bus_key", "next_step", "energy_fit", "step_power", "power_probe"]


def bus_key(bus_id: str | bytes) -> tuple[int, int, int, int]:
    """A PCI bus id ("0000:1B:00.0" as CUDA writes it, "00000000:1b:00.0" as NVML does) as (domain, bus, device,
    function), so the two spellings compare equal. ValueError for text that is not one."""
    text = bus_id.decode() if isinstance(bus_id, bytes) else str(bus_id)
    try:
        dom, bus, rest = text.strip().split(":")
        dev, fn = rest.split(".")
        return int(dom, 16), int(bus, 16), int(dev, 16), int(fn, 16)
    except ValueError:
        raise ValueError(f"not a PCI bus id: {text!r}") from None


class Nvml:
    """NVML readings of the GPU a CUDA device ordinal names (matched by PCI bus id, so CUDA_VISIBLE_DEVICES cannot
    point it at another card). Reads only; changes nothing on the card."""

    def __init__(self, device: int = 0):
        from ctahw.device import DeviceError, require_cupy  # noqa: PLC0415

        try:
            import pynvml  # noqa: PLC0415  (nvidia-ml-py)
        except ImportError:
            raise DeviceError("nvidia-ml-py is not installed: pip install '.[hw]'") from None
        cp = require_cupy()
        want = bus_key(cp.cuda.runtime.deviceGetPCIBusId(device))
        pynvml.nvmlInit()
        self._nv = pynvml
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            if bus_key(pynvml.nvmlDeviceGetPciInfo(h).busId) == want:
                self.handle = h
                break
        else:
            raise DeviceError(f"NVML has no GPU at CUDA device {device}'s bus id {want}")

    def energy_mj(self) -> int:
        return int(self._nv.nvmlDeviceGetTotalEnergyConsumption(self.handle))

    def sm_mhz(self) -> int:
        return int(self._nv.nvmlDeviceGetClockInfo(self.handle, self._nv.NVML_CLOCK_SM))

    def power_mw(self) -> int:
        return int(self._nv.nvmlDeviceGetPowerUsage(self.handle))

    def limit_w(self) -> float:
        return self._nv.nvmlDeviceGetEnforcedPowerLimit(self.handle) / 1000.0

    def max_sm_mhz(self) -> int:
        return int(self._nv.nvmlDeviceGetMaxClockInfo(self.handle, self._nv.NVML_CLOCK_SM))


def next_step(read: Callable[[], int], clock: Callable[[], float] = time.perf_counter,
              sleep: Callable[[float], None] = time.sleep, poll_s: float = 0.0005,
              timeout_s: float = 2.0) -> tuple[float, int]:
    """(host time, value) of the counter's next step: the first ``read()`` that differs from the one at the call.
    Raises ``ctahw.device.DeviceError`` if it does not change within ``timeout_s`` (a counter that never moves)."""
    from ctahw.device import DeviceError  # noqa: PLC0415

    first = read()
    deadline = clock() + timeout_s
    while True:
        value = read()
        now = clock()
        if value != first:
            return now, value
        if now > deadline:
            raise DeviceError(f"NVML energy counter did not change in {timeout_s} s (read {first} throughout)")
        sleep(poll_s)


def energy_fit(windows: Sequence[Mapping]) -> dict:
    """A kernel's duty windows (rows with ``launches``, ``window_s``, ``energy_j``, ``launch_ms``) as the line ``P =
    between_w + energy_j x rate`` (least squares): ``{"energy_j", "between_w", "launch_ms" (median over the windows),
    "dynamic_w" (energy_j / launch time), "max_residual_pct" (largest |residual| over the mean power)}``.
    ValueError for fewer than two windows of different launch rates or a non-positive slope."""
    rate = [float(w["launches"]) / float(w["window_s"]) for w in windows]
    watts = [float(w["energy_j"]) / float(w["window_s"]) for w in windows]
    if len(windows) < 2 or max(rate) - min(rate) <= 1e-9 * max(max(rate), 1.0):
        raise ValueError(f"energy fit: need two or more windows of different launch rates, got rates {rate}")
    between, slope = linfit(rate, watts)
    if not slope > 0:
        raise ValueError(f"energy fit: power does not rise with the launch rate (slope {slope:.4g} J)")
    mp = statistics.fmean(watts)
    launch_ms = statistics.median(float(w["launch_ms"]) for w in windows)
    resid = max(abs(p - between - slope * r) for r, p in zip(rate, watts))
    return {"energy_j": slope, "between_w": between, "launch_ms": launch_ms, "dynamic_w": slope / (launch_ms / 1e3),
            "max_residual_pct": 100.0 * resid / mp}


def step_power(samples: Sequence[tuple[float, int]], t_from: float) -> float:
    """Mean power (W) from (t_s, energy_mj) samples in time order, over the counter's steps from the first at or
    after ``t_from`` to the last: the energy between two steps over the time between them. ValueError where fewer
    than two steps fall there."""
    steps = [(t, e) for (t, e), (_, e0) in zip(samples[1:], samples[:-1]) if e != e0 and t >= t_from]
    if len(steps) < 2 or steps[-1][0] <= steps[0][0]:
        raise ValueError(f"step power: {len(steps)} counter steps after {t_from:.3f} s, need two")
    return (steps[-1][1] - steps[0][1]) / 1e3 / (steps[-1][0] - steps[0][0])


def _window(nv: Nvml, launch: Callable[[], tuple], period_s: float, window_s: float,
            elapsed: Callable[[object, object], float], launch_timeout_s: float = 10.0) -> dict:
    """One duty window: ``launch()`` enqueues the kernel between two events and returns them; launched every
    ``period_s`` from one counter step until ``window_s`` has passed, then to the next step; the SM clock read while
    each launch runs. ``elapsed(e0, e1)``: ms between two events."""
    from ctahw.device import DeviceError  # noqa: PLC0415

    t0, e0 = next_step(nv.energy_mj)
    due, durs, clocks = t0, [], []
    while time.perf_counter() - t0 < window_s:
        wait = due - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        ev0, ev1 = launch()
        deadline = time.perf_counter() + launch_timeout_s
        while not ev1.done:
            clocks.append(nv.sm_mhz())
            if time.perf_counter() > deadline:
                raise DeviceError(f"power probe: a launch did not finish within {launch_timeout_s:g} s")
            time.sleep(0.0005)
        durs.append(elapsed(ev0, ev1))
        due = max(due + period_s, time.perf_counter())
    t1, e1 = next_step(nv.energy_mj)
    return {"launches": len(durs), "window_s": t1 - t0, "energy_j": (e1 - e0) / 1e3,
            "launch_ms": statistics.median(durs), "sm_mhz": statistics.median(clocks) if clocks else float("nan")}


def power_probe(g, s, kernels: Mapping[str, tuple], nv: Nvml, periods: Sequence[float] = (3.0, 4.5, 6.0),
                window_s: float = 1.5, rest_s: float = 1.0, run_ms: float = 400.0, rounds: int = 2,
                log: Callable[[str], None] = lambda x: None) -> dict[str, list[dict]]:
    """``bench/hw/power_probe.py``'s measurement on CUTLASS GEMM ``g``, stream ``s``: per kernel (name -> (m, n, k,
    ops), operands as ``ctahw.calibrate.kernel_operands``), ``rounds`` back-to-back rounds of about ``run_ms``
    (``ctahw.calibrate.warm_launch_ms``, ``round_count``, ``back_to_back``) and one duty window per period (a multiple of the kernel's
    warm launch time), each after ``rest_s`` (``2 rest_s`` before a round). Returns tables ``duty``, ``launches`` (the
    back-to-back rows, as ``clock_trajectory.py``'s), ``samples`` (kernel, round, t_s since the round's launches were
    enqueued -- taken after the energy read --, energy_mj, sm_mhz; every ~5 ms while the round runs: two NVML reads and
    a 1 ms sleep) and ``device``
    (one row)."""
    import cupy as cp  # noqa: PLC0415

    from ctahw.baselines import Chain  # noqa: PLC0415
    from ctahw.calibrate import back_to_back, kernel_operands, launch_pair, round_count, warm_launch_ms  # noqa: PLC0415

    data = Chain(cp, 20261201)
    cp.cuda.Device(0).synchronize()
    time.sleep(2 * rest_s)
    t0, e0 = next_step(nv.energy_mj)
    time.sleep(window_s)
    t1, e1 = next_step(nv.energy_mj)
    device = [{"limit_w": nv.limit_w(), "max_sm_mhz": nv.max_sm_mhz(), "idle_w": (e1 - e0) / 1e3 / (t1 - t0),
               "idle_window_s": t1 - t0}]
    log(f"power probe: limit {device[0]['limit_w']:.0f} W, idle {device[0]['idle_w']:.1f} W")
    duty, launches, samples = [], [], []
    for name, (m, n, k, ops) in kernels.items():
        a, w, ep = kernel_operands(cp, data, m, n, k, ops)
        d = cp.empty((m, n), dtype=cp.uint16)
        cp.cuda.Device(0).synchronize()  # the operands are made on CuPy's stream, not on s: done before any timing
        head = {"kernel": name, "m": m, "n": n, "k": k, "epilogue": "+".join(ops)}

        def run():
            g(a, w, d, m, n, k, s, epilogue=ep)

        def launch():
            return launch_pair(cp, s, run)

        t_launch = warm_launch_ms(cp, launch)
        count = round_count(run_ms, t_launch)
        for rnd in range(rounds):
            cp.cuda.Device(0).synchronize()
            time.sleep(2 * rest_s)
            h0 = time.perf_counter()

            def sample(rnd=rnd, h0=h0):
                e = nv.energy_mj()
                samples.append({"kernel": name, "round": rnd, "t_s": time.perf_counter() - h0, "energy_mj": e,
                                "sm_mhz": nv.sm_mhz()})

            t = 0.0
            for i, dur in enumerate(back_to_back(cp, s, run, count, poll=sample)):
                launches.append({**head, "round": rnd, "i": i, "t_start_ms": t, "dur_ms": dur})
                t += dur
            log(f"power probe: {name} round {rnd}: {count} launches, {t:.1f} ms")
        for mult in periods:
            cp.cuda.Device(0).synchronize()
            time.sleep(rest_s)
            row = _window(nv, launch, mult * t_launch / 1e3, window_s, cp.cuda.get_elapsed_time)
            duty.append({**head, "period_ms": mult * t_launch, **row})
            log(f"power probe: {name} every {mult * t_launch:.2f} ms: {row['launches']} launches, "
                f"{row['energy_j'] / row['window_s']:.1f} W, launch {row['launch_ms']:.4f} ms, {row['sm_mhz']:.0f} MHz")
        del a, w, d
        cp.get_default_memory_pool().free_all_blocks()
    return {"duty": duty, "launches": launches, "samples": samples, "device": device}
