"""The L2 survival probe: how much of a panel one SM read is still in L2 for another SM after B bytes went through.

What it measures. The ticket law of ``ctasim.l2`` (``ctasim.l2.TICKET_LAWS``) asks one question of the L2: a panel
was read by one tile, the grid then takes in ``B`` bytes from HBM, a later tile on another SM reads the panel again
-- which share of its lines does it find in L2? The ``"threshold"`` law says all while ``B`` fits the L2 and none
after (an LRU cache of the whole L2); the ``"partition"`` law says ``exp(-2 B / l2_bytes)`` (random replacement in one
of two partitions). This probe answers it on the machine, by microbenchmark, with no CTA-pipelining kernel involved:

1. *flush*: every SM reads :data:`FLUSH_L2S` times the L2 of a buffer nothing else uses (the target leaves the L2);
2. *touch*: every SM reads the target, a ``target_bytes`` region at a rotating place in a pool, each 128-byte line
   by one warp of one CTA (``touches = 2``: a second time, by CTAs in the reverse order, so that a line is likely read
   from both halves of the chip, as a panel several tiles share is);
3. *stream*: every SM reads ``B`` bytes of fresh data (a stream buffer the flush evicted), at full bandwidth, with
   L2-only loads as the first two steps;
4. *check*: one thread per CTA, one CTA per SM, reads one word of each line of the target in a dependent chain
   (the next address needs the last value) and times each load with ``clock64``; which CTA checks a line is chosen
   without regard to which one read it (mostly another SM; L2-only loads either way). A load's latency says where it
   was served: a hit (near or far partition) or HBM.

A trial is one (``B``, touches, repetition); a cold trial checks with no touch (every load from HBM), a hot one with
``B = 0``. :func:`hit_threshold` splits the latencies at the cycle count that best separates the hot and the cold
trials, :func:`survival` gives each trial's share of lines below it, and :func:`survival_curve` the median share per
``B / l2_bytes``: the curve ``ctasim.l2``'s ``"survival"`` law reads from a profile (``l2_survival``).

*Hot set* (``hot_bytes > 0``; registered plan 57): before the touch every SM reads a ``hot_bytes`` set of other lines,
and the stream is cut into ``hot_rounds`` chunks, each followed by a read of the whole hot set again. The hot set's
lines are older than the target's when first read and newer after every chunk, and once in L2 its re-reads take
nothing in from HBM. It asks what the ticket laws take as the bytes between a panel's two reads: the bytes the L2
*takes in* (then the hot set changes nothing: the curve is the plain one), or the distinct lines *touched*, hits
included, as an LRU stack distance (then the hot set's lines push the target out as streamed ones do: the plain
curve at ``B + hot_bytes``). A GEMM's panels are such a hot set for one another: the sharers of other panels hit
them between a panel's two reads.

Left out: the GEMM's own access pattern (TMA bulk loads of 64-column K-slices; the hits on other panels between the
two reads only as the hot set above, every SM reading all of it), a replacement policy that may protect lines hit
more than once beyond what ``touches = 2`` shows, writes (the GEMM's output stores also take L2 lines), and the
check's own misses (at most ``target_bytes``, 1/30 of the L2 by default, taken in while the check runs).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

__all__ = ["B_FRACTIONS", "FLUSH_L2S", "LINE_BYTES", "check_hot", "hit_threshold", "latencies", "latency_table",
           "measure", "survival", "survival_curve"]

LINE_BYTES = 128
"""An L2 line of the H100/H200 (four 32-byte sectors); the check reads one word of each."""

FLUSH_L2S = 4
"""The flush reads this many times the L2 of its own buffer."""

B_FRACTIONS = (0.0, 0.0625, 0.125, 0.1875, 0.25, 0.3125, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0, 1.125, 1.25, 1.5,
               2.0, 3.0)
"""The streamed bytes between touch and check, in L2 sizes (``l2_bytes``)."""

_SOURCE = r"""
extern "C" __global__ void l2_read(const uint4* __restrict__ buf, unsigned long long n16, int reverse,
                                   unsigned int* sink) {
  // every thread reads 16-byte words grid-stride (a 128-byte line by 8 lanes of one warp); L2-only loads
  unsigned long long b = reverse ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  unsigned int acc = 0;
  for (unsigned long long i = b * blockDim.x + threadIdx.x; i < n16; i += (unsigned long long)gridDim.x * blockDim.x) {
    uint4 v = __ldcg(buf + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the loads; the buffers hold zeros
}

extern "C" __global__ void l2_check(const unsigned int* __restrict__ target, unsigned long long lines,
                                    unsigned int shift, unsigned int* lat, unsigned int* sink) {
  // one thread per CTA: lines (blockIdx.x + shift) mod grid, + grid, ... timed one by one in a dependent chain
  if (threadIdx.x != 0) return;
  unsigned int dep = 0;
  unsigned long long first = (blockIdx.x + shift) % gridDim.x;
  for (unsigned long long l = first; l < lines; l += gridDim.x) {
    long long t0, t1;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0) :: "memory");
    unsigned int v = __ldcg(target + l * (LINE_WORDS) + dep);
    asm volatile("add.u32 %0, %0, %1;" : "+r"(dep) : "r"(v) : "memory");  // issues once v is back
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1) :: "memory");
    lat[l] = (unsigned int)(t1 - t0);
  }
  if (dep == 0x9e3779b9u) sink[0] = dep;
}
"""


def hit_threshold(hot: np.ndarray, cold: np.ndarray) -> float:
    """The latency (cycles) that best splits hot loads (``B = 0``: hits) from cold ones (no touch: misses): the cut
    ``c`` with the fewest hot loads above it plus cold loads at or below it, halfway to the next observed latency
    (the first run of equally good cuts). Raises ValueError if either set is empty or the best cut misplaces over
    5% of all the loads (10% of the smaller set's size when the two are equal)."""
    hot, cold = np.asarray(hot, dtype=np.float64).ravel(), np.asarray(cold, dtype=np.float64).ravel()
    if hot.size == 0 or cold.size == 0:
        raise ValueError("hit_threshold needs hot and cold latencies")
    cuts = np.unique(np.concatenate([hot, cold]))
    hs, cs = np.sort(hot), np.sort(cold)
    wrong = (hot.size - np.searchsorted(hs, cuts, side="right")) + np.searchsorted(cs, cuts, side="right")
    best = np.flatnonzero(wrong == wrong.min())
    if wrong.min() > 0.05 * (hot.size + cold.size):
        raise ValueError(f"hot and cold latencies overlap: the best cut misplaces {int(wrong.min())} of "
                         f"{hot.size + cold.size} loads")
    end = best[0]  # the first run of consecutive best cuts, and halfway from its last to the next latency seen
    while end + 1 < cuts.size and wrong[end + 1] == wrong.min():
        end += 1
    nxt = cuts[end + 1] if end + 1 < cuts.size else cuts[end]
    return float((cuts[end] + nxt) / 2)


def survival(latencies: np.ndarray, threshold: float) -> float:
    """The share of a trial's checked lines served from L2: latency at or below ``threshold``."""
    lat = np.asarray(latencies, dtype=np.float64).ravel()
    if lat.size == 0:
        raise ValueError("survival needs latencies")
    return float(np.mean(lat <= threshold))


def survival_curve(rows: Sequence[dict], touches: int = 1) -> list[tuple[float, float]]:
    """The ``l2_survival`` points of a profile from the rows of :func:`measure`: per ``b_l2`` (streamed bytes /
    l2_bytes, ascending) the median survival of the trials with ``touches``, rescaled so that the hot trials' median
    (``b_l2 = 0``) is 1 and the cold trials' is 0 (the latency cut misplaces ~1-3% of loads either way: a far
    partition's hit and a near one's HBM read overlap), clipped to [0, 1] and made non-rising (a running minimum)."""
    by: dict[float, list[float]] = {}
    cold = [float(r["survival"]) for r in rows if r["kind"] == "cold"]
    for r in rows:
        if r["kind"] == "trial" and int(r["touches"]) == touches:
            by.setdefault(float(r["b_l2"]), []).append(float(r["survival"]))
    if not by or 0.0 not in by:
        raise ValueError(f"no hot trials (b_l2 = 0) with touches = {touches}")
    if not cold:
        raise ValueError("no cold trials")
    hot, floor = float(np.median(by[0.0])), float(np.median(cold))
    if hot - floor < 0.5:
        raise ValueError(f"hot ({hot:.3f}) and cold ({floor:.3f}) survival too close to scale between")
    bs = sorted(by)
    share = np.clip([(float(np.median(by[b])) - floor) / (hot - floor) for b in bs], 0.0, 1.0)
    return [(b, float(v)) for b, v in zip(bs, np.minimum.accumulate(share))]


def latency_table(raw: dict[str, np.ndarray]):
    """The probe's raw latencies (:func:`measure`'s second value) as a pandas table of counts: one row per (trial key,
    latency in cycles) that occurs, ``key, cycles, count``; :func:`latencies` reads it back."""
    import pandas as pd  # noqa: PLC0415

    parts = []
    for key, v in raw.items():
        c, n = np.unique(np.asarray(v, dtype=np.int64), return_counts=True)
        parts.append(pd.DataFrame({"key": key, "cycles": c, "count": n}))
    return pd.concat(parts, ignore_index=True)


def latencies(table) -> dict[str, np.ndarray]:
    """The raw latencies by trial key from a :func:`latency_table` (each trial's loads sorted by latency)."""
    return {k: np.repeat(g["cycles"].to_numpy(), g["count"].to_numpy()) for k, g in table.groupby("key", sort=False)}


def measure(device: int = 0, target_bytes: int = 2 << 20, fractions: Sequence[float] = B_FRACTIONS,
            reps: int = 5, touches: Sequence[int] = (1, 2), hot_bytes: int = 0, hot_rounds: int = 8,
            log: Callable[[str], None] = lambda s: None) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Run the probe on ``device``: for each repetition, a cold trial, then every (touches, B) trial in a shuffled
    order (a fixed seed). Returns the rows (one per trial: kind, rep, touches, b_l2, b_bytes, lines, survival and
    latency quantiles, hot_bytes; survival by :func:`hit_threshold` of all hot against all cold latencies) and the
    raw latencies by trial key (``"cold-r<rep>"``, ``"t<touches>-b<b_l2>-r<rep>"``; uint32 cycles). ``hot_bytes`` > 0
    reads a hot set before the touch and again after each of the stream's ``hot_rounds`` chunks (the module's
    docstring; every trial, the cold ones too)."""
    from ctahw.device import require_cupy

    check_hot(hot_bytes, hot_rounds)
    cp = require_cupy()
    if target_bytes % LINE_BYTES or target_bytes <= 0:
        raise ValueError(f"target_bytes must be a positive multiple of {LINE_BYTES}, got {target_bytes}")
    if any(f < 0 for f in fractions) or 0.0 not in fractions:
        raise ValueError("fractions must be >= 0 and hold 0 (the hot trial)")
    with cp.cuda.Device(device):
        props = cp.cuda.runtime.getDeviceProperties(device)
        l2, sms = int(props["l2CacheSize"]), int(props["multiProcessorCount"])
        mod = cp.RawModule(code=_SOURCE.replace("LINE_WORDS", str(LINE_BYTES // 4)), options=("-std=c++17",))
        read, check = mod.get_function("l2_read"), mod.get_function("l2_check")
        stream_max = int(math.ceil(max(fractions) * l2 / 16)) * 16
        pool = 16 * target_bytes  # the target rotates through a pool so that trials do not reuse one set of lines
        flush = cp.zeros(FLUSH_L2S * l2 // 4, dtype=cp.uint32)
        stream = cp.zeros(max(stream_max, 16) // 4, dtype=cp.uint32)
        targets = cp.zeros(pool // 4, dtype=cp.uint32)
        sink = cp.zeros(1, dtype=cp.uint32)
        lines = target_bytes // LINE_BYTES
        lat = cp.zeros(lines, dtype=cp.uint32)
        hot = cp.zeros(max(hot_bytes, 16) // 4, dtype=cp.uint32)
        threads, grid = 256, sms * 8

        def read_bytes(buf, nbytes: int, reverse: int = 0) -> None:
            if nbytes >= 16:
                read((grid,), (threads,), (buf, cp.uint64(nbytes // 16), cp.int32(reverse), sink))

        def stream_bytes(b: int) -> None:
            """``b`` fresh bytes from the stream buffer; with a hot set, in ``hot_rounds`` chunks, the hot set
            read again after each."""
            if not hot_bytes:
                read_bytes(stream, b)
                return
            cuts = [int(round(b * i / hot_rounds / 16)) * 16 for i in range(hot_rounds + 1)]
            for lo, hi in zip(cuts[:-1], cuts[1:]):
                read_bytes(stream[lo // 4: hi // 4], hi - lo)
                read_bytes(hot, hot_bytes)

        rng = np.random.default_rng(20261204)
        trials = [(t, f) for t in touches for f in fractions]
        raw: dict[str, np.ndarray] = {}
        meta: list[dict] = []
        slot = 0
        for rep in range(reps):
            order = [("cold", 0, 0.0)] + [("trial", t, f) for t, f in (trials[i] for i in rng.permutation(len(trials)))]
            for kind, t, f in order:
                base = (slot % (pool // target_bytes)) * target_bytes // 4
                slot += 1
                tgt = targets[base: base + target_bytes // 4]
                read_bytes(flush, flush.nbytes)
                read_bytes(hot, hot_bytes)
                for i in range(t):
                    read_bytes(tgt, target_bytes, reverse=i % 2)
                b = int(round(f * l2 / 16)) * 16
                stream_bytes(b)
                lat.fill(0)
                check((sms,), (32,), (tgt, cp.uint64(lines), cp.uint32(1 + rep % (sms - 1)), lat, sink))
                cp.cuda.Device(device).synchronize()
                key = "cold-r%d" % rep if kind == "cold" else "t%d-b%g-r%d" % (t, f, rep)
                raw[key] = cp.asnumpy(lat)
                meta.append({"kind": kind, "rep": rep, "touches": t, "b_l2": f, "b_bytes": b, "key": key})
            log(f"l2 survival probe: repetition {rep + 1}/{reps} done")
    hot = np.concatenate([raw[m["key"]] for m in meta if m["kind"] == "trial" and m["b_l2"] == 0.0])
    cold = np.concatenate([raw[m["key"]] for m in meta if m["kind"] == "cold"])
    cut = hit_threshold(hot, cold)
    rows = []
    for m in meta:
        v = raw[m["key"]].astype(np.float64)
        q = np.percentile(v, [10, 50, 90])
        rows.append({**{k: m[k] for k in ("kind", "rep", "touches", "b_l2", "b_bytes")}, "lines": int(v.size),
                     "survival": survival(v, cut), "threshold_cycles": cut, "p10": q[0], "p50": q[1], "p90": q[2],
                     "l2_bytes": l2, "sm_count": sms, "hot_bytes": hot_bytes, "hot_rounds": hot_rounds})
    return rows, raw


def check_hot(hot_bytes: int, hot_rounds: int) -> None:
    """Raise ValueError unless the hot set is off (0 bytes) or a positive multiple of 16 bytes with 1-64 rounds."""
    if hot_bytes < 0 or hot_bytes % 16:
        raise ValueError(f"hot_bytes must be 0 or a positive multiple of 16, got {hot_bytes}")
    if not 1 <= hot_rounds <= 64:
        raise ValueError(f"hot_rounds must be in 1..64, got {hot_rounds}")
