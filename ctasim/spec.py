"""Specs: hardware profiles, workloads, strategies and experiments as frozen dataclasses.

A spec is data. It is read from TOML (``specs/``), checked once here, and never changed afterwards.
Every number that the model uses comes from a field of a spec; units are part of the field name
(``_ns``, ``_gbps``, ``_tflops``).  Every field carries its help text in ``metadata["help"]`` so that
documentation and command-line help are generated from one place (``docs/spec-format.md``).

A bad spec raises :class:`SpecError`, which names the file, the field and the problem.

Left out: anything that is not needed to time a chain of GEMM layers (memory capacity, power, clocks).
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

__all__ = [
    "SpecError",
    "Model",
    "load_model",
    "KernelConfig",
    "Hardware",
    "Layer",
    "Workload",
    "Strategy",
    "Experiment",
    "STRATEGY_KINDS",
    "RASTER_ORDERS",
    "EPILOGUE_OPS",
    "ROWWISE_OPS",
    "REGIMES",
    "ACTIVATION_OPS",
    "GATED_OPS",
    "DTYPE_BYTES",
    "SPECS_DIR",
    "load_hardware",
    "load_workload",
    "parse_experiment",
    "read_experiment",
    "find_spec",
    "list_specs",
]

def _specs_dir() -> Path:
    here = Path(__file__).resolve().parent
    checkout = here.parent / "specs"  # a source checkout (or an editable install)
    return checkout if (checkout / "hardware").is_dir() else here / "_specs"  # an installed wheel


SPECS_DIR = _specs_dir()
"""Specs shipped with the project (``specs/hardware``, ``specs/workloads``, ``specs/experiments``)."""

STRATEGY_KINDS = ("sequential", "microbatch", "tp", "ctapipe", "hybrid")
RASTER_ORDERS = ("row", "column")
TOPOLOGIES = ("direct", "switch")
EPILOGUE_OPS = ("gelu", "relu", "silu", "residual", "swiglu")
ROWWISE_OPS = ("layernorm", "rmsnorm")
RESIDUAL_SOURCES = ("input", "stream")
"""What a ``residual`` epilogue adds (:attr:`Layer.residual_source`): the workload's input, or the residual stream."""
REGIMES = ("burst", "sustained")
"""Clock regimes of a run (:class:`Hardware`'s clock regime; :attr:`Experiment.regime`)."""
ACTIVATION_OPS = ("gelu", "silu", "relu", "swiglu")
"""Epilogue ops that cost ``Hardware.activation_epilogue_ns_per_element`` (the others: see ctasim.costs)."""
GATED_OPS = ("swiglu",)
"""Epilogue ops that halve the stored columns: the GEMM computes N = 2 x I columns (gate and up projections, paired
within each tile) and stores I = N / 2 (``silu(gate) * up``); :attr:`Layer.out_n`."""
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp32": 4}
TILE_SOURCES = ("queue", "static")
PLACEMENTS = ("", "ring")


class SpecError(ValueError):
    """A spec that cannot be used. The message names the file, the field and the problem."""

    def __init__(self, where: str, field_name: str, problem: str):
        self.where, self.field_name, self.problem = where, field_name, problem
        super().__init__(f"{where}: {field_name}: {problem}")


def _f(help: str, default: Any = dataclasses.MISSING, **kw) -> Any:
    """A dataclass field with its help text."""
    if default is dataclasses.MISSING:
        return field(metadata={"help": help}, **kw)
    return field(default=default, metadata={"help": help}, **kw)


# --------------------------------------------------------------------------------------------------
# Hardware


@dataclass(frozen=True)
class KernelConfig:
    """One GEMM kernel configuration (tile shape) and how fast a tile of it runs on one SM.

    Tile time model: ``t = tile_fixed_ns + 2*tile_m*tile_n*K / (sm_tflops * 1e3)`` ns, for a tile with
    reduction depth K.  ``sm_tflops`` is the rate one CTA slot sustains in the mainloop of this config
    (measured, not the datasheet peak); with ``cta_slots_per_sm = 2`` (e.g. a pingpong kernel whose two
    consumer warp groups each own a tile) it is half the SM's rate.  ``tile_fixed_ns`` covers the
    prologue and the local epilogue; ``kernel_fixed_ns`` is paid once per kernel launch (cold L2 and
    pipeline fill of the first wave, drain of the last), before the first tile.
    """

    tile_m: int = _f("tile rows (CTA tile M)")
    tile_n: int = _f("tile columns (CTA tile N)")
    tile_k: int = _f("mainloop K step")
    cta_slots_per_sm: int = _f("CTAs of this config resident per SM at once")
    sm_tflops: float = _f("sustained dense tensor throughput of one CTA slot for this config, TFLOP/s")
    tile_fixed_ns: float = _f("per-tile fixed time: prologue, pipeline fill, local epilogue, ns", 0.0)
    kernel_fixed_ns: float = _f(
        "per-kernel fixed time: grid start and first-wave pipeline fill plus the last wave's drain; the "
        "kernel's CTAs start this long after the kernel begins, ns", 0.0)
    cta_launch_ns: float = _f("extra time to start a CTA in a non-persistent grid, ns", 0.0)
    kernel: str = _f(
        "kernel variant this config describes ('' = the default kernel of the tile shape; e.g. 'ctapipe-1x1', "
        "a strategy's `kernels` picks it); the config is keyed by tile shape and variant. A config named for a "
        "kernel family ('ctapipe') serves every variant of it ('ctapipe-2x1', ...) the profile has no config of "
        "its own for: one set of figures for the family, the variant's cluster shape from ctasim.variants", "")
    wave_slowdown: float = _f(
        "fractional slowdown of the tile time reached in later waves of a grid: the tile at grid position i "
        "(i // slots = its wave w) takes 1 + wave_slowdown * min(1, w / wave_slowdown_waves) times the tile "
        "time (fitted on the 2xH200 traces; its cause is not modelled: docs/validation.md)", 0.0)
    wave_slowdown_waves: float = _f("waves over which wave_slowdown ramps up linearly (> 0)", 1.0)
    signal_hold_ns: float = _f(
        "a producer CTA of this kernel keeps its slot this long after its remote store arrived (fence, counter "
        "atomic, pushes), ns", 0.0)
    signal_ns: float = _f(
        "a producer tile's counter update takes effect this long after its remote store arrived (system fence "
        "and remote atomic under the kernel's load, measured in per-CTA traces); 0 = the profile's fence_sys_ns "
        "+ remote_atomic_ns (unloaded probes), ns", 0.0)
    tile_cv: float = _f(
        "relative standard deviation of a tile's time within a wave (0 <= tile_cv < 0.5): each tile's time is "
        "multiplied by 1 + tile_cv * N(0, 1), clipped to [0.5, 1.5], drawn from the run's seeded RNG; measured as "
        "the median within-wave coefficient of variation of the mainloop in per-CTA traces (docs/validation.md); "
        "0 = every tile of a wave equally long", 0.0)
    l2_sm_tflops: float = _f(
        "rate of one CTA slot with every operand in L2, TFLOP/s; with the profile's l2_bytes > 0, a plain GEMM of "
        "this config (sequential, micro-batching, TP) is timed wave by wave from the HBM traffic of its tile order "
        "(ctasim.l2: compute at this rate plus l2_hbm_exposed x the wave's HBM time, never under the HBM time) and "
        "runs the CUTLASS order the model finds fastest, as ctahw tunes it; 0 = off (tiles take sm_tflops)", 0.0)
    cta_drift: float = _f(
        "growth per round of the spread (standard deviation) of a persistent grid's CTA start times, in tile times: "
        "the memory hierarchy charges shared panels read again as the sharers drift apart (ctasim.l2.drift_rereads); "
        "0 = lockstep waves", 0.0)
    drift_k_ref: float = _f(
        "how cta_drift scales with a GEMM's K: 0 = cta_drift tile times a round at every K (the 'tile' law); > 0 = "
        "cta_drift x drift_k_ref / K tile times, the same time a round at every K as at K = drift_k_ref (the "
        "'absolute' law registered plan 45 named; bench/long_k_drift.py)", 0.0)
    drift_k_law: str = _f(
        "with drift_k_ref > 0, how the drift follows K (ctasim.l2.DRIFT_K_LAWS): 'absolute' (cta_drift x "
        "drift_k_ref / K at every K) or 'capped' (the same above drift_k_ref, cta_drift tile times below it)",
        "absolute")
    drift_form: str = _f(
        "how the memory hierarchy charges cta_drift (ctasim.l2.DRIFT_FORMS): 'wave' (registered plan 8's: every "
        "panel shared in a wave, later sharers missing past a hard capacity), 'carried' (panels carried from the "
        "wave before are not parted and take their cached bytes off the capacity; the rest miss by the share "
        "held / (held + free capacity)) or 'interleaved' (as 'carried', a carried panel exempt only by the share "
        "1 - exp(-n tau) of its reads the L2 outlasts)", "wave")
    ticket_spread: float = _f(
        "growth per round of the span of the start times of a grid's worth of consecutive tickets, in tile times, "
        "for kernels that hand out tiles by tickets (the chain kernel's tickets design): the memory hierarchy "
        "charges a panel's later sharer that the L2 lost in between (ctasim.l2.ticket_rereads); 0 = lockstep waves", 0.0)
    ticket_law: str = _f(
        "how a ticket grid's later sharer of a panel misses (ctasim.l2.TICKET_LAWS): 'threshold' (LRU over the whole "
        "L2: all or nothing once the bytes taken in between exceed it), 'partition' (a share 1 - exp(-2 B / L2) of "
        "it, B the bytes taken in between: random replacement in one of the L2's two partitions; the H200 profiles' law "
        "from registered plan 49, nearer over plans 49 and 50, further at weights 4-6.5x the L2; the mechanism "
        "profiles' still) or 'survival' (the share the profile's measured L2 survival curve loses after B, "
        "l2_survival_taken / l2_survival_share; h200-x1-calibrated's since registered plan 53)",
        "threshold")
    ticket_state: str = _f(
        "which state a ticket grid takes under the 'threshold' ticket law where more than one is consistent "
        "(ctasim.l2.TICKET_STATES): 'thrash' (the most-missing; every profile's) or 'hold' (the least-missing: the "
        "grid keeps its reuse until that is inconsistent; registered plan 14's, and the state a half of the GPU that "
        "keeps row order's reuse is in: bench/posthoc_sm_groups.py)", "thrash")
    ticket_gap_cv: float = _f(
        "the 'survival' ticket law's spread of a later sharer's time after the sharer before, about the reach the law "
        "prices, as a coefficient of variation (lognormal, mean the reach; ctasim.l2.gap_survival): measured in "
        "per-tile traces (bench/posthoc_order_mainloop.py, gaps.csv); 0 = every sharer at the reach", 0.0)
    ticket_touched: float = _f(
        "the 'survival' ticket law's bytes pushing a panel's line out of L2 per byte taken in between its two reads "
        "(the lines the wave hits in between count too: the L2 survival probe's hot set, registered plan 57); "
        "1 = the bytes taken in alone", 1.0)
    ticket_mainloop_factor: float = _f(
        "tile-time factor of the chain kernel's tickets design on this config over the plain GEMM's compute at the "
        "same tile (its scheduler warp hands out tickets; ctasim.strategies.ctapipe.chain_tile_times), measured by a "
        "one-layer chain kernel against the plain GEMM, under the config's own ticket_law (the law prices the "
        "one-layer chain too: bench/posthoc_law_factor.py); 1 = the plain GEMM's rate", 1.0)
    cluster_m: int = _f("CTAs of a cluster along M (the persistent scheduler pairs row-blocks; ctasim.l2's order)", 1)
    cluster_n: int = _f("CTAs of a cluster along N", 1)
    source: str = _f("where the figures come from (measurement with date and machine, or datasheet)", "")

    def key(self) -> str:
        return f"{self.tile_m}x{self.tile_n}" + (f"/{self.kernel}" if self.kernel else "")

    def wave_factor(self, wave):
        """Tile-time multiplier of wave ``wave`` (scalar or numpy array) of a grid."""
        import numpy as np

        if self.wave_slowdown == 0.0:
            return np.ones_like(np.asarray(wave, dtype=float)) if np.ndim(wave) else 1.0
        return 1.0 + self.wave_slowdown * np.minimum(1.0, np.asarray(wave, dtype=float) / self.wave_slowdown_waves)

    def tile_ns(self, k: int, sm_tflops: float | None = None) -> float:
        """A tile's fixed part plus its mainloop at ``sm_tflops`` (default: the config's own)."""
        rate = self.sm_tflops if sm_tflops is None else sm_tflops
        return self.tile_fixed_ns + 2.0 * self.tile_m * self.tile_n * k / (rate * 1e3)


@dataclass(frozen=True)
class Hardware:
    """A node of GPUs: compute, links, protocol costs and collectives.

    Link model: every ordered GPU pair ``(src, dst)`` has its own channel of ``link_gbps`` for
    ``topology = "direct"``; for ``topology = "switch"`` each GPU has one egress port and one ingress
    port of ``link_gbps`` (NVSwitch), and a transfer holds both.  Transfers on a channel or port are
    served first-come-first-served (``link_sharing = "fcfs"``) or share it fairly (``"fair"``; see
    :mod:`ctasim.machine`).  A CTA's remote store of its output tile is also limited by
    ``sm_remote_store_gbps`` (what one SM's epilogue can keep in flight to a peer), and holds the CTA's
    slot for ``1 - epilogue_store_overlap`` of its duration.

    Clock model: ``sm_tflops`` is the rate with every slot busy.  A kernel whose grid keeps only
    ``active < slots`` CTA slots busy runs its tiles ``min(max_clock_boost, (slots/active)^(1/3))`` times
    faster: dynamic power grows about as the cube of the clock, so fewer busy SMs under the same power
    cap allow a higher clock, up to the boost ceiling (see docs/model.md).

    Clock regime: a rested GPU runs its kernels at full clock until its power cap engages, after
    ``clock_onset_ns`` of busy time; from then on kernel tiles take ``clock_sustained_slowdown`` times
    longer (the capped clock).  An experiment's ``regime`` says which one a prediction describes:
    ``burst`` (every GPU rested when the run starts: the onset counts from the run's start) or
    ``sustained`` (the cap holds from the start: a GPU kept busy by the runs before).  Where the profile holds a
    clock curve (``clock_curve_ns``, ``clock_curve_factor``), the burst regime follows it instead of the one step: the
    tile-time factor at each busy time averaged over measured trajectories, whose onsets spread widely (27-86 ms on
    one H200) and which step down in two or three stages; a prediction then gives the mean over where the onset falls,
    not the run at the median onset.
    """

    name: str = _f("profile name")
    gpu: str = _f("GPU model")
    gpus: int = _f("GPUs in the node")
    sm_count: int = _f("streaming multiprocessors per GPU")
    hbm_gbps: float = _f("HBM bandwidth per GPU (bytes read + written), GB/s")
    topology: str = _f("'direct' (point-to-point NVLink between each pair) or 'switch' (NVSwitch)")
    link_gbps: float = _f("bandwidth of kernel stores to a peer GPU, per direction, GB/s")
    copy_engine_gbps: float = _f("bandwidth of a copy-engine peer copy, per direction, GB/s")
    link_latency_ns: float = _f("one-way latency of a store or flag write to a peer GPU, ns")
    remote_atomic_ns: float = _f("time for an atomic on peer memory to take effect, ns")
    fence_sys_ns: float = _f("cost of a system-scope release fence after the stores complete, ns")
    poll_ns: float = _f("interval between a consumer CTA's polls of the work-queue, ns")
    launch_ns: float = _f("host launch to first CTA of a kernel on an idle stream, ns")
    kernel_gap_ns: float = _f("gap between back-to-back kernels on one stream, ns")
    event_wait_ns: float = _f("latency of a cross-GPU event dependency between streams, ns")
    allreduce_bus_gbps: float = _f("NCCL all-reduce bus bandwidth at large sizes, GB/s")
    allreduce_latency_ns: float = _f("NCCL all-reduce latency per ring step, ns")
    epilogue_store_overlap: float = _f(
        "fraction of a tile's remote-store time hidden behind the next tile's mainloop (0..1)"
    )
    sm_remote_store_gbps: float = _f(
        "rate at which one CTA's epilogue pushes its output tile into peer memory, GB/s (a per-SM limit)"
    )
    kernel_configs: tuple[KernelConfig, ...] = _f("GEMM kernel configurations and their tile rates")
    measured: bool = _f("true if the figures were measured on this machine; false for datasheet profiles")
    source: str = _f("provenance of the profile as a whole", "")
    date: str = _f("date of the measurement or of the datasheet reading", "")
    calibrated_from: str = _f(
        "the profile whose fields this one copies where it measured none (ctahw calibrate's --base); empty where the "
        "profile is not a calibration's", "")
    max_clock_boost: float = _f(
        "ceiling of the tile-rate gain of a kernel that occupies few CTA slots (power-capped clock): tiles "
        "run min(max_clock_boost, (slots / active)^(1/3)) times faster; 1 = off", 1.0)
    device_shares: int = _f(
        "0: each plan GPU is a device of its own, or an even share of one for the whole run; N = gpus >= 2: each "
        "plan GPU is one of N equal shares of ONE device (SMs, L2, HBM; experiments with shared_device only) whose "
        "chain kernels share the L2 and HBM among those computing: a tile that starts while a of the N shares "
        "compute gets N/a of this profile's l2_bytes and hbm_gbps and the clock boost of a/N of the device's CTA "
        "slots (ctasim.costs.active_share)", 0)
    clock_onset_ns: float = _f(
        "busy time, from a rested start, before the power cap slows kernel tiles (regime 'burst'); inf = never",
        math.inf)
    clock_sustained_slowdown: float = _f(
        "tile-time factor of kernels once the power cap holds the clock (>= 1; 1 = no cap)", 1.0)
    clock_curve_ns: tuple[float, ...] = _f(
        "busy times from a rested start (ns, ascending, the first >= 0) at which the burst regime's tile-time factor "
        "changes to the matching clock_curve_factor (the mean of measured clock trajectories); empty = the one step "
        "at clock_onset_ns to clock_sustained_slowdown", ())
    clock_curve_factor: tuple[float, ...] = _f(
        "tile-time factor from the matching clock_curve_ns on (each within [0.5, 2]; 1 before the first; the last "
        "holds to the end of the run)", ())
    activation_epilogue_ns_per_element: float = _f(
        "time a fused activation epilogue (gelu, silu, relu, swiglu) adds to a tile, per element of the tile's "
        "accumulator (tile_m x tile_n, before swiglu halves what is stored), ns",
        0.0)
    silu_epilogue_factor: float = _f(
        "a fused silu's epilogue cost over activation_epilogue_ns_per_element (the erf-GeLU's), measured on one "
        "machine beside it; 1 = the same", 1.0)
    relu_epilogue_factor: float = _f(
        "a fused relu's epilogue cost over activation_epilogue_ns_per_element (the erf-GeLU's), measured on one "
        "machine beside it; 1 = the same", 1.0)
    relu_input_tile_factor: float = _f(
        "tile-time factor of a GEMM whose A operand is a ReLU's output (about half its elements zero): such a GEMM "
        "draws less power and the power cap holds its clock higher; the plain GEMM on a ReLU'd A over the same GEMM on "
        "random A, rested (burst regime); 1 = off", 1.0)
    epilogue_pass_gbps: float = _f(
        "rate of an epilogue run as a kernel of its own (Layer.epilogue_fused = false: swiglu, gelu, residual), "
        "bytes read + written, GB/s; 0 = hbm_gbps", 0.0)
    rowwise_gbps: float = _f(
        "rate of a row-wise op's kernel (layernorm, rmsnorm), bytes read + written, GB/s; 0 = hbm_gbps", 0.0)
    norm_stats_epilogue_ns_per_element: float = _f(
        "the LayerNorm fold, producer side: time a residual epilogue that also adds every row's sum and sum of squares "
        "into the next layer's row statistics adds over the residual epilogue alone, per element of the tile, ns",
        0.0)
    norm_fold_epilogue_ns_per_element: float = _f(
        "the LayerNorm fold, consumer side: time folding LayerNorm into an activation epilogue (the row statistics' "
        "and column terms' loads, rstd (acc - mean c1) + c2) adds over the activation alone, per element of the tile, "
        "ns", 0.0)
    local_signal_ns: float = _f(
        "intra-GPU CTA-pipelining: a producer tile's stores complete and its GPU-scope release reduction on a "
        "counter in the same GPU's memory, after the epilogue issued the stores; the CTA's MMA threads wait for "
        "it before their next tile (cooperative kernel), ns", 0.0)
    l2_bytes: float = _f(
        "L2 capacity that reuse distances of GEMM operand panels are measured against (ctasim.l2), bytes; 0 = no "
        "memory hierarchy in the model (every tile at its config's sm_tflops)", 0.0)
    l2_survival_taken: tuple[float, ...] = _f(
        "the L2 survival curve's points (ctasim.l2's 'survival' ticket law): bytes taken in from HBM after a line was "
        "read, in L2 sizes (l2_bytes), ascending from 0; measured by the L2 survival probe (ctahw.l2probe); empty = no "
        "curve", ())
    l2_survival_share: tuple[float, ...] = _f(
        "the share of lines another SM still finds in L2 after the matching l2_survival_taken (each within [0, 1], "
        "not rising; linear between points, the last held beyond)", ())
    l2_reuse_law: str = _f(
        "how a GEMM panel's reuse across waves is priced from its reuse distance (ctasim.l2.REUSE_LAWS): 'lru' (a hit "
        "while the distance fits l2_bytes) or 'survival' (the share the L2 survival curve l2_survival_* keeps after "
        "that many bytes; registered plan 67)", "lru")
    l2_hbm_exposed: float = _f(
        "share of a GEMM wave's HBM time (its operand misses and stores at hbm_gbps) that its math does not hide "
        "(0 = roofline max(compute, HBM), 1 = serial); used with l2_bytes > 0", 0.0)
    l2_hbm_exposed_gbps: float = _f(
        "the rate (GB/s) the exposed share of a wave's HBM bytes is charged at, where it is not hbm_gbps (0 = "
        "hbm_gbps): a GPU whose HBM is slower than the measured one's but whose exposed loads are latency-bound "
        "keeps the measured GPU's rate here (ctasim.l2.wave_ns); the roofline's HBM time stays at hbm_gbps", 0.0)
    l2_sm_read_gbps: float = _f(
        "the rate (GB/s) all SMs together read A and W tiles from the L2 at; a wave of the memory hierarchy then takes "
        "at least its tiles' L2 reads at it (a CTA reads tile_m x K of A, shared by a 1xN cluster's multicast, and "
        "tile_n x K of W, shared by an Mx1 cluster's; ctasim.costs.order_waves). 0 = not bounded (every profile "
        "today: the tensor-copy probe, the GEMM's own loads (ctahw.l2rate.measure_tiles), draws 12.7-12.8 TB/s up to "
        "12 tiles a row and 8.2-8.9 from 14 on (two H100s), and the 1x1 first wave has no excess up to 15 tiles a row "
        "(registered plans 91 and 92): one rate cannot hold that step)",
        0.0)
    link_sharing: str = _f(
        "how concurrent transfers share a link channel: 'fcfs' = one after another in issue order, each at the "
        "full rate (the first of 132 simultaneous stores ends after 1/132 of the batch, the last after all of "
        "it); 'fair' = processor sharing: n active transfers each get 1/n of the channel, capped by the per-SM "
        "store rate (max-min fair), so simultaneous equal stores all end together (the consumer's first-tile "
        "delay in the measured 2xH200 per-CTA traces points to this for the first wave; docs/validation.md). "
        "'fair' needs epilogue_store_overlap = 0 (a store's end is known only when it ends)", "fcfs")

    def config(self, tile_m: int, tile_n: int, where: str = "hardware", kernel: str = "") -> KernelConfig:
        """The config of tile shape ``tile_m x tile_n`` and kernel variant ``kernel`` ('' = default kernel); a
        variant ``family-...`` with no config of its own takes its family's (``KernelConfig.kernel``)."""
        family = kernel.split("-", 1)[0]
        for want in (kernel, family) if family != kernel else (kernel,):
            for c in self.kernel_configs:
                if c.tile_m == tile_m and c.tile_n == tile_n and c.kernel == want:
                    return c
        have = ", ".join(c.key() for c in self.kernel_configs)
        want = f"{tile_m}x{tile_n}" + (f"/{kernel}" if kernel else "")
        raise SpecError(where, "tile", f"profile {self.name!r} has no kernel config {want} (has {have})")

    @property
    def slots_per_gpu_max(self) -> int:
        return self.sm_count * max(c.cta_slots_per_sm for c in self.kernel_configs)

    def with_tickets(self, **changes) -> "Hardware":
        """This profile with ``changes`` (``KernelConfig`` fields) on every ticket-scheduled config
        (``ticket_spread`` > 0), the others as they are: what-ifs of the tickets design (no validation)."""
        return dataclasses.replace(self, kernel_configs=tuple(
            dataclasses.replace(c, **changes) if c.ticket_spread > 0 else c for c in self.kernel_configs))

    def with_ticket_law(self, law: str, mainloop_factor: float | None = None) -> "Hardware":
        """This profile with every ticket-scheduled config (``ticket_spread`` > 0) under ticket law ``law``
        (ctasim.l2.TICKET_LAWS), and with ``ticket_mainloop_factor`` = ``mainloop_factor`` where one is given: the
        comparisons of the laws on one profile (bench/posthoc_ticket_law.py, bench/posthoc_l2_survival.py)."""
        from ctasim import l2  # noqa: PLC0415

        if law not in l2.TICKET_LAWS:
            raise ValueError(f"ticket law must be one of {', '.join(l2.TICKET_LAWS)}, got {law!r}")
        if law == "survival" and not self.l2_survival_taken:
            raise ValueError(f"profile {self.name!r} has no L2 survival curve (l2_survival_taken) for the "
                             "'survival' ticket law")
        change = {"ticket_law": law} if mainloop_factor is None else {"ticket_law": law,
                                                                     "ticket_mainloop_factor": mainloop_factor}
        if law != "survival":  # the gap spread and the touched bytes refine the survival law only
            change.update(ticket_gap_cv=0.0, ticket_touched=1.0)
        return self.with_tickets(**change)


# --------------------------------------------------------------------------------------------------
# Workload


@dataclass(frozen=True)
class Layer:
    """One GEMM layer ``Y[M,N] = X[M,K] @ W[K,N]`` with its tiling and fused/row-wise ops.

    ``epilogue`` ops are applied per output tile inside the GEMM's epilogue (activation, residual add);
    ``swiglu`` is a gated activation: the GEMM's N columns are the gate and up projections, paired within each
    tile (of tile ``t``'s ``tile_n`` columns the first half is gate, the second half up), and the layer stores
    ``silu(gate) * up``, N / 2 columns (:attr:`out_n`; output columns ``t * tile_n / 2 ...`` come from tile
    column ``t``). With ``epilogue_fused = false`` the GEMM stores its N columns and a separate elementwise kernel
    applies the ops (read N columns, write :attr:`out_n`), as ``ctahw`` runs ``swiglu``. ``rowwise`` is an op
    over whole output rows (LayerNorm), run once a row-block of the output is complete, before anything reads it.
    ``residual_source`` says what a ``residual`` op adds: the workload's input (layer 0's M x K activation), or the
    residual stream (an M x N activation that enters the workload beside its input: at a transformer block boundary,
    the previous block's output, which its down-projection adds before the next block's LayerNorm).
    """

    m: int = _f("rows (tokens)")
    k: int = _f("reduction dimension (input features)")
    n: int = _f("output features")
    tile_m: int = _f("CTA tile rows", 128)
    tile_n: int = _f("CTA tile columns", 256)
    raster: str = _f("order in which a producer walks its tiles: 'row' (row-major) or 'column'", "row")
    epilogue: tuple[str, ...] = _f("ops fused into the epilogue: gelu, relu, silu, residual, swiglu (gated: stores "
                                   "N / 2 columns)", ())
    rowwise: str = _f("row-wise op over the layer's output: '', 'layernorm' or 'rmsnorm'", "")
    residual_source: str = _f("what a residual op adds: 'input' (the workload's input, layer 0's M x K) or 'stream' "
                              "(the residual stream: an M x N activation given beside the input)", "input")
    epilogue_fused: bool = _f("true: the epilogue ops run inside the GEMM's epilogue; false: the GEMM stores its N "
                              "columns and a separate elementwise kernel applies them (one read of N columns, one "
                              "write of the stored columns)", True)

    @property
    def gated(self) -> bool:
        """True when the epilogue has a gated op (swiglu): the layer stores half the GEMM's columns."""
        return any(op in GATED_OPS for op in self.epilogue)

    @property
    def out_n(self) -> int:
        """Columns the layer stores (what the next layer reads as K): N, or N / 2 after a gated epilogue."""
        return self.n // 2 if self.gated else self.n

    @property
    def out_tile_n(self) -> int:
        """Columns one output tile of the GEMM stores: ``tile_n``, or ``tile_n / 2`` after a fused gated epilogue."""
        return self.tile_n // 2 if self.gated and self.epilogue_fused else self.tile_n

    @property
    def epilogue_pass(self) -> bool:
        """True when the epilogue ops run as their own elementwise kernel after the GEMM (``epilogue_fused`` off)."""
        return bool(self.epilogue) and not self.epilogue_fused

    @property
    def tiles_m(self) -> int:
        return self.m // self.tile_m

    @property
    def tiles_n(self) -> int:
        return self.n // self.tile_n

    @property
    def tiles(self) -> int:
        return self.tiles_m * self.tiles_n

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k


@dataclass(frozen=True)
class Workload:
    """A chain of GEMM layers; layer i+1 reads layer i's output."""

    name: str = _f("workload name")
    dtype: str = _f("element type: bf16, fp16, fp8, fp32", "bf16")
    layers: tuple[Layer, ...] = _f("the layers, in order", ())
    source: str = _f("what the workload represents", "")

    @property
    def elem_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def flops(self) -> float:
        return sum(l.flops for l in self.layers)

    @property
    def stream_cols(self) -> int:
        """Columns of the residual stream (the M x N activation the ``residual_source = 'stream'`` layers add); 0 when
        no layer adds it."""
        return next((l.out_n for l in self.layers if "residual" in l.epilogue and l.residual_source == "stream"), 0)


# --------------------------------------------------------------------------------------------------
# Strategy and experiment


@dataclass(frozen=True)
class Strategy:
    """How a workload is placed on GPUs and ordered in time.

    kinds: ``sequential`` (all layers on GPU 0); ``microbatch`` (layer i on GPU i, M cut into chunks,
    each chunk handed to the next GPU by a copy-engine transfer); ``tp`` (Megatron column- then
    row-parallel pairs over ``tp_degree`` GPUs, all-reduce after each pair); ``ctapipe`` (layer i on
    GPU i, all layers run at once, tiles flow through scoreboards and work-queues); ``hybrid``
    (``tp_degree``-way tensor parallel stages, CTA-pipelined between stages).
    """

    kind: str = _f("one of sequential, microbatch, tp, ctapipe, hybrid")
    name: str = _f("label in tables; defaults to the kind", "")
    chunks: tuple[int, ...] = _f("microbatch: chunk counts to sweep; the best is reported", (2, 4, 8, 16))
    tp_degree: int = _f("tp / hybrid: GPUs per tensor-parallel group (0: all GPUs for tp)", 0)
    tile_source: str = _f("ctapipe: 'queue' (work-queue pops) or 'static' (fixed order, wait per tile)", "queue")
    persistent: bool = _f("ctapipe: persistent CTAs looping over tiles (else one CTA per tile)", True)
    raster: str = _f("override every layer's producer raster order ('' keeps the workload's)", "")
    kernels: tuple[str, ...] = _f(
        "ctapipe: kernel variant per layer (a `kernel` of the profile's kernel configs, e.g. 'ctapipe-2x1'); "
        "layers past the list take its last entry; empty: the default kernel", ())
    counter_rows: int = _f(
        "ctapipe: rows of a layer's output one scoreboard counter covers (0: one consumer row-block); a multiple "
        "of the consumer's tile_m; a counter's tiles are pushed column by column, so consecutive pops share a "
        "column (what a consumer with 2x1 clusters needs)", 0)
    variant: str = _f(
        "ctapipe: a ctahw kernel variant by name (ctasim.variants.VARIANTS, e.g. 'cutlass_ctapipe_w21g4'): sets "
        "kernels, tile_source, counter_rows, persistent = false and the tile orders the GPUs run; '' = none", "")
    gpus: int = _f(
        "ctapipe: GPUs the layers are placed on (layer i on GPU i mod gpus); 0: one GPU per layer. 1: intra-GPU "
        "CTA-pipelining, every layer in one persistent kernel on GPU 0 (the chain kernel: tiles taken in one "
        "topological order, by tickets (tile_source 'queue') or CTA by CTA (tile_source 'static'), a tile waiting "
        "for its row-block of the layer before; layers of one square shape; persistent does not apply). "
        "1 < gpus < layers: a ring, one such kernel per GPU running its layers, outputs stored into the next GPU's "
        "memory and signalled there (tickets only; ctahw.chain's ring kernels)", 0)
    placement: str = _f(
        "ctapipe: '' (the default: one GPU per layer, or a ring where 1 < gpus < layers) or 'ring' (the chain "
        "kernel on every GPU, layer l on GPU l mod gpus, also where there are as many GPUs as layers: the "
        "persistent 2-GPU pair of a 2-layer chain); needs gpus >= 2, or 0: one GPU per layer of each case (a "
        "layer-count sweep, the paper's Fig. 4 placement)", "")
    chain_group: int = _f(
        "ctapipe with the chain kernel (gpus = 1, or a ring): row-blocks per group of its tile order within a layer "
        "(a group's "
        "tiles column by column; the largest even count <= this that divides the row-blocks is used); 1: row order; "
        "0: the default (ctasim.plan.CHAIN_ROW_GROUP)", 0)

    @property
    def label(self) -> str:
        return self.name or self.kind


@dataclass(frozen=True)
class Experiment:
    """A set of cases (workload x strategies) on one hardware profile, optionally swept over an axis."""

    name: str = _f("experiment name")
    hardware: Hardware = _f("hardware profile")
    workload: Workload = _f("base workload")
    strategies: tuple[Strategy, ...] = _f("strategies to compare")
    sweep: tuple[tuple[str, tuple[int, ...]], ...] = _f(
        "axes to sweep: 'm' (rows of every layer) or 'layers' (chain length = GPUs)", ()
    )
    gpus: int = _f("GPUs used (0: as many as the strategy needs, at most the node's)", 0)
    description: str = _f("what the experiment reproduces", "")
    regime: str = _f(
        "clock regime: 'burst' (GPUs rested when the run starts; the profile's clock_onset_ns counts from it) "
        "or 'sustained' (the power cap holds from the start)", "burst")
    shared_device: bool = _f(
        "the plan's GPUs are chain kernels sharing one device, each with its share of the SMs (a ring's one-GPU "
        "test; its profile describes one share: ctasim.profiles' h200-x1-sharedN): ctahw runs every plan GPU on device "
        "0; only ctapipe strategies with placement 'ring' are allowed", False)


# --------------------------------------------------------------------------------------------------
# Loading and validation


def require(cond: bool, where: str, fld: str, problem: str) -> None:
    if not cond:
        raise SpecError(where, fld, problem)


def build_section(cls, data: Mapping[str, Any], where: str, prefix: str, **extra) -> Any:
    """Build dataclass ``cls`` from ``data``: unknown fields, missing fields and wrong types are errors."""
    names = {f.name: f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in names or key in extra:
            close = [n for n in names if n not in extra and (n.startswith(key[:3]) or key.startswith(n[:3]))]
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise SpecError(where, prefix + key, f"unknown field{hint}")
    kwargs: dict[str, Any] = dict(extra)
    for name, f in names.items():
        if name in extra:
            continue
        if name not in data:
            if f.default is dataclasses.MISSING:
                raise SpecError(where, prefix + name, "missing (" + f.metadata.get("help", "") + ")")
            continue
        value = data[name]
        want = f.default if f.default is not dataclasses.MISSING else None
        kwargs[name] = coerce(value, f.type, want, where, prefix + name)
    return cls(**kwargs)


def coerce(value: Any, typ: Any, default: Any, where: str, fld: str) -> Any:
    t = typ if isinstance(typ, str) else getattr(typ, "__name__", str(typ))
    if t == "bool":
        require(isinstance(value, bool), where, fld, f"expected true/false, got {value!r}")
        return value
    if t == "int":
        require(isinstance(value, int) and not isinstance(value, bool), where, fld, f"expected an integer, got {value!r}")
        return value
    if t == "float":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (
            math.isfinite(value) or (value == math.inf and default == math.inf))  # inf only where it is the default
        require(ok, where, fld, f"expected a number, got {value!r}")
        return float(value)
    if t == "str":
        require(isinstance(value, str), where, fld, f"expected a string, got {value!r}")
        return value
    if t.startswith("tuple[str"):
        require(isinstance(value, list) and all(isinstance(v, str) for v in value), where, fld,
                 f"expected a list of strings, got {value!r}")
        return tuple(value)
    if t.startswith("tuple[float"):
        require(isinstance(value, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                and math.isfinite(v) for v in value), where, fld,
                 f"expected a list of numbers, got {value!r}")
        return tuple(float(v) for v in value)
    if t.startswith("tuple[int"):
        if isinstance(value, int) and not isinstance(value, bool):
            value = [value]
        require(isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value),
                 where, fld, f"expected a list of integers, got {value!r}")
        return tuple(value)
    raise SpecError(where, fld, f"cannot read a value of type {t}")  # pragma: no cover - programming error


def read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise SpecError(str(path), "(file)", "no such file") from None
    except IsADirectoryError:
        raise SpecError(str(path), "(file)", "is a folder, not a TOML file") from None
    except UnicodeDecodeError:
        raise SpecError(str(path), "(file)", "not a text file (not UTF-8): not a TOML spec") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(str(path), "(file)", f"not valid TOML: {str(e).splitlines()[0]}") from None
    except OSError as e:
        raise SpecError(str(path), "(file)", f"cannot read ({e.strerror})") from None


def table_of(data: Mapping, key: str, where: str) -> dict:
    require(key in data, where, key, f"missing [{key}] table")
    require(isinstance(data[key], dict), where, key, "expected a table")
    return data[key]


def hardware_from_dict(data: Mapping[str, Any], where: str = "<hardware>") -> Hardware:
    """Build and validate a :class:`Hardware` from the ``[hardware]`` table's contents."""
    data = dict(data)
    raw_configs = data.pop("kernel_config", None)
    require(isinstance(raw_configs, list) and raw_configs, where, "hardware.kernel_config",
             "at least one [[hardware.kernel_config]] table is required")
    configs = tuple(build_section(KernelConfig, c, where, f"hardware.kernel_config[{i}].") for i, c in enumerate(raw_configs))
    hw = build_section(Hardware, data, where, "hardware.", kernel_configs=configs)
    validate_hardware(hw, where)
    return hw


def validate_hardware(hw: Hardware, where: str) -> None:
    from ctasim import l2  # noqa: PLC0415  (numpy; the spec module itself needs none)

    p = "hardware."
    require(hw.gpus >= 1, where, p + "gpus", f"must be >= 1, got {hw.gpus}")
    require(hw.sm_count >= 1, where, p + "sm_count", f"must be >= 1, got {hw.sm_count}")
    require(hw.topology in TOPOLOGIES, where, p + "topology", f"must be one of {TOPOLOGIES}, got {hw.topology!r}")
    for name in ("hbm_gbps", "link_gbps", "copy_engine_gbps", "allreduce_bus_gbps", "sm_remote_store_gbps"):
        v = getattr(hw, name)
        require(v > 0, where, p + name, f"must be positive, got {v}")
    for name in ("link_latency_ns", "remote_atomic_ns", "fence_sys_ns", "poll_ns", "launch_ns",
                 "kernel_gap_ns", "event_wait_ns", "allreduce_latency_ns", "local_signal_ns"):
        v = getattr(hw, name)
        require(v >= 0, where, p + name, f"must be >= 0, got {v}")
    require(hw.max_clock_boost >= 1.0, where, p + "max_clock_boost", f"must be >= 1, got {hw.max_clock_boost}")
    require(hw.device_shares == 0 or (hw.device_shares >= 2 and hw.device_shares == hw.gpus), where,
            p + "device_shares", f"must be 0 or the profile's gpus ({hw.gpus}, >= 2: every plan GPU a share of one "
            f"device), got {hw.device_shares}")
    require(hw.clock_onset_ns >= 0, where, p + "clock_onset_ns", f"must be >= 0, got {hw.clock_onset_ns}")
    require(math.isfinite(hw.clock_sustained_slowdown) and hw.clock_sustained_slowdown >= 1.0, where,
             p + "clock_sustained_slowdown", f"must be >= 1, got {hw.clock_sustained_slowdown}")
    require(len(hw.clock_curve_ns) == len(hw.clock_curve_factor), where, p + "clock_curve_factor",
             f"needs one factor per clock_curve_ns entry ({len(hw.clock_curve_ns)}), got {len(hw.clock_curve_factor)}")
    require(all(t >= 0 for t in hw.clock_curve_ns) and all(a < b for a, b in zip(hw.clock_curve_ns, hw.clock_curve_ns[1:])),
             where, p + "clock_curve_ns", "must be >= 0 and strictly ascending")
    require(len(hw.l2_survival_taken) == len(hw.l2_survival_share), where, p + "l2_survival_share",
             f"needs one share per l2_survival_taken entry ({len(hw.l2_survival_taken)}), got "
             f"{len(hw.l2_survival_share)}")
    require(not hw.l2_survival_taken or (hw.l2_survival_taken[0] == 0 and all(
        a < b for a, b in zip(hw.l2_survival_taken, hw.l2_survival_taken[1:]))), where, p + "l2_survival_taken",
        "must start at 0 and be strictly ascending")
    require(all(0 <= v <= 1 for v in hw.l2_survival_share) and all(
        a >= b for a, b in zip(hw.l2_survival_share, hw.l2_survival_share[1:])), where, p + "l2_survival_share",
        "each must be within [0, 1], and none above the one before")
    require(all(0.5 <= f <= 2.0 for f in hw.clock_curve_factor), where, p + "clock_curve_factor",
             f"each must be within [0.5, 2], got {[f for f in hw.clock_curve_factor if not 0.5 <= f <= 2.0][:1]}")
    require(math.isfinite(hw.relu_input_tile_factor) and 0.5 <= hw.relu_input_tile_factor <= 1.5, where,
             p + "relu_input_tile_factor", f"must be within [0.5, 1.5], got {hw.relu_input_tile_factor}")
    for name in ("norm_stats_epilogue_ns_per_element", "norm_fold_epilogue_ns_per_element", "epilogue_pass_gbps",
                 "rowwise_gbps", "silu_epilogue_factor", "relu_epilogue_factor"):
        v = getattr(hw, name)
        require(math.isfinite(v) and v >= 0, where, p + name, f"must be >= 0, got {v}")
    require(math.isfinite(hw.activation_epilogue_ns_per_element) and hw.activation_epilogue_ns_per_element >= 0,
             where, p + "activation_epilogue_ns_per_element",
             f"must be >= 0, got {hw.activation_epilogue_ns_per_element}")
    require(math.isfinite(hw.l2_bytes) and hw.l2_bytes >= 0, where, p + "l2_bytes",
             f"must be >= 0, got {hw.l2_bytes}")
    require(0.0 <= hw.l2_hbm_exposed <= 1.0, where, p + "l2_hbm_exposed", f"must be within [0, 1], got {hw.l2_hbm_exposed}")
    require(hw.l2_reuse_law in l2.REUSE_LAWS, where, p + "l2_reuse_law",
            f"must be one of {', '.join(l2.REUSE_LAWS)}, got {hw.l2_reuse_law!r}")
    require(hw.l2_reuse_law != "survival" or hw.l2_survival_taken, where, p + "l2_reuse_law",
            "'survival' needs the L2 survival curve (l2_survival_taken, l2_survival_share)")
    require(hw.l2_hbm_exposed_gbps >= 0.0, where, p + "l2_hbm_exposed_gbps",
            f"must be >= 0 (0: hbm_gbps), got {hw.l2_hbm_exposed_gbps}")
    require(hw.l2_sm_read_gbps >= 0.0, where, p + "l2_sm_read_gbps",
            f"must be >= 0 (0: not bounded), got {hw.l2_sm_read_gbps}")
    require(hw.link_sharing in ("fcfs", "fair"), where, p + "link_sharing",
             f"must be one of ('fcfs', 'fair'), got {hw.link_sharing!r}")
    require(hw.link_sharing != "fair" or hw.epilogue_store_overlap == 0.0, where, p + "link_sharing",
             f"'fair' needs epilogue_store_overlap = 0 (a store's end is known only when it ends; "
             f"got {hw.epilogue_store_overlap})")
    require(0.0 <= hw.epilogue_store_overlap <= 1.0, where, p + "epilogue_store_overlap",
             f"must be within [0, 1], got {hw.epilogue_store_overlap}")
    seen = set()
    for i, c in enumerate(hw.kernel_configs):
        q = f"{p}kernel_config[{i}]."
        for name in ("tile_m", "tile_n", "tile_k", "cta_slots_per_sm"):
            require(getattr(c, name) >= 1, where, q + name, f"must be >= 1, got {getattr(c, name)}")
        require(c.sm_tflops > 0, where, q + "sm_tflops", f"must be positive, got {c.sm_tflops}")
        require(c.tile_fixed_ns >= 0, where, q + "tile_fixed_ns", f"must be >= 0, got {c.tile_fixed_ns}")
        require(c.cta_launch_ns >= 0, where, q + "cta_launch_ns", f"must be >= 0, got {c.cta_launch_ns}")
        require(c.kernel_fixed_ns >= 0, where, q + "kernel_fixed_ns", f"must be >= 0, got {c.kernel_fixed_ns}")
        require(c.wave_slowdown >= 0, where, q + "wave_slowdown", f"must be >= 0, got {c.wave_slowdown}")
        require(c.signal_ns >= 0, where, q + "signal_ns", f"must be >= 0, got {c.signal_ns}")
        require(c.wave_slowdown_waves > 0, where, q + "wave_slowdown_waves",
                 f"must be > 0, got {c.wave_slowdown_waves}")
        require(c.signal_hold_ns >= 0, where, q + "signal_hold_ns", f"must be >= 0, got {c.signal_hold_ns}")
        require(0.0 <= c.tile_cv < 0.5, where, q + "tile_cv", f"must be within [0, 0.5), got {c.tile_cv}")
        require(math.isfinite(c.l2_sm_tflops) and c.l2_sm_tflops >= 0, where, q + "l2_sm_tflops",
                 f"must be >= 0, got {c.l2_sm_tflops}")
        require(math.isfinite(c.cta_drift) and c.cta_drift >= 0, where, q + "cta_drift",
                 f"must be >= 0, got {c.cta_drift}")
        require(math.isfinite(c.drift_k_ref) and c.drift_k_ref >= 0, where, q + "drift_k_ref",
                 f"must be >= 0, got {c.drift_k_ref}")
        require(c.drift_k_law in l2.DRIFT_K_LAWS, where, q + "drift_k_law",
                f"must be one of {', '.join(l2.DRIFT_K_LAWS)}, got {c.drift_k_law!r}")
        require(c.drift_form in l2.DRIFT_FORMS, where, q + "drift_form",
                f"must be one of {', '.join(l2.DRIFT_FORMS)}, got {c.drift_form!r}")
        require(c.ticket_law in l2.TICKET_LAWS, where, q + "ticket_law",
                f"must be one of {', '.join(l2.TICKET_LAWS)}, got {c.ticket_law!r}")
        require(c.ticket_law != "survival" or hw.l2_survival_taken, where, q + "ticket_law",
                "'survival' needs the profile's L2 survival curve (l2_survival_taken, l2_survival_share)")
        require(math.isfinite(c.ticket_gap_cv) and c.ticket_gap_cv >= 0, where, q + "ticket_gap_cv",
                f"must be >= 0, got {c.ticket_gap_cv}")
        require(math.isfinite(c.ticket_touched) and c.ticket_touched > 0, where, q + "ticket_touched",
                f"must be > 0, got {c.ticket_touched}")
        require(c.ticket_state in l2.TICKET_STATES, where, q + "ticket_state",
                f"must be one of {', '.join(l2.TICKET_STATES)}, got {c.ticket_state!r}")
        require(c.ticket_law == "threshold" or c.ticket_state == "thrash", where, q + "ticket_state",
                f"the state is the 'threshold' ticket law's choice, not {c.ticket_law!r}'s")
        require(c.ticket_law == "survival" or (c.ticket_gap_cv == 0 and c.ticket_touched == 1), where,
                q + "ticket_gap_cv", f"ticket_gap_cv and ticket_touched refine the 'survival' ticket law only, "
                f"not {c.ticket_law!r}")
        require(math.isfinite(c.ticket_spread) and c.ticket_spread >= 0, where, q + "ticket_spread",
                 f"must be >= 0, got {c.ticket_spread}")
        require(math.isfinite(c.ticket_mainloop_factor) and 0.8 <= c.ticket_mainloop_factor <= 1.25, where,
                q + "ticket_mainloop_factor", f"must be within [0.8, 1.25], got {c.ticket_mainloop_factor}")
        for name in ("cluster_m", "cluster_n"):
            require(getattr(c, name) >= 1, where, q + name, f"must be >= 1, got {getattr(c, name)}")
        require(c.key() not in seen, where, q + "tile_m", f"duplicate kernel config {c.key()}")
        seen.add(c.key())


def layer_from_dict(data: Mapping[str, Any], where: str, prefix: str) -> Layer:
    data = dict(data)
    tile = data.pop("tile", None)
    if tile is not None:
        require(isinstance(tile, list) and len(tile) == 2 and all(isinstance(t, int) for t in tile), where,
                 prefix + "tile", f"expected [tile_m, tile_n], got {tile!r}")
        data.setdefault("tile_m", tile[0])
        data.setdefault("tile_n", tile[1])
    layer = build_section(Layer, data, where, prefix)
    validate_layer(layer, where, prefix)
    return layer


def validate_layer(layer: Layer, where: str, prefix: str) -> None:
    for name in ("m", "k", "n", "tile_m", "tile_n"):
        v = getattr(layer, name)
        require(v >= 1, where, prefix + name, f"must be >= 1, got {v}")
    require(layer.m % layer.tile_m == 0, where, prefix + "m",
             f"M={layer.m} is not divisible by tile_m={layer.tile_m}")
    require(layer.n % layer.tile_n == 0, where, prefix + "n",
             f"N={layer.n} is not divisible by tile_n={layer.tile_n}")
    require(layer.raster in RASTER_ORDERS, where, prefix + "raster",
             f"must be one of {RASTER_ORDERS}, got {layer.raster!r}")
    for op in layer.epilogue:
        require(op in EPILOGUE_OPS, where, prefix + "epilogue", f"unknown op {op!r} (known: {EPILOGUE_OPS})")
    if layer.gated:
        require(len(layer.epilogue) == 1, where, prefix + "epilogue",
                 f"a gated op stands alone in the epilogue, got {list(layer.epilogue)}")
        require(layer.tile_n % 2 == 0, where, prefix + "tile_n",
                 f"swiglu pairs gate and up columns within a tile: tile_n={layer.tile_n} must be even")
    require(layer.rowwise in ("",) + ROWWISE_OPS, where, prefix + "rowwise",
             f"unknown row-wise op {layer.rowwise!r} (known: {ROWWISE_OPS})")
    require(layer.residual_source in RESIDUAL_SOURCES, where, prefix + "residual_source",
             f"must be one of {RESIDUAL_SOURCES}, got {layer.residual_source!r}")
    require(layer.residual_source == "input" or "residual" in layer.epilogue, where, prefix + "residual_source",
             "names what a residual op adds, but the layer's epilogue has no residual")


def workload_from_dict(data: Mapping[str, Any], where: str = "<workload>") -> Workload:
    """Build a workload from a ``[workload]`` table.

    Either explicit ``[[workload.layer]]`` tables, or the chain shorthand ``layers = L`` with ``m``,
    ``k``, ``n`` (and tile/raster/epilogue/rowwise) shared by every layer.
    """
    data = dict(data)
    explicit = data.pop("layer", None)
    shared_keys = ("m", "k", "n", "tile", "tile_m", "tile_n", "raster", "epilogue", "rowwise", "epilogue_fused",
                   "residual_source")
    shared = {k: data.pop(k) for k in shared_keys if k in data}
    count = data.pop("layers", None)
    if explicit is not None:
        require(count is None and not shared, where, "workload.layers",
                 "give either [[workload.layer]] tables or the chain shorthand (layers, m, k, n), not both")
        require(isinstance(explicit, list) and explicit, where, "workload.layer", "expected a list of tables")
        layers = tuple(layer_from_dict(l, where, f"workload.layer[{i}].") for i, l in enumerate(explicit))
    else:
        require(isinstance(count, int) and not isinstance(count, bool) and count >= 1, where, "workload.layers",
                 f"expected the number of layers (>= 1), got {count!r}")
        base = layer_from_dict(shared, where, "workload.")
        layers = (base,) * count
    wl = build_section(Workload, data, where, "workload.", layers=layers)
    require(wl.dtype in DTYPE_BYTES, where, "workload.dtype", f"must be one of {tuple(DTYPE_BYTES)}, got {wl.dtype!r}")
    validate_chain(wl, where)
    return wl


def validate_chain(wl: Workload, where: str) -> None:
    for i in range(1, len(wl.layers)):
        a, b = wl.layers[i - 1], wl.layers[i]
        require(a.m == b.m, where, f"workload.layer[{i}].m", f"M={b.m} differs from the previous layer's M={a.m}")
        require(a.out_n == b.k, where, f"workload.layer[{i}].k",
                 f"K={b.k} must equal the previous layer's stored columns {a.out_n} (layer {i} reads layer {i-1}'s "
                 f"output{'; its swiglu stores N/2' if a.out_n != a.n else ''})")
    for i, layer in enumerate(wl.layers):
        if "residual" in layer.epilogue and layer.residual_source == "stream":
            require(layer.out_n == wl.stream_cols, where, f"workload.layer[{i}].n",
                     f"adds the residual stream of {wl.stream_cols} columns to its {layer.out_n} (one stream per "
                     f"workload)")


def strategy_from_dict(data: Mapping[str, Any], where: str, prefix: str) -> Strategy:
    s = build_section(Strategy, data, where, prefix)
    require(s.kind in STRATEGY_KINDS, where, prefix + "kind", f"unknown strategy {s.kind!r} (known: {STRATEGY_KINDS})")
    require(s.chunks and all(c >= 1 for c in s.chunks), where, prefix + "chunks", f"chunk counts must be >= 1, got {s.chunks}")
    require(s.tp_degree >= 0, where, prefix + "tp_degree", f"must be >= 0, got {s.tp_degree}")
    require(s.tile_source in TILE_SOURCES, where, prefix + "tile_source",
             f"must be one of {TILE_SOURCES}, got {s.tile_source!r}")
    require(s.counter_rows >= 0, where, prefix + "counter_rows", f"must be >= 0, got {s.counter_rows}")
    require(s.raster in ("",) + RASTER_ORDERS, where, prefix + "raster", f"must be one of {RASTER_ORDERS}, got {s.raster!r}")
    require(not s.variant or s.kind == "ctapipe", where, prefix + "variant", "only a ctapipe strategy names a variant")
    require(s.gpus >= 0, where, prefix + "gpus", f"must be >= 0, got {s.gpus}")
    require(not s.gpus or s.kind == "ctapipe", where, prefix + "gpus", "only a ctapipe strategy places its layers")
    require(not (s.gpus and s.variant), where, prefix + "gpus",
             "a named variant runs one layer per GPU; gpus applies to the chain kernel (gpus = 1)")
    require(s.chain_group >= 0, where, prefix + "chain_group", f"must be >= 0, got {s.chain_group}")
    require(s.placement in PLACEMENTS, where, prefix + "placement",
            f"must be one of {PLACEMENTS}, got {s.placement!r}")
    require(not s.placement or (s.kind == "ctapipe" and s.gpus != 1), where, prefix + "placement",
            "placement 'ring' is a ctapipe strategy's, on gpus >= 2 or 0 (one GPU per layer; gpus = 1 is the chain "
            "kernel on one GPU)")
    require(not s.chain_group or (s.kind == "ctapipe" and (s.gpus >= 1 or s.placement == "ring")), where,
            prefix + "chain_group",
            "only the chain kernel (a ctapipe strategy with gpus = 1, or a ring) has a chain order")
    if s.kind == "hybrid":
        require(s.tp_degree >= 1, where, prefix + "tp_degree", "hybrid needs tp_degree >= 1")
    return s


def resolve_ref(ref: str, kind: str, base: Path | None) -> Path:
    """A spec reference: a path (absolute or relative to the referring file) or a name in specs/<kind>/."""
    p = Path(ref)
    candidates = [p] if p.is_absolute() else ([base / p] if base else []) + [Path.cwd() / p]
    candidates += [SPECS_DIR / kind / f"{ref}.toml", SPECS_DIR / kind / ref]
    for c in candidates:
        if c.is_file():
            return c
    raise SpecError(str(base or "<spec>"), kind, f"no {kind} spec named {ref!r} (see `ctasim list`)")


def load_hardware(ref: str | Path, base: Path | None = None) -> Hardware:
    path = resolve_ref(str(ref), "hardware", base)
    data = read_toml(path)
    return hardware_from_dict(table_of(data, "hardware", str(path)), str(path))


@dataclass(frozen=True)
class Model:
    """A model's MLP block from its published configuration (``specs/models/``): the workload and what it covers."""

    name: str = _f("model name (as ctasim advise --model takes it)")
    source: str = _f("the published configuration the shapes come from")
    hidden: int = _f("hidden size (the block's input and output columns)")
    intermediate: int = _f("FFN intermediate size (stored columns of the up projection)")
    leaves_out: str = _f("what of the model the block does not cover (attention, routing, ...)")
    workload: Workload = _f("the block as a workload (M set per token count)")


def load_model(ref: str | Path, base: Path | None = None) -> Model:
    """A model spec: its ``[model]`` table and its block's ``[workload]``, checked against each other."""
    path = resolve_ref(str(ref), "models", base)
    data = read_toml(path)
    wl = workload_from_dict(table_of(data, "workload", str(path)), str(path))
    model = build_section(Model, table_of(data, "model", str(path)), str(path), "model.", workload=wl)
    require(wl.layers[0].k == model.hidden and wl.layers[-1].out_n == model.hidden, str(path), "model.hidden",
             f"the block's input and output columns must be hidden={model.hidden}")
    require(wl.layers[0].out_n == model.intermediate, str(path), "model.intermediate",
             f"the up projection stores {wl.layers[0].out_n} columns, not intermediate={model.intermediate}")
    return model


def load_workload(ref: str | Path, base: Path | None = None) -> Workload:
    path = resolve_ref(str(ref), "workloads", base)
    data = read_toml(path)
    return workload_from_dict(table_of(data, "workload", str(path)), str(path))


def parse_experiment(data: Mapping[str, Any], where: str, base: Path | None = None) -> Experiment:
    """An experiment from its table, every field checked; the checks that need its cases (each tiles, each
    strategy fits its GPUs) are :func:`ctasim.cases.check_experiment`'s (:func:`ctasim.cases.load_experiment`
    does both)."""
    data = dict(data)
    hw_ref = data.pop("hardware", None)
    if isinstance(hw_ref, dict):
        hw = hardware_from_dict(hw_ref, where)
    else:
        require(isinstance(hw_ref, str), where, "experiment.hardware", "expected a profile name or an inline table")
        hw = load_hardware(hw_ref, base)
    wl_ref = data.pop("workload", None)
    if isinstance(wl_ref, dict):
        wl_data = dict(wl_ref)
        wl_data.setdefault("name", data.get("name", "workload"))
        wl = workload_from_dict(wl_data, where)
    else:
        require(isinstance(wl_ref, str), where, "experiment.workload", "expected a workload name or an inline table")
        wl = load_workload(wl_ref, base)
    raw_strats = data.pop("strategy", None)
    require(isinstance(raw_strats, list) and raw_strats, where, "experiment.strategy",
             "at least one [[experiment.strategy]] table is required")
    strats = tuple(strategy_from_dict(s, where, f"experiment.strategy[{i}].") for i, s in enumerate(raw_strats))
    labels = [s.label for s in strats]
    require(len(set(labels)) == len(labels), where, "experiment.strategy", f"duplicate strategy labels {labels}")
    raw_sweep = data.pop("sweep", {})
    require(isinstance(raw_sweep, dict), where, "experiment.sweep", "expected a table of axis = [values]")
    sweep = []
    for axis, values in raw_sweep.items():
        require(axis in ("m", "layers"), where, f"experiment.sweep.{axis}", "unknown axis (known: m, layers)")
        vals = coerce(values, "tuple[int, ...]", None, where, f"experiment.sweep.{axis}")
        require(len(vals) >= 1 and all(v >= 1 for v in vals), where, f"experiment.sweep.{axis}", "values must be >= 1")
        sweep.append((axis, vals))
    exp = build_section(Experiment, data, where, "experiment.", hardware=hw, workload=wl, strategies=strats, sweep=tuple(sweep))
    require(0 <= exp.gpus <= hw.gpus, where, "experiment.gpus",
             f"asks for {exp.gpus} GPUs but profile {hw.name!r} has {hw.gpus}")
    require(exp.regime in REGIMES, where, "experiment.regime", f"must be one of {REGIMES}, got {exp.regime!r}")
    bad = [st.label for st in strats if st.kind != "ctapipe" or st.placement != "ring"]
    require(not exp.shared_device or not bad, where, "experiment.shared_device",
            f"a shared device runs rings of chain kernels only (placement 'ring'); not {', '.join(bad)}")
    return exp


def read_experiment(ref: str | Path) -> tuple[Experiment, str]:
    """The experiment of a name (specs/experiments/) or TOML path, parsed (:func:`parse_experiment`), and its path."""
    path = resolve_ref(str(ref), "experiments", None)
    data = read_toml(path)
    return parse_experiment(table_of(data, "experiment", str(path)), str(path), path.parent), str(path)


def find_spec(ref: str) -> tuple[str, Path]:
    """Classify a reference as an experiment, workload or hardware spec by its top-level table."""
    for kind in ("experiments", "workloads", "hardware"):
        try:
            path = resolve_ref(ref, kind, None)
        except SpecError:
            continue
        data = read_toml(path)
        for table, k in (("experiment", "experiments"), ("workload", "workloads"), ("hardware", "hardware")):
            if table in data:
                return k, path
        raise SpecError(str(path), "(file)", "has none of the tables [experiment], [workload], [hardware]")
    raise SpecError(ref, "(file)", "no such spec file or name (see `ctasim list`)")


def list_specs() -> dict[str, list[str]]:
    return {kind: sorted(p.stem for p in (SPECS_DIR / kind).glob("*.toml"))
            for kind in ("hardware", "workloads", "models", "experiments")}


def reference_markdown() -> str:
    """The field reference of every spec table, generated from the dataclasses' help text."""
    tables = [
        ("[hardware]", Hardware, {"kernel_configs"}),
        ("[[hardware.kernel_config]]", KernelConfig, set()),
        ("[workload]", Workload, {"layers"}),
        ("[[workload.layer]] (or the chain shorthand in [workload])", Layer, set()),
        ("[[experiment.strategy]]", Strategy, set()),
        ("[model] (specs/models/, with the block's [workload])", Model, {"workload"}),
        ("[experiment]", Experiment, {"hardware", "workload", "strategies", "sweep"}),
    ]
    out = []
    for title, cls, skip in tables:
        out.append(f"### {title}\n\n| field | type | default | meaning |\n| --- | --- | --- | --- |")
        for f in dataclasses.fields(cls):
            if f.name in skip:
                continue
            default = "required" if f.default is dataclasses.MISSING else repr(f.default)
            typ = f.type if isinstance(f.type, str) else f.type.__name__
            out.append(f"| `{f.name}` | {typ} | {default} | {f.metadata.get('help', '')} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":  # python -m ctasim.spec: print the field reference (docs/spec-format.md)
    print(reference_markdown())
