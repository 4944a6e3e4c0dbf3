"""Measure a machine into a hardware profile that ctasim reads (``specs/hardware/*.toml``).

What is measured (all on GPUs 0 and 1, medians of repeated runs, CUDA events unless said otherwise):

==========================  ===================================================================================
field                       measurement
==========================  ===================================================================================
sm_count                    device properties
hbm_gbps                    local device-to-device copy of 1 GiB, bytes read + written
link_gbps                   16-byte kernel stores from GPU 0 into GPU 1's memory, 1 GiB
copy_engine_gbps            cudaMemcpyPeerAsync GPU 0 -> GPU 1, 1 GiB
link_latency_ns             half the median flag round trip GPU0 -> GPU1 -> GPU0 (volatile store + sys fence)
remote_atomic_ns            half the median round trip of the same ping-pong signalled with atomicAdd_system
fence_sys_ns                per-iteration time of (peer store + __threadfence_system) minus (peer store alone)
launch_ns                   host clock before cudaLaunchKernel -> %globaltimer stamp of the kernel, if
                            %globaltimer runs on the host's clock (checked); else copied from the base profile
kernel_gap_ns               start-to-start of back-to-back stamp kernels queued behind a sleep on one stream
event_wait_ns               stamp on GPU 0 -> event -> stamp on GPU 1 (cudaStreamWaitEvent), minus the clock offset
allreduce_bus_gbps,         NCCL all-reduce of 1..256 MiB bf16: fit t = a + bytes / algbw; bus bandwidth =
allreduce_latency_ns        algbw * 2(G-1)/G (NCCL's definition); latency per ring step = a / (2(G-1))
epilogue_store_overlap,     CUTLASS GEMM with D on GPU 1 vs local D at M=16384, K=N=8192: the slowdown is fitted
sm_remote_store_gbps        with ctasim's own engine (the producer GEMM of a 2-GPU ctapipe plan vs a sequential
                            one, as the base profile was fitted): overlap 0 and the per-SM store rate that
                            reproduces the measured ratio (bisection, :func:`fit_sm_remote_store`). The simpler
                            figure 1 - extra / (bytes of D / link_gbps) is kept in calibration.json.
kernel_config 128x256       CUTLASS GEMM at M=16384, N=8192, K in {2048, 4096, 8192} (tile order tuned at
                            K=8192, see ctahw.baselines.tune_schedule): the per-round time
                            t / ceil(tiles / (sm_count * slots)) fitted as tile_fixed_ns + 2*128*256*K/(sm_tflops*1e3)
clock_onset_ns,             the plain GEMM back to back after a rest (:func:`clock_trajectory`, :func:`clock_regime`)
clock_sustained_slowdown
clock_curve_ns,             the same rounds: the mean tile-time factor over every 5 ms of busy time
clock_curve_factor          (:func:`clock_curve`)
activation_epilogue_...     GEMM1 of the MLP block with and without the fused erf-GeLU, rested
silu_/relu_epilogue_factor  the same run with the fused silu and relu: each one's cost over the GeLU's
relu_input_tile_factor      the same run with the plain GEMM on a ReLU'd A (half zero): its time over the plain's
epilogue_pass_gbps,         ctahw's elementwise epilogue kernel (swiglu, gelu, residual) and row-wise kernel
rowwise_gbps                (layernorm, rmsnorm) alone at sizes of no registered block (:data:`PASS_ITEMS`), rested
                            50 ms, medians: bytes read + written / time, the median over each kind's items
norm_stats_epilogue_...,    the LayerNorm fold: one traced run of the block boundary's ring pair of chain kernels on
norm_fold_epilogue_...      GPU 0 with the fold's ops and with the ops they replace, M = 4096 and 16384; each side's
                            median tile epilogue difference per element (:func:`fold_probe`; ``--no-fold``: copied)
l2_bytes                    cudaDeviceProp.l2CacheSize
128x256 cluster_m           the CUTLASS kernel's cluster shape (its describe() line)
128x256 cta_drift           median drift of 9 per-tile traces of the persistent GEMM in CUTLASS's orders
                            (``ctahw.tile_orders.trace_orders``, ``ctasim.calibration.trace_drift``)
128x256 ticket_spread       median growth per window of 132 tickets of the start-time span in 4 per-tile traces of
                            the chain kernel's tickets design (``ctahw.tile_orders.trace_tickets``,
                            ``ctasim.calibration.ticket_spread``; ``--quick``: 2 traces)
local_signal_ns             the same traces: median of each tile's t_signal - t_compute_end (its stores complete,
                            the epilogue threads' barrier, the GPU-scope release; ``ctasim.calibration.local_signal``)
l2_survival_taken,          the L2 survival probe (``ctahw.l2probe``): a 2 MiB target each line read by one SM, B bytes
l2_survival_share           streamed by every SM, the share of lines another SM still finds (load latency under the
                            cut between hot and cold trials), median of 5 repetitions per B (``--quick``: 3), scaled
                            between hot and cold (``ctahw.l2probe.survival_curve``): the curve of the "survival"
                            ticket law (~1 s)
128x256 ticket_law          *chosen*: "survival" where the L2 survival curve was measured (the law that reads it;
                            h200-x1-calibrated's since registered plan 53), else the base's; with it that law's
                            refinements, so the factor below is measured under the law as the profile uses it:
128x256 ticket_gap_cv       *copied* from h200-x1-calibrated (0.74, pooled over lent H200s); the gap traces are still
                            run and read (the coefficient of variation of each later sharer's gap over its reach in 2
                            per-tile traces of the tickets design in pairs of row-blocks, ``--quick``: 1;
                            ``ctahw.tile_orders.GAP_SHAPES``, ``ctasim.calibration.gap_cv``) and named in the field's
                            note, not written: registered plan 62 found that reading no nearer the machine's own than
                            the pooled value
128x256 ticket_touched      *copied* from h200-x1-calibrated (1.3 since registered plan 58's adoption; chosen there)
128x256                     the one-layer microbenchmark of registered plan 51 (``ctasim.ticket_rate.RATE_EXPERIMENTS``:
ticket_mainloop_factor      the chain kernel's tickets design in groups of 8 against the plain CUTLASS GEMM, M x H x H,
                            H = 8192 and 12288, M = 8192 and 16384, run as ``ctahw run`` runs them; :func:`ticket_rate`):
                            the median over the 4 cases of measured over predicted ratio, the predictions the written
                            profile's own under its ticket law at factor 1 (``ctasim.ticket_rate``; needs ctasim's
                            engine, copied where it cannot run); ~40 s (``--quick``: 5 repetitions, ~25 s)
l2_hbm_exposed,             *fitted*: least mean |error| over the tile-order probe at the calibration split (N = K =
128x256 l2_sm_tflops        8192, M = 2048 ... 32768, 12 orders: 72 runs, ``ctahw.tile_orders.time_orders``), given the
                            measured L2 size, HBM rate, tile fixed time and drift, reuse across waves by the base
                            profile's ``l2_reuse_law`` (copied; the survival law reads the curve measured here)
                            (``ctasim.calibration.fit_l2_constants``); the 128x256 tile_cv is set to 0 beside them
                            (they are fitted without tile-time variation); ``l2_hbm_exposed_gbps`` is set to 0
                            (hbm_gbps) with them: the share was fitted at the machine's own HBM rate, whatever rate
                            the base charges it at
128x256 drift_form          *chosen*, not measured: the drift form the fit used (:data:`DRIFT_FORM`, written with it)
==========================  ===================================================================================

The memory hierarchy's fields (the last four rows) are written all together or not at all
(:func:`memory_hierarchy`); the probes behind them take ~50 s of device time (``--quick``: ~20 s). The L2 survival
curve is written wherever its probe ran, fit or no fit.

Also measured, written into calibration.json (``percta``, ``percta_runs``), the probe folder (``percta.csv``,
``percta-runs.csv``, ``percta-tiles-<M>-<variant>.csv.gz``) and the profile's header, not into any field
(:func:`percta_probe`, ``ctahw.percta``): the one-CTA-per-tile steps of the CTA-pipelined producer kernel (variant
(a)) run alone on GPU 0 with its output and scoreboard in local memory, traced, at M = 4096 and 16384 for clusters
1x1, 1x2 and 2x1 -- the exposed epilogue (what the ``ctapipe-*`` configs' ``tile_fixed_ns`` holds), the CTA
turnover (``cta_launch_ns``), the mainloop of waves 0-1 and later, the store-complete and local signal steps; until
then fitted on 2-GPU traces only (``ctasim.validation.ctapipe``). ``--no-percta`` skips it (~15 s).

Also measured and recorded (comments in the profile, all figures in calibration.json): the %globaltimer tick
and the GPU1 - GPU0 %globaltimer offset (NTP-style, from the minimum-round-trip ping-pong samples).

Not measured (copied from the base profile, saying so): topology, poll_ns (a kernel design value), and kernel
configs that ctahw has no kernel for; the memory hierarchy's fields with ``memory=False`` (``--no-memory``) or where
its fit fails (the profile's header says why). ``calibrated_from`` names the base profile (``ctasim advise`` quotes
its registered validation for a calibration's profile).
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import math
import re
import statistics
import sys
import time
from dataclasses import fields
from pathlib import Path
from typing import Callable, Mapping, Sequence

import tomllib

from ctahw.gemm import EPILOGUE_OPS_FUSED
from ctahw.probes import pingpong_stats
from ctasim.spec import Hardware, KernelConfig, find_spec, hardware_from_dict, load_hardware

__all__ = [
    "clock_regime",
    "activation_epilogue_cost",
    "activation_probe",
    "activation_factors",
    "relu_input_factor",
    "pass_bytes",
    "pass_rates",
    "pass_probe",
    "PASS_ITEMS",
    "norm_fold_epilogue_cost",
    "kernel_cluster",
    "memory_hierarchy",
    "fit_curve",
    "measure_memory",
    "ticket_rate",
    "ticket_rate_fields",
    "fit_tile_rate",
    "fit_allreduce",
    "epilogue_overlap",
    "pingpong_stats",
    "timer_tick_ns",
    "base_comments",
    "profile_toml",
    "measure",
    "percta_probe",
    "fold_probe",
    "FOLD_MS",
]


# --------------------------------------------------------------------------------------------------
# Pure fits (tested on the CPU)


def linfit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least squares y = a + b x; returns (a, b)."""
    n = len(xs)
    if n < 2 or len(set(xs)) < 2:
        raise ValueError("need at least two distinct x values")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def fit_tile_rate(samples: Sequence[tuple[int, int, int, float]], tile_m: int, tile_n: int, sm_count: int,
                  slots: int = 1) -> dict:
    """Fit KernelConfig's tile-time model to measured GEMM times.

    samples: (M, N, K, ms). rounds = ceil(tiles / (sm_count * slots)) with tiles = ceil(M/tile_m)*ceil(N/tile_n);
    per-round time r = t / rounds = tile_fixed_ns + 2*tile_m*tile_n*K / (sm_tflops*1e3). With one K only, or a
    negative fitted intercept, the fixed time is 0 and sm_tflops comes from the largest K alone.
    """
    pts = []
    for m, n, k, ms in samples:
        tiles = math.ceil(m / tile_m) * math.ceil(n / tile_n)
        rounds = math.ceil(tiles / (sm_count * slots))
        pts.append((k, ms * 1e6 / rounds))
    flop_tile = 2.0 * tile_m * tile_n
    ks = sorted({k for k, _ in pts})
    fixed, note = 0.0, "one K: tile_fixed_ns = 0"
    if len(ks) >= 2:
        a, b = linfit([k for k, _ in pts], [r for _, r in pts])
        if a >= 0 and b > 0:
            fixed, note = a, f"fit over K = {ks}"
        else:
            note = f"fit over K = {ks} gave intercept {a:.0f} ns < 0: tile_fixed_ns = 0, rate from the largest K"
    if fixed > 0:
        sm_tflops = flop_tile / (b * 1e3)
    else:
        kmax = ks[-1]
        r = statistics.median([r for k, r in pts if k == kmax])
        sm_tflops = flop_tile * kmax / (r * 1e3)
    resid = [r - (fixed + flop_tile * k / (sm_tflops * 1e3)) for k, r in pts]
    return {"sm_tflops": sm_tflops, "tile_fixed_ns": fixed, "note": note,
            "points": [{"k": k, "round_ns": r} for k, r in pts], "max_abs_residual_ns": max(abs(x) for x in resid)}


def fit_allreduce(sizes_bytes: Sequence[int], ms: Sequence[float], gpus: int) -> dict:
    """NCCL all-reduce model t = a + bytes/algbw; busbw = algbw * 2(G-1)/G; latency per ring step a/(2(G-1))."""
    if gpus < 2:
        raise ValueError("an all-reduce needs at least 2 GPUs")
    a_ms, b = linfit([float(s) for s in sizes_bytes], list(ms))
    if b <= 0:
        raise ValueError("all-reduce time does not grow with size: cannot fit a bandwidth")
    algbw_gbps = 1.0 / (b * 1e6)  # b: ms per byte -> bytes per ns = GB/s
    bus = algbw_gbps * 2 * (gpus - 1) / gpus
    steps = 2 * (gpus - 1)
    return {"allreduce_bus_gbps": bus, "allreduce_latency_ns": max(0.0, a_ms * 1e6 / steps),
            "intercept_ms": a_ms, "algbw_gbps": algbw_gbps}


def epilogue_overlap(t_local_ms: float, t_remote_ms: float, d_bytes: int, link_gbps: float) -> float:
    """Fraction of the remote-store time of D hidden behind compute: 1 - extra / (bytes / link), in [0, 1]."""
    store_ms = d_bytes / (link_gbps * 1e6)
    return min(1.0, max(0.0, 1.0 - (t_remote_ms - t_local_ms) / store_ms))


def remote_d_slowdown(hw: Hardware, m: int = 16384, k: int = 8192, tile: tuple[int, int] = (128, 256)) -> float:
    """Simulated time of a GEMM whose output D lives on the peer GPU over the same GEMM with local D."""
    from ctasim.engine import simulate  # noqa: PLC0415 - ctasim's engine needs simpy; only this fit uses it
    from ctasim.spec import Layer, Strategy, Workload  # noqa: PLC0415
    from ctasim.strategies import build_plans  # noqa: PLC0415

    layer = Layer(m, k, k, *tile)
    remote = simulate(build_plans(Strategy("ctapipe"), Workload("w", "bf16", (layer, layer)), hw, 2, "r")[0], hw)
    local = simulate(build_plans(Strategy("sequential"), Workload("w", "bf16", (layer,)), hw, 1, "l")[0], hw)

    def span(tr):
        return tr.ops.iloc[0].t_end - tr.ops.iloc[0].t_begin

    return span(remote) / span(local)


def fit_sm_remote_store(hw: Hardware, ratio: float, slowdown=remote_d_slowdown, lo: float = 0.5, hi: float = 1e4,
                        iters: int = 40) -> tuple[float, str]:
    """The ``sm_remote_store_gbps`` (with ``epilogue_store_overlap = 0``) whose simulated remote-D slowdown
    equals the measured ``ratio``; bisection on a log scale (the slowdown falls as the rate grows).
    Outside the model's range the nearest end is returned, and the note says so.  The rate depends on the
    profile's link model and the 128x256 config's ``tile_cv`` and ``kernel_fixed_ns`` (docs/validation.md: 16.96
    GB/s under "fcfs", 52.05 under "fair" for one measurement); the note names the ones used."""
    import dataclasses  # noqa: PLC0415
    import math as _m  # noqa: PLC0415

    def f(rate: float) -> float:
        return slowdown(dataclasses.replace(hw, sm_remote_store_gbps=rate, epilogue_store_overlap=0.0))

    cfg = hw.config(128, 256)
    under = (f'link_sharing "{hw.link_sharing}", 128x256 tile_cv {cfg.tile_cv:g}, kernel_fixed_ns '
             f"{cfg.kernel_fixed_ns:g}")
    s_lo, s_hi = f(lo), f(hi)
    if ratio >= s_lo:
        return lo, f"measured slowdown {ratio:.4f} >= the model's {s_lo:.4f} at {lo} GB/s ({under}): clipped"
    if ratio <= s_hi:
        return hi, (f"measured slowdown {ratio:.4f} <= the model's {s_hi:.4f} at {hi:g} GB/s (link-bound; {under}): "
                    "clipped")
    a, b = _m.log(lo), _m.log(hi)
    for _ in range(iters):
        mid = (a + b) / 2
        if f(_m.exp(mid)) > ratio:
            a = mid
        else:
            b = mid
    rate = _m.exp((a + b) / 2)
    return rate, f"simulated slowdown {f(rate):.4f} vs measured {ratio:.4f} ({under})"


FUSED_ACTIVATIONS = tuple(ops[0] for ops in EPILOGUE_OPS_FUSED if len(ops) == 1 and ops[0] != "residual")
"""Fused activations a timed kernel may carry: the one-op epilogues of ``ctahw.gemm.EPILOGUE_OPS_FUSED`` but the
residual (which reads a third operand)."""
INPUT_OPS = ("relu_input", "relu_both", "zero_input", "gelu_input", "silu_input", "swiglu_input")
"""What a timed kernel may do to its operands instead (same GEMM, other bits, so another draw): ``relu_input`` zeroes
A's negative elements (about half of A zero, as the down GEMM reads a ReLU's output), ``relu_both`` A's and W's
(about three products in four zero), ``zero_input`` every element of A; ``gelu_input`` and ``silu_input`` put A
through the activation (erf-form GeLU, SiLU: what an MLP's down GEMM reads after them), ``swiglu_input`` makes A
SiLU(A) times a second random normal matrix (a SwiGLU block's gate times up)."""


def kernel_operands(cp, data, m: int, n: int, k: int, ops: Sequence[str]):
    """(A bits, W bits, epilogue ops) of a timed kernel ``(m, n, k, ops)``: random normal operands of ``data`` (a
    :class:`ctahw.baselines.Chain`), W scaled by 1/sqrt(k), changed as :data:`INPUT_OPS` in ``ops`` say; the rest of
    ``ops`` is the epilogue. ValueError for an op that is neither."""
    import math as _m

    from ctahw.device import bf16_bits_to_f32, f32_to_bf16_bits, relu_bf16_bits  # noqa: PLC0415
    from ctahw.rowwise import reference_epilogue  # noqa: PLC0415

    bad = [o for o in ops if o not in FUSED_ACTIVATIONS + INPUT_OPS]
    if bad:
        raise ValueError(f"kernel ops {bad}: not one of {', '.join(FUSED_ACTIVATIONS + INPUT_OPS)}")
    a = data.rand(0, (m, k), salt=1)
    w = data.rand(0, (n, k), 1 / _m.sqrt(k), salt=2)
    if "relu_input" in ops or "relu_both" in ops:
        a = relu_bf16_bits(a, cp)
    if "relu_both" in ops:
        w = relu_bf16_bits(w, cp)
    if "zero_input" in ops:
        a[...] = 0
    act = {"gelu_input": "gelu", "silu_input": "silu", "swiglu_input": "silu"}
    for op in (o for o in ops if o in act):
        y = reference_epilogue(bf16_bits_to_f32(a, cp), (act[op],))
        if op == "swiglu_input":
            y = y * bf16_bits_to_f32(data.rand(0, (m, k), salt=3), cp)
        a = f32_to_bf16_bits(y, cp)
        del y
    return a, w, tuple(o for o in ops if o in FUSED_ACTIVATIONS)


def warm_launch_ms(cp, launch: Callable[[], tuple]) -> float:
    """The median of three warm launches (ms): ``launch()`` enqueues one between two events and returns them; one
    untimed launch first, so the kernel is loaded and the clock is up."""
    ev = launch()
    ev[1].synchronize()
    times = []
    for _ in range(3):
        e0, e1 = launch()
        e1.synchronize()
        times.append(cp.cuda.get_elapsed_time(e0, e1))
    return statistics.median(times)


def round_count(run_ms: float, launch_ms: float) -> int:
    """Launches in a back-to-back round of about ``run_ms`` of ``launch_ms`` each (:func:`warm_launch_ms`), at least
    9, so that 8 remain after launch 0 (:func:`trajectory_rounds`)."""
    return max(9, int(run_ms / launch_ms))


def back_to_back(cp, s, run: Callable[[], None], count: int, poll: Callable[[], None] | None = None,
                 poll_s: float = 0.001, timeout_s: float = 60.0) -> list[float]:
    """``count`` launches of ``run()`` on stream ``s`` back to back, an event between each; the launch times (ms).
    ``poll()``, if given, is called every ``poll_s`` while they run (the host is free once they are enqueued).
    Raises ``ctahw.device.DeviceError`` if they have not finished ``timeout_s`` after the last was enqueued."""
    import time as _t

    from ctahw.device import DeviceError  # noqa: PLC0415

    evs = [cp.cuda.Event() for _ in range(count + 1)]
    evs[0].record(s)
    for i in range(count):
        run()
        evs[i + 1].record(s)
    deadline = _t.perf_counter() + timeout_s
    while not evs[-1].done:
        if poll is not None:
            poll()
        if _t.perf_counter() > deadline:
            raise DeviceError(f"{count} back-to-back launches did not finish within {timeout_s:.0f} s")
        _t.sleep(poll_s)
    if poll is not None:
        poll()
    return [cp.cuda.get_elapsed_time(evs[i], evs[i + 1]) for i in range(count)]


def launch_pair(cp, s, run: Callable[[], None]) -> tuple:
    """``run()`` on stream ``s`` between two fresh events; the events."""
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    e0.record(s)
    run()
    e1.record(s)
    return e0, e1


def clock_trajectory(g, s, kernels: Mapping[str, tuple], rest_s: float = 2.0, run_ms: float = 400.0,
                     rounds: int = 3, log: Callable[[str], None] = lambda x: None) -> list[dict]:
    """Rows (kernel, m, n, k, epilogue, round, i, t_start_ms, dur_ms) of ``bench/hw/clock_trajectory.py``'s
    measurement: per kernel (name -> (m, n, k, epilogue ops)) and round, a ``rest_s`` host sleep with the GPU idle,
    then back-to-back launches of CUTLASS GEMM ``g`` on stream ``s`` for about ``run_ms`` (:func:`warm_launch_ms`,
    :func:`round_count`, :func:`back_to_back`), an event between each. :data:`INPUT_OPS` among the ops are not epilogues: the plain GEMM
    on changed operands (:func:`kernel_operands`), so the trajectory of a lower-power kernel can be timed."""
    import time as _t

    from ctahw.baselines import Chain  # noqa: PLC0415
    from ctahw.device import require_cupy  # noqa: PLC0415

    cp = require_cupy()
    data = Chain(cp, 20261201)
    rows: list[dict] = []
    for name, (m, n, k, ops) in kernels.items():
        a, w, ep = kernel_operands(cp, data, m, n, k, ops)
        d = cp.empty((m, n), dtype=cp.uint16)
        cp.cuda.Device(0).synchronize()  # the operands are made on CuPy's stream, not on s: done before any timing

        def run():
            g(a, w, d, m, n, k, s, epilogue=ep)

        count = round_count(run_ms, warm_launch_ms(cp, lambda: launch_pair(cp, s, run)))
        for rnd in range(rounds):
            cp.cuda.Device(0).synchronize()
            _t.sleep(rest_s)
            t = 0.0
            for i, dur in enumerate(back_to_back(cp, s, run, count)):
                rows.append(dict(kernel=name, m=m, n=n, k=k, epilogue="+".join(ops), round=rnd, i=i, t_start_ms=t,
                                 dur_ms=dur))
                t += dur
            log(f"calibrate: clock trajectory {name} round {rnd}: {count} launches, {t:.1f} ms")
        del a, w, d
        cp.get_default_memory_pool().free_all_blocks()
    return rows


TRAJECTORY_KERNELS = {"square-16384": (16384, 8192, 8192, ()), "square-4096": (4096, 8192, 8192, ()),
                      "gelu-16384": (16384, 28672, 8192, ("gelu",))}
"""The kernels of the clock trajectory (``clock_trajectory.py`` and ``ctahw calibrate``)."""

CLOCK_KERNELS = ("square-16384", "square-4096")
"""The trajectory kernels of ``bench/hw/clock_trajectory.py`` the clock regime is calibrated on: the plain GEMM whose
tile rates the profile holds (the fused-GeLU kernel is recorded beside them as a check, not used)."""
ONSET_RATIO = 1.05
"""A launch at least this much slower than the round's rested launches marks the power cap's onset."""


def trajectory_rounds(trajectory, kernels: Sequence[str] | None = None) -> dict[tuple[str, int], list[tuple]]:
    """``clock_trajectory.py`` rows (kernel, round, i, t_start_ms, dur_ms) as rounds: (kernel, round) -> its launches
    (i, t_start_ms, dur_ms) in launch order, in (kernel, round) order; only ``kernels``' where given. Raises ValueError
    for a round of fewer than 8 launches after launch 0."""
    out: dict[tuple[str, int], list[tuple]] = {}
    for r in trajectory:
        if kernels is None or str(r["kernel"]) in kernels:
            out.setdefault((str(r["kernel"]), int(r["round"])), []).append(
                (int(r["i"]), float(r["t_start_ms"]), float(r["dur_ms"])))
    for key, launches in out.items():
        launches.sort()
        after = sum(1 for x in launches if x[0] >= 1)
        if after < 8:
            raise ValueError(f"clock trajectory {key[0]} round {key[1]}: {after} launches after the first, need >= 8")
    return dict(sorted(out.items()))


def rested_ms(launches: Sequence[tuple]) -> float:
    """A round's rested launch time: the median of launches 1-3 (launch 0 is dropped: the clock is still rising from
    idle). ``launches``: (i, t_start_ms, dur_ms) in launch order."""
    return statistics.median(d for i, _, d in [x for x in launches if x[0] >= 1][:3])


def sustained_ms(launches: Sequence[tuple]) -> float:
    """A round's sustained launch time: the median launch of its second half (launches after launch 0 that start at
    or after half the start of its last). ``launches``: (i, t_start_ms, dur_ms) in launch order."""
    runs = [x for x in launches if x[0] >= 1]
    half = runs[-1][1] / 2
    return statistics.median(d for _, t, d in runs if t >= half)


def clock_regime(trajectory, kernels: Sequence[str] = CLOCK_KERNELS) -> tuple[dict, list[dict]]:
    """The clock regime from ``clock_trajectory.py`` rows (kernel, round, i, t_start_ms, dur_ms).

    Per round (:func:`trajectory_rounds`): the rested time is :func:`rested_ms` (launch 0 dropped), the onset the
    start of the first later launch at least :data:`ONSET_RATIO` times slower, the sustained slowdown the median
    launch of the round's second half over the rested time. Returns ``({"clock_onset_ns",
    "clock_sustained_slowdown"}: medians over the rounds of ``kernels``, per-round rows)``. Raises ValueError if a
    round never slows down (no onset) or no round of ``kernels`` is given.
    """
    per_round = []
    for key, launches in trajectory_rounds(trajectory).items():
        runs = [x for x in launches if x[0] >= 1]
        rested = rested_ms(launches)
        late = [t for _, t, d in runs[3:] if d >= ONSET_RATIO * rested]
        if not late:
            raise ValueError(f"clock trajectory {key[0]} round {key[1]}: no launch {ONSET_RATIO}x slower than the "
                             f"rested {rested:.4f} ms (the run never reached the power cap; run longer)")
        slowdown = sustained_ms(launches) / rested
        per_round.append({"kernel": key[0], "round": key[1], "rested_ms": rested, "onset_ms": late[0],
                          "sustained_slowdown": slowdown, "used": key[0] in kernels})
    used = [r for r in per_round if r["used"]]
    if not used:
        raise ValueError(f"clock trajectory: no round of {', '.join(kernels)}")
    fields = {"clock_onset_ns": statistics.median(r["onset_ms"] for r in used) * 1e6,
              "clock_sustained_slowdown": statistics.median(r["sustained_slowdown"] for r in used)}
    return fields, per_round


CURVE_STEP_MS = 5.0
"""Spacing of the clock curve's knots (ms of busy time): a launch of the trajectory's square-4096 GEMM is 0.7 ms,
of its square-16384 GEMM 2.8 ms."""
SUBSTEPS = 100
"""Samples per knot interval of :func:`clock_curve` (every 0.05 ms at the 5 ms step)."""
CURVE_HORIZON_MS = 150.0
"""The clock curve's last knot: from here on the factor is the curve's mean over the rest of the trajectory (every
round of the calibrations so far has reached its sustained level by 100 ms)."""


def clock_curve(trajectory, kernels: Sequence[str] = CLOCK_KERNELS, step_ms: float = CURVE_STEP_MS,
                horizon_ms: float = CURVE_HORIZON_MS) -> tuple[dict, list[dict]]:
    """The burst regime's mean clock curve from ``clock_trajectory.py`` rows (kernel, round, i, t_start_ms, dur_ms).

    Per round of ``kernels``: launch 0 is dropped (the clock still rising from idle) and counts as rested; the rested
    time is the median of launches 1-3 (as :func:`clock_regime`); a round's factor at time t is the duration, over the
    rested time, of the launch in progress then. A knot at every multiple of ``step_ms`` before ``horizon_ms`` holds the
    rounds' mean factor over the interval to the next knot (sampled every ``step_ms / SUBSTEPS``), which the engine
    applies to a tile starting anywhere in it (the first, at 0, is 1: its interval holds the rested launches that
    define the factor); the last knot, at ``horizon_ms``, holds their mean from there to the
    shortest round's last launch start (the sustained level). Knots that repeat the previous factor (to 4 decimals)
    are dropped.
    Returns ``({"clock_curve_ns": (...), "clock_curve_factor": (...)}, rows (t_ms, factor, rounds))``. The mean, not
    the median: where the onset falls differs between rounds (27-86 ms), and a prediction is to be right on average.
    Raises ValueError as :func:`trajectory_rounds` does, and for no round of ``kernels``, a round without launch 0 at
    0 ms or too short a run.
    """
    if not step_ms > 0:
        raise ValueError(f"clock curve: step_ms must be > 0, got {step_ms}")
    rounds = trajectory_rounds(trajectory, kernels)
    if not rounds:
        raise ValueError(f"clock trajectory: no round of {', '.join(kernels)}")
    series = []
    for key, launches in rounds.items():
        if launches[0][:2] != (0, 0.0):
            raise ValueError(f"clock trajectory {key[0]} round {key[1]}: no launch 0 starting at 0 ms")
        rested = rested_ms(launches)
        starts = [t for _, t, _ in launches]
        factors = [1.0] + [d / rested for _, _, d in launches[1:]]
        series.append((starts, factors))
    end = min(starts[-1] for starts, _ in series)
    if end < horizon_ms + step_ms:
        raise ValueError(f"clock trajectory: the shortest round ends at {end:.1f} ms, before the curve's horizon "
                         f"{horizon_ms:g} ms + one step (run longer)")

    sub = step_ms / SUBSTEPS

    def over(t0: float, t1: float) -> float:  # the rounds' mean factor over [t0, t1), sampled every step / SUBSTEPS
        n = max(1, round((t1 - t0) / sub))
        return statistics.fmean(fs[bisect.bisect_right(ts, t0 + (k + 0.5) * sub) - 1]
                                for ts, fs in series for k in range(n))

    rows, last = [], None
    for t in [j * step_ms for j in range(int(horizon_ms // step_ms) + (horizon_ms % step_ms > 0))] + [horizon_ms]:
        # the first interval holds the rested launches that define 1: its factor is 1 by definition, not their noise
        f = 1.0 if t == 0 else over(t, min(t + step_ms, horizon_ms)) if t < horizon_ms else over(horizon_ms, end)
        if last is None or round(f, 4) != last:
            rows.append({"t_ms": t, "factor": round(f, 4), "rounds": len(series)})
            last = round(f, 4)
    return ({"clock_curve_ns": tuple(r["t_ms"] * 1e6 for r in rows),
             "clock_curve_factor": tuple(r["factor"] for r in rows)}, rows)


def clock_fields_together(res: Mapping) -> dict:
    """A measurement with its clock fields made consistent: a curve without its step (the regime not measured) is
    dropped, so that the base's curve and step are copied together; a step without its curve (the run too short for
    the curve) gets an empty curve, so that no other machine's curve overrides the step just measured."""
    out = dict(res)
    if "clock_onset_ns" not in out:
        out.pop("clock_curve_ns", None)
        out.pop("clock_curve_factor", None)
    elif "clock_curve_ns" not in out:
        out.update(clock_curve_ns=(), clock_curve_factor=())
    return out


def activation_epilogue_cost(breakdown, tile_elems: int = 128 * 256, slots: int = 132,
                             plain: str = "gemm1_plain", fused: str = "gemm1_gelu",
                             n: int = 28672) -> tuple[float, list[dict]]:
    """ns per output element that a fused activation adds to a tile, from ``mlp_block_breakdown.py`` rows (m, item,
    per_op_ms) of a rested run: per M, (fused - plain) spread over the kernel's tiles run ``slots`` at a time,
    over the tile's elements; the median over the M values. ``n``: the GEMM's N (GEMM1 of the block: 28672)."""
    by = {}
    for r in breakdown:
        by[(int(r["m"]), str(r["item"]))] = float(r["per_op_ms"])
    rows = []
    for m in sorted({m for m, _ in by}):
        if (m, plain) not in by or (m, fused) not in by:
            continue
        tiles = (m // 128) * (n // 256)
        per_tile_ns = (by[(m, fused)] - by[(m, plain)]) * 1e6 * slots / tiles
        rows.append({"m": m, "plain_ms": by[(m, plain)], "fused_ms": by[(m, fused)], "per_tile_ns": per_tile_ns,
                     "ns_per_element": per_tile_ns / tile_elems})
    if not rows:
        raise ValueError(f"breakdown: no M with both {plain} and {fused}")
    return statistics.median(r["ns_per_element"] for r in rows), rows


PASS_ITEMS = (
    ("epilogue", "swiglu", 16384, 2 * 14336),
    ("epilogue", "swiglu", 32768, 2 * 8192),
    ("epilogue", "gelu", 16384, 28672),
    ("epilogue", "residual", 32768, 8192),
    ("rowwise", "layernorm", 32768, 4096),
    ("rowwise", "layernorm", 16384, 8192),
    ("rowwise", "rmsnorm", 16384, 8192),
    ("rowwise", "rmsnorm", 16384, 12288),
)
"""The memory passes :func:`pass_probe` times: (kind, op, rows, n) with ``n`` the columns the pass reads (a swiglu
pass reads ``n`` and writes ``n / 2``). Sizes of no registered block, so that the rates are measured apart from the
blocks they price."""

PASS_FIELDS = {"epilogue": "epilogue_pass_gbps", "rowwise": "rowwise_gbps"}
"""Each pass kind's profile field (``ctasim.spec.Hardware``)."""


def pass_bytes(op: str, rows: int, n: int, elem_bytes: int = 2) -> float:
    """HBM bytes (read + written) of one memory pass as ``ctasim.costs`` counts them: swiglu reads ``n`` columns and
    writes ``n / 2``; residual reads the GEMM's output and the residual and writes one; the other elementwise ops
    and the row-wise norms read and write ``n`` columns once each."""
    per_row = {"swiglu": n + n // 2, "residual": 3 * n}.get(op, 2 * n)
    if op not in ("swiglu", "residual", "gelu", "silu", "relu", "layernorm", "rmsnorm"):
        raise ValueError(f"unknown memory pass {op!r}")
    return float(rows) * per_row * elem_bytes


def pass_rates(rows) -> tuple[dict[str, float], list[dict]]:
    """The profile's pass rates from :func:`pass_probe` rows (kind, op, rows, n, median_ms): per kind of
    :data:`PASS_FIELDS`, the median over its items of bytes (:func:`pass_bytes`) / time, GB/s. Returns (field ->
    rate, the rows with their ``gbps``); ValueError when a kind has no item or an item has no positive time."""
    out, per = {}, []
    for r in rows:
        ms = float(r["median_ms"])
        if not ms > 0:
            raise ValueError(f"memory pass {r['op']} {r['rows']}x{r['n']}: time {ms} ms is not positive")
        per.append(dict(r, gbps=pass_bytes(str(r["op"]), int(r["rows"]), int(r["n"])) / (ms * 1e6)))
    for kind, name in PASS_FIELDS.items():
        rates = [p["gbps"] for p in per if p["kind"] == kind]
        if not rates:
            raise ValueError(f"memory passes: no {kind} item")
        out[name] = statistics.median(rates)
    return out, per


def pass_probe(log: Callable[[str], None] = lambda s: print(s, file=sys.stderr), reps: int = 9,
               rest_ms: float = 50.0, items=PASS_ITEMS) -> list[dict]:
    """Time ctahw's memory-pass kernels (``ctahw.rowwise.epilogue``, ``ctahw.rowwise.rowwise``) on GPU 0 in the
    executor's harness (``ctahw.baselines.Timed``, ``rest_ms`` of host sleep before every timed run, burst
    regime), items interleaved round by round after one untimed round: medians of ``reps``. Random bf16 inputs.
    Rows: kind, op, rows, n, median_ms, samples (;-joined)."""
    from ctahw import rowwise  # noqa: PLC0415
    from ctahw.baselines import Timed  # noqa: PLC0415
    from ctahw.device import random_bf16, require_cupy, require_gpus, summarize  # noqa: PLC0415

    cp = require_cupy()
    require_gpus(1)
    rng = cp.random.default_rng(20261202)
    T = Timed([0], gate_ms=2.0, rest_ms=rest_ms)
    s = T.compute[0]
    calls = []
    with cp.cuda.Device(0):
        for kind, op, m, n in items:
            x = random_bf16((m, n), cp, rng)
            if kind == "rowwise":
                out = cp.empty((m, n), dtype=cp.uint16)
                calls.append(lambda op=op, x=x, out=out, m=m, n=n: rowwise.rowwise(op, x, out, m, n, s))
                continue
            out = cp.empty((m, n // 2 if op == "swiglu" else n), dtype=cp.uint16)
            res = random_bf16((m, n), cp, rng) if op == "residual" else None
            calls.append(lambda op=op, x=x, out=out, res=res, m=m, n=n:
                         rowwise.epilogue((op,), x, out, m, n, 256, residual=res, stream=s))
    log(f"calibrate: memory passes ({len(items)} kernels, {reps} runs each)")
    samples = [[] for _ in items]
    for i in range(reps + 1):
        idx = list(range(len(items)))
        for j in (idx if i % 2 == 0 else idx[::-1]):
            ms = T.run(lambda t, fn=calls[j]: (fn(), [(s, 0)])[1])[0]
            if i:
                samples[j].append(ms)
    rows = [{"kind": kind, "op": op, "rows": m, "n": n, "median_ms": summarize(v).median_ms,
             "samples": ";".join(f"{x:.5f}" for x in v)} for (kind, op, m, n), v in zip(items, samples)]
    del calls
    cp.get_default_memory_pool().free_all_blocks()
    return rows


def activation_probe(g, ms: Sequence[int] = (4096, 16384), ops: Sequence[str] = ("gelu",), reps: int = 10,
                     rest_ms: float = 300.0, n: int = 28672, k: int = 8192) -> list[dict]:
    """GEMM1 of the MLP block (``M x n x k``, CUTLASS ``g`` on GPU 0, its tuned order as set) plain and with each
    fused epilogue op of ``ops`` (an activation, or ``residual``: D = A @ W^T + C with a random C), every run behind
    ``rest_ms`` of rest, the items interleaved round by round after one untimed round: rows (m, item ``gemm1_plain``
    / ``gemm1_<op>``, per_op_ms = the median of ``reps``), what :func:`activation_epilogue_cost` reads.
    ``relu_input`` is not an epilogue: the plain GEMM on A with its negative elements zeroed, as a ReLU leaves the
    down projection's input (half of A zero; data-dependent power, hence clock, is what it can show)."""
    from ctahw.baselines import Timed  # noqa: PLC0415
    from ctahw.device import random_bf16, relu_bf16_bits, require_cupy, summarize  # noqa: PLC0415

    cp = require_cupy()
    rng = cp.random.default_rng(20261129)
    rested = Timed([0], gate_ms=2.0, rest_ms=rest_ms)
    items = [("gemm1_plain", ())] + [(f"gemm1_{op}", (op,)) for op in ops]
    rows = []
    for mm in ms:
        with cp.cuda.Device(0):
            a1 = random_bf16((mm, k), cp, rng)
            w1 = random_bf16((n, k), cp, rng, 1 / 90.5)
            d1 = cp.empty((mm, n), dtype=cp.uint16)
            c1 = random_bf16((mm, n), cp, rng) if "residual" in ops else None
            a0 = relu_bf16_bits(a1, cp) if "relu_input" in ops else None
        times = {item: [] for item, _ in items}
        for i in range(reps + 1):
            for item, ep in (items if i % 2 == 0 else items[::-1]):
                c = c1 if ep == ("residual",) else None
                a, ep = (a0, ()) if ep == ("relu_input",) else (a1, ep)
                t = rested.run(lambda T, a=a, ep=ep, c=c: (g(a, w1, d1, mm, n, k, rested.compute[0], epilogue=ep, c=c),
                                                           [(rested.compute[0], 0)])[1])[0]
                if i:
                    times[item].append(t)
        rows += [{"m": mm, "item": item, "per_op_ms": summarize(v).median_ms} for item, v in times.items()]
        del a1, w1, d1, c1, a0
        cp.get_default_memory_pool().free_all_blocks()
    return rows


ACTIVATION_FACTORS = ("gelu", "silu", "relu")
"""The fused activations :func:`measure` times: the erf-GeLU (``activation_epilogue_ns_per_element``) and the two
whose cost the profile holds as a factor of it (``silu_epilogue_factor``, ``relu_epilogue_factor``)."""


def activation_factors(rows, slots: int = 132) -> dict[str, float]:
    """``silu_epilogue_factor`` and ``relu_epilogue_factor`` from :func:`activation_probe` rows with gelu, silu and
    relu: each op's :func:`activation_epilogue_cost` over the gelu's, at least 0 (a ReLU measures within noise of
    the plain kernel); ValueError when the gelu's cost is not positive."""
    gelu = activation_epilogue_cost(rows, slots=slots, fused="gemm1_gelu")[0]
    if not gelu > 0:
        raise ValueError(f"activation factors: the gelu's cost {gelu} is not positive")
    return {f"{op}_epilogue_factor": max(0.0, activation_epilogue_cost(rows, slots=slots, fused=f"gemm1_{op}")[0] / gelu)
            for op in ("silu", "relu")}


def relu_input_factor(rows) -> tuple[float, list[dict]]:
    """``relu_input_tile_factor`` from :func:`activation_probe` rows with ``relu_input``: per M, the plain GEMM's time
    on a ReLU'd A over its time on random A; the median over the M values, and the per-M rows. ValueError when no M
    has both items."""
    by = {(int(r["m"]), str(r["item"])): float(r["per_op_ms"]) for r in rows}
    per = [{"m": m, "plain_ms": by[(m, "gemm1_plain")], "relu_input_ms": by[(m, "gemm1_relu_input")],
            "factor": by[(m, "gemm1_relu_input")] / by[(m, "gemm1_plain")]}
           for m in sorted({m for m, _ in by}) if (m, "gemm1_plain") in by and (m, "gemm1_relu_input") in by]
    if not per:
        raise ValueError("activation rows: no M with both gemm1_plain and gemm1_relu_input")
    return statistics.median(r["factor"] for r in per), per


def norm_fold_epilogue_cost(rows, tile_elems: int = 128 * 256) -> tuple[float, float, list[dict]]:
    """ns per tile element that the LayerNorm fold's two epilogues add, from ``chain_probe.py --fold`` rows (m,
    variant, l0_epilogue_ns, l1_epilogue_ns: the median tile's epilogue of one traced run of each pair): per M, the
    producer's ``residual_stats`` over ``residual`` (layer 0 of variant ``fold`` against ``no_layernorm``) and the
    consumer's ``lnfold_gelu`` over ``gelu`` (layer 1), over the tile's elements; the medians over the M values.
    Returns (stats, fold, per-M rows)."""
    by = {}
    for r in rows:
        if str(r.get("l0_epilogue_ns", "")).strip():
            by[(int(r["m"]), str(r["variant"]))] = (float(r["l0_epilogue_ns"]), float(r["l1_epilogue_ns"]))
    out = []
    for m in sorted({m for m, _ in by}):
        if (m, "fold") not in by or (m, "no_layernorm") not in by:
            continue
        (f0, f1), (n0, n1) = by[(m, "fold")], by[(m, "no_layernorm")]
        out.append({"m": m, "stats_ns_per_tile": f0 - n0, "fold_ns_per_tile": f1 - n1,
                    "stats_ns_per_element": (f0 - n0) / tile_elems, "fold_ns_per_element": (f1 - n1) / tile_elems})
    if not out:
        raise ValueError("fold rows: no M with traced epilogues of both 'fold' and 'no_layernorm'")
    return (statistics.median(r["stats_ns_per_element"] for r in out),
            statistics.median(r["fold_ns_per_element"] for r in out), out)


def kernel_cluster(describe: str) -> tuple[int, int]:
    """(cluster_m, cluster_n) of a CUTLASS kernel from its describe() line (``... cluster=2x1x1 ...``); ValueError
    if the line names no cluster."""
    m = re.search(r"\bcluster=(\d+)x(\d+)x(\d+)\b", describe)
    if not m:
        raise ValueError(f"no cluster=MxNxK in the kernel's description {describe!r}")
    return int(m.group(1)), int(m.group(2))


DRIFT_FORM = "interleaved"
"""The drift form (``ctasim.l2.DRIFT_FORMS``) ``ctahw calibrate`` fits the L2 constants with and writes into the
128x256 config (docs/model.md: "carried" chosen 2026-12-02 on the long order traces, "interleaved" after registered
plan 20's take-apart; registered plan 8 judged ``"wave"``, plan 20 "carried" beside "wave")."""


def memory_hierarchy(res: Mapping) -> dict:
    """The memory hierarchy's profile fields from a :func:`measure` result: ``l2_bytes`` (as measured),
    ``cta_drift`` (the measured median drift, rounded to the profile's 4 decimals), ``cluster_m`` (the kernel's
    cluster), and ``l2_sm_tflops`` with ``l2_hbm_exposed`` fitted by :func:`ctasim.calibration.fit_l2_constants`
    on the tile-order probe's runs (``res["tile_order_runs"]``) at the profile's own rounded ``hbm_gbps``, 128x256
    ``tile_fixed_ns`` and that drift charged by ``res["drift_form"]`` (default :data:`DRIFT_FORM`, written into
    the config with them), so the written profile reproduces the fit; plus ``l2_fit_error`` (mean
    |error|) and ``l2_fit_runs``. Reuse across waves is priced by ``res["l2_reuse_law"]`` (default ``"lru"``; the
    base profile's, which the written profile copies: :func:`measure`'s ``reuse_law``), the ``"survival"`` law
    reading the curve measured here (``l2_survival_*``) or, where its probe failed, ``res["l2_survival_base"]``.
    ValueError (one line) where an input is missing or the fit lands on its grid's edge: the profile then keeps the
    base's fields."""
    import pandas as pd  # noqa: PLC0415

    from ctasim.calibration import RATE_GRID, EXPOSED_GRID, fit_l2_constants  # noqa: PLC0415

    missing = [k for k in ("tile_order_runs", "cta_drift", "l2_bytes", "hbm_gbps", "tile_fit_128x256", "cutlass_kernel")
               if res.get(k) is None]
    if missing:
        raise ValueError(f"memory hierarchy not measured: no {', '.join(missing)} in the calibration")
    if not float(res["l2_bytes"]) > 0:
        raise ValueError(f"memory hierarchy not measured: the device reports an L2 of {res['l2_bytes']} bytes")
    law = str(res.get("l2_reuse_law", "lru"))
    curve = fit_curve(res)
    cluster_m, _ = kernel_cluster(str(res["cutlass_kernel"]))
    drift = round(float(res["cta_drift"]), 4)
    form = str(res.get("drift_form", DRIFT_FORM))
    fit = fit_l2_constants(pd.DataFrame(list(res["tile_order_runs"])), l2_bytes=float(res["l2_bytes"]),
                           hbm_gbps=round(float(res["hbm_gbps"]), 4),
                           tile_fixed_ns=round(float(res["tile_fit_128x256"]["tile_fixed_ns"]), 1), drift=drift,
                           cluster_m=cluster_m, sm_count=int(res.get("sm_count", 132)), where="tile-order probe",
                           drift_form=form, reuse_law=law, survival=curve)
    if fit.edges:
        grids = {"rate": f"l2_sm_tflops {fit.rate:g} in {RATE_GRID[0]:g}-{RATE_GRID[-1]:g}",
                 "exposed": f"l2_hbm_exposed {fit.exposed:g} in {EXPOSED_GRID[0]:g}-{EXPOSED_GRID[-1]:g}"}
        raise ValueError(f"the L2 fit lands on its grid's edge ({'; '.join(grids[e] for e in fit.edges)}): "
                         "not a fit; the memory hierarchy's fields stay copied")
    out = {"l2_sm_tflops": fit.rate, "l2_hbm_exposed": fit.exposed, "l2_fit_error": fit.mean_abs_error,
           "l2_fit_runs": fit.runs, "cta_drift": drift, "drift_form": form, "cluster_m": cluster_m}
    if res.get("ticket_spread") is not None:  # measured by calibrations since 2026-12-02 (ticket traces)
        out["ticket_spread"] = round(float(res["ticket_spread"]), 4)
    return out


MEMORY_FIT_KEYS = ("l2_sm_tflops", "l2_hbm_exposed", "l2_fit_error", "l2_fit_runs", "memory_note")
"""What :func:`memory_hierarchy` wrote into a measurement (or why it did not): what :func:`refit` fits again."""


def refit(res: Mapping, base: Hardware) -> dict:
    """An earlier calibration's measurement ``res`` (``calibration.json``'s ``measured``) ready to be written against
    profile ``base`` (``ctahw calibrate --from-json``, no GPU): the L2 constants fitted again under the base's
    ``l2_reuse_law`` (and, under the survival law, the base's survival curve where the calibration measured none), as
    :func:`measure` would have fitted them with that base; every measured figure as it was. A calibration without the
    memory probes keeps none (the base's fields stay copied). ValueError (one line) where the fit cannot run."""
    out = {k: v for k, v in res.items() if k not in MEMORY_FIT_KEYS and k != "l2_survival_base"}
    out["l2_reuse_law"] = base.l2_reuse_law
    if base.l2_reuse_law == "survival":
        out["l2_survival_base"] = [list(base.l2_survival_taken), list(base.l2_survival_share)]
    fit_curve(out)
    if out.get("tile_order_runs"):
        try:
            out.update(memory_hierarchy(out))
        except ValueError as e:  # as measure(): the fields stay copied, and the profile says why
            out["memory_note"] = str(e)
    elif res.get("memory_note"):
        out["memory_note"] = res["memory_note"]
    out["refit_note"] = (f"measured by an earlier calibration and written from its json against {base.name} "
                         f"(ctahw calibrate --from-json): the L2 constants fitted again under its l2_reuse_law "
                         f"{base.l2_reuse_law!r}")
    return out


def fit_curve(res: Mapping) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The L2 survival curve (taken, share) the L2 constants are fitted with under ``res["l2_reuse_law"]``: the one
    measured here, else ``res["l2_survival_base"]`` (the base profile's); empty under the LRU. ValueError (one
    line) for an unknown law or the survival law with no curve."""
    from ctasim.l2 import REUSE_LAWS  # noqa: PLC0415

    law = str(res.get("l2_reuse_law", "lru"))
    if law not in REUSE_LAWS:
        raise ValueError(f"l2_reuse_law {law!r}: not one of {', '.join(REUSE_LAWS)}")
    if law != "survival":
        return (), ()
    if res.get("l2_survival_taken"):
        return tuple(res["l2_survival_taken"]), tuple(res["l2_survival_share"])
    taken, share = res.get("l2_survival_base") or ((), ())
    if not taken:
        raise ValueError("the survival reuse law needs an L2 survival curve: none measured and none from the base")
    return tuple(taken), tuple(share)


def timer_tick_ns(stamps: Sequence[int]) -> int:
    """The %globaltimer resolution: the smallest positive difference of back-to-back reads."""
    diffs = [b - a for a, b in zip(stamps, stamps[1:]) if b > a]
    if not diffs:
        raise ValueError("the timer never advanced")
    return min(diffs)


# --------------------------------------------------------------------------------------------------
# The profile file


def _split_comment(line: str) -> tuple[str, str]:
    """(code, comment) of a TOML line; a '#' inside a basic string is not a comment."""
    in_str = False
    for i, ch in enumerate(line):
        if ch == '"' and (i == 0 or line[i - 1] != "\\"):
            in_str = not in_str
        elif ch == "#" and not in_str:
            return line[:i], line[i + 1:].strip()
    return line, ""


def base_comments(text: str) -> dict[str, str]:
    """Trailing comments of the [hardware] table's fields in a profile's text (kernel configs excluded)."""
    out, section = {}, ""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("["):
            section = s
            continue
        if section != "[hardware]":
            continue
        code, comment = _split_comment(line)
        m = re.match(r"\s*(\w+)\s*=", code)
        if m and comment:
            out[m.group(1)] = comment
    return out


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(round(v, 4))
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, tuple) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        return "[" + ", ".join(_toml_value(float(x)) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} to TOML")


MEASURED_FIELDS = ("gpu", "gpus", "sm_count", "hbm_gbps", "link_gbps", "copy_engine_gbps", "link_latency_ns",
                   "remote_atomic_ns", "fence_sys_ns", "launch_ns", "kernel_gap_ns", "event_wait_ns",
                   "allreduce_bus_gbps", "allreduce_latency_ns", "epilogue_store_overlap", "sm_remote_store_gbps",
                   "clock_onset_ns", "clock_sustained_slowdown", "clock_curve_ns", "clock_curve_factor",
                   "activation_epilogue_ns_per_element",
                   "silu_epilogue_factor", "relu_epilogue_factor", "relu_input_tile_factor",
                   "epilogue_pass_gbps", "rowwise_gbps",
                   "norm_stats_epilogue_ns_per_element", "norm_fold_epilogue_ns_per_element", "local_signal_ns",
                   "l2_bytes", "l2_survival_taken", "l2_survival_share", "l2_hbm_exposed", "l2_hbm_exposed_gbps")
FITTED_FIELDS = ("l2_hbm_exposed",)
"""Fields of :data:`MEASURED_FIELDS` that are fitted to measurements rather than measured: marked ``fitted:``."""
SET_FIELDS = ("l2_hbm_exposed_gbps",)
"""Fields of :data:`MEASURED_FIELDS` that are set by what was measured, neither measured nor fitted: marked ``set:``."""
CONFIG_FIELDS = ("sm_tflops", "tile_fixed_ns", "l2_sm_tflops", "cta_drift", "drift_form", "cluster_m", "tile_cv",
                 "ticket_spread", "ticket_law", "ticket_mainloop_factor", "ticket_gap_cv", "ticket_touched")
"""The 128x256 kernel config's fields that ``ctahw calibrate`` writes (the last ten with the memory hierarchy;
``ticket_law`` is chosen, "survival", where the L2 survival curve was measured, with that law's refinements,
``ticket_gap_cv`` and ``ticket_touched``, copied from :data:`REFINEMENTS_FROM`; the gap traces' reading is named in
``ticket_gap_cv``'s note, not written: registered plan 62)."""
REFINEMENTS_FROM = "h200-x1-calibrated"
"""The profile whose survival-law refinements a calibrated profile takes where it does not measure them
(both, ``ticket_gap_cv`` too where the gap traces ran: registered plan 62 found their reading no nearer the
machine's own spread than the pooled value)."""


def survival_refinements() -> dict:
    """``ticket_gap_cv`` and ``ticket_touched`` of :data:`REFINEMENTS_FROM`'s 128x256 config (0.74 and 1.3 since
    registered plan 58's adoption): read from that profile, the one place they are set."""
    from ctasim.spec import load_hardware  # noqa: PLC0415

    cfg = load_hardware(REFINEMENTS_FROM).config(128, 256)
    return {"ticket_gap_cv": cfg.ticket_gap_cv, "ticket_touched": cfg.ticket_touched}


def profile_toml(base: Hardware, base_text: str, base_name: str, name: str, measured: Mapping[str, tuple],
                 configs: Mapping[str, tuple], provenance: Mapping[str, str], header: Sequence[str] = ()) -> str:
    """A profile in ctasim's format: measured fields with their method, the rest copied from ``base``.

    measured: field -> (value, how), written ``# measured: how`` (``# fitted: how`` for :data:`FITTED_FIELDS`);
    configs: "MxN" -> (dict of KernelConfig fields, how) or (fields, how, {field: its source comment}).
    """
    comments = base_comments(base_text)
    lines = [f"# Calibrated by `ctahw calibrate` on {provenance.get('date', '?')}: {provenance.get('machine', '?')}.",
             f"# Provenance: {json.dumps(dict(provenance), sort_keys=True)}"]
    lines += [f"# {h}" for h in header]
    lines += [f"# Fields marked 'copied' are not measured by ctahw calibrate; they are taken from {base_name}.", "",
              "[hardware]"]
    for f in fields(Hardware):
        if f.name == "kernel_configs":
            continue
        if f.name == "name":
            lines.append(f"name = {_toml_value(name)}")
        elif f.name == "measured":
            lines.append("measured = true")
        elif f.name == "source":
            lines.append(f"source = {_toml_value('ctahw calibrate, ' + provenance.get('machine', '') + '; ' + provenance.get('commit', ''))}")
        elif f.name == "date":
            lines.append(f"date = {_toml_value(provenance.get('date', ''))}")
        elif f.name == "calibrated_from":
            lines.append(f"calibrated_from = {_toml_value(base_name)}  # the base profile (ctahw calibrate --base)")
        elif f.name in measured:
            v, how = measured[f.name]
            if f.type in ("float",) or isinstance(getattr(base, f.name), float):
                v = float(v)
            kind = "fitted" if f.name in FITTED_FIELDS else "set" if f.name in SET_FIELDS else "measured"
            lines.append(f"{f.name} = {_toml_value(v)}  # {kind}: {how}")
        else:
            why = comments.get(f.name, "")
            lines.append(f"{f.name} = {_toml_value(getattr(base, f.name))}  # copied from {base_name}"
                         + (f" ({why})" if why else ""))
    for c in base.kernel_configs:
        lines += ["", "[[hardware.kernel_config]]"]
        got = configs.get(c.key())
        values = {x.name: getattr(c, x.name) for x in fields(KernelConfig)}
        notes: Mapping[str, str] = {}
        if got:
            vals, how, *rest = got
            notes = rest[0] if rest else {}
            values.update(vals)
            lines.append(f"# measured: {how}")
        else:
            lines.append(f"# copied from {base_name}: ctahw has no kernel of this config to measure")
        for x in fields(KernelConfig):
            note = f"  # {notes[x.name]}" if x.name in notes else ""
            lines.append(f"{x.name} = {_toml_value(values[x.name])}{note}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# Measurements on the device


def measure(log: Callable[[str], None] = lambda s: print(s, file=sys.stderr), quick: bool = False,
            reps: int = 10, memory: bool = True, probe_out: Path | None = None, percta: bool = True,
            fold: bool = True, reuse_law: str = "lru",
            survival: tuple[Sequence[float], Sequence[float]] = ((), ())) -> dict:
    """Run every calibration measurement on GPUs 0 and 1 (0 only for the single-GPU parts); returns a dict.

    ``memory``: also the memory hierarchy's probes (:func:`measure_memory`); ``percta``: also the one-CTA-per-tile
    producer's per-tile steps (:func:`percta_probe`); ``fold``: also the LayerNorm fold's epilogue costs
    (:func:`fold_probe`); ``probe_out``: a folder for the probes' raw files. ``reps``
    is the repetition count of the other measurements; the probes keep their own. ``reuse_law`` and ``survival``:
    the base profile's ``l2_reuse_law`` and L2 survival curve, which the L2 constants are fitted under
    (:func:`memory_hierarchy`; the curve measured here where its probe ran)."""
    from ctahw import probes  # noqa: PLC0415
    from ctahw.baselines import Timed, tune_schedule  # noqa: PLC0415
    from ctahw.device import enable_peer_access, random_bf16, require_cupy, require_gpus, summarize  # noqa: PLC0415
    from ctahw.gemm import CutlassGemm, schedule_name  # noqa: PLC0415

    cp = require_cupy()
    rt = cp.cuda.runtime
    found = require_gpus(1)
    ngpu = min(2, rt.getDeviceCount())
    devs = list(range(ngpu))
    if ngpu > 1:
        require_gpus(2)
        enable_peer_access(devs)
    T = Timed(devs, gate_ms=2.0)
    s = {d: T.compute[d] for d in devs}
    res: dict = {"gpu_name": found[0].name, "sm_count": found[0].sm_count, "gpus": ngpu,
                 "l2_bytes": found[0].l2_bytes, "l2_reuse_law": reuse_law}
    if reuse_law == "survival":
        res["l2_survival_base"] = [list(survival[0]), list(survival[1])]
    fit_curve(res)  # a law the fit cannot run under is one line before anything is measured
    big = (256 if quick else 1024) << 20

    def med(fn, n=reps) -> float:
        return summarize([T.run(fn)[0] for _ in range(n)]).median_ms

    # HBM: local D2D copy
    log("calibrate: local copy")
    with cp.cuda.Device(0):
        src = cp.full(big, 0x5A, dtype=cp.uint8)  # copies move bytes; any non-zero pattern
        dst = cp.empty(big, dtype=cp.uint8)
    t = med(lambda T: (rt.memcpyAsync(dst.data.ptr, src.data.ptr, big, 3, s[0].ptr), [(s[0], 0)])[1])
    res["hbm_gbps"] = 2 * big / (t * 1e6)
    res["hbm_copy_ms"] = t

    if ngpu > 1:
        with cp.cuda.Device(1):
            peer = cp.empty(big, dtype=cp.uint8)
        log("calibrate: peer copy and peer stores")
        t = med(lambda T: (rt.memcpyPeerAsync(peer.data.ptr, 1, src.data.ptr, 0, big, s[0].ptr), [(s[0], 0)])[1])
        res["copy_engine_gbps"] = big / (t * 1e6)
        t = med(lambda T: (rt.memcpyPeerAsync(src.data.ptr, 0, peer.data.ptr, 1, big, s[1].ptr), [(s[1], 1)])[1])
        res["copy_engine_gbps_1to0"] = big / (t * 1e6)
        blocks = found[0].sm_count * 4
        t = med(lambda T: (probes.call("store", peer.data.ptr, big, blocks, 512, 7, stream=s[0], device=0),
                           [(s[0], 0)])[1])
        res["link_gbps"] = big / (t * 1e6)
        t = med(lambda T: (probes.call("store", dst.data.ptr, big, blocks, 512, 7, stream=s[0], device=0),
                           [(s[0], 0)])[1])
        res["local_store_gbps"] = big / (t * 1e6)
        del peer

        # Flag ping-pong (store, then atomic), both kernels resident at once on their own GPUs
        iters = 500 if quick else 2000
        for mode, atomic in (("store", 0), ("atomic", 1)):
            log(f"calibrate: ping-pong ({mode})")
            flags, stamps, errs = {}, {}, {}
            for d in devs:
                with cp.cuda.Device(d):
                    flags[d] = cp.zeros(1, dtype=cp.uint32)
                    stamps[d] = cp.zeros(2 * iters, dtype=cp.uint64)
                    errs[d] = cp.zeros(1, dtype=cp.int32)
            T.sync()
            probes.call("pingpong", flags[1].data.ptr, flags[0].data.ptr, iters, 1, atomic, stamps[1].data.ptr,
                        int(5e9), errs[1].data.ptr, stream=s[1], device=1)
            probes.call("pingpong", flags[0].data.ptr, flags[1].data.ptr, iters, 0, atomic, stamps[0].data.ptr,
                        int(5e9), errs[0].data.ptr, stream=s[0], device=0)
            T.sync()
            e = (int(errs[0].get()[0]), int(errs[1].get()[0]))
            if any(e):
                raise RuntimeError(f"ping-pong ({mode}) timed out: error flags {e}")
            st = pingpong_stats([int(v) for v in stamps[0].get()], [int(v) for v in stamps[1].get()[:iters]])
            res[f"pingpong_{mode}"] = st
        res["link_latency_ns"] = res["pingpong_store"]["rtt_median_ns"] / 2
        res["remote_atomic_ns"] = res["pingpong_atomic"]["rtt_median_ns"] / 2
        res["clock_offset_ns"] = res["pingpong_store"]["offset_ns"]

        # Fence cost after a peer store
        log("calibrate: fence and atomics")
        with cp.cuda.Device(0):
            out = cp.zeros(1, dtype=cp.uint64)
            sink = cp.zeros(1, dtype=cp.uint32)
        with cp.cuda.Device(1):
            target = cp.zeros(1, dtype=cp.uint32)
        per = {}
        for f in (0, 1):
            vals = []
            for _ in range(5):
                probes.call("fence", target.data.ptr, 2000, f, out.data.ptr, stream=s[0], device=0)
                s[0].synchronize()
                vals.append(int(out.get()[0]) / 2000)
            per[f] = statistics.median(vals)
        res["store_only_ns"], res["store_fence_ns"] = per[0], per[1]
        res["fence_sys_ns"] = max(0.0, per[1] - per[0])
        for where, tgt in (("peer", target), ("local", sink)):
            vals = []
            for _ in range(5):
                probes.call("atomic_latency", tgt.data.ptr, 1000, out.data.ptr, sink.data.ptr, stream=s[0], device=0)
                s[0].synchronize()
                vals.append(int(out.get()[0]) / 1000)
            res[f"atomic_return_{where}_ns"] = statistics.median(vals)

    # %globaltimer tick
    with cp.cuda.Device(0):
        ts = cp.zeros(4096, dtype=cp.uint64)
        slots = cp.zeros(65, dtype=cp.uint64)
    probes.call("timer", ts.data.ptr, 4096, stream=s[0], device=0)
    s[0].synchronize()
    res["globaltimer_tick_ns"] = timer_tick_ns([int(v) for v in ts.get()])

    # Launch latency: host clock vs the kernel's %globaltimer stamp
    log("calibrate: launch latency and kernel gaps")
    diffs, trips = [], []
    for _ in range(50):
        s[0].synchronize()
        h0 = time.time_ns()
        probes.call("stamp", slots.data.ptr, stream=s[0], device=0)
        s[0].synchronize()
        trips.append(time.time_ns() - h0)
        diffs.append(int(slots.get()[0]) - h0)
    res["launch_roundtrip_ns"] = statistics.median(trips)
    res["launch_host_to_stamp_ns"] = statistics.median(diffs)
    res["globaltimer_on_host_clock"] = bool(0 < res["launch_host_to_stamp_ns"] < res["launch_roundtrip_ns"])

    # Back-to-back kernels queued behind a sleep
    probes.call("sleep", int(2e6), stream=s[0], device=0)
    for i in range(64):
        probes.call("stamp", slots.data.ptr + 8 * i, stream=s[0], device=0)
    s[0].synchronize()
    st = [int(v) for v in slots.get()[:64]]
    res["kernel_gap_ns"] = statistics.median([b - a for a, b in zip(st, st[1:])])

    if ngpu > 1:
        log("calibrate: cross-GPU event wait")
        with cp.cuda.Device(1):
            slot1 = cp.zeros(1, dtype=cp.uint64)
        lat = []
        for _ in range(20):
            T.sync()
            probes.call("sleep", int(1e6), stream=s[0], device=0)
            probes.call("stamp", slots.data.ptr, stream=s[0], device=0)
            ev = T.event(0)
            ev.record(s[0])
            s[1].wait_event(ev)
            probes.call("stamp", slot1.data.ptr, stream=s[1], device=1)
            T.sync()
            lat.append(int(slot1.get()[0]) - int(slots.get()[0]) - res["clock_offset_ns"])
        res["event_wait_ns"] = statistics.median(lat)

        # All-reduce vs size
        log("calibrate: NCCL all-reduce sweep")
        from ctahw.comm import AllReduce  # noqa: PLC0415

        with AllReduce(devs, log=log) as ar:  # its communicators are destroyed at the end of the sweep
            res["nccl_binding"] = ar.binding
            sizes = [1 << p for p in range(20, 29)]
            bufs = {}
            for d in devs:
                with cp.cuda.Device(d):
                    bufs[d] = random_bf16((sizes[-1] // 2,), cp, cp.random.default_rng(3 + d), 1.0)
            ar_ms = []
            for size in sizes:
                cnt = size // 2
                views = [bufs[d][:cnt] for d in devs]
                ar_ms.append(med(lambda T: (ar(views, cnt, [s[d] for d in devs]), [(s[d], d) for d in devs])[1]))
            T.sync()  # every all-reduce finished before the communicators go
        res["allreduce_sweep"] = [{"bytes": b, "ms": t} for b, t in zip(sizes, ar_ms)]
        res.update({k: v for k, v in fit_allreduce(sizes, ar_ms, ngpu).items()})
        del bufs
    del src, dst

    # Tile rate of the CUTLASS config (and the remote-D epilogue cost)
    log("calibrate: CUTLASS tile rate")
    g = CutlassGemm(0)
    res["cutlass_kernel"] = g.describe()
    m, n = 16384, 8192
    ks = (2048, 4096, 8192)
    rng = cp.random.default_rng(5)
    with cp.cuda.Device(0):
        a = [random_bf16((m, max(ks)), cp, rng) for _ in range(2)]
        w = [random_bf16((n, max(ks)), cp, rng, 1 / 64) for _ in range(2)]
        d = [cp.empty((m, n), dtype=cp.uint16) for _ in range(2)]
    # The tile order of the persistent scheduler, tuned at the largest K (as the baselines do per shape)
    best, med = tune_schedule(g, T, a[0], w[0], d[0], m, n, max(ks), s[0], max(2, reps // 2))
    res["cutlass_schedule"] = schedule_name(best)
    res["cutlass_schedule_medians"] = {schedule_name(c): v for c, v in med.items()}
    samples = []
    for k in ks:
        g.schedule[(m, n, k)] = best
        # A[:, :k] is not contiguous; use the first m*k elements as a fresh [m, k] matrix (random either way)
        ak = [x.reshape(-1)[: m * k].reshape(m, k) for x in a]
        wk = [x.reshape(-1)[: n * k].reshape(n, k) for x in w]
        times = [T.run(lambda T, i=i: (g(ak[i % 2], wk[i % 2], d[i % 2], m, n, k, s[0]), [(s[0], 0)])[1])[0]
                 for i in range(reps + 2)][2:]
        samples.append((m, n, k, summarize(times).median_ms))
    res["tile_samples"] = [{"m": a_, "n": b_, "k": c_, "ms": t_} for a_, b_, c_, t_ in samples]
    res["tile_fit_128x256"] = fit_tile_rate(samples, 128, 256, found[0].sm_count, 1)
    if ngpu > 1:
        with cp.cuda.Device(1):
            dr = [cp.empty((m, n), dtype=cp.uint16) for _ in range(2)]
        k = max(ks)
        loc, rem = [], []
        for i in range(reps + 2):
            tl = T.run(lambda T: (g(a[i % 2], w[i % 2], d[i % 2], m, n, k, s[0]), [(s[0], 0)])[1])[0]
            tr = T.run(lambda T: (g(a[i % 2], w[i % 2], dr[i % 2], m, n, k, s[0]), [(s[0], 0)])[1])[0]
            if i >= 2:
                loc.append(tl)
                rem.append(tr)
        res["remote_d_local_ms"] = summarize(loc).median_ms
        res["remote_d_remote_ms"] = summarize(rem).median_ms
        res["epilogue_overlap_simple"] = epilogue_overlap(res["remote_d_local_ms"], res["remote_d_remote_ms"],
                                                         m * n * 2, res["link_gbps"])
    del a, w, d
    cp.get_default_memory_pool().free_all_blocks()

    # The clock regime: a rested GPU's power-cap onset and the sustained slowdown (bench/hw/clock_trajectory.py)
    log("calibrate: clock trajectory (the power cap's onset)")
    kernels = {k: v for k, v in TRAJECTORY_KERNELS.items() if k in CLOCK_KERNELS}
    res["clock_trajectory"] = clock_trajectory(g, s[0], kernels, rest_s=0.5 if quick else 2.0,
                                               run_ms=150.0 if quick else 400.0, rounds=1 if quick else 3, log=log)
    try:
        fields_, rounds_ = clock_regime(res["clock_trajectory"])
        res.update(fields_)
        res["clock_rounds"] = rounds_
    except ValueError as e:  # the run never reached the cap: the fields stay copied, and the profile says why
        res["clock_regime_note"] = str(e)
        log(f"calibrate: clock regime not measured: {e}")
    try:
        fields_, _ = clock_curve(res["clock_trajectory"])
        res.update(fields_)
    except ValueError as e:  # a quick run ends before the curve's horizon
        res["clock_curve_note"] = str(e)
        log(f"calibrate: clock curve not measured: {e}")
    res = clock_fields_together(res)

    # The fused activations' cost (GEMM1 of the MLP block, plain and with each activation, rested)
    log("calibrate: fused activation cost")
    act_rows = activation_probe(g, (4096,) if quick else (4096, 16384), ops=ACTIVATION_FACTORS + ("relu_input",),
                                reps=reps)
    res["activation_rows"] = act_rows
    res["activation_epilogue_ns_per_element"], res["activation_per_m"] = activation_epilogue_cost(
        act_rows, slots=found[0].sm_count)
    res.update(activation_factors(act_rows, slots=found[0].sm_count))
    res["relu_input_tile_factor"], res["relu_input_per_m"] = relu_input_factor(act_rows)
    # The memory passes' rates (ctahw's elementwise epilogue and row-wise kernels)
    res["pass_rows"] = pass_probe(log, reps=max(3, reps // 2) if quick else reps)
    fields_, res["pass_rows"] = pass_rates(res["pass_rows"])
    res.update(fields_)
    if memory:
        res.update(measure_memory(log, quick, probe_out))
        try:
            res.update(memory_hierarchy(res))
        except ValueError as e:  # the fit failed: the fields stay copied, and the profile says why
            res["memory_note"] = str(e)
            log(f"calibrate: memory hierarchy not written: {e}")
        res.update(ticket_rate(log, quick, probe_out))
    if percta:
        res.update(percta_probe(log, quick, probe_out))
    if fold:
        res.update(fold_probe(log, probe_out))
    return res


FOLD_MS = (4096, 16384)
"""Rows M of the fold probe (:func:`fold_probe`): the MLP block's block boundary, H = 8192, FFN = 28672."""


def fold_probe(log: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
               probe_out: Path | None = None) -> dict:
    """The LayerNorm fold's epilogue costs on GPU 0: at each M of :data:`FOLD_MS`, one traced run of the block
    boundary's ring pair (M x 28672 -> 8192 + residual, then 8192 -> 28672), both kernels on GPU 0, with the fold's
    ops and with the ops they replace (``ctahw.chain.fold_pair_steps``); :func:`norm_fold_epilogue_cost` of the
    epilogues' medians. Returns ``fold_rows`` (one row per M and pair, ``fold.csv``'s columns) and the two Hardware
    fields; with ``probe_out``, ``fold-steps.csv`` there. Not checked against a reference here (the GPU tests and
    ``bench/hw/chain_probe.py --fold`` are); a protocol error raises."""
    import cupy as cp  # noqa: PLC0415

    from ctahw.baselines import Chain, Timed  # noqa: PLC0415
    from ctahw.chain import FOLD_PAIRS, fold_pair_inputs, fold_pair_steps, steps_row  # noqa: PLC0415

    h, ffn = 8192, 28672
    timed = Timed([0], 2.0, 0.0, 250.0)
    data = Chain(cp, 20261202)
    rows = []
    for m in FOLD_MS:
        log(f"calibrate: LayerNorm fold, traced ring pairs on GPU 0, M = {m}")
        x, res, ws, gamma, beta = fold_pair_inputs(cp, data, m, h, ffn, salt=61, affine=False)
        steps = fold_pair_steps(timed, x, res, ws, gamma, beta)
        rows += [steps_row(m, h, ffn, pair, steps) for pair in FOLD_PAIRS]
        del x, res, ws
        cp.get_default_memory_pool().free_all_blocks()
    if probe_out is not None:
        import pandas as pd  # noqa: PLC0415

        probe_out.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(probe_out / "fold-steps.csv", index=False)
    stats, fold, per_m = norm_fold_epilogue_cost(rows)
    out = {"fold_rows": rows, "fold_per_m": per_m}
    if stats < 0 or fold < 0:  # a trace's noise above the fold's cost: the fields stay copied, and the json says why
        out["fold_note"] = f"fold probe: negative cost (stats {stats:.4f}, fold {fold:.4f} ns per element); not written"
        log(f"calibrate: {out['fold_note']}")
        return out
    return {**out, "norm_stats_epilogue_ns_per_element": stats, "norm_fold_epilogue_ns_per_element": fold}


def percta_probe(log: Callable[[str], None] = lambda s: print(s, file=sys.stderr), quick: bool = False,
                 probe_out: Path | None = None) -> dict:
    """The one-CTA-per-tile producer's per-tile steps on GPU 0 (``ctahw.percta.measure_percta``: M = 4096 and 16384,
    the producers of :data:`ctahw.percta.PERCTA_VARIANTS`, each checked against fp32, :data:`ctahw.percta.REPS` traced
    and untraced rested runs; ``quick``: one each). Returns ``percta`` (one row per case: the medians) and
    ``percta_runs`` (one row per traced run); with ``probe_out``, ``percta.csv``, ``percta-runs.csv`` and the kept
    traces' ``percta-tiles-<M>-<variant>.csv.gz`` are written there."""
    from ctahw import percta as pc  # noqa: PLC0415

    log("calibrate: one-CTA-per-tile producer, per-tile traces (local D)")
    r = pc.measure_percta(reps=1 if quick else pc.REPS, log=log)
    if probe_out is not None:
        pc.write_percta(probe_out, r)
    return {"percta": r["cases"], "percta_runs": r["runs"]}


TILE_ORDER_REPS = 3
"""Timed runs per (shape, order) of the tile-order probe in ``ctahw calibrate`` (``--quick``: 1), as the committed probe
(``bench/results/hw/2026-12-01-gemm-shapes``); each behind an 80 ms rest."""
TRACE_REPS = 5
"""Timed runs per (shape, order) of the traced kernel and the plain GEMM beside it (``--quick``: 1), as the committed
order traces (``bench/results/hw/2026-12-02-order-traces``); each behind a 250 ms rest. The traces themselves are one
run each."""


def measure_memory(log: Callable[[str], None] = lambda s: print(s, file=sys.stderr), quick: bool = False,
                   probe_out: Path | None = None) -> dict:
    """The memory hierarchy's measurements on GPU 0: the tile-order probe at the calibration split (CUTLASS at its 12
    orders, no cuBLAS; :func:`ctahw.tile_orders.time_orders`) and the order traces
    (:func:`ctahw.tile_orders.trace_orders`) with each trace's drift and their median (``cta_drift``), and the ticket
    traces of the chain kernel (:func:`ctahw.tile_orders.trace_tickets`; ``quick``: two) with each one's spread per
    window of its grid and their median (``ticket_spread``, ``ticket_runs``), and from the same traces each tile's
    store-complete and release step (``local_signal_ns``: ``ctasim.calibration.local_signal``), the same kernel's
    traces in pairs of row-blocks (``tile_orders.GAP_SHAPES``; ``quick``: one) with each one's coefficient of variation
    of the sharers' gaps and their median (``ticket_gap_cv``, ``gap_runs``: ``ctasim.calibration.gap_cv``, at the
    ``ticket_spread`` just measured), the L2-to-SM rate of the GEMM's own loads by tiles a row (:func:`l2_tile_rates`:
    ``l2_tile_rates``, measured and not written into a field), and the L2 survival
    probe (``ctahw.l2probe``; :func:`l2_survival_fields`; where it cannot tell hits from misses,
    ``l2_survival_note`` says why and the curve stays the base's). With ``probe_out``: ``tile_orders.csv``
    (the probe's rows, the columns of the committed ``gemm_shapes.csv``), ``timing.csv`` and ``tiles-*.csv.gz``
    (what ``bench/order_drift.py DIR`` reads), ``tickets.csv``, ``ticket-gaps.csv``, ``tiles-*-tickets*.csv.gz`` and
    ``l2-tile.csv`` written there."""
    import pandas as pd  # noqa: PLC0415

    from ctahw import tile_orders  # noqa: PLC0415
    from ctasim.calibration import (calibration_shapes, cta_drift, gap_cv, local_signal, ticket_spread,  # noqa: PLC0415
                                    trace_drift)

    res: dict = {"tile_order_reps": 1 if quick else TILE_ORDER_REPS}
    log("calibrate: tile-order probe (N = K = 8192, 12 orders)")
    res["tile_order_runs"] = tile_orders.time_orders(calibration_shapes(), reps=res["tile_order_reps"], rest_ms=80.0,
                                                     cublas=False, log=log)
    log("calibrate: per-tile order traces")
    timing, traces = tile_orders.trace_orders(reps=1 if quick else TRACE_REPS, log=log)
    res["order_trace_timing"] = timing
    res["order_drift"] = [{"case": name, **trace_drift(t, name)} for name, t in traces.items()]
    res["cta_drift"] = cta_drift(traces.values())
    log("calibrate: per-tile ticket traces (the chain kernel's tickets design)")
    rows, tickets = tile_orders.trace_tickets(shapes=tile_orders.TICKET_SHAPES[-2:] if quick else
                                              tile_orders.TICKET_SHAPES, log=log)
    res["ticket_spread"], rates = ticket_spread(tickets.values(), [int(r["grid"]) for r in rows])
    res["local_signal_ns"], signals = local_signal(tickets.values())
    res["ticket_runs"] = [dict(r, spread_per_window=rate, local_signal_ns=sig)
                          for r, rate, sig in zip(rows, rates, signals)]
    log("calibrate: per-tile ticket traces in pairs of row-blocks (the sharers' gap spread)")
    gap_rows, gap_traces = tile_orders.trace_tickets(shapes=tile_orders.GAP_SHAPES[-1:] if quick else
                                                     tile_orders.GAP_SHAPES, chain_group=tile_orders.GAP_GROUP, log=log)
    res["ticket_gap_cv"], cvs = gap_cv(gap_traces.values(), res["ticket_spread"], [int(r["grid"]) for r in gap_rows])
    res["gap_runs"] = [dict(r, gap_cv=cv) for r, cv in zip(gap_rows, cvs)]
    tickets.update(gap_traces)
    if probe_out is not None:
        tile_orders.write_traces(probe_out, timing, traces)
        pd.DataFrame(res["tile_order_runs"]).to_csv(probe_out / "tile_orders.csv", index=False)
        for name, tiles in tickets.items():
            tiles.to_csv(probe_out / f"tiles-{name}.csv.gz", index=False, float_format="%.0f")
        pd.DataFrame(res["ticket_runs"]).to_csv(probe_out / "tickets.csv", index=False)
        pd.DataFrame(res["gap_runs"]).to_csv(probe_out / "ticket-gaps.csv", index=False)
    log("calibrate: L2-to-SM rate probe (the row-order first wave by the GEMM's tensor copies)")
    res.update(l2_tile_rates(log, quick, probe_out))
    log("calibrate: L2 survival probe")
    from ctahw import l2probe  # noqa: PLC0415

    try:
        l2_rows, raw = l2probe.measure(reps=3 if quick else 5, log=log)
        res.update(l2_survival_fields(l2_rows))
    except ValueError as e:  # hits and misses not told apart: the curve stays the base's, and the profile says why
        res["l2_survival_note"] = str(e)
        log(f"calibrate: L2 survival curve not measured: {e}")
        return res
    res["l2_survival_rows"] = plain_rows(l2_rows)
    if probe_out is not None:
        pd.DataFrame(l2_rows).to_csv(probe_out / "l2-survival.csv", index=False)
        l2probe.latency_table(raw).to_csv(probe_out / "l2-survival-latency.csv.gz", index=False)
    return res


def l2_tile_rates(log: Callable[[str], None] = lambda s: None, quick: bool = False,
                  probe_out: Path | None = None) -> dict:
    """The L2-to-SM rate of the GEMM's own loads by tiles a row (``ctahw.l2rate.measure_tiles``, its default cases;
    ``quick``: 3 launches each, else 7): ``l2_tile_rates`` ({n: GB/s}) and with ``probe_out`` ``l2-tile.csv`` (one
    row per launch) there; where the probe fails, ``l2_tile_note`` says why. Measured, not written into a field: one
    rate cannot hold the step registered plans 92 and 93 found (no 1x1 excess up to 15 tiles a row)."""
    import pandas as pd  # noqa: PLC0415

    from ctahw import l2rate  # noqa: PLC0415
    from ctahw.probes import ProbeError  # noqa: PLC0415

    try:
        rows = l2rate.measure_tiles(reps=3 if quick else 7, log=log)
        table = {r["case"]: r["l2_gbps"] for r in l2rate.summary(rows)}
    except (ProbeError, ValueError) as e:
        log(f"calibrate: L2-to-SM rate not measured: {e}")
        return {"l2_tile_note": str(e)}
    if probe_out is not None:
        pd.DataFrame(rows).to_csv(probe_out / "l2-tile.csv", index=False)
    return {"l2_tile_rates": {c.w_mod: round(float(table[c.name]), 1) for c in l2rate.TILE_CASES}}


def plain_rows(rows: Sequence[Mapping]) -> list[dict]:
    """``rows`` as plain dicts for calibration.json, numpy floats as Python floats."""
    return [{k: (float(v) if isinstance(v, float) else v) for k, v in r.items()} for r in rows]


def ticket_rate(log: Callable[[str], None] = lambda s: print(s, file=sys.stderr), quick: bool = False,
                probe_out: Path | None = None) -> dict:
    """The one-layer microbenchmark of the tickets design (``ctasim.ticket_rate.RATE_EXPERIMENTS``) on GPU 0, run as
    ``ctahw run`` runs it (``ctahw.experiment.run``; ``quick``: 5 repetitions): ``ticket_rate_runs``, its rows. A case
    that failed its check leaves ``ticket_rate_note`` instead (the factor stays the base's, and the profile says why).
    With ``probe_out``: ``ticket-rate.csv``."""
    import pandas as pd  # noqa: PLC0415

    from ctahw import experiment  # noqa: PLC0415
    from ctasim.cases import load_experiment  # noqa: PLC0415
    from ctasim.results import COLUMNS  # noqa: PLC0415
    from ctasim.ticket_rate import RATE_EXPERIMENTS  # noqa: PLC0415

    log("calibrate: the tickets design's one-layer microbenchmark (" + ", ".join(RATE_EXPERIMENTS) + ")")
    cfg = experiment.RunConfig(reps=5 if quick else 15)
    df = pd.concat([experiment.run(load_experiment(name), cfg, log) for name in RATE_EXPERIMENTS], ignore_index=True)
    if probe_out is not None:
        df.to_csv(probe_out / "ticket-rate.csv", index=False)
    bad = df[df["status"] != "ok"]
    if len(bad):
        r = bad.iloc[0]
        note = f"{r['experiment']} {r['case']} {r['strategy']}: {r['status']} ({r['reason']})"
        log(f"calibrate: tickets mainloop factor not measured: {note}")
        return {"ticket_rate_note": note}
    return {"ticket_rate_runs": plain_rows(df[list(COLUMNS)].to_dict("records"))}


def ticket_rate_fields(text: str, res: Mapping, where: str) -> dict:
    """``ticket_mainloop_factor`` and its cases from ``res["ticket_rate_runs"]``, priced by the profile ``text`` (the
    fields measured so far, its ticket law as written) at factor 1 (``ctasim.ticket_rate``); ImportError where ctasim's
    engine cannot run, ValueError where a case is missing."""
    import pandas as pd  # noqa: PLC0415

    from ctasim import ticket_rate as tr  # noqa: PLC0415

    hw = hardware_from_dict(tomllib.loads(text)["hardware"], where)
    cases = tr.rate_cases(hw, pd.DataFrame(res["ticket_rate_runs"]))
    law = hw.config(128, 256).ticket_law
    return {"ticket_mainloop_factor": tr.mainloop_factor(cases), "ticket_rate_law": law,
            "ticket_rate_cases": plain_rows(cases.to_dict("records"))}


def l2_survival_fields(rows: Sequence[Mapping]) -> dict:
    """``l2_survival_taken`` / ``l2_survival_share`` (the share rounded to 3 places, as profiles hold it) from the L2
    survival probe's rows (:func:`ctahw.l2probe.measure`; touches 1), with the probe's cut in cycles."""
    from ctahw.l2probe import survival_curve  # noqa: PLC0415

    curve = survival_curve(rows, touches=1)
    return {"l2_survival_taken": tuple(b for b, _ in curve), "l2_survival_share": tuple(round(v, 3) for _, v in curve),
            "l2_survival_cut_cycles": float(rows[0]["threshold_cycles"]),
            "l2_survival_reps": len({r["rep"] for r in rows})}


def measured_fields(res: Mapping) -> dict[str, tuple]:
    """Map a :func:`measure` result to profile fields with the method of each (see the module table)."""
    out: dict[str, tuple] = {}
    gpu = res["gpu_name"].replace("NVIDIA ", "")
    out["gpu"] = (gpu, "device name")
    out["gpus"] = (res["gpus"], "GPUs visible to the calibration run")
    out["sm_count"] = (res["sm_count"], "device properties")
    out["hbm_gbps"] = (res["hbm_gbps"], f"local D2D copy, bytes read + written ({res['hbm_copy_ms']:.3f} ms)")
    if "link_gbps" in res:
        out["link_gbps"] = (res["link_gbps"], "16-byte kernel stores GPU0 -> GPU1")
        out["copy_engine_gbps"] = (res["copy_engine_gbps"], "cudaMemcpyPeerAsync GPU0 -> GPU1 "
                                   f"(GPU1 -> GPU0: {res['copy_engine_gbps_1to0']:.0f})")
        ps, pa = res["pingpong_store"], res["pingpong_atomic"]
        out["link_latency_ns"] = (res["link_latency_ns"], f"half the median flag round trip (min {ps['rtt_min_ns']} ns, "
                                  f"median {ps['rtt_median_ns']:.0f} ns)")
        out["remote_atomic_ns"] = (res["remote_atomic_ns"], "half the median round trip signalled with atomicAdd_system "
                                   f"(min {pa['rtt_min_ns']} ns); returning peer atomic {res['atomic_return_peer_ns']:.0f} ns")
        out["fence_sys_ns"] = (res["fence_sys_ns"], f"(peer store + fence) {res['store_fence_ns']:.0f} ns - "
                               f"(peer store) {res['store_only_ns']:.0f} ns per iteration")
        out["event_wait_ns"] = (res["event_wait_ns"], "stamp GPU0 -> cudaStreamWaitEvent -> stamp GPU1, clock offset removed")
        out["allreduce_bus_gbps"] = (res["allreduce_bus_gbps"], "NCCL all-reduce 1-256 MiB bf16, fit t = a + bytes/algbw")
        out["allreduce_latency_ns"] = (res["allreduce_latency_ns"], f"fit intercept {res['intercept_ms'] * 1e3:.1f} us "
                                       "over 2(G-1) ring steps")
        if "sm_remote_store_gbps" in res:
            how = (f"CUTLASS 16384x8192x8192 local D {res['remote_d_local_ms']:.3f} ms vs D on GPU1 "
                   f"{res['remote_d_remote_ms']:.3f} ms, fitted with ctasim's engine: {res['sm_remote_store_note']}")
            out["epilogue_store_overlap"] = (0.0, "fitted together with sm_remote_store_gbps (remote-D cost not hidden)")
            out["sm_remote_store_gbps"] = (res["sm_remote_store_gbps"], how)
    if res.get("globaltimer_on_host_clock"):
        out["launch_ns"] = (res["launch_host_to_stamp_ns"], "host clock before launch -> kernel's %globaltimer stamp "
                            f"(launch + sync round trip {res['launch_roundtrip_ns']:.0f} ns)")
    out["kernel_gap_ns"] = (res["kernel_gap_ns"], "start-to-start of queued back-to-back stamp kernels")
    if "clock_onset_ns" in res:
        rs = res.get("clock_rounds", [])
        spread = (f"{min(r['onset_ms'] for r in rs if r['used']):.0f}-{max(r['onset_ms'] for r in rs if r['used']):.0f} ms"
                  if rs else "")
        out["clock_onset_ns"] = (res["clock_onset_ns"], "median busy time before a launch is 1.05x slower than the rested "
                                 f"ones, after a rest, CUTLASS {', '.join(CLOCK_KERNELS)} ({spread}; "
                                 "ctahw.calibrate.clock_regime)")
        out["clock_sustained_slowdown"] = (res["clock_sustained_slowdown"], "median launch of each round's second half "
                                           "over its rested launches (ctahw.calibrate.clock_regime)")
    if res.get("clock_curve_ns") == ():
        why = res.get("clock_curve_note", "not measured")
        out["clock_curve_ns"] = ((), f"not measured ({why}): empty, the burst regime is the measured step")
        out["clock_curve_factor"] = ((), "not measured: empty")
    elif "clock_curve_ns" in res:
        how = (f"mean over the rounds of CUTLASS {', '.join(CLOCK_KERNELS)} of the launch in progress over the rested "
               f"launches, over every {CURVE_STEP_MS:g} ms to {CURVE_HORIZON_MS:g} ms (ctahw.calibrate.clock_curve)")
        out["clock_curve_ns"] = (tuple(res["clock_curve_ns"]), "busy times of " + how)
        out["clock_curve_factor"] = (tuple(res["clock_curve_factor"]), "factors of " + how)
    if "activation_epilogue_ns_per_element" in res:
        per = ", ".join(f"M={r['m']} {r['per_tile_ns'] / 1e3:.2f} us/tile" for r in res.get("activation_per_m", []))
        out["activation_epilogue_ns_per_element"] = (
            res["activation_epilogue_ns_per_element"], f"CUTLASS Mx28672x8192 with the fused erf-GeLU vs plain, rested: "
            f"{per} (ctahw.calibrate.activation_epilogue_cost); silu and relu by their factors")
    for op in ("silu", "relu"):
        if f"{op}_epilogue_factor" in res:
            out[f"{op}_epilogue_factor"] = (res[f"{op}_epilogue_factor"], f"the fused {op}'s cost over the erf-GeLU's, "
                                            "same GEMM, same run (ctahw.calibrate.activation_factors)")
    if "relu_input_tile_factor" in res:
        per = ", ".join(f"M={r['m']} {r['factor']:.4f}" for r in res.get("relu_input_per_m", []))
        out["relu_input_tile_factor"] = (res["relu_input_tile_factor"], "CUTLASS Mx28672x8192 plain on a ReLU'd A "
                                         f"over plain on random A, same run: {per} (ctahw.calibrate.relu_input_factor)")
    for kind, name in PASS_FIELDS.items():
        if name in res:
            per = ", ".join(f"{r['op']} {r['rows']}x{r['n']} {r['gbps']:.0f}" for r in res.get("pass_rows", [])
                            if r["kind"] == kind)
            out[name] = (res[name], f"median rate of ctahw's {kind} pass kernels, bytes read + written ({per} GB/s; "
                         "ctahw.calibrate.pass_probe)")
    if "local_signal_ns" in res:
        per = ", ".join(f"{r['m']}x{r['h']}x{r['layers']} {r['local_signal_ns']:.0f}" for r in res.get("ticket_runs", [])
                        if r.get("local_signal_ns") is not None)
        out["local_signal_ns"] = (res["local_signal_ns"], "median over the chain kernel's ticket traces (tickets design, "
                                  f"one GPU) of each tile's t_signal - t_compute_end ({per} ns; "
                                  "ctasim.calibration.local_signal)")
    if "norm_stats_epilogue_ns_per_element" in res:
        per = ", ".join(f"M={r['m']} {r['stats_ns_per_tile']:.0f} / {r['fold_ns_per_tile']:.0f} ns per tile"
                        for r in res.get("fold_per_m", []))
        how = ("the block boundary's ring pair (M x 28672 -> 8192 + residual, 8192 -> 28672), both kernels on GPU 0, "
               "one traced run each, median tile epilogue, {what} (stats / fold: {per}; ctahw.calibrate.fold_probe, "
               "norm_fold_epilogue_cost)")
        out["norm_stats_epilogue_ns_per_element"] = (res["norm_stats_epilogue_ns_per_element"],
                                                     how.format(what="op residual_stats vs residual", per=per))
        out["norm_fold_epilogue_ns_per_element"] = (res["norm_fold_epilogue_ns_per_element"],
                                                    how.format(what="op lnfold_gelu vs gelu", per=per))
    if "l2_survival_taken" in res:
        how = (f"the L2 survival probe (ctahw.l2probe): a 2 MiB target each line read by one SM, then the bytes taken "
               f"in (in L2 sizes) streamed by every SM; median over {res.get('l2_survival_reps', '?')} repetitions, "
               "touches 1, scaled between hot and cold trials (ctahw.l2probe.survival_curve)")
        out["l2_survival_taken"] = (tuple(res["l2_survival_taken"]), how)
        out["l2_survival_share"] = (tuple(res["l2_survival_share"]), "the share of the target's lines another SM "
                                    "still found in L2 (load latency under the cut between hot and cold trials, "
                                    f"{res.get('l2_survival_cut_cycles', float('nan')):.0f} cycles) after the matching "
                                    "l2_survival_taken, same run")
    if "l2_sm_tflops" in res:  # the memory hierarchy (memory_hierarchy): all its fields or none
        out["l2_bytes"] = (float(res["l2_bytes"]), "cudaDeviceProp.l2CacheSize")
        out["l2_hbm_exposed"] = (res["l2_hbm_exposed"], f"{_l2_fit_how(res)}; fitted together with the 128x256 "
                                 "l2_sm_tflops; share of a wave's HBM time its math does not hide")
        # the share was fitted with its bytes at this profile's own hbm_gbps (memory_hierarchy), so it is charged at
        # that rate, not at a rate the base sets (h100-x1-datasheet's, registered plan 76's adoption)
        out["l2_hbm_exposed_gbps"] = (0.0, "0 = hbm_gbps: l2_hbm_exposed was fitted with the exposed bytes at this "
                                      "profile's own hbm_gbps (ctahw.calibrate.memory_hierarchy)")
    return out


def _l2_fit_how(res: Mapping) -> str:
    """How the L2 constants were fitted, for their source comments."""
    from ctasim.calibration import is_calibration  # noqa: PLC0415

    cal = [r for r in res.get("tile_order_runs", ()) if r["backend"] == "cutlass" and
           is_calibration(r["m"], r["n"], r["k"])]
    ms = sorted({int(r["m"]) for r in cal})
    span = f"{ms[0]}-{ms[-1]}" if ms else "?"
    return (f"ctasim.calibration.fit_l2_constants on the tile-order probe at N = K = 8192 (M = {span}, "
            f"{len({r['order'] for r in cal})} tile orders: {res.get('l2_fit_runs', len(cal))} runs, medians of "
            f"{res.get('tile_order_reps', '?')} rested runs), mean |error| {100 * res['l2_fit_error']:.2f}%, given "
            "this profile's l2_bytes, hbm_gbps, l2_reuse_law and 128x256 tile_fixed_ns, cta_drift and drift_form")


def measured_configs(res: Mapping) -> dict[str, tuple]:
    fit = res.get("tile_fit_128x256")
    if not fit:
        return {}
    pts = ", ".join(f"K={p['k']} {p['round_ns'] / 1e3:.1f} us/round" for p in fit["points"])
    how = (f"{res['cutlass_kernel']}; tile order {res.get('cutlass_schedule', 'default')}; M=16384 N=8192: {pts}; {fit['note']}; "
           f"max |residual| {fit['max_abs_residual_ns']:.0f} ns")
    vals = {"sm_tflops": round(fit["sm_tflops"], 4), "tile_fixed_ns": round(fit["tile_fixed_ns"], 1),
            "source": "measured by ctahw calibrate: " + how}
    notes: dict[str, str] = {}
    if "l2_sm_tflops" in res:  # the memory hierarchy (memory_hierarchy): all its fields or none
        per = [r["start_sd_per_round"] for r in res.get("order_drift", ())]
        spread = f"{min(per):.4f}-{max(per):.4f} tile times per round; " if per else ""
        vals.update(l2_sm_tflops=res["l2_sm_tflops"], cta_drift=res["cta_drift"],
                    drift_form=res["drift_form"], cluster_m=res["cluster_m"], tile_cv=0.0)
        if "ticket_spread" in res and "ticket_runs" in res:
            runs = res["ticket_runs"]
            fitted = [r["spread_per_window"] for r in runs if r.get("spread_per_window") is not None]
            vals["ticket_spread"] = round(float(res["ticket_spread"]), 4)
            notes_ticket = (f"measured: median over {len(fitted)} per-tile traces of the chain kernel's tickets design "
                            f"({min(fitted):.4f}-{max(fitted):.4f} tile times per window of a grid's worth of "
                            "tickets; ctahw.tile_orders.trace_tickets, ctasim.calibration.ticket_spread)")
        else:
            notes_ticket = None
        notes = {"l2_sm_tflops": f"fitted: {_l2_fit_how(res)}; with l2_hbm_exposed; the rate with every operand in L2",
                 "cta_drift": f"measured: median over {len(per)} per-tile traces of the plain persistent GEMM in "
                              f"CUTLASS's orders ({spread}ctahw.tile_orders.trace_orders, "
                              "ctasim.calibration.trace_drift)",
                 "drift_form": "chosen: the form the L2 constants were fitted with (ctasim.l2.DRIFT_FORMS, "
                               "ctahw.calibrate.DRIFT_FORM; docs/model.md)",
                 "cluster_m": f"measured: the kernel's cluster shape (its description: {res['cutlass_kernel']})",
                 "tile_cv": "0: the L2 model's constants were fitted without tile-time variation"}
        if notes_ticket:
            notes["ticket_spread"] = notes_ticket
        if res.get("l2_survival_taken"):  # the curve measured: the law that reads it (the profile's since plan 53)
            vals["ticket_law"] = "survival"
            notes["ticket_law"] = ("chosen: the law of the L2 survival curve measured here (l2_survival_* above), "
                                   "h200-x1-calibrated's since registered plan 53 (docs/model.md)")
            refined = survival_refinements()
            vals.update(refined)
            notes.update({f: f"copied from {REFINEMENTS_FROM}: its refinement of the survival law since registered "
                             "plan 58's adoption (ctasim.l2.gap_survival; not measured by this calibration: "
                             "docs/validation.md)" for f in refined})
            if res.get("ticket_gap_cv") is not None and res.get("gap_runs"):  # measured since 2026-12-05
                got = [r["gap_cv"] for r in res["gap_runs"] if r.get("gap_cv") is not None]
                notes["ticket_gap_cv"] = (
                    f"copied from {REFINEMENTS_FROM} (pooled over lent H200s' traced runs), not this machine's gap "
                    f"traces' {float(res['ticket_gap_cv']):.4f} (median over {len(got)} per-tile traces of the chain "
                    f"kernel's tickets design in pairs of row-blocks, {min(got):.4f}-{max(got):.4f}; "
                    "ctasim.calibration.gap_cv): registered plan 62 found the probe no nearer the machine's own pairs "
                    "than the pooled value, its two traces 0.16 apart (docs/validation.md)")
        if "ticket_mainloop_factor" in res:
            cases = res["ticket_rate_cases"]
            vals["ticket_mainloop_factor"] = res["ticket_mainloop_factor"]
            notes["ticket_mainloop_factor"] = (
                "measured: the tickets design's one-layer microbenchmark (the chain kernel in groups of 8 against the "
                f"plain CUTLASS GEMM; {', '.join(sorted({c['experiment'] for c in cases}))}), the median over "
                f"{len(cases)} cases of measured over predicted ratio, predicted by this profile under its ticket law "
                f"'{res['ticket_rate_law']}' at factor 1: " + " / ".join(f"{c['factor']:.4f}" for c in cases)
                + " (ctasim.ticket_rate)")
    return {"128x256": (vals, how, notes)}


def write_profile(res: Mapping, base_ref: str, out: Path, name: str, provenance: Mapping[str, str],
                  log: Callable[[str], None] = lambda s: print(s, file=sys.stderr)) -> str:
    """Write the profile for measurement ``res`` next to base profile ``base_ref``; returns the text.
    The remote-store fit needs ctasim's engine (simpy): where it cannot be imported, the fields stay copied
    and the profile's header and ``log`` say so; any other failure of the fit propagates."""
    kind, base_path = find_spec(base_ref)
    if kind != "hardware":
        raise ValueError(f"{base_ref} is a {kind} spec, not a hardware profile")
    base = load_hardware(base_path)
    if "l2_sm_tflops" in res and str(res.get("l2_reuse_law", "lru")) != base.l2_reuse_law:
        raise ValueError(f"the L2 constants were fitted under l2_reuse_law {res.get('l2_reuse_law', 'lru')!r}, but "
                         f"{base.name} (which the profile copies it from) has {base.l2_reuse_law!r}; calibrate "
                         "against a base of the same law")
    header = [f"%globaltimer tick {res.get('globaltimer_tick_ns')} ns; GPU1 - GPU0 %globaltimer offset "
              f"{res.get('clock_offset_ns', float('nan')):.0f} ns (spread over the best round trips "
              f"{res.get('pingpong_store', {}).get('offset_spread_ns', float('nan')):.0f} ns)"]
    if not res.get("globaltimer_on_host_clock"):
        header.append("launch_ns is copied: %globaltimer is not on the host clock here, so the launch latency "
                      f"could not be split from the sync (launch + sync round trip {res.get('launch_roundtrip_ns')} ns)")
    if res.get("refit_note"):
        header.append(str(res["refit_note"]))
    for key in ("clock_regime_note", "clock_curve_note", "l2_survival_note", "l2_tile_note", "ticket_rate_note"):
        if res.get(key):
            header.append(f"{key.replace('_note', '').replace('_', ' ')} not measured: {res[key]}")
    if "l2_sm_tflops" in res:
        header.append(f"Memory hierarchy: l2_hbm_exposed and the 128x256 l2_sm_tflops fitted under the "
                      f"{res.get('l2_reuse_law', 'lru')!r} reuse law (mean |error| "
                      f"{100 * res['l2_fit_error']:.2f}% over {res['l2_fit_runs']} runs of the tile-order probe), "
                      f"cta_drift measured on {len(res.get('order_drift', ()))} per-tile traces (ctasim.calibration)")
    elif res.get("memory_note"):
        header.append(f"Memory hierarchy copied from {base.name}: {res['memory_note']}")
    if res.get("l2_tile_rates"):
        rates = sorted(res["l2_tile_rates"].items(), key=lambda x: int(x[0]))  # from JSON the keys are strings
        header.append("Measured, not written into a field: the L2-to-SM rate of the GEMM's own tensor copies by tiles "
                      "a row of a row-order first wave (ctahw.l2rate.measure_tiles; GB/s) "
                      + ", ".join(f"{n}: {v:.0f}" for n, v in rates) + " (no field takes it: registered plans 92 and 93)")
    if res.get("percta"):
        from ctahw.percta import percta_notes  # noqa: PLC0415

        header += [f"Measured, not written into a kernel config: {n}" for n in percta_notes(res["percta"])]
    base_text = base_path.read_text()

    def render(res: Mapping, header: Sequence[str]) -> str:
        return profile_toml(base, base_text, base.name, name, measured_fields(res), measured_configs(res), provenance,
                            header)

    text = so_far = render(res, header)  # the fits below price with the profile measured so far
    refit = False
    if "remote_d_remote_ms" in res and "sm_remote_store_gbps" not in res:
        refit, res = True, dict(res)
        try:
            # fitted without the memory hierarchy, as before it was measured: the local GEMM and the remote-D
            # producer both at the config's sm_tflops (the producer's ctapipe kernel has no memory hierarchy)
            hw = dataclasses.replace(hardware_from_dict(tomllib.loads(so_far)["hardware"], str(out)), l2_bytes=0.0)
            ratio = res["remote_d_remote_ms"] / res["remote_d_local_ms"]
            res["sm_remote_store_gbps"], res["sm_remote_store_note"] = fit_sm_remote_store(hw, ratio)
        except ImportError as e:  # the fit needs ctasim's engine (simpy); without it the fields stay copied
            why = f"sm_remote_store_gbps and epilogue_store_overlap copied: fit failed ({type(e).__name__}: {e})"
            log(f"calibrate: {why}")
            header = list(header) + [why]
    if res.get("ticket_rate_runs") and "l2_sm_tflops" in res and "ticket_mainloop_factor" not in res:
        # one GPU's chain kernel and plain GEMM: its L2 constants, drift and ticket law, not the remote-store fields
        refit = True
        try:
            res = dict(res, **ticket_rate_fields(so_far, res, str(out)))
        except (ImportError, ValueError) as e:
            why = f"ticket_mainloop_factor copied: {type(e).__name__}: {e}"
            log(f"calibrate: {why}")
            header = list(header) + [why]
    if refit:
        text = render(res, header)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return text
