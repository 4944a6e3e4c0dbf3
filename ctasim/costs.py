"""Costs: how long one tile, one transfer, one collective or one row-wise pass takes on a profile.

Every function here turns spec fields into nanoseconds; no number appears that is not a spec field or a
count of bytes/FLOPs.  Sharing of a link between transfers is not decided here but in
:mod:`ctasim.machine`; these are the times of an operation running alone.

A fused activation costs ``Hardware.activation_epilogue_ns_per_element`` per accumulator element of the tile (a
microbenchmark value, the erf-GeLU's; silu and relu at their measured factors of it); an unfused epilogue (``Layer.epilogue_fused = false``) and a row-wise op are memory passes,
their bytes at the rate measured for ctahw's pass kernels (``Hardware.epilogue_pass_gbps``, ``rowwise_gbps``;
``hbm_gbps`` where a profile has none) (:func:`epilogue_pass_ns`, :func:`rowwise_ns`).

The memory hierarchy (:func:`tuned_gemm`, on when the profile sets ``Hardware.l2_bytes`` and the config
``l2_sm_tflops``): a plain GEMM's tiles take the time of their wave, which :mod:`ctasim.l2` computes from the HBM
traffic of the wave (L2 reuse of the operand panels in CUTLASS's launch order) and the tile's compute at the
L2-resident rate; of CUTLASS's tile orders the one with the least modelled time is run, as ``ctahw`` tunes each
GEMM shape's order by timing them all.

The chain kernel's tiles (one GPU, every layer in one kernel) are timed the same way in its ticket order
(:func:`order_tile_times`, the layers' panels apart).

What the data does to power: a GEMM whose A operand is a ReLU's output (about half of it zero) takes
``Hardware.relu_input_tile_factor`` of its time (:func:`input_tile_factor`): it draws less power and the power cap
holds its clock higher. Measured on the plain GEMM at four shapes in the burst regime; any other distribution
(GeLU's, SwiGLU's outputs) is priced as random data.

Left out: clock and power variation beyond that factor and the clock regime's, L2 hit rates of the CTA-pipelined kernels of two or more GPUs (their tiles run
at the config's ``sm_tflops``), tile-to-tile variation (the engine can add seeded
jitter), the arithmetic of an unfused epilogue pass (bandwidth-bound: a few operations per 2-byte element).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from ctasim import l2
from ctasim.spec import ACTIVATION_OPS, Hardware, KernelConfig, Layer

__all__ = [
    "alone_ticket_spread",
    "l2_sm_reads",
    "tile_ns",
    "active_share",
    "activation_factor",
    "input_tile_factor",
    "tile_bytes",
    "transfer_ns",
    "allreduce_ns",
    "rowwise_ns",
    "norm_fold_ns",
    "epilogue_pass_ns",
    "slot_hbm_gbps",
    "clock_boost",
    "gemm_tile_ns",
    "TunedGemm",
    "memory_model",
    "tuned_gemm",
    "remote_store_ns",
    "order_waves",
    "cutlass_waves",
    "order_tile_times",
]


def slot_hbm_gbps(hw: Hardware, cfg: KernelConfig) -> float:
    """HBM bandwidth one CTA slot gets when every slot of the GPU streams memory at once."""
    return hw.hbm_gbps / (hw.sm_count * cfg.cta_slots_per_sm)


def tile_bytes(layer: Layer, elem_bytes: int) -> int:
    """Bytes one output tile stores (half the tile's columns after a gated epilogue: :attr:`Layer.out_tile_n`)."""
    return layer.tile_m * layer.out_tile_n * elem_bytes


def activation_factor(hw: Hardware, op: str) -> float:
    """A fused activation's epilogue cost in units of ``activation_epilogue_ns_per_element`` (the erf-GeLU's): the
    profile's ``silu_epilogue_factor`` / ``relu_epilogue_factor``, 1 for gelu and swiglu."""
    return {"silu": hw.silu_epilogue_factor, "relu": hw.relu_epilogue_factor}.get(op, 1.0)


def input_tile_factor(layers, idx: int, hw: Hardware) -> float:
    """Tile-time factor of layer ``idx`` of ``layers`` from what its A operand holds: the profile's
    ``relu_input_tile_factor`` when it reads a ReLU's output (layer ``idx - 1`` applies a relu, fused or in its
    epilogue pass, and no row-wise op after it), else 1. Layer 0 reads the workload's input (random data)."""
    if idx <= 0 or idx >= len(layers):
        return 1.0
    prev = layers[idx - 1]
    return hw.relu_input_tile_factor if "relu" in prev.epilogue and not prev.rowwise else 1.0


def tile_ns(layer: Layer, k: int, hw: Hardware, elem_bytes: int, kernel: str = "",
            rate_tflops: float | None = None) -> float:
    """Time one CTA slot holds for one output tile of ``layer`` with reduction depth ``k`` (local output).

    Mainloop + fixed part from the kernel config; a fused ``residual`` epilogue reads one more tile from HBM at
    the slot's share of HBM bandwidth; a fused activation (gelu, silu, relu, swiglu) adds
    ``Hardware.activation_epilogue_ns_per_element`` per output element of the tile, times its
    :func:`activation_factor` (silu and relu measured against gelu).  ``kernel`` picks a kernel
    variant's config ('' = the default). ``rate_tflops`` replaces the config's ``sm_tflops`` (the memory
    hierarchy's L2-resident rate, :func:`tuned_gemm`).
    """
    cfg = hw.config(layer.tile_m, layer.tile_n, kernel=kernel)
    t = cfg.tile_ns(k, rate_tflops)
    if not layer.epilogue_fused:
        return t  # the GEMM's epilogue only stores; the ops are a pass of their own (epilogue_pass_ns)
    acts = sum(activation_factor(hw, op) for op in layer.epilogue if op in ACTIVATION_OPS)
    if acts:
        t += acts * layer.tile_m * layer.tile_n * hw.activation_epilogue_ns_per_element
    if "residual" in layer.epilogue:
        t += tile_bytes(layer, elem_bytes) / slot_hbm_gbps(hw, cfg)  # bytes / (GB/s) = ns
    return t


def norm_fold_ns(layer: Layer, hw: Hardware, side: str) -> float:
    """Time the LayerNorm fold adds to one tile of ``layer`` (a ring's kernels, ctasim.strategies.ctapipe): on the
    ``"stats"`` side (the layer whose output is normalised) its rows' sums and sums of squares added into the row
    statistics, ``Hardware.norm_stats_epilogue_ns_per_element`` per element; on the ``"fold"`` side (the next layer)
    the statistics applied in its epilogue, ``norm_fold_epilogue_ns_per_element``. Both are over the tile's
    ``tile_m x tile_n`` elements, on top of :func:`tile_ns`'s residual read and activation."""
    per = {"stats": hw.norm_stats_epilogue_ns_per_element, "fold": hw.norm_fold_epilogue_ns_per_element}
    if side not in per:
        raise ValueError(f"side must be 'stats' or 'fold', got {side!r}")
    return layer.tile_m * layer.tile_n * per[side]


def clock_boost(hw: Hardware, active: int, slots: int) -> float:
    """Tile-rate multiplier of a kernel that keeps ``active`` of the GPU's ``slots`` CTA slots busy.

    ``min(max_clock_boost, (slots / active) ** (1/3))``: under a power cap, dynamic power ~ clock^3 per busy
    SM, so the clock may rise as the cube root of the idle share, up to the boost ceiling.  1 when every
    slot is busy or when the profile sets ``max_clock_boost = 1``.
    """
    if active <= 0 or active >= slots or hw.max_clock_boost <= 1.0:
        return 1.0
    return min(hw.max_clock_boost, (slots / active) ** (1.0 / 3.0))


def gemm_tile_ns(layer: Layer, hw: Hardware, elem_bytes: int, kernel: str = "") -> float:
    """:func:`tile_ns` of ``layer`` as one kernel runs it: scaled by :func:`clock_boost` of its grid's occupancy."""
    cfg = hw.config(layer.tile_m, layer.tile_n, kernel=kernel)
    slots = hw.sm_count * cfg.cta_slots_per_sm
    return tile_ns(layer, layer.k, hw, elem_bytes, kernel) / clock_boost(hw, min(layer.tiles, slots), slots)


def transfer_ns(nbytes: float, gbps: float, latency_ns: float) -> float:
    """A transfer alone on its link: latency plus bytes over bandwidth (GB/s = bytes/ns)."""
    return latency_ns + nbytes / gbps


def remote_store_ns(nbytes: float, hw: Hardware, slots_per_sm: int) -> float:
    """The shortest a producer tile's store into a peer GPU can take: its bytes at the SM's store rate
    (``sm_remote_store_gbps``, shared by the SM's ``slots_per_sm`` resident CTAs) plus the link latency."""
    return transfer_ns(nbytes, hw.sm_remote_store_gbps / slots_per_sm, hw.link_latency_ns)


def allreduce_ns(nbytes: float, gpus: int, hw: Hardware) -> float:
    """Ring all-reduce of ``nbytes`` per GPU over ``gpus`` GPUs (NCCL's bus-bandwidth definition).

    ``t = 2(p-1)/p * bytes / bus_bw + 2(p-1) * step_latency``; zero for one GPU.
    """
    if gpus <= 1:
        return 0.0
    steps = 2 * (gpus - 1)
    return steps / gpus * nbytes / hw.allreduce_bus_gbps + steps * hw.allreduce_latency_ns


def rowwise_ns(rows: int, cols: int, elem_bytes: int, hw: Hardware) -> float:
    """A row-wise op (LayerNorm/RMSNorm) over ``rows x cols``: one read and one write at the row-wise kernel's
    measured rate (``rowwise_gbps``; ``hbm_gbps`` where the profile has none)."""
    return 2.0 * rows * cols * elem_bytes / (hw.rowwise_gbps or hw.hbm_gbps)


def epilogue_pass_ns(layer: Layer, elem_bytes: int, hw: Hardware) -> float:
    """A layer's epilogue ops as their own elementwise kernel (``epilogue_fused = false``): the GEMM's ``m x n``
    output read once, a residual (``m x out_n``) read once, the ``m x out_n`` result written once, at the
    epilogue kernel's measured rate (``epilogue_pass_gbps``; ``hbm_gbps`` where the profile has none)."""
    elems = layer.m * layer.n + layer.m * layer.out_n * (2 if "residual" in layer.epilogue else 1)
    return elems * elem_bytes / (hw.epilogue_pass_gbps or hw.hbm_gbps)


def memory_model(hw: Hardware, cfg: KernelConfig) -> bool:
    """True when plain GEMMs of ``cfg`` are timed by the memory hierarchy (:func:`tuned_gemm`)."""
    return hw.l2_bytes > 0 and cfg.l2_sm_tflops > 0


class TunedGemm:
    """A plain GEMM as the memory hierarchy times it, in the tile order the model finds fastest.

    ``order``: row-major tile ids in launch order (CUTLASS's padding slots dropped); ``tile_ns``: each of those
    tiles' time (its wave's time, :func:`ctasim.l2.wave_ns`); ``schedule``: the order's name as ``ctahw`` writes it
    (``along_m/swizzle8``); ``waves_ns``: the chosen order's wave times; ``total_ns``: their sum.
    """

    __slots__ = ("order", "tile_ns", "schedule", "waves_ns", "total_ns")

    def __init__(self, order, tile_ns, schedule, waves_ns):
        self.order, self.tile_ns, self.schedule, self.waves_ns = order, tile_ns, schedule, waves_ns
        self.total_ns = float(waves_ns.sum())


def plain_drift(cfg, k: int) -> float:
    """A plain persistent GEMM's drift at inner dimension ``k``, in tile times a round: the config's ``cta_drift``,
    scaled by ``drift_k_ref / k`` where the config sets ``drift_k_ref`` (the same time a round at every K), and by no
    more than 1 where its ``drift_k_law`` is ``"capped"`` (:data:`ctasim.l2.DRIFT_K_LAWS`)."""
    if cfg.drift_k_ref <= 0:
        return cfg.cta_drift
    scale = cfg.drift_k_ref / k
    return cfg.cta_drift * (min(1.0, scale) if cfg.drift_k_law == "capped" else scale)


def alone_ticket_spread(hw: Hardware, tile_m: int = 128, tile_n: int = 256) -> float:
    """The start-time spread (tile times a wave) at which a one-CTA-per-tile grid run alone on one GPU -- ctahw's
    CTA-pipelined producer with its output and queue in its own memory (``ctahw.percta``) -- is priced: the one-GPU
    tickets' (the tile shape's default config's ``ticket_spread``), since registered plan 88's adoption (2026-12-07:
    on a fifth H100 the pairs 1.97% against 7.71% at the ``ctapipe`` family's spread, row order 14.2 against 57.9%,
    the grouped producers' own spread 0.0162 a wave, the pairs' 0.0111). The family config's spread stays the one of
    the 2-GPU producers it was fitted on, whose stores and signals cross NVLink."""
    return hw.config(tile_m, tile_n).ticket_spread


def order_traffic(layer: Layer, hw: Hardware, elem_bytes: int, order: np.ndarray, slots: int, *, kernel: str = "",
                  drift: float | None = None, cluster_m: int | None = None, layers: int = 1,
                  ticket_spread: float = 0.0, ticket_state: str | None = None) -> l2.WaveTraffic:
    """What each wave of ``layer``'s tiles in ``order`` on ``slots`` CTA slots reads from and writes to HBM
    (:func:`ctasim.l2.wave_traffic` under the profile's L2 laws): the bytes :func:`order_waves` times, and what a
    DRAM counter measures (``ctahw.counters``). Keywords as :func:`order_waves`'s."""
    cfg = hw.config(layer.tile_m, layer.tile_n, kernel=kernel)
    if not memory_model(hw, cfg):
        raise ValueError(f"profile {hw.name!r} has no memory hierarchy for config {cfg.key()}")
    store = elem_bytes // 2 if layer.gated and layer.epilogue_fused else elem_bytes
    return l2.wave_traffic(order, layer.m, layer.n, layer.k, layer.tile_m, layer.tile_n, elem_bytes, slots,
                           hw.l2_bytes, store_elem_bytes=store,
                           drift=plain_drift(cfg, layer.k) if drift is None else drift,
                           cluster_m=cfg.cluster_m if cluster_m is None else cluster_m, layers=layers,
                           ticket_spread=ticket_spread,
                           ticket_state=cfg.ticket_state if ticket_state is None else ticket_state,
                           drift_form=cfg.drift_form,
                           ticket_law=cfg.ticket_law, survival=(hw.l2_survival_taken, hw.l2_survival_share),
                           ticket_gap_cv=cfg.ticket_gap_cv, ticket_touched=cfg.ticket_touched,
                           reuse_law=hw.l2_reuse_law)


def order_waves(layer: Layer, hw: Hardware, elem_bytes: int, order: np.ndarray, slots: int, *, kernel: str = "",
                drift: float | None = None, cluster_m: int | None = None, layers: int = 1,
                ticket_spread: float = 0.0, ticket_state: str | None = None, boost: float = 1.0,
                cluster_n: int | None = None) -> np.ndarray:
    """Each wave's time (ns) when the tiles of ``layer`` run in ``order`` on ``slots`` CTA slots, by the memory
    hierarchy (:func:`order_traffic`, :func:`ctasim.l2.wave_ns`); the config must have it on
    (:func:`memory_model`).

    Compute per tile: :func:`tile_ns` at the config's ``l2_sm_tflops`` (fused epilogue ops included), scaled by
    :func:`clock_boost` of the grid's occupancy. ``drift`` and ``cluster_m`` default to the config's (the plain
    persistent GEMM's): a kernel whose CTAs do not keep a fixed share of the tiles (tickets, one CTA per tile) has
    no drift. ``layers``: a chain kernel's equal-shaped layers in one order (:func:`ctasim.plan.chain_order`).
    ``ticket_spread``: a ticket-scheduled kernel's spread of start times per round (``KernelConfig.ticket_spread``;
    :func:`ctasim.l2.ticket_rereads`, by the config's ``ticket_law``), 0 for a grid with a fixed assignment;
    ``ticket_state``: its consistent state (:data:`ctasim.l2.TICKET_STATES`; None: the config's ``ticket_state``).
    ``boost``: a further clock gain of the compute (:func:`active_share`). Where the profile has an L2-to-SM read
    rate (``Hardware.l2_sm_read_gbps`` > 0), no wave is shorter than its tiles' L2 reads at it
    (:func:`l2_sm_reads`, by ``cluster_m`` and ``cluster_n``: the config's where None)."""
    cfg = hw.config(layer.tile_m, layer.tile_n, kernel=kernel)
    cluster_m = cfg.cluster_m if cluster_m is None else cluster_m
    traffic = order_traffic(layer, hw, elem_bytes, order, slots, kernel=kernel, drift=drift, cluster_m=cluster_m,
                            layers=layers, ticket_spread=ticket_spread, ticket_state=ticket_state)
    sm = hw.sm_count * cfg.cta_slots_per_sm
    compute = tile_ns(layer, layer.k, hw, elem_bytes, kernel, rate_tflops=cfg.l2_sm_tflops)
    compute /= clock_boost(hw, min(layer.tiles * layers, sm), sm) * boost
    waves = l2.wave_ns(traffic, compute, hw.hbm_gbps, hw.l2_hbm_exposed, hw.l2_hbm_exposed_gbps)
    if hw.l2_sm_read_gbps > 0:
        reads = traffic.tiles * l2_sm_reads(layer, elem_bytes, cluster_m, cfg.cluster_n if cluster_n is None
                                            else cluster_n)
        waves = np.maximum(waves, reads / hw.l2_sm_read_gbps)
    return waves


def l2_sm_reads(layer: Layer, elem_bytes: int, cluster_m: int = 1, cluster_n: int = 1) -> float:
    """The bytes one tile of ``layer`` reads from the L2 into its SM: its A tile (tile_m x K) over ``cluster_n`` (a 1xN
    cluster's CTAs, one row-block, take each A tile by one multicast) and its W tile (tile_n x K) over ``cluster_m``
    (an Mx1 cluster's, one column). Left out: what the SM's own caches hold (TMA loads bypass L1), the epilogue's C
    reads and the stores."""
    return float((layer.tile_m / max(1, cluster_n) + layer.tile_n / max(1, cluster_m)) * layer.k * elem_bytes)


def order_tile_times(layer: Layer, hw: Hardware, elem_bytes: int, order: np.ndarray, slots: int, **kw) -> np.ndarray:
    """Per entry of ``order`` (no padding): the time of its wave (:func:`order_waves`, same keywords); entry ``i``
    runs in wave ``i // slots``. A read-only array."""
    order = np.asarray(order, dtype=np.int64)
    waves = order_waves(layer, hw, elem_bytes, order, slots, **kw)
    out = waves[np.arange(order.size) // slots]
    out.flags.writeable = False
    return out


def active_share(hw: Hardware, active: int, slots: int) -> tuple[Hardware, float]:
    """One share of a device split ``hw.device_shares`` ways, while ``active`` of its shares compute: the profile with
    ``N / active`` times its L2 bytes and HBM rate (the shares that compute use what the idle ones leave) and no
    boost of its own, and the clock boost of the device (:func:`clock_boost` of ``active`` shares' ``slots`` CTA
    slots out of N's). ``(hw, 1.0)`` where the profile is not a share (``device_shares`` < 2); where every share
    computes, the profile as it is but without its own boost, and 1.0 (the even split).

    What it leaves out: any unevenness between the computing shares (each gets the same part), L2 lines an idle
    share left behind, and the time an L2 takes to change hands (the share is the one at a tile's start)."""
    n = hw.device_shares
    if n < 2 or active >= n:
        return dataclasses.replace(hw, max_clock_boost=1.0) if n >= 2 else hw, 1.0
    if active < 1:
        raise ValueError(f"active shares must be >= 1, got {active}")
    f = n / active
    return (dataclasses.replace(hw, l2_bytes=hw.l2_bytes * f, hbm_gbps=hw.hbm_gbps * f, max_clock_boost=1.0),
            clock_boost(hw, active * slots, n * slots))


def cutlass_order(layer: Layer, hw: Hardware, raster: str, swizzle: int, kernel: str = "") -> tuple[np.ndarray, int]:
    """``layer`` in CUTLASS 4.2's persistent order at (``raster``, ``swizzle``) on the config's cluster shape: (the
    order with its padding slots, CUTLASS's grid of CTA slots)."""
    cfg = hw.config(layer.tile_m, layer.tile_n, kernel=kernel)
    tm, tn, cluster = layer.tiles_m, layer.tiles_n, (cfg.cluster_m, cfg.cluster_n)
    order = l2.cutlass_sm90_order(tm, tn, raster, swizzle, cluster)
    slots = l2.cutlass_sm90_grid_ctas(tm, tn, raster, swizzle, cluster, sm_count=hw.sm_count * cfg.cta_slots_per_sm)
    return order, slots


def cutlass_waves(layer: Layer, hw: Hardware, elem_bytes: int, raster: str, swizzle: int,
                  kernel: str = "") -> tuple[np.ndarray, int, np.ndarray]:
    """``layer`` in CUTLASS 4.2's persistent order at (``raster``, ``swizzle``) on the config's cluster shape and
    CUTLASS's grid: (the order with its padding slots, the grid's CTA slots, each wave's time by
    :func:`order_waves`)."""
    order, slots = cutlass_order(layer, hw, raster, swizzle, kernel)
    return order, slots, order_waves(layer, hw, elem_bytes, order, slots, kernel=kernel)


def cutlass_traffic(layer: Layer, hw: Hardware, elem_bytes: int, raster: str, swizzle: int,
                    kernel: str = "") -> l2.WaveTraffic:
    """What ``layer`` in CUTLASS 4.2's persistent order at (``raster``, ``swizzle``) reads from and writes to HBM wave
    by wave, as :func:`cutlass_waves` times it (the config's drift and cluster shape; :func:`order_traffic`)."""
    order, slots = cutlass_order(layer, hw, raster, swizzle, kernel)
    return order_traffic(layer, hw, elem_bytes, order, slots, kernel=kernel)


@functools.lru_cache(maxsize=512)
def tuned_gemm(layer: Layer, hw: Hardware, elem_bytes: int, kernel: str = "") -> TunedGemm | None:
    """The memory hierarchy's timing of ``layer`` run as one plain GEMM kernel; None when it is off for the config.

    Every (raster, swizzle) order of CUTLASS 4.2's persistent SM90 scheduler (:func:`ctasim.l2.cutlass_sm90_order`;
    the heuristic raster resolves to one of the two, and a swizzle the grid clamps to a smaller one is the same
    order) is timed on the config's cluster shape and CUTLASS's grid: wave ``v`` takes
    ``max(compute + l2_hbm_exposed * t_hbm, t_hbm)``, compute = :func:`tile_ns` at ``l2_sm_tflops`` (fused epilogue ops
    included) scaled by :func:`clock_boost`, t_hbm = the wave's operand misses and stores over ``hbm_gbps``.  The
    least total wins; ties go to the first in CUTLASS's enumeration (along M, then along N; swizzle 1, 2, 4, 8).
    A padding slot of the grid holds its CTA for its wave but runs no tile: the tiles keep their wave's time.
    """
    cfg = hw.config(layer.tile_m, layer.tile_n, kernel=kernel)
    if not memory_model(hw, cfg):
        return None
    cluster = (cfg.cluster_m, cfg.cluster_n)
    best, seen = None, set()
    for raster in ("along_m", "along_n"):
        for swizzle in (1, 2, 4, 8):
            used = l2.cutlass_sm90_swizzle(layer.tiles_m, layer.tiles_n, swizzle, cluster)
            if (raster, used) in seen:
                continue
            seen.add((raster, used))
            order, slots, waves = cutlass_waves(layer, hw, elem_bytes, raster, swizzle, kernel)
            total = float(waves.sum())
            if best is None or total < best[0]:
                best = (total, waves, order, slots, f"{raster}/swizzle{used}")
    _, waves, order, slots, name = best
    wave_of = np.arange(order.size) // slots
    real = order >= 0
    out = TunedGemm(order[real], waves[wave_of[real]], name, waves)
    out.order.flags.writeable = False
    out.tile_ns.flags.writeable = False
    return out
