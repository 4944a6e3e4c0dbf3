"""The L2-to-SM read-rate probe: how many bytes a second the L2 gives the SMs by TMA copies, by cluster and pattern.

What it measures. ``ctasim.costs.order_waves`` can floor a wave at its tiles' L2 reads (``ctasim.costs.l2_sm_reads``:
the A tile over ``cluster_n``, the W tile over ``cluster_m``, the bytes one multicast saves counted once) at a rate
``Hardware.l2_sm_read_gbps``. That law makes two claims this probe tests with no GEMM: that such a rate exists (an L2
that is already warm cannot feed 132 SMs faster than some bytes a second), and that it is counted *at the L2*, so
that a multicast to two CTAs costs the L2 its bytes once (a limit at the SMs' side would count them twice).

The kernel (``ctahw_probe_l2_rate`` in ``ctahw/kernels/probes.cu``) runs, in every CTA of a full grid (one per SM),
one thread's ring of ``stages`` shared-memory stages as a GEMM mainloop's producer does, with nothing consuming the
data: a stage is an *own* part the CTA copies for itself and a *shared* part split over the CTAs of its cluster, each
copying its share into every CTA of the cluster by ``.multicast::cluster``. The buffer (:data:`BUF_BYTES`, a third of
an H100's L2) is read once before the timed launches, so that every copy is an L2 hit. Per :class:`Case`:

* ``delivered`` bytes: what lands in shared memory, ``iters x (own + shared)`` per CTA;
* ``l2`` bytes: what the L2 sends, ``iters x (own + shared / cluster)`` per CTA (:func:`l2_bytes`);
* the window: the first CTA's start to the last one's end (``%globaltimer``), and the launch's event time.

:data:`CASES` holds the cases, defined once: the 1x1 GEMM's stage (A 16 KiB + W 32 KiB, all own), the 2x1's (W
shared), the 1x2's (A shared), a stage all shared, the 1x1 stage under a cluster launch with no multicast, and the 1x1
stage with groups of 6 CTAs reading the same lines (as a W tile's sharers do in a row-order first wave).
:func:`summary` gives each case's median rates; :func:`read_rate` the 1x1 case's L2 rate (the profile's
``l2_sm_read_gbps``); :func:`where_bound` which side the multicast cases say the limit is on.

Correctness first: the buffer holds random words, and after its ring every CTA compares its last stage with the buffer
(``mismatched_words``; a multicast that landed in the wrong CTA or place shows there); a case with any mismatch or a
timed-out wait raises :class:`~ctahw.probes.ProbeError`.

The second kernel (``ctahw_probe_l2_tile``, :func:`measure_tiles`) issues the GEMM's own loads: per k-step one 2-D
tensor copy of the 64 x 128 A box and one of the 64 x 256 W box (128-byte swizzled, a 4-stage ring, tensor maps encoded
on the host through the runtime's driver entry point), CTA b reading row-block b // a_div of an A matrix and column
b % w_mod of a W matrix (:class:`TileCase`: a row-order first wave with n tiles a row at a_div = w_mod = n), K each, its
k-steps in step with the other CTAs' or ``k_phase`` apart; each CTA's last stage checked as a sum of words against its
source boxes. :data:`TILE_CASES` (K = 512, in L2), :data:`TILE_MORE_CASES` (A or W alone shared; the GEMM's own K) and
:data:`TILE_PHASE_CASES` (in step and a k-step apart) hold its cases; ``ctahw calibrate`` runs :data:`TILE_CASES`.

What it found (five H100s, 2026-12-07; docs/hardware.md): the 1-D bulk copies 4.7 TB/s for the 1x1 stage, 4.2-5.0 in
the row-order pattern, 6.1 with groups of 6 reading the same lines, less with multicast -- half to two thirds of the
9.7 TB/s the GEMM's 1x1 first wave draws at H = 3584 (registered plan 91): that kernel's ceiling, not the L2's. The
tensor copies 12.7-12.8 TB/s up to 12 tiles a row and 8.2-8.9 from 14 on, at which rate registered plans 92 and 93
priced the GEMM's 1x1 first wave within 3% at 23-31 tiles a row (2.3-5.8% short at 25-37); the GEMM's own step sits
at 15-18 tiles a row, and no profile takes the rates.

Left out: the consumer warps' reads of shared memory and the tensor cores (nothing paces the ring), the HBM (a cold L2
is a different probe: ``ctahw.l2probe``; the tile cases at the GEMM's own K read W from HBM again on each pass over
K where it does not fit), clusters of more than 2 and multicast in the tile kernel, and the H100's two L2 partitions
(a line's home partition is whatever the address hash gives; the probe reports the mean over them). The 1-D kernel's
stage slot is ``(key x 37 + iteration)`` modulo the buffer's slots, so CTAs whose keys are 46, 83 or 129 apart read
the same slot 1-3 iterations apart (132 CTAs x 4 stages x 48 KiB in flight is more than the 16 MiB buffer: some lines
are always read by two CTAs at about once).
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import Callable, Mapping, Sequence

import numpy as np

__all__ = ["BUF_BYTES", "CASES", "Case", "ITERS", "ROW_CASES", "ROW_NS", "STAGES", "START_SPREAD_MAX", "TIMEOUT_NS",
           "TILE_CASES", "TILE_COLD_CASES", "TILE_K", "TILE_MORE_CASES", "TILE_PHASE_CASES", "TILE_NS", "TILE_STAGES",
           "TileCase", "check_case", "cold_case", "delivered_bytes", "l2_bytes", "measure", "measure_tiles",
           "read_rate", "row_case", "summary", "where_bound"]

KIB = 1024

BUF_BYTES = 16 << 20
"""The L2-resident buffer: 16 MiB (a third of an H100's 50 MiB L2, 0.27 of an H200's 60 MiB)."""

STAGES = 4
"""The ring's depth: the 128x256x64 bf16 GEMM's (4 stages of 48 KiB in its 227 KiB of shared memory)."""

ITERS = 2000
"""Stages each CTA fills per launch: 132 x 48 KiB x 2000 = 13 GB delivered, ~1-2 ms at the rates expected."""

START_SPREAD_MAX = 0.05
"""A launch whose last CTA started later than this share of its window after the first is refused by :func:`summary`."""

TIMEOUT_NS = 2_000_000_000
"""Every wait in the kernel gives up after this (2 s; a launch takes ~2 ms)."""


@dataclasses.dataclass(frozen=True)
class Case:
    """One configuration of the ring: ``cluster`` CTAs a cluster (1 or 2), ``own_bytes`` each CTA copies for itself
    and ``shared_bytes`` the cluster's CTAs copy once between them by multicast, per stage; ``share`` CTAs
    (consecutive block ids) read the same own lines. With ``groups`` > 0 the last ``w_bytes`` of the own part are a
    second copy (a W part) that the CTAs with the same block id modulo ``groups`` read alike (:func:`row_case`)."""

    name: str
    cluster: int
    own_bytes: int
    shared_bytes: int
    share: int = 1
    what: str = ""
    w_bytes: int = 0
    groups: int = 0


CASES: tuple[Case, ...] = (
    Case("1x1", 1, 48 * KIB, 0, what="the 1x1 GEMM's stage: A 16 KiB + W 32 KiB, each CTA its own"),
    Case("2x1", 2, 16 * KIB, 32 * KIB, what="the 2x1 GEMM's stage: W multicast to the cluster's two CTAs"),
    Case("1x2", 2, 32 * KIB, 16 * KIB, what="the 1x2 GEMM's stage: A multicast to the cluster's two CTAs"),
    Case("2-all", 2, 0, 48 * KIB, what="a 48 KiB stage all multicast: the L2 sends half what lands"),
    Case("2-none", 2, 48 * KIB, 0, what="the 1x1 stage under a cluster launch, no multicast"),
    Case("1x1-share6", 1, 48 * KIB, 0, share=6,
         what="the 1x1 stage, groups of 6 CTAs reading the same lines at about the same time"),
)
"""The probe's cases, in launch order within a repetition."""


def row_case(n: int) -> Case:
    """The first wave of the 1x1 row-order GEMM with ``n`` tiles a row (N = 256 n), 132 CTAs: CTA b runs tile (b // n,
    b % n), so its A part (16 KiB) is read alike by the CTAs of its row-block (``share = n``) and its W part (32 KiB)
    by those of its column (``groups = n``)."""
    return Case(f"row-n{n}", 1, 48 * KIB, 0, share=n, w_bytes=32 * KIB, groups=n,
                what=f"the 1x1 row-order first wave, {n} tiles a row: A shared along a row-block, W down a column")


ROW_NS = (8, 10, 12, 14, 16, 18, 20, 22, 26, 33, 44, 66, 132)
"""The tiles a row of :data:`ROW_CASES` (H = 256 n: 2048 ... 33792; 14, 18, 22 and 42-66 as the committed producer-alone
calls ran on the H100s)."""

ROW_CASES: tuple[Case, ...] = tuple(row_case(n) for n in ROW_NS)
"""The row-order first waves by tiles a row: ``bench/hw/l2_rate_probe.py --rows`` runs them after :data:`CASES`."""


TILE_K = 512
"""Elements along K of the tile cases' A and W matrices: each CTA's k-step cycles through 8 of them, so that every
matrix stays in L2 (W at n = 66 tiles a row: 66 x 256 rows x 1 KiB = 16.5 MiB)."""

TILE_NS = tuple(n for n in ROW_NS if n <= 66)
"""The tiles a row of the tile cases (:data:`TILE_CASES`): :data:`ROW_NS` up to 66 (at 132 W would be 33 MiB)."""

@dataclasses.dataclass(frozen=True)
class TileCase:
    """One launch shape of the tile kernel: CTA b reads row-block b // ``a_div`` of A and column b % ``w_mod`` of W,
    both ``k_elems`` wide (a_div = w_mod = n: the row-order first wave with n tiles a row), its k-steps starting at
    b x ``k_phase`` (0: all CTAs in step, the sharers of a line reading it at once)."""

    name: str
    a_div: int
    w_mod: int
    k_elems: int = TILE_K
    k_phase: int = 0
    cold: bool = False
    """One pass over K (k_elems / 64 stages a CTA) after the L2 is flushed: a first wave's loads from HBM."""

    def stages_per_launch(self, iters: int) -> int:
        """The stages each CTA fills in a launch: one pass over K (k_elems / 64) if cold, else ``iters``."""
        return self.k_elems // 64 if self.cold else iters

    def bytes(self, blocks: int) -> int:
        """The A and W matrices' bytes (bf16)."""
        return (-(-blocks // self.a_div) * 128 + self.w_mod * 256) * self.k_elems * 2


TILE_CASES: tuple[TileCase, ...] = tuple(TileCase(f"tile-n{n}", n, n) for n in TILE_NS)
"""The row-order first waves, K = 512 (``--tiles``; the cases of ``bench/results/hw-h100/2026-12-07-l2-tile-1gpu``)."""

TILE_MORE_CASES: tuple[TileCase, ...] = (
    *(c for n in (8, 12, 14, 22) for c in (TileCase(f"tile-n{n}-k256", n, n, 256),
                                            TileCase(f"tile-n{n}-k256-w-shared", 1, n, 256),
                                            TileCase(f"tile-n{n}-k256-a-shared", n, 132, 256))),
    *(TileCase(f"tile-n{n}-k{256 * n}", n, n, 256 * n) for n in (12, 13, 14, 15, 16, 18)),
)
"""``--tiles-more``: at K = 256, each n's row-order wave beside the same wave with only W shared (every CTA its own A
row-block) and with only A shared (every CTA its own W column); and the row-order wave at the GEMM's own K = 256 n
(K = N = H), where W is 19-42 MiB, as the producers' GEMMs are."""

TILE_PHASE_CASES: tuple[TileCase, ...] = tuple(
    TileCase(f"tile-n{n}-k{256 * n}-phase{ph}", n, n, 256 * n, ph) for n in (12, 14, 15, 18, 22, 31, 42)
    for ph in (0, 1))
"""``--tiles-phase``: the row-order wave at the GEMM's own K, its CTAs in step (phase 0) and each a k-step after the
one before it (phase 1: a W line's sharers n k-steps apart, an A line's 1 to n - 1), as a GEMM's CTAs drift apart."""

def cold_case(n: int) -> TileCase:
    """The 1x1 row-order first wave with ``n`` tiles a row at the GEMM's own K (256 n), cold: one pass after a flush."""
    return TileCase(f"tile-n{n}-k{256 * n}-cold", n, n, 256 * n, cold=True)


TILE_COLD_CASES: tuple[TileCase, ...] = tuple(cold_case(n) for n in (14, 18, 22, 25, 27, 31, 35, 37, 42))
"""``--tiles-cold``: the 1x1 row-order first wave's loads as the GEMM issues them -- one pass over its own K after the
L2 is flushed (every byte of W and A cold) -- with no math: the load time a first wave cannot beat."""

FLUSH_L2S = 4
"""A cold case's flush reads this many times the L2 of a buffer nothing else uses before each launch."""

TILE_STAGES = 4
"""The tile kernel's ring: the GEMM's 4 stages of 48 KiB (its limit: 4 x 48 KiB and a 1 KiB alignment in 227 KiB)."""


def check_case(case: Case, buf_bytes: int = BUF_BYTES, stages: int = STAGES, smem_bytes: int = 227 * KIB) -> None:
    """Raise ValueError naming the problem unless the kernel can run ``case``: cluster 1 or 2, parts multiples of 16
    bytes (the shared part of 16 x cluster), not both empty, each no larger than the buffer, share >= 1, and the ring
    (stages x stage bytes) within ``smem_bytes`` (an H100's or H200's 227 KiB a CTA)."""
    if case.cluster not in (1, 2):
        raise ValueError(f"case {case.name}: cluster must be 1 or 2, got {case.cluster}")
    if case.own_bytes < 0 or case.own_bytes % 16:
        raise ValueError(f"case {case.name}: own_bytes must be a multiple of 16 >= 0, got {case.own_bytes}")
    if case.shared_bytes < 0 or case.shared_bytes % (16 * case.cluster):
        raise ValueError(f"case {case.name}: shared_bytes must be a multiple of {16 * case.cluster} >= 0, "
                         f"got {case.shared_bytes}")
    if case.own_bytes + case.shared_bytes == 0:
        raise ValueError(f"case {case.name}: a stage of 0 bytes")
    if max(case.own_bytes, case.shared_bytes) > buf_bytes:
        raise ValueError(f"case {case.name}: a part larger than the {buf_bytes}-byte buffer")
    if case.share < 1:
        raise ValueError(f"case {case.name}: share must be >= 1, got {case.share}")
    if case.groups < 0 or case.w_bytes < 0 or case.w_bytes % 16 or case.w_bytes > case.own_bytes or (
            (case.groups > 0) != (case.w_bytes > 0)):
        raise ValueError(f"case {case.name}: a W part needs groups >= 1 and w_bytes a multiple of 16 within own_bytes, "
                         f"got groups {case.groups}, w_bytes {case.w_bytes}")
    if not 1 <= stages <= 8:
        raise ValueError(f"stages must be in 1..8, got {stages}")
    if stages * (case.own_bytes + case.shared_bytes) > smem_bytes:
        raise ValueError(f"case {case.name}: {stages} stages of {case.own_bytes + case.shared_bytes} bytes exceed "
                         f"{smem_bytes} bytes of shared memory")


def delivered_bytes(case: Case, blocks: int, iters: int) -> int:
    """The bytes that land in shared memory in one launch: every CTA's stages, own and shared parts alike."""
    return blocks * iters * (case.own_bytes + case.shared_bytes)


def l2_bytes(case: Case, blocks: int, iters: int) -> int:
    """The bytes the L2 sends in one launch: the own parts once a CTA, the shared parts once a cluster (a multicast
    is one read of the L2 whatever the number of CTAs it lands in)."""
    return blocks * iters * (case.own_bytes + case.shared_bytes // case.cluster)


def measure(device: int = 0, cases: Sequence[Case] = CASES, reps: int = 7, iters: int = ITERS,
            buf_bytes: int = BUF_BYTES, stages: int = STAGES, log: Callable[[str], None] = lambda s: None
            ) -> list[dict]:
    """Run every case ``reps`` times on ``device`` (a warm-up launch of each first; repetitions outermost, the cases
    in order within one) with one CTA per SM; one row per launch: case, rep, cluster, own/shared bytes, share,
    blocks, iters, stages, delivered and L2 bytes, ``window_ns`` (the first CTA's start to the last one's end),
    ``event_ms``, ``start_spread_ns`` (the last CTA's start after the first's: a grid not all resident shows here),
    ``sms`` (distinct SMs the grid ran on) and ``mismatched_words`` (0: the check passed). Raises ValueError for a case
    the kernel cannot run (:func:`check_case`) and :class:`ctahw.probes.ProbeError` for a launch error, a wait that
    timed out, or a stage that does not hold the buffer's bytes."""
    from ctahw.device import require_cupy
    from ctahw.probes import call

    cp = require_cupy()
    if reps < 1 or iters < 1:
        raise ValueError(f"reps and iters must be >= 1, got {reps} and {iters}")
    for c in cases:
        check_case(c, buf_bytes, stages)
    rows: list[dict] = []
    with cp.cuda.Device(device):
        props = cp.cuda.runtime.getDeviceProperties(device)
        blocks = int(props["multiProcessorCount"])
        if blocks % 2:
            raise ValueError(f"GPU {device} has {blocks} SMs: the cluster cases need an even grid")
        rng = np.random.default_rng(20261207)
        buf = cp.asarray(rng.integers(0, 2**32, size=buf_bytes // 4, dtype=np.uint32))
        timed = _Launcher(cp, device, blocks)

        def launch(c: Case, n: int) -> tuple[float, np.ndarray, np.ndarray]:
            return timed.run(
                lambda stamps, err, s: call("l2_rate", buf.data.ptr, buf_bytes, c.own_bytes, c.shared_bytes,
                                            c.cluster, stages, n, c.share, c.w_bytes, c.groups, blocks, TIMEOUT_NS,
                                            stamps, err, stream=s, device=device),
                f"l2 rate probe, case {c.name} on GPU {device}", "words of the last stages differ from the buffer")

        buf.sum()  # every line of the buffer read once: the copies below hit the L2
        for c in cases:  # a whole launch of each first: the clocks and the L2 settle before any timed one
            launch(c, iters)
        for rep in range(reps):
            for c in cases:
                ms, st, e = launch(c, iters)
                rows.append({"case": c.name, "rep": rep, "cluster": c.cluster, "own_bytes": c.own_bytes,
                             "shared_bytes": c.shared_bytes, "share": c.share, "w_bytes": c.w_bytes,
                             "groups": c.groups, "blocks": blocks, "iters": iters,
                             "stages": stages, "buf_bytes": buf_bytes,
                             "delivered_bytes": delivered_bytes(c, blocks, iters),
                             "l2_bytes": l2_bytes(c, blocks, iters), **_timing(ms, st),
                             "mismatched_words": int(e[1])})
            log(f"l2 rate probe: repetition {rep + 1}/{reps} done")
    return rows


def measure_tiles(device: int = 0, cases: Sequence[TileCase] = TILE_CASES, reps: int = 7, iters: int = ITERS,
                  log: Callable[[str], None] = lambda s: None) -> list[dict]:
    """The row-order first wave by TMA *tensor* copies (``ctahw_probe_l2_tile``: the GEMM's 2-D boxes, 64 x 128 of A
    and 64 x 256 of W a k-step, 128-byte swizzled), one CTA per SM, per :class:`TileCase`: CTA b reads row-block
    b // a_div of an A matrix and column b % w_mod of a W matrix (random bf16, ``k_elems`` wide, read once before). A
    warm-up launch of each case, then ``reps`` timed ones (repetitions outermost); rows as :func:`measure`'s (every
    byte from the L2: ``share`` a_div, ``groups`` w_mod; ``buf_bytes`` the two matrices'). Raises ValueError for a case
    the kernel cannot run (before any GPU work) and :class:`ctahw.probes.ProbeError` for a launch error, a timed-out
    wait, or a stage whose words do not sum to its source boxes'."""
    from ctahw.device import require_cupy
    from ctahw.probes import call

    if reps < 1 or iters < 1:
        raise ValueError(f"reps and iters must be >= 1, got {reps} and {iters}")
    if not cases:
        raise ValueError("no tile cases")
    for c in cases:
        if c.k_elems < 64 or c.k_elems % 64:
            raise ValueError(f"tile case {c.name}: k_elems must be a positive multiple of 64, got {c.k_elems}")
        if c.a_div < 1 or c.w_mod < 1 or c.k_phase < 0:
            raise ValueError(f"tile case {c.name}: a_div and w_mod must be >= 1 and k_phase >= 0, got {c.a_div}, "
                             f"{c.w_mod} and {c.k_phase}")
    cp = require_cupy()
    stage = 48 * KIB
    rows: list[dict] = []
    with cp.cuda.Device(device):
        props = cp.cuda.runtime.getDeviceProperties(device)
        blocks, l2 = int(props["multiProcessorCount"]), int(props["l2CacheSize"])
        rng = np.random.default_rng(20261207)
        mats = {}
        for c in cases:
            ra, rw = -(-blocks // c.a_div) * 128, c.w_mod * 256
            mats[c.name] = (cp.asarray(rng.integers(0, 2**16, size=(ra, c.k_elems), dtype=np.uint16)),
                            cp.asarray(rng.integers(0, 2**16, size=(rw, c.k_elems), dtype=np.uint16)))
        timed = _Launcher(cp, device, blocks)
        flush = cp.zeros(FLUSH_L2S * l2 // 4, dtype=cp.uint32) if any(c.cold for c in cases) else None

        def run(c: TileCase) -> tuple[float, np.ndarray]:
            a, w = mats[c.name]
            if c.cold:
                flush.sum()  # every line of the L2 taken by the flush buffer: the case's matrices start in HBM
            ms, st, _ = timed.run(
                lambda stamps, err, s: call("l2_tile", a.data.ptr, w.data.ptr, c.k_elems, c.a_div, c.w_mod,
                                            c.k_phase, blocks, TILE_STAGES, c.stages_per_launch(iters), TIMEOUT_NS,
                                            stamps, err, stream=s, device=device),
                f"l2 tile probe, {c.name} on GPU {device}", "CTAs' last stages do not sum to their source boxes")
            return ms, st

        for c in cases:
            a, w = mats[c.name]
            a.sum(), w.sum()  # every line read once: the copies hit the L2 where the matrices fit it
            run(c)
        for rep in range(reps):
            for c in cases:
                ms, st = run(c)
                n_iters = c.stages_per_launch(iters)
                b = blocks * n_iters * stage
                rows.append({"case": c.name, "rep": rep, "cluster": 1, "own_bytes": stage, "shared_bytes": 0,
                             "share": c.a_div, "w_bytes": 32 * KIB, "groups": c.w_mod, "blocks": blocks,
                             "iters": n_iters, "stages": TILE_STAGES, "buf_bytes": c.bytes(blocks),
                             "delivered_bytes": b, "l2_bytes": b, **_timing(ms, st), "mismatched_words": 0})
            log(f"l2 tile probe: repetition {rep + 1}/{reps} done")
    return rows


class _Launcher:
    """What both probe kernels' timed launches share: the stamps and error words (zeroed before each launch), a
    stream and two events around the launch, and the error word read back -- a timed-out wait or a mismatch is a
    :class:`ctahw.probes.ProbeError` naming ``what``."""

    def __init__(self, cp, device: int, blocks: int):
        self.cp, self.device, self.blocks = cp, device, blocks
        self.stamps = cp.zeros(3 * blocks, dtype=cp.uint64)
        self.err = cp.zeros(2, dtype=cp.int32)
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.start, self.stop = cp.cuda.Event(), cp.cuda.Event()

    def run(self, issue: Callable, what: str, mismatch: str) -> tuple[float, np.ndarray, np.ndarray]:
        """``issue(stamps_ptr, err_ptr, stream)`` launched and timed: (event ms, stamps as (blocks, 3), error words).
        ``mismatch`` says what the error's second word counts."""
        from ctahw.probes import ProbeError  # noqa: PLC0415

        cp = self.cp
        self.err.fill(0)
        self.stamps.fill(0)
        cp.cuda.Device(self.device).synchronize()
        self.start.record(self.stream)
        issue(self.stamps.data.ptr, self.err.data.ptr, self.stream)
        self.stop.record(self.stream)
        self.stop.synchronize()
        e = cp.asnumpy(self.err)
        if e[0]:
            raise ProbeError(f"{what}: a wait on stage {e[0] - 1} timed out after {TIMEOUT_NS / 1e9:g} s")
        if e[1]:
            raise ProbeError(f"{what}: {int(e[1])} {mismatch}")
        return cp.cuda.get_elapsed_time(self.start, self.stop), cp.asnumpy(self.stamps).reshape(self.blocks, 3), e


def _timing(ms: float, stamps: np.ndarray) -> dict:
    """A launch row's timing: the first CTA's start to the last one's end, the event time, the last CTA's start after
    the first's, and the distinct SMs the grid ran on (stamps: start ns, end ns, SM id per CTA)."""
    t0, t1 = stamps[:, 0].astype(np.int64), stamps[:, 1].astype(np.int64)
    return {"window_ns": int(t1.max() - t0.min()), "event_ms": float(ms), "start_spread_ns": int(t0.max() - t0.min()),
            "sms": int(np.unique(stamps[:, 2]).size)}


def summary(rows: Sequence[Mapping]) -> list[dict]:
    """Per case (in the rows' order of first appearance): the launches, the median ``delivered_gbps`` and ``l2_gbps``
    over the window (bytes / ns = GB/s), their min and max, and the median start spread. Raises ValueError on no rows
    or a row with a window of 0 ns, any mismatched word, a grid not on ``blocks`` distinct SMs, or a start spread over
    :data:`START_SPREAD_MAX` of its window (a grid not all resident at once: its rate would be a share of the GPU's)."""
    if not rows:
        raise ValueError("no rows")
    by: dict[str, list[Mapping]] = {}
    for r in rows:
        where = f"case {r['case']} rep {r['rep']}"
        if int(r["window_ns"]) <= 0:
            raise ValueError(f"{where}: a window of {r['window_ns']} ns")
        if int(r["mismatched_words"]):
            raise ValueError(f"{where}: {r['mismatched_words']} mismatched words")
        if int(r["sms"]) != int(r["blocks"]):
            raise ValueError(f"{where}: {r['blocks']} CTAs ran on {r['sms']} SMs, not one each")
        if int(r["start_spread_ns"]) > START_SPREAD_MAX * int(r["window_ns"]):
            raise ValueError(f"{where}: the last CTA started {int(r['start_spread_ns'])} ns after the first, over "
                             f"{START_SPREAD_MAX:.0%} of the {int(r['window_ns'])} ns window: not all resident at once")
        by.setdefault(str(r["case"]), []).append(r)
    out = []
    for name, rs in by.items():
        d = [int(r["delivered_bytes"]) / int(r["window_ns"]) for r in rs]
        l2 = [int(r["l2_bytes"]) / int(r["window_ns"]) for r in rs]
        out.append({"case": name, "cluster": int(rs[0]["cluster"]), "own_bytes": int(rs[0]["own_bytes"]),
                    "shared_bytes": int(rs[0]["shared_bytes"]), "share": int(rs[0]["share"]),
                    "groups": int(rs[0].get("groups", 0)), "launches": len(rs),
                    "delivered_gbps": statistics.median(d), "l2_gbps": statistics.median(l2),
                    "l2_gbps_min": min(l2), "l2_gbps_max": max(l2),
                    "start_spread_ns": statistics.median(int(r["start_spread_ns"]) for r in rs)})
    return out


def read_rate(table: Sequence[Mapping], case: str = "1x1") -> float:
    """The profile's ``l2_sm_read_gbps``: the median L2 rate of ``case`` (default the 1x1 GEMM's stage) in a
    :func:`summary` table. Raises ValueError if the case is not there."""
    for r in table:
        if r["case"] == case:
            return float(r["l2_gbps"])
    raise ValueError(f"no case {case!r} in the summary (cases: {', '.join(str(r['case']) for r in table)})")


def where_bound(table: Sequence[Mapping], tolerance: float = 0.1) -> str:
    """Which side the all-multicast case (``2-all``) puts the limit on, against the plain cluster launch
    (``2-none``): ``"l2"`` where their L2 rates agree within ``tolerance`` (the law of ``ctasim.costs.l2_sm_reads``:
    a multicast costs the L2 its bytes once, and what lands in shared memory doubles), ``"sm"`` where their delivered
    rates agree (a limit on what lands: multicast saves nothing), ``"neither"`` otherwise."""
    rate = {str(r["case"]): r for r in table}
    for need in ("2-all", "2-none"):
        if need not in rate:
            raise ValueError(f"no case {need!r} in the summary")
    a, n = rate["2-all"], rate["2-none"]
    if abs(float(a["l2_gbps"]) / float(n["l2_gbps"]) - 1.0) <= tolerance:
        return "l2"
    if abs(float(a["delivered_gbps"]) / float(n["delivered_gbps"]) - 1.0) <= tolerance:
        return "sm"
    return "neither"
