"""L2 reuse of a GEMM's operand panels in tile launch order, and the HBM ceiling it puts on each wave.

What is modelled
    A GEMM ``D[M, N] = A[M, K] @ W[N, K]^T`` is cut into ``tile_m x tile_n`` output tiles. Tile (i, j) reads the
    A row-panel i (``rows_i * K`` elements) and the W column-panel j (``cols_j * K`` elements). The tiles run in a
    *launch order* (an array of row-major tile ids; -1 marks a padding slot that holds a CTA but reads nothing,
    as CUTLASS's swizzle pads the grid) on ``slots`` CTA slots: wave v is positions ``v*slots ... v*slots +
    slots - 1`` (a persistent grid in step: CTA c runs positions c, c + slots, ...).

    * **Within a wave** every tile streams its panels over K at the same pace, so a panel read by several tiles
      of the wave comes from HBM at most once (its k-slices are shared while they are hot).
    * **Across waves** the L2 is an LRU cache of ``l2_bytes * l2_efficiency`` bytes. A panel used in wave w'
      and next in wave w > w' hits for its k-slice s (s in [0, 1) of K) when the distinct bytes touched between
      the two uses -- its *reuse distance* -- fit. Wave v touches slice s of its panels at time v + s, so the
      distance of slice s interpolates linearly from ``D(w', w-1)`` at s = 0 to ``D(w'+1, w)`` at s = 1, where
      ``D(a, b)`` is the bytes of the distinct panels used in waves a..b. The panel's hit share is the part of
      s in [0, 1) whose distance is within the capacity; the rest is read from HBM. A panel's first use
      misses: the first wave runs with a cold L2 (no reuse between kernels). ``reuse_law = "survival"``
      (:data:`REUSE_LAWS`) prices the same distances by the machine's measured L2 survival curve instead of a
      capacity: slice s hits by the share ``S(D_s / l2_bytes)`` a line keeps after ``D_s`` bytes came in, averaged
      exactly over s (:func:`survival_mean`). The curve (the L2 survival probe, ``ctahw.l2probe``) keeps a line
      whole to ~0.4 of ``l2_bytes`` and loses it by ~0.75 on an H200 and an H100, where the LRU keeps every line
      up to the whole L2: the measured capacity the ``"survival"`` ticket law already prices a later sharer by (the
      drift re-reads below still count against ``l2_bytes * l2_efficiency``, which the survival curve does not
      use). The distance is the distinct panel bytes touched in between, hits included, where the probe's axis is
      the bytes taken in (registered plan 57: hits push a line out at 0.4-0.7 of their bytes).
    * **Stores**: every tile writes its output (``rows * cols * store_elem_bytes``) to HBM in its wave.
    * **Wave time** = max(compute + exposed x t_hbm, t_hbm), t_hbm = the wave's HBM bytes / HBM bandwidth: a
      wave is never faster than its slots' math nor than what it must fetch from HBM, and the share ``exposed``
      of its HBM time is not hidden behind the math (0: the roofline max(compute, t_hbm)); that share may be
      charged at another rate than the roofline's (``exposed_gbps``: the loads' latency, not the bandwidth). A
      kernel is the sum of its waves plus a fixed per-launch cost.

    :func:`cutlass_sm90_order` reproduces the launch order of CUTLASS 4.2's ``PersistentTileSchedulerSm90``
    (raster order, swizzle, cluster pairing, grid size) exactly; :mod:`ctasim.plan`'s orders (``raster_order``,
    ``grouped_rows_order``, one layer of ``chain_order``) can be passed as they are.

    * **Drift** (optional, ``drift > 0``): the CTAs of a persistent grid drift apart at a steady rate (measured in
      per-tile traces, ``bench/order_drift.py``), so the tiles of a wave that share a panel no longer read it
      together; once the bytes the L2 must hold between the first and the last sharer exceed its capacity, later
      sharers read again (:func:`drift_rereads`).

      Three forms (``drift_form``, :data:`DRIFT_FORMS`). ``"wave"`` (registered plan 8): every panel shared within a
      wave counts, and the later sharers miss by a hard capacity, the share ``1 - L2 / held``. ``"carried"``: a
      panel read in the wave before too is read all along (its sharers' reads interleave with the neighbouring
      waves' whatever the drift), so only the other shared panels count, and what the L2 keeps of the carried panels
      is not free to hold them; the later sharers miss by the share ``held / (held + free)``, no threshold. Per-tile
      traces of 125-249 rounds (``bench/results/hw/2026-12-02-long-order-traces``) show the loss of the high-reuse
      orders level off at +10 to +14% once the spread passes ~0.5 tile times, where ``"wave"`` keeps growing towards
      every later sharer missing (+8 to +16% at 249 rounds); ``"carried"`` was chosen after those traces were seen.
      ``"interleaved"``: as ``"carried"``, but a carried panel is exempt only by the share of its reads that the L2
      outlasts: its ``n`` sharers a wave read it ``n`` times a tile time, the L2 keeps a line ``tau`` = capacity /
      the wave's HBM bytes tile times (a wave takes one), and with exponential gaps the share ``1 - exp(-n tau)`` of
      the reads comes soon enough; the rest joins the held bytes as a panel not carried does (what the L2 keeps of
      every carried panel still comes off the capacity, as in ``"carried"``). Long-K GEMMs bring in
      many bytes a tile time, so their carried panels are not free: ``"carried"`` prices the along-N orders of long-K
      narrow-N GEMMs 3-4% fast and picks them where along-M measures faster (``bench/results/block-gemm-orders``,
      ``bench/results/hw/2026-12-02-pass-rates``); chosen after those runs were seen.

    * **Ticket spread** (optional, ``ticket_spread > 0``): a grid that hands out tiles by tickets (the chain kernel)
      keeps the running tiles one window of the order, but their start times spread over up to a tile time; a
      panel's later sharer then hits only if the bytes the L2 takes in between fit (:func:`ticket_rereads`), all or
      nothing (``ticket_law = "threshold"``), or loses a share that grows with them from the first byte, as random
      replacement in one of the L2's two partitions would (``"partition"``, :data:`TICKET_LAWS`), or loses what the
      machine's measured L2 survival curve says a line loses after those bytes (``"survival"``: the L2 survival
      probe, ``ctahw.l2probe``).

Left out
    Reuse of panels between kernels (each kernel starts cold) and of D (stores do not occupy the cache and
    are never read back); the L2's set associativity, hashing and its two partitions (lumped into
    ``l2_efficiency``; only the ``"partition"`` and ``"survival"`` ticket laws count them, and only for a ticket
    grid's later sharers); sharing that drift creates between neighbouring waves (a CTA a tile ahead shares with the next wave's
    tiles: the re-reads are counted from the lockstep waves' sharers, so a long drift is overcharged); overlap of one
    wave's loads with the next wave's math (waves are timed one after another); L2-to-SM bandwidth and the cluster's
    multicast (which cut L2 reads, not HBM reads; ``ctasim.costs.order_waves`` bounds a wave by its L2 reads where a
    profile sets ``l2_sm_read_gbps``, which none does yet); why a share of the HBM time is exposed (latency, bursts of a
    lockstep wave; one constant stands for it); split-K and stream-K schedules.

Cost: O(tiles + panels x waves + incidences x distinct reuse gaps), at worst O(waves^2), in numpy: 8-20 ms
for 100k tiles on a 2-core machine.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = [
    "DRIFT_FORMS",
    "DRIFT_K_LAWS",
    "DRIFT_LAWS",
    "TICKET_LAWS",
    "TICKET_STATES",
    "REUSE_LAWS",
    "RASTERS",
    "WaveTraffic",
    "cutlass_sm90_log_swizzle",
    "cutlass_sm90_swizzle",
    "cutlass_sm90_raster",
    "cutlass_sm90_grid_ctas",
    "cutlass_sm90_order",
    "wave_traffic",
    "expected_range",
    "drift_rereads",
    "ticket_rereads",
    "survival_share",
    "survival_mean",
    "gap_survival",
    "lognormal_average",
    "wave_ns",
    "gemm_ns",
]

RASTERS = ("heuristic", "along_m", "along_n")
"""CUTLASS's ``RasterOrderOptions`` by the names ``ctahw.gemm.RASTER_NAMES`` uses (0, 1, 2)."""

_DENSE_CELLS = 1 << 22
"""Cells of the (wave x wave) distinct-bytes table built at once; a larger table is built in blocks of rows."""


# ------------------------------------------------------------------------------------------ CUTLASS's order
def cutlass_sm90_log_swizzle(blocks_m: int, blocks_n: int, max_swizzle: int) -> int:
    """``PersistentTileSchedulerSm90Params::get_log_swizzle_size``: the swizzle actually used (log2), smaller
    than asked when the grid's smaller side (in CTAs, cluster-rounded) is too short for it."""
    lo = min(blocks_m, blocks_n)
    if max_swizzle >= 8 and lo >= 6:
        return 3
    if max_swizzle >= 4 and lo >= 3:
        return 2
    if max_swizzle >= 2 and lo >= 2:
        return 1
    return 0


def _cutlass_blocks(tiles_m: int, tiles_n: int, swizzle: int, cluster: tuple[int, int]) -> tuple[int, int, int]:
    cm, cn = cluster
    bm = -(-tiles_m // cm) * cm  # get_tiled_cta_shape_mnl: round up to the cluster
    bn = -(-tiles_n // cn) * cn
    log = cutlass_sm90_log_swizzle(bm, bn, swizzle)
    s = 1 << log
    return -(-bm // (s * cm)) * (s * cm), -(-bn // (s * cn)) * (s * cn), log  # round up to swizzle x cluster


def cutlass_sm90_swizzle(tiles_m: int, tiles_n: int, swizzle: int, cluster: tuple[int, int] = (2, 1)) -> int:
    """The swizzle the scheduler actually uses for a ``tiles_m x tiles_n`` grid asked for ``swizzle`` (a power of
    two, clamped on short grids: two asked swizzles with the same result give the same order)."""
    return 1 << _cutlass_blocks(tiles_m, tiles_n, swizzle, cluster)[2]


def cutlass_sm90_raster(tiles_m: int, tiles_n: int, raster: str, swizzle: int = 1,
                        cluster: tuple[int, int] = (2, 1)) -> str:
    """``get_rasterization_order``: ``along_m`` or ``along_n``. ``heuristic`` walks along M when the padded grid
    has more N-tiles than M-tiles, else along N."""
    if raster not in RASTERS:
        raise ValueError(f"unknown raster {raster!r}; expected one of {RASTERS}")
    if raster != "heuristic":
        return raster
    bm, bn, _ = _cutlass_blocks(tiles_m, tiles_n, swizzle, cluster)
    return "along_m" if bn > bm else "along_n"


def cutlass_sm90_grid_ctas(tiles_m: int, tiles_n: int, raster: str = "heuristic", swizzle: int = 1,
                           cluster: tuple[int, int] = (2, 1), sm_count: int = 132, max_sm_per_gpc: int = 18) -> int:
    """CTAs of the persistent grid (``get_grid_shape`` with ``max_active_clusters`` unset, as ``ctahw``'s kernel
    launches it): ``get_max_cta_occupancy`` over GPCs of ``max_sm_per_gpc`` SMs, truncated by the problem."""
    cm, cn = cluster
    size = cm * cn
    bm, bn, _ = _cutlass_blocks(tiles_m, tiles_n, swizzle, cluster)
    total = bm * bn
    if size == 1:
        return min(sm_count, total)
    gpcs = 1 if sm_count < max_sm_per_gpc else sm_count // max_sm_per_gpc
    per_gpc = max_sm_per_gpc - max_sm_per_gpc % size
    rest = 0 if sm_count < max_sm_per_gpc else sm_count % max_sm_per_gpc
    ctas = min(sm_count, gpcs * per_gpc + rest - rest % size)
    # AlongN: grid (cm, min(ctas/cm, total/cm)); AlongM: (min(ctas/cn, total/cn), cn) -- the same CTA count
    # whenever the problem does not truncate it.
    c = cm if cutlass_sm90_raster(tiles_m, tiles_n, raster, swizzle, cluster) == "along_n" else cn
    return c * min(ctas // c, total // c)


def cutlass_sm90_order(tiles_m: int, tiles_n: int, raster: str = "heuristic", swizzle: int = 1,
                       cluster: tuple[int, int] = (2, 1)) -> np.ndarray:
    """Row-major tile ids (``i * tiles_n + j``) in the order of the scheduler's linear work index; -1 where the
    padded grid has a tile outside the problem (the kernel still runs it: its loads fall out of bounds).

    CUTLASS 4.2 ``PersistentTileSchedulerSm90`` (``static_tile_scheduler.hpp``, ``sm90_tile_scheduler.hpp``,
    ``tile_scheduler_params.h``): CTA c of G starts at linear index c and adds G per tile, so wave v of a
    G-CTA grid is linear indices v*G ... v*G + G - 1. Index -> tile: the CTA's place in its cluster is the
    index's remainder by the *minor* cluster side; the cluster id, taken ``2**log_swizzle`` at a time, walks
    the minor dimension inside a band of that many clusters, then the major dimension, then the next band.
    ``along_n`` (major = N) walks a band of ``swizzle`` cluster rows (``swizzle * cluster_m`` row-blocks)
    across all columns, column by column; ``along_m`` walks a band of ``swizzle`` columns down all row-blocks,
    a cluster's ``cluster_m`` row-blocks of one column together. A cluster of 2x1 always holds row-blocks
    2r, 2r + 1 of one column (they share W).
    """
    if swizzle not in (1, 2, 4, 8):
        raise ValueError(f"swizzle must be 1, 2, 4 or 8, got {swizzle}")
    cm, cn = cluster
    bm, bn, log = _cutlass_blocks(tiles_m, tiles_n, swizzle, cluster)
    along_n = cutlass_sm90_raster(tiles_m, tiles_n, raster, swizzle, cluster) == "along_n"
    major, minor = (cn, cm) if along_n else (cm, cn)
    blk_major = bn // cn if along_n else bm // cm
    lin = np.arange(bm * bn, dtype=np.int64)
    minor_off = lin % minor  # block_id_in_cluster along the minor side (preserved: G is a multiple of it)
    blk = lin // minor
    cluster_id, major_off = blk // major, blk % major
    offset = cluster_id & ((1 << log) - 1)
    extra = cluster_id >> log
    minor_div_swz, cluster_major = extra // blk_major, extra % blk_major
    minor_idx = (minor_div_swz * (1 << log) + offset) * minor + minor_off
    major_idx = cluster_major * major + major_off
    mi, ni = (minor_idx, major_idx) if along_n else (major_idx, minor_idx)
    return np.where((mi < tiles_m) & (ni < tiles_n), mi * tiles_n + ni, -1)


# ----------------------------------------------------------------------------------------------- traffic
@dataclass(frozen=True)
class WaveTraffic:
    """Per wave (arrays of length ``waves``): what the wave reads and writes, in bytes.

    ``a_hbm`` / ``w_hbm``: A / W panel bytes read from HBM (misses); ``footprint``: distinct panel bytes the
    wave touches (hits and misses); ``store``: output bytes written; ``tiles``: real tiles (padding excluded);
    ``drift_hbm``: shared panel bytes read again because the sharers drifted apart (:func:`drift_rereads`; None
    without drift); ``ticket_hbm``: the same for a ticket-scheduled grid whose start times spread
    (:func:`ticket_rereads`; None without).
    """

    a_hbm: np.ndarray
    w_hbm: np.ndarray
    footprint: np.ndarray
    store: np.ndarray
    tiles: np.ndarray
    drift_hbm: np.ndarray | None = None
    ticket_hbm: np.ndarray | None = None

    @property
    def read(self) -> np.ndarray:
        """Bytes each wave reads from HBM: panel misses and shared panels read again as the CTAs drift apart
        (``drift_hbm``) or as a ticket grid's start times spread (``ticket_hbm``); what a DRAM read counter counts
        (``ctahw.counters``)."""
        out = self.a_hbm + self.w_hbm
        for extra in (self.drift_hbm, self.ticket_hbm):
            if extra is not None:
                out = out + extra
        return out

    @property
    def hbm(self) -> np.ndarray:
        """Bytes each wave moves over HBM: what it reads (:attr:`read`) and its stores."""
        return self.read + self.store

    @property
    def waves(self) -> int:
        return len(self.tiles)


def _distinct_bytes(prev: np.ndarray, use: np.ndarray, weight: np.ndarray, W: int, a: np.ndarray,
                    b: np.ndarray, method: str = "auto") -> np.ndarray:
    """D(a, b): bytes of the distinct panels used in some wave of a..b, for query arrays ``a <= b``.

    Incidences (a panel used in wave ``use``, its previous use in wave ``prev``, -1 for none) carry the panel's
    bytes ``weight``. Two exact methods, the cheaper one chosen:

    * by window length L = b - a + 1 (few distinct lengths): D(a, a+L-1) = all incidence bytes in the window
      minus those whose previous use is in it too (an incidence with ``use - prev < L`` counts for every a in
      [use - L + 1, prev]: a difference array over a), O(incidences + waves) per length;
    * a (wave x wave) table otherwise: an incidence is the panel's first use at or after a for a in
      [prev + 1, use], so G[a, use] gains its bytes over that range of a, and D(a, b) is G's sum over u <= b;
      built in blocks of rows, O(waves^2).

    ``method``: "auto", "window" or "table" (the last two for tests).
    """
    length = b - a + 1
    lengths = np.flatnonzero(np.bincount(length))
    out = np.empty(len(a), dtype=np.float64)
    if method == "window" or (method == "auto" and len(lengths) * (len(use) + W) < W * W):
        cum = np.concatenate([[0.0], np.cumsum(np.bincount(use, weights=weight, minlength=W))])
        gap = np.where(prev < 0, W + 1, use - prev)  # a first use is never repeated inside a window
        for L in lengths:
            sel = gap < L
            lo = np.maximum(use[sel] - L + 1, 0)
            diff = np.bincount(lo, weights=weight[sel], minlength=W + 1)
            diff -= np.bincount(prev[sel] + 1, weights=weight[sel], minlength=W + 1)
            repeat = np.cumsum(diff)
            q = length == L
            aq = a[q]
            out[q] = cum[aq + L] - cum[aq] - repeat[aq]
        return out
    lo, hi = prev + 1, use + 1
    carry = np.zeros(W, dtype=np.float64)
    rows_per_block = max(1, _DENSE_CELLS // W)
    for r0 in range(0, W, rows_per_block):
        r1 = min(W, r0 + rows_per_block)
        n = r1 - r0
        diff = np.zeros(n * W, dtype=np.float64)
        for rows, sign in ((lo, 1.0), (hi, -1.0)):
            sel = (rows >= r0) & (rows < r1)
            diff += np.bincount((rows[sel] - r0) * W + use[sel], weights=sign * weight[sel], minlength=n * W)
        g = np.cumsum(diff.reshape(n, W), axis=0)
        g += carry
        carry = g[-1].copy()
        d = np.cumsum(g, axis=1)
        sel = (a >= r0) & (a < r1)
        out[sel] = d[a[sel] - r0, b[sel]]
    return out


def expected_range(n: np.ndarray) -> np.ndarray:
    """Expected range (max - min) of ``n`` independent standard normal draws, in standard deviations (0 for
    n < 2): twice the expected maximum by Blom's approximation, ``2 * Phi^-1((n - 0.375) / (n + 0.25))`` (1.13 for
    n = 2 against an exact 1.13, 2.87 for 8 against 2.85, 4.70 for 66)."""
    from statistics import NormalDist  # noqa: PLC0415

    n = np.asarray(n, dtype=np.float64)
    out = np.zeros(n.shape)
    inv = NormalDist().inv_cdf
    for v in np.unique(n[n >= 2]):
        out[n == v] = 2.0 * inv((v - 0.375) / (v + 0.25))
    return out


DRIFT_LAWS = {"wave": "threshold", "carried": "share", "interleaved": "share"}
"""How :func:`wave_traffic` charges a persistent grid's drift (module docstring), per form: the law
:func:`drift_rereads` applies. ``"wave"``: every panel shared in a wave, a hard capacity (registered plan 8's);
``"carried"``: only panels not carried from the wave before, against the capacity the carried ones leave, by a
share without threshold; ``"interleaved"``: as ``"carried"``, with a carried panel's bytes counted by the share of its
reads that come after the L2 let it go, ``exp(-n tau)``."""
DRIFT_FORMS = tuple(DRIFT_LAWS)
"""The drift forms (:data:`DRIFT_LAWS`' keys); ``"wave"`` first, the default of ``KernelConfig.drift_form``."""
DRIFT_K_LAWS = ("absolute", "capped")
"""How a plain GEMM's drift follows its K where a config sets ``drift_k_ref`` (``ctasim.costs.plain_drift``):
``"absolute"``, ``cta_drift x drift_k_ref / K`` tile times a round at every K (registered plan 73's adoption on an
H100); ``"capped"``, the same above ``drift_k_ref`` and ``cta_drift`` tile times below it (no more drift in tile times
than at ``drift_k_ref``: registered plan 97's short-K gate-and-up GEMMs, read post-hoc; registered by plan 98)."""


def drift_rereads(sharers: list[tuple[np.ndarray, np.ndarray, float]], waves: int, drift: float,
                  capacity: float | np.ndarray, law: str = "threshold") -> np.ndarray:
    """Bytes per wave of shared panels read again from HBM because the CTAs sharing them drifted apart.

    A persistent grid does not stay in lockstep: the spread (standard deviation) of its CTAs' tile start times grows
    by ``drift`` tile times per round (measured: ``bench/order_drift.py``). In wave ``v`` the ``n`` tiles that share a
    panel start ``drift * v * expected_range(n)`` tile times apart, so the L2 must hold that share of the panel's
    bytes between the first sharer's read and the last one's. Summed over the wave's shared panels this is the
    bytes ``held`` (v); with ``law = "threshold"`` every sharer hits while ``held <= capacity`` and beyond it the
    share ``1 - capacity / held`` of the later sharers' reads miss, each a panel's bytes; with ``law = "share"`` the
    share ``held / (held + capacity)`` miss (no threshold: held bytes and the capacity left for them compete).
    ``sharers``: per panel kind, (wave index, sharer count, panel bytes) arrays of the (panel, wave) incidences with
    at least one tile; ``capacity``: bytes, one for every wave or one per wave.
    """
    if law not in DRIFT_LAWS.values():
        raise ValueError(f"law must be one of {tuple(DRIFT_LAWS.values())}, got {law!r}")
    cap = np.asarray(capacity, dtype=np.float64)
    if cap.shape not in ((), (waves,)) or not np.all(cap >= 0):
        raise ValueError(f"capacity must be bytes >= 0, one value or one per wave ({waves}), got shape {cap.shape}")
    held = np.zeros(waves)
    again = np.zeros(waves)
    spread = drift * np.arange(waves, dtype=np.float64)
    for wv, count, size in sharers:
        held += np.bincount(wv, weights=size * expected_range(count), minlength=waves)
        again += np.bincount(wv, weights=size * np.maximum(count - 1.0, 0.0), minlength=waves)
    held *= spread
    capacity = np.broadcast_to(cap, held.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        if law == "share":
            miss = np.where(held > 0, held / (held + capacity), 0.0)
        else:
            miss = np.where(held > capacity, 1.0 - capacity / held, 0.0)
    return miss * again


REUSE_LAWS = ("lru", "survival")
"""How :func:`wave_traffic` prices a panel's reuse across waves from its reuse distance (module docstring): ``"lru"``
(every profile's until registered plan 67: a hit while the distance fits ``l2_bytes * l2_efficiency``), or
``"survival"`` (the share the measured L2 survival curve keeps after that many bytes, :func:`survival_mean`)."""

TICKET_LAWS = ("threshold", "partition", "survival")
"""How :func:`ticket_rereads` decides whether a later sharer finds its panel in L2. ``"threshold"`` (the profiles' law
from registered plan 10 to plan 49; the mechanism profiles' one-CTA-per-tile config keeps it): an LRU cache of the
whole L2, so the sharer hits while the bytes taken in between fit and misses once they do not (all or nothing; the
state picked by :data:`TICKET_STATES`). ``"partition"`` (post-hoc on plans 9, 10 and 48; registered plan 49 found it
nearer, plan 50 further where a layer's weights are 4-6.5x the L2; nearer pooled over both,
``bench/ticket_law_record.py``; the H200 profiles' chain config since 2026-12-04): the L2 is two partitions, each
caching what the SMs wired to it read
(the A100 and H100 whitepapers; a panel read from both sides is held twice), so a partition takes in the wave's whole
traffic into half the capacity, and a line there survives ``B`` bytes taken in as under random replacement: the
later sharer misses by the share ``1 - exp(-2 B / capacity)``, a smooth loss from the first byte (one consistent
state); the L2 survival probe found no such loss for a line read once (the form is empirical, docs/validation.md).
``"survival"`` (2026-12-04, post-hoc for its form): the share the machine's measured L2 survival curve
loses after ``B`` (``ctahw.l2probe``: a line one SM read, ``B`` bytes streamed by every SM, the share another SM
still finds; on the H200 a sharp edge near 0.6 of ``l2_bytes``), taken in the most-missing consistent state as the
threshold law's; its curve is the profile's ``l2_survival_taken`` / ``l2_survival_share``."""

TICKET_STATES = ("thrash", "hold")
"""Which state :func:`ticket_rereads` takes where several are consistent: ``"thrash"`` the most-missing (iterated down
from every later sharer missing; the model's), ``"hold"`` the least-missing (iterated up from every later sharer
hitting: a grid keeps its reuse until that is inconsistent; registered plan 14 tests it)."""


def ticket_rereads(pos: np.ndarray, panel: np.ndarray, size: np.ndarray, waves: int, slots: int, spread: float,
                   capacity: float, base: np.ndarray, max_rounds: int = 100, state: str = "thrash",
                   law: str = "threshold", survival: tuple[Sequence[float], Sequence[float]] = ((), ()),
                   gap_cv: float = 0.0, touched: float = 1.0) -> np.ndarray:
    """Bytes per wave of shared panels read again from HBM by a ticket-scheduled grid whose start times spread.

    Tickets are taken in order as CTAs free, so the ``slots`` tickets of wave ``v`` start within
    ``S_v = min(1, spread * v)`` tile times of each other (``spread``: the growth per round, measured in per-tile
    traces, ``bench/ticket_spread.py``), ticket ``p`` at about ``(p mod slots) / slots * S_v``. Two consecutive
    sharers of a panel ``g`` tickets apart so read it ``g / slots * S_v`` tile times apart, and the later one finds
    it in L2 only if the bytes the L2 takes in meanwhile -- that share of the wave's HBM traffic ``H_v`` -- fit:
    ``H_v * g / slots * S_v <= capacity``; otherwise it reads the panel again, which adds to ``H_v``. The traffic
    and the misses so feed each other; the state taken is the most-missing one consistent with itself (iterated
    down from every later sharer missing), as a grid that thrashed keeps thrashing; ``state = "hold"`` takes the
    least-missing one instead (:data:`TICKET_STATES`). ``law = "partition"`` (:data:`TICKET_LAWS`) charges the
    later sharer the share ``1 - exp(-2 H_v * g / slots * S_v / capacity)`` of its panel instead, iterated from
    every later sharer missing to the consistent state (``state`` is then unused: there is one). ``law = "survival"``
    charges it ``1 - S(H_v * g / slots * S_v / capacity)``, ``S`` the measured survival curve ``survival`` = (bytes
    taken in, in L2 sizes; share left), iterated down from every later sharer missing (the most-missing consistent
    state; ``state`` unused). Under ``"survival"`` two optional refinements (:func:`gap_survival`): ``gap_cv`` > 0
    spreads each sharer's time after the one before around the reach (lognormal, mean the reach, this coefficient of
    variation: the hardware's tickets do not start evenly), and ``touched`` > 1 counts that many bytes pushing the
    line out per byte taken in (the lines the wave hits in between count too, as the L2 survival probe's hot set
    showed: registered plan 57).

    ``pos``, ``panel``: one entry per (tile, panel it reads): its position in the order and a panel id;
    ``size``: bytes per panel id; ``base``: each wave's HBM bytes without these re-reads.
    """
    if spread <= 0 or len(pos) == 0:
        return np.zeros(waves)
    pos, panel = np.asarray(pos, dtype=np.int64), np.asarray(panel, dtype=np.int64)
    wave = pos // slots
    o = np.lexsort((pos, panel))
    p, q, w = pos[o], panel[o], wave[o]
    later = (q[1:] == q[:-1]) & (w[1:] == w[:-1])  # a later sharer of the same panel in the same wave
    gw, nbytes = w[1:][later], size[q[1:][later]]
    reach = (p[1:] - p[:-1])[later] / slots * np.minimum(1.0, spread * gw)  # tile times between the two reads
    if state not in TICKET_STATES:
        raise ValueError(f"state must be one of {TICKET_STATES}, got {state!r}")
    if law not in TICKET_LAWS:
        raise ValueError(f"law must be one of {TICKET_LAWS}, got {law!r}")
    if law != "survival" and (gap_cv or touched != 1.0):
        raise ValueError(f"gap_cv and touched refine the 'survival' law only, not {law!r}")
    if law == "partition":
        return _partition_rereads(gw, nbytes, reach, waves, capacity, base, max_rounds)
    if law == "survival":
        return _survival_rereads(gw, nbytes, reach, waves, capacity, base, max_rounds, survival, gap_cv, touched)
    miss = reach > 0 if state == "thrash" else np.zeros(len(reach), dtype=bool)
    for _ in range(max_rounds):
        again = np.bincount(gw, weights=nbytes * miss, minlength=waves)
        new = (base + again)[gw] * reach > capacity
        if np.array_equal(new, miss):
            break
        miss = new
    return np.bincount(gw, weights=nbytes * miss, minlength=waves)


PARTITIONS = 2
"""The L2's partitions, each caching what its own SMs read (NVIDIA A100 and H100 whitepapers: "the L2 cache is
divided into two partitions"; the H200 is the H100's GH100 die): the ``"partition"`` ticket law's factor."""


def _partition_rereads(gw: np.ndarray, nbytes: np.ndarray, reach: np.ndarray, waves: int, capacity: float,
                       base: np.ndarray, max_rounds: int) -> np.ndarray:
    """:func:`ticket_rereads` under ``law = "partition"``: each later sharer (wave ``gw``, ``nbytes``, ``reach`` tile
    times after the one before) misses by the share ``1 - exp(-PARTITIONS * H * reach / capacity)``, ``H`` its wave's
    traffic with the misses; the misses and the traffic iterated to their fixed point from every sharer missing
    (damped by half a step; the share falls as the traffic falls, so the iteration settles)."""
    if capacity <= 0:
        return np.bincount(gw, weights=nbytes * (reach > 0), minlength=waves)
    miss = (reach > 0).astype(float)
    for _ in range(max_rounds):
        again = np.bincount(gw, weights=nbytes * miss, minlength=waves)
        new = 1.0 - np.exp(-PARTITIONS * (base + again)[gw] * reach / capacity)
        if np.max(np.abs(new - miss), initial=0.0) < 1e-6:
            miss = new
            break
        miss = 0.5 * (miss + new)
    return np.bincount(gw, weights=nbytes * miss, minlength=waves)


def survival_share(taken: np.ndarray, curve: tuple[Sequence[float], Sequence[float]]) -> np.ndarray:
    """The share of a line left in L2 after ``taken`` bytes (in L2 sizes) came in, by the measured ``curve`` =
    (points ascending from 0, share at each): linear between points, the last share beyond the last point."""
    xs, ys = _curve(curve)
    return np.interp(np.asarray(taken, dtype=np.float64), xs, ys)


def _curve(curve: tuple[Sequence[float], Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """A survival curve's (points, shares) as arrays; ValueError unless they match and start at 0."""
    xs, ys = (np.asarray(c, dtype=np.float64) for c in curve)
    if xs.size == 0 or xs.size != ys.size or xs[0] != 0:
        raise ValueError("the survival curve needs matching points from 0 (l2_survival_taken, l2_survival_share)")
    return xs, ys


def survival_mean(lo: np.ndarray, hi: np.ndarray, curve: tuple[Sequence[float], Sequence[float]]) -> np.ndarray:
    """The mean of :func:`survival_share` over ``[lo, hi]`` (L2 sizes; elementwise, ``lo`` where ``hi == lo``), exact:
    the curve is linear between its points, so its integral is quadratic in between and is taken from the points'
    running integral (the last share held beyond the last point, as :func:`survival_share` does)."""
    xs, ys = _curve(curve)
    lo, hi = np.broadcast_arrays(np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64))
    if np.any(lo < 0) or np.any(hi < lo):
        raise ValueError("survival_mean needs 0 <= lo <= hi")
    knots = np.concatenate([[0.0], np.cumsum(np.diff(xs) * (ys[1:] + ys[:-1]) / 2)])  # the integral at each point
    slope = np.concatenate([np.diff(ys) / np.diff(xs), [0.0]])  # per segment, the last one flat beyond the curve

    def integral(x):
        i = np.clip(np.searchsorted(xs, x, side="right") - 1, 0, xs.size - 1)
        dx = x - xs[i]
        return knots[i] + ys[i] * dx + 0.5 * slope[i] * dx * dx

    width = hi - lo
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = (integral(hi) - integral(lo)) / width
    return np.clip(np.where(width > 0, mean, survival_share(lo, curve)), 0.0, 1.0)


GAP_NODES = 24
"""Gauss-Hermite nodes of :func:`lognormal_average` (the average over :func:`gap_survival`'s lognormal gap)."""

_HERMITE = np.polynomial.hermite_e.hermegauss(GAP_NODES)  # (nodes, weights): computed once, not per call


def lognormal_average(f, x: np.ndarray, cv: float) -> np.ndarray:
    """``E[f(x X)]`` over ``X`` lognormal of mean 1 and coefficient of variation ``cv`` (:data:`GAP_NODES`-point
    Gauss-Hermite; ``cv`` = 0: ``f(x)``). ``f`` is elementwise: it is called once, on ``x`` times every node (one
    more axis, last), and the terms are summed in the nodes' order."""
    if cv == 0:
        return f(x)
    s2 = np.log1p(cv * cv)
    z, w = _HERMITE
    factors, weights = np.exp(np.sqrt(s2) * z - s2 / 2), w / w.sum()
    values = f(np.multiply.outer(np.asarray(x, dtype=np.float64), factors))
    total = 0
    for j, wj in enumerate(weights):  # term by term, as a sum over the nodes adds them
        total = total + wj * values[..., j]
    return total


def gap_survival(taken: np.ndarray, curve: tuple[Sequence[float], Sequence[float]], gap_cv: float = 0.0,
                 touched: float = 1.0) -> np.ndarray:
    """The share of a later sharer's panel left in L2 when ``taken`` (L2 sizes) is what the L2 takes in over the
    reach: :func:`survival_share` of ``touched * taken * X``, averaged over ``X`` lognormal of mean 1 and
    coefficient of variation ``gap_cv`` (:func:`lognormal_average`; ``gap_cv`` = 0: ``X`` = 1, the plain survival
    law)."""
    if gap_cv < 0 or touched <= 0:
        raise ValueError(f"gap_cv must be >= 0 and touched > 0, got {gap_cv} and {touched}")
    t = np.asarray(taken, dtype=np.float64) * touched
    return lognormal_average(lambda x: survival_share(x, curve), t, gap_cv)


def _survival_rereads(gw: np.ndarray, nbytes: np.ndarray, reach: np.ndarray, waves: int, capacity: float,
                      base: np.ndarray, max_rounds: int, curve: tuple[Sequence[float], Sequence[float]],
                      gap_cv: float = 0.0, touched: float = 1.0) -> np.ndarray:
    """:func:`ticket_rereads` under ``law = "survival"``: each later sharer misses by ``1 - S(H reach / capacity)``
    (:func:`gap_survival`, which is :func:`survival_share` unless ``gap_cv`` or ``touched`` refine it), ``H`` its
    wave's traffic with the misses, iterated down from every sharer missing. The share missed grows with the traffic,
    so the iteration falls monotonically to the most-missing fixed point."""
    if capacity <= 0:
        return np.bincount(gw, weights=nbytes * (reach > 0), minlength=waves)
    # A sharer's miss depends on its (wave, reach) only, and a grid has few of those (tens to hundreds against
    # thousands of sharers): each is priced once and handed to its sharers, the same arithmetic on the same values.
    pairs, inv = np.unique(np.column_stack([gw.astype(np.float64), reach]), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    ugw, ureach = pairs[:, 0].astype(np.int64), pairs[:, 1]
    miss = (ureach > 0).astype(float)
    for _ in range(max_rounds):
        again = np.bincount(gw, weights=nbytes * miss[inv], minlength=waves)
        new = np.where(ureach > 0,
                       1.0 - gap_survival((base + again)[ugw] * ureach / capacity, curve, gap_cv, touched), 0.0)
        if np.max(np.abs(new - miss), initial=0.0) < 1e-9:
            miss = new
            break
        miss = new
    return np.bincount(gw, weights=nbytes * miss[inv], minlength=waves)


def wave_traffic(order: np.ndarray, m: int, n: int, k: int, tile_m: int, tile_n: int, elem_bytes: int,
                 slots: int, l2_bytes: float, l2_efficiency: float = 1.0,
                 store_elem_bytes: int | None = None, drift: float = 0.0, cluster_m: int = 1,
                 layers: int = 1, ticket_spread: float = 0.0, ticket_state: str = "thrash",
                 drift_form: str = "wave", ticket_law: str = "threshold",
                 survival: tuple[Sequence[float], Sequence[float]] = ((), ()), ticket_gap_cv: float = 0.0,
                 ticket_touched: float = 1.0, reuse_law: str = "lru") -> WaveTraffic:
    """HBM traffic of each wave of a GEMM whose tiles run in ``order`` on ``slots`` CTA slots (module docstring).

    ``order``: row-major tile ids (``i * ceil(n / tile_n) + j``), each once, -1 for padding slots.
    ``l2_bytes * l2_efficiency`` is the LRU capacity that reuse distances are measured against.
    ``store_elem_bytes``: bytes per output element written (default ``elem_bytes``; 0 leaves stores out).
    ``drift``: growth per round of the spread of the CTAs' tile start times, in tile times (:func:`drift_rereads`;
    0 = lockstep waves); ``drift_form``: how it is charged (:data:`DRIFT_FORMS`). ``cluster_m``: row-blocks whose CTAs share a W panel by multicast (one read for the
    cluster, so a W panel's sharers are counted in clusters).
    ``layers``: the tiles of ``layers`` equal-shaped GEMMs run in one kernel (the chain kernel), ids
    ``layer * tiles + row-major id`` (:func:`ctasim.plan.chain_order`); each layer has A and W panels of its own
    (layer l + 1's A is layer l's output: a first use of it misses, as any first use does).
    ``ticket_spread``: the tiles are handed out by tickets and their start times spread by this many tile times
    per round (:func:`ticket_rereads`; 0 = lockstep waves); ``ticket_state``: which consistent state it takes;
    ``ticket_law``: how a later sharer misses (:data:`TICKET_LAWS`); ``survival``: the measured L2 survival curve
    that the ``"survival"`` law reads (:func:`survival_share`); ``ticket_gap_cv``, ``ticket_touched``: its two
    refinements (:func:`gap_survival`). ``reuse_law``: how a panel's reuse across waves is priced from its reuse
    distance (:data:`REUSE_LAWS`; ``"survival"`` reads ``survival`` and leaves ``l2_efficiency`` unused there).
    """
    arr = np.ascontiguousarray(order)
    key = (hashlib.blake2b(arr.tobytes(), digest_size=16).digest(), arr.dtype.str, arr.shape,
           m, n, k, tile_m, tile_n, elem_bytes, slots, float(l2_bytes), float(l2_efficiency),
           store_elem_bytes, float(drift), cluster_m, layers, float(ticket_spread), ticket_state, drift_form,
           ticket_law, tuple(tuple(float(x) for x in part) for part in survival), float(ticket_gap_cv),
           float(ticket_touched), reuse_law, _laws())
    hit = _TRAFFIC.get(key)
    if hit is None:
        hit = _wave_traffic(order, m, n, k, tile_m, tile_n, elem_bytes, slots, l2_bytes, l2_efficiency,
                            store_elem_bytes, drift, cluster_m, layers, ticket_spread, ticket_state, drift_form,
                            ticket_law, survival, ticket_gap_cv, ticket_touched, reuse_law)
        for a in (hit.a_hbm, hit.w_hbm, hit.footprint, hit.store, hit.tiles, hit.drift_hbm, hit.ticket_hbm):
            if a is not None:
                a.flags.writeable = False  # shared by every caller of the same arguments
        while len(_TRAFFIC) >= TRAFFIC_CACHE:  # another thread (a Dask worker's) may drop the same one first
            try:
                _TRAFFIC.pop(next(iter(_TRAFFIC)), None)
            except (StopIteration, RuntimeError):
                break
        _TRAFFIC[key] = hit
    return hit


TRAFFIC_CACHE = 4096
"""How many :func:`wave_traffic` results one process keeps (the oldest dropped first): a sweep, ``ctasim advise`` or a
test run prices the same layer in the same order many times (half of the calls of the CLI and accuracy tests
repeat one before them). The results' arrays are read-only. The key holds every argument and :func:`_laws`."""
_TRAFFIC: dict[tuple, WaveTraffic] = {}


def _laws() -> tuple:
    """The module's constants and laws that :func:`wave_traffic` reads, as they are now: a post-hoc script that
    replaces one (``bench/posthoc_ticket_law.py`` sets :data:`PARTITIONS`, ``bench/posthoc_h100_pairs.py`` swaps the
    survival law's re-reads) gets results of its own, not ones kept from before."""
    return (PARTITIONS, _HERMITE[0].tobytes(), _DENSE_CELLS, tuple(DRIFT_LAWS.items()), _curve, _distinct_bytes,
            drift_rereads, ticket_rereads, _partition_rereads, _survival_rereads, survival_share, survival_mean,
            gap_survival, lognormal_average, expected_range)


def _wave_traffic(order, m, n, k, tile_m, tile_n, elem_bytes, slots, l2_bytes, l2_efficiency, store_elem_bytes, drift,
                  cluster_m, layers, ticket_spread, ticket_state, drift_form, ticket_law, survival, ticket_gap_cv,
                  ticket_touched, reuse_law) -> WaveTraffic:
    """:func:`wave_traffic`, computed."""
    if reuse_law not in REUSE_LAWS:
        raise ValueError(f"reuse_law must be one of {REUSE_LAWS}, got {reuse_law!r}")
    if reuse_law == "survival" and len(survival[0]) == 0:
        raise ValueError("reuse_law 'survival' needs the L2 survival curve (survival)")
    tiles_m, tiles_n = -(-m // tile_m), -(-n // tile_n)
    order = np.asarray(order, dtype=np.int64)
    if slots < 1:
        raise ValueError(f"slots must be >= 1, got {slots}")
    if layers < 1:
        raise ValueError(f"layers must be >= 1, got {layers}")
    if drift_form not in DRIFT_FORMS:
        raise ValueError(f"drift_form must be one of {DRIFT_FORMS}, got {drift_form!r}")
    per = tiles_m * tiles_n
    real = order[order >= 0]
    if real.size != per * layers or (real.size and (real.max() >= per * layers or np.bincount(real).max() != 1)):
        raise ValueError(f"order must hold each of the {layers} x {tiles_m} x {tiles_n} tile ids once (and -1 padding)")
    W = -(-order.size // slots)
    wave = np.arange(order.size, dtype=np.int64) // slots
    valid = order >= 0
    t, wv = order[valid], wave[valid]
    lay, t = t // per, t % per
    ri, ci = lay * tiles_m + t // tiles_n, lay * tiles_n + t % tiles_n  # panels of layer l after those of l - 1
    rows = np.tile(np.minimum(tile_m, m - np.arange(tiles_m) * tile_m), layers)
    cols = np.tile(np.minimum(tile_n, n - np.arange(tiles_n) * tile_n), layers)
    tiles_m, tiles_n = tiles_m * layers, tiles_n * layers
    size = np.concatenate([rows, cols]).astype(np.float64) * k * elem_bytes  # panels: A rows, then W columns
    Q = tiles_m + tiles_n
    used = np.zeros((Q, W), dtype=bool)
    used[ri, wv] = True
    used[tiles_m + ci, wv] = True
    q, w = np.nonzero(used)  # incidences, by panel then wave
    first = np.ones(q.size, dtype=bool)
    first[1:] = q[1:] != q[:-1]
    prev = np.where(first, -1, np.concatenate([[-1], w[:-1]]))
    hit = np.zeros(q.size)
    re = ~first
    if re.any():
        wp, wn = prev[re], w[re]
        qa = np.concatenate([wp, wp + 1])  # slice s = 0: D(w', w-1); slice s = 1: D(w'+1, w)
        qb = np.concatenate([wn - 1, wn])
        d0, d1 = np.split(_distinct_bytes(prev, w, size[q], W, qa, qb), 2)
        if reuse_law == "survival":  # slice s at distance d0 + s (d1 - d0): the curve's mean over [d0, d1]
            lo, hi = np.minimum(d0, d1), np.maximum(d0, d1)
            hit[re] = survival_mean(lo / float(l2_bytes), hi / float(l2_bytes), survival) if l2_bytes > 0 else 0.0
        else:
            cap = float(l2_bytes) * float(l2_efficiency)
            with np.errstate(divide="ignore", invalid="ignore"):
                s_star = (cap - d0) / (d1 - d0)  # the slice where the distance crosses the capacity
            h = np.where(d1 > d0, s_star, 1.0 - s_star)
            h = np.where(d1 == d0, (d0 <= cap).astype(float), h)
            hit[re] = np.clip(h, 0.0, 1.0)
    miss = size[q] * (1.0 - hit)
    is_a = q < tiles_m
    a_hbm = np.bincount(w[is_a], weights=miss[is_a], minlength=W)
    w_hbm = np.bincount(w[~is_a], weights=miss[~is_a], minlength=W)
    footprint = np.bincount(w, weights=size[q], minlength=W)
    se = elem_bytes if store_elem_bytes is None else store_elem_bytes
    store = np.bincount(wv, weights=rows[ri].astype(np.float64) * cols[ci] * se, minlength=W)
    again = None
    if drift > 0:
        cap = float(l2_bytes) * float(l2_efficiency)
        carried = None
        if drift_form in ("carried", "interleaved"):
            if drift_form == "interleaved":
                # how long the L2 keeps a line, in tile times (one wave takes one): its whole capacity over the bytes
                # the wave brings in before any drift re-read
                keep_tt = cap / np.maximum(a_hbm + w_hbm + store, 1.0)
            carried = np.zeros_like(used)  # (panel, wave): the wave before read the panel too
            carried[:, 1:] = used[:, 1:] & used[:, :-1]
            cont = carried[q, w]
            cap = np.maximum(cap - np.bincount(w[cont], weights=(size[q] * hit)[cont], minlength=W), 0.0)
        sharers = []  # per panel kind: (wave, sharers, panel bytes) of each (panel, wave) with a tile
        for panel, per_tile, nbytes, first_id in ((ri, 1.0, size[:tiles_m], 0),
                                                  (ci, 1.0 / max(1, cluster_m), size[tiles_m:], tiles_m)):
            uniq, cnt = np.unique(wv * Q + panel, return_counts=True)
            uw, up = uniq // Q, uniq % Q
            n, nb = cnt * per_tile, nbytes[up]
            if carried is None:
                sharers.append((uw, n, nb))
            elif drift_form == "carried":
                keep = ~carried[up + first_id, uw]
                sharers.append((uw[keep], n[keep], nb[keep]))
            else:  # a carried panel's reads come n a tile time; the share whose gap the L2 outlasts is exempt
                exempt = np.where(carried[up + first_id, uw], 1.0 - np.exp(-n * keep_tt[uw]), 0.0)
                sharers.append((uw, n, nb * (1.0 - exempt)))
        again = drift_rereads(sharers, W, drift, cap, law=DRIFT_LAWS[drift_form])
    tickets = None
    if ticket_spread > 0:
        pos = np.flatnonzero(valid)
        base = a_hbm + w_hbm + store + (again if again is not None else 0.0)
        tickets = ticket_rereads(np.concatenate([pos, pos]), np.concatenate([ri, tiles_m + ci]), size, W, slots,
                                 ticket_spread, float(l2_bytes) * float(l2_efficiency), base, state=ticket_state,
                                 law=ticket_law, survival=survival, gap_cv=ticket_gap_cv, touched=ticket_touched)
    return WaveTraffic(a_hbm=a_hbm, w_hbm=w_hbm, footprint=footprint, store=store,
                       tiles=np.bincount(wv, minlength=W), drift_hbm=again, ticket_hbm=tickets)


def wave_ns(traffic: WaveTraffic, compute_ns: float | np.ndarray, hbm_gbps: float,
            exposed: float = 0.0, exposed_gbps: float | None = None) -> np.ndarray:
    """Each wave's time: ``max(compute + exposed * t_exp, t_hbm)`` with ``t_hbm`` = its HBM bytes / ``hbm_gbps``
    (GB/s = bytes/ns) and ``t_exp`` the same bytes at ``exposed_gbps`` (None or 0: ``hbm_gbps``, so ``t_exp`` =
    ``t_hbm``).

    ``exposed`` is the share of a wave's HBM time that its math does not hide: 0 is the roofline max(compute,
    t_hbm); 1 serialises loads and math. Either way no wave beats its HBM time. ``exposed_gbps`` charges the exposed
    share at another rate than the roofline's: where the exposed part is the loads' latency, not the bandwidth, a GPU
    with slower HBM exposes no more of it (``Hardware.l2_hbm_exposed_gbps``; registered plan 64's H100s).
    """
    t_hbm = traffic.hbm / hbm_gbps
    t_exp = t_hbm if not exposed_gbps else traffic.hbm / exposed_gbps
    return np.maximum(compute_ns + exposed * t_exp, t_hbm)


def gemm_ns(traffic: WaveTraffic, compute_ns: float | np.ndarray, hbm_gbps: float, exposed: float = 0.0,
            fixed_ns: float = 0.0) -> float:
    """A persistent GEMM's time: ``fixed_ns`` plus the sum of :func:`wave_ns`."""
    return float(fixed_ns + wave_ns(traffic, compute_ns, hbm_gbps, exposed).sum())
