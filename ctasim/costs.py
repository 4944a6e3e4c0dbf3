"""Costs: how long one tile, one transfer, one collective or one row-wise pass takes on a profile.

Every function here turns spec fields into nanoseconds; no number appears that is not a spec field or a
count of bytes/FLOPs.  Sharing of a link between transfers is not decided here but in
:mod:`ctasim.machine`; these are the times of an operation running alone.

A fused activation costs ``Hardware.activation_epilogue_ns_per_element`` per accumulator element of the tile (a
microbenchmark value); an unfused epilogue (``Layer.epilogue_fused = false``) is a memory pass at HBM bandwidth
(:func:`epilogue_pass_ns`), as a row-wise op is.

Left out: clock and power variation, L2 hit rates, tile-to-tile variation (the engine can add seeded
jitter), the arithmetic of an unfused epilogue pass (bandwidth-bound: a few operations per 2-byte element).
"""

from __future__ import annotations

from ctasim.spec import ACTIVATION_OPS, Hardware, KernelConfig, Layer

__all__ = [
    "tile_ns",
    "tile_bytes",
    "transfer_ns",
    "allreduce_ns",
    "rowwise_ns",
    "epilogue_pass_ns",
    "slot_hbm_gbps",
    "clock_boost",
    "gemm_tile_ns",
]


def slot_hbm_gbps(hw: Hardware, cfg: KernelConfig) -> float:
    """HBM bandwidth one CTA slot gets when every slot of the GPU streams memory at once."""
    return hw.hbm_gbps / (hw.sm_count * cfg.cta_slots_per_sm)


def tile_bytes(layer: Layer, elem_bytes: int) -> int:
    """Bytes one output tile stores (half the tile's columns after a gated epilogue: :attr:`Layer.out_tile_n`)."""
    return layer.tile_m * layer.out_tile_n * elem_bytes


def tile_ns(layer: Layer, k: int, hw: Hardware, elem_bytes: int, kernel: str = "") -> float:
    """Time one CTA slot holds for one output tile of ``layer`` with reduction depth ``k`` (local output).

    Mainloop + fixed part from the kernel config; a fused ``residual`` epilogue reads one more tile from HBM at
    the slot's share of HBM bandwidth; a fused activation (gelu, silu, relu, swiglu) adds
    ``Hardware.activation_epilogue_ns_per_element`` per output element of the tile.  ``kernel`` picks a kernel
    variant's config ('' = the default).
    """
    cfg = hw.config(layer.tile_m, layer.tile_n, kernel=kernel)
    t = cfg.tile_ns(k)
    if not layer.epilogue_fused:
        return t  # the GEMM's epilogue only stores; the ops are a pass of their own (epilogue_pass_ns)
    acts = sum(op in ACTIVATION_OPS for op in layer.epilogue)
    if acts:
        t += acts * layer.tile_m * layer.tile_n * hw.activation_epilogue_ns_per_element
    if "residual" in layer.epilogue:
        t += tile_bytes(layer, elem_bytes) / slot_hbm_gbps(hw, cfg)  # bytes / (GB/s) = ns
    return t


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


def allreduce_ns(nbytes: float, gpus: int, hw: Hardware) -> float:
    """Ring all-reduce of ``nbytes`` per GPU over ``gpus`` GPUs (NCCL's bus-bandwidth definition).

    ``t = 2(p-1)/p * bytes / bus_bw + 2(p-1) * step_latency``; zero for one GPU.
    """
    if gpus <= 1:
        return 0.0
    steps = 2 * (gpus - 1)
    return steps / gpus * nbytes / hw.allreduce_bus_gbps + steps * hw.allreduce_latency_ns


def rowwise_ns(rows: int, cols: int, elem_bytes: int, hw: Hardware) -> float:
    """A row-wise op (LayerNorm/RMSNorm) over ``rows x cols``: one read and one write at HBM bandwidth."""
    return 2.0 * rows * cols * elem_bytes / hw.hbm_gbps


def epilogue_pass_ns(layer: Layer, elem_bytes: int, hw: Hardware) -> float:
    """A layer's epilogue ops as their own elementwise kernel (``epilogue_fused = false``): the GEMM's ``m x n``
    output read once, a residual (``m x out_n``) read once, the ``m x out_n`` result written once, at HBM
    bandwidth."""
    elems = layer.m * layer.n + layer.m * layer.out_n * (2 if "residual" in layer.epilogue else 1)
    return elems * elem_bytes / hw.hbm_gbps
