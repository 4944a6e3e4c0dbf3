"""Protocol stress on the GPU: the chain kernel, or the work-queue kernels, built with one seeded ordering bug each
and run many times with random delays.

The protocol model (:mod:`ctasim.protocol`) says which changes of the protocol PTX's memory model lets read stale
data; this module asks the hardware. Each entry of :data:`MUTATIONS` is the kernel form of one of the model's mutants
(or a control): a list of exact text edits of a copy of ``ctahw/kernels/`` (:func:`mutant_sources`), each of which
must match exactly once, so a kernel that changed shape fails loudly instead of building the wrong mutant. Every
stress build also gets its library's :data:`JITTERS`: a random sleep of 0 .. D ns (``__nanosleep`` of a hash) before
each ticket of the chain kernel, or before each queue consumer's pop and each producer CTA's tile (one wave of
producers with the same work otherwise finishes within the consumers' reaction time); D is set per run through the
exported ``ctahw_stress_set_delay``, so producers and consumers meet at varied phases.

The chain kernel (:func:`stress`, one GPU): before every run the chain's activations ``X[1..L]`` are poisoned (bf16
NaN bits, on the runner's stream); after it every layer's output is compared bit for bit with the same chain computed
by the unmodified kernel (itself checked against an fp32 reference). A CTA's tile is a fixed sequence of wgmma over K,
so a correct run is bitwise equal to the reference; a tile that read its input before the producer's write was
visible reads poison or a partial row-block and differs (NaN propagates down the chain). :func:`handoffs` counts, in
one traced run, the consumers that spun on their counter: the only hand-offs a seeded bug can race.

The work-queue protocol (:func:`stress_queue`): builds of ctapipe_sm90_bf16 (``library = "queue"``), the producer's
signal and push and the consumer's pop of a square 2-layer chain, both kernels on GPU 0
(:class:`ctahw.onegpu.OneGpuRunner`), every consumer CTA resident and spinning on its slot; the consumer's input and
the output are poisoned before each run and the output compared bit for bit; :func:`leads` counts, in one traced run,
the consumers that acquired before their row-block's last store.

In both, a run that records a protocol error (a bounded wait timed out, a counter overran) counts as an error, not as
stale data, and the runner is reset (:func:`fill_cell`).

What it leaves out: two GPUs (the ``.gpu``-scope mutants between GPUs, the ring, NVLink's store latency: they need
the 2-GPU machine), the queue kernels' other variants (clusters, persistent designs, waiting consumers), the chain
kernel's static design with clusters (static2x1), the delays in the static design (its builds run without them:
the jitter sits in the tickets' ``take``), and any claim of safety: a mutant that never showed stale data in these runs is not
shown correct, only not caught by this hardware, these shapes and these delays.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

__all__ = ["Edit", "Mutation", "JITTERS", "MUTATIONS", "QueueCase", "QUEUE_CASES", "stress_queue", "leads",
           "handoffs", "fill_cell", "result_row", "CONTROLS", "EditError", "apply_edits", "mutant_texts",
           "mutant_sources", "mutant_library", "StressCase", "CASES", "stress", "model_variants"]

CHAIN_FILE = "ctapipe_sm90_bf16_chain.cu"
QUEUE_FILE = "ctapipe_sm90_bf16.cu"
LIBRARY_OF = {"chain": "ctapipe_sm90_bf16_chain", "queue": "ctapipe_sm90_bf16"}
HEADER_FILE = "ctapipe.cuh"
SCHEDULER_FILE = "ctapipe_gemm.cuh"


class EditError(ValueError):
    """A mutation's edit does not match the kernel source exactly once (the kernel changed shape)."""


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` by ``new`` in kernel file ``file`` (``old`` must occur exactly once); ``old = ""`` appends."""

    file: str
    old: str
    new: str


@dataclass(frozen=True)
class Mutation:
    """The kernel form of a protocol mutant. ``model``: the model's variants that the edited source issues, tickets
    design first (:data:`ctasim.protocol.chain.CHAIN_MUTANTS` / ``CHAIN_PASSING`` names; empty for a bug the model
    does not express). ``control``: ``"stale"`` for a counting bug that must show stale data (the detector's positive
    control), ``"clean"`` for the unmodified protocol (the negative control), ``""`` for a memory-ordering mutant."""

    name: str
    what: str
    edits: tuple[Edit, ...] = ()
    model: tuple[str, ...] = ()
    control: str = ""
    library: str = "chain"
    """``chain``: the chain kernel (ctapipe_sm90_bf16_chain, one kernel, counters and waits); ``queue``: the 2-GPU
    pipelined kernels' work-queue protocol (ctapipe_sm90_bf16: producer signals and pushes, consumer pops), both
    kernels of a square 2-layer chain on one GPU (:class:`ctahw.onegpu.OneGpuRunner`)."""
    design: str = "tickets"
    """The chain kernel's design the build runs (``tickets`` or ``static``: every CTA resident, CTA i running
    order[i], order[i + grid], ...; its load warp's lane 0 polls, then the lanes meet at ``__syncwarp``)."""


_DELAY = """\
// [ctahw.stress] A random delay before each ticket: 0 .. stress_delay_ns ns (0: none), set per run by
// ctahw_stress_set_delay. A hash of the clock, the CTA and the epoch picks it.
__device__ unsigned stress_delay_ns = 0;
__device__ __forceinline__ void stress_delay(unsigned epoch) {
  const unsigned d = stress_delay_ns;
  if (d == 0) return;
  unsigned h = static_cast<unsigned>(ctapipe::now_ns()) ^ (blockIdx.x * 2654435761u) ^ (epoch * 40503u);
  h ^= h << 13;
  h ^= h >> 17;
  h ^= h << 5;
  __nanosleep(h % (d + 1));
}

"""

_SETTER = """
// [ctahw.stress] The delay bound of every later launch on `device`: 0, or -1 on a CUDA error.
extern "C" int ctahw_stress_set_delay(unsigned ns, int device) {
  int prev = 0;
  if (cudaGetDevice(&prev) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) return -1;
  const cudaError_t e = cudaMemcpyToSymbol(ctahw::chain::stress_delay_ns, &ns, sizeof ns);
  cudaSetDevice(prev);
  return e == cudaSuccess ? 0 : -1;
}
"""

_TAKE = "// Take the next ticket and, for a tile of layer > 0, wait until its row-block of the layer before is complete."
_TICKET = "const unsigned t = atomicAdd(p.ticket, 1u);"

_DELAY_STATIC = """\
// [ctahw.stress] A producer CTA's delay before its tile (every thread the same: a hash of the CTA and the epoch).
__device__ __forceinline__ void stress_delay_static(unsigned epoch) {
  const unsigned d = stress_delay_ns;
  if (d == 0) return;
  unsigned h = (blockIdx.x * 2654435761u) ^ (epoch * 40503u) ^ 0x9e3779b9u;
  h ^= h << 13;
  h ^= h >> 17;
  h ^= h << 5;
  __nanosleep(h % (d + 1));
}

"""
_POP = "// Consumer prologue (one thread): claim the next n head reservations at once"
_STATIC_TILE = "      tile_ = cta < pipe_.num_tiles ? pipe_.order[cta] : -1;  // every thread reads it"
_HEAD = "  unsigned h = atomicAdd(p.in_head, static_cast<unsigned>(n));"

JITTERS: dict[str, tuple[Edit, ...]] = {
    "chain": (
        Edit(CHAIN_FILE, _TAKE, _DELAY + _TAKE),
        Edit(CHAIN_FILE, _TICKET, "stress_delay(p.epoch);\n  " + _TICKET),
        Edit(CHAIN_FILE, "", _SETTER),
    ),
    "queue": (
        Edit(HEADER_FILE, _POP, _DELAY + _DELAY_STATIC + _POP),
        Edit(HEADER_FILE, _HEAD, "  stress_delay(p.epoch);\n" + _HEAD),
        Edit(SCHEDULER_FILE, _STATIC_TILE, _STATIC_TILE + "\n      ctapipe::stress_delay_static(pipe_.epoch);"),
        Edit(QUEUE_FILE, "", _SETTER.replace("ctahw::chain::stress_delay_ns", "ctapipe::stress_delay_ns")),
    ),
}
"""Edits of every stress build of a library: the random delay (before each ticket of the chain kernel; before each
queue consumer's pop and each producer CTA's tile), and its setter."""

_BAR = 'asm volatile("bar.sync %0, %1;" ::"n"(kSignalBarrier), "n"(kEpilogueThreads) : "memory");'
_TARGET = "const unsigned target = p.epoch * static_cast<unsigned>(p.wait_tiles);"
_OVERRUN = "if (v > target) {  // runs are ordered on the host: the next epoch's tiles cannot have signalled"

MUTATIONS: dict[str, Mutation] = {m.name: m for m in (
    Mutation("clean", "the kernel's protocol, unchanged (with the delays)", control="clean",
             model=("chain-tickets", "chain-static")),
    Mutation("short-wait", "take() waits for all but one column tile of the row-block before (a counting bug)",
             (Edit(CHAIN_FILE, _TARGET, _TARGET.replace("p.wait_tiles);", "p.wait_tiles) - 1u;")),
              Edit(CHAIN_FILE, _OVERRUN, _OVERRUN.replace("v > target", "v > target + 1u"))),
             control="stale"),
    Mutation("no-wait", "take() does not wait for the row-block before at all (a gross bug: the detector's coarse "
             "control)", (Edit(CHAIN_FILE, "if (p.protocol && waits(p, l)) {", "if (false && p.protocol && waits(p, l)) {"),),
             control="stale"),
    Mutation("chain-tickets-relaxed-poll", "take() polls the counter with ld.relaxed.gpu instead of ld.acquire.gpu",
             (Edit(HEADER_FILE, "ld.acquire.gpu.global.u32", "ld.relaxed.gpu.global.u32"),),
             model=("chain-tickets-relaxed-poll", "chain-static-relaxed-poll")),
    Mutation("chain-tickets-cta-scope-red", "the counter update is red.release.cta instead of .gpu",
             (Edit(HEADER_FILE, "red.release.gpu.global.add", "red.release.cta.global.add"),),
             model=("chain-tickets-cta-scope-red", "chain-static-cta-scope-red")),
    Mutation("chain-tickets-no-proxy-fence",
             "no fence.proxy.async after the poll: neither in take() nor in the load warp (first tile and later ones)",
             (Edit(CHAIN_FILE, "    ctapipe::fence_proxy_async_global();\n  }\n  return g;", "  }\n  return g;"),
              Edit(CHAIN_FILE, "if (threadIdx.x < 32 && tile_ >= 0 && chain().protocol) "
                               "ctapipe::fence_proxy_async_global();", ""),
              Edit(CHAIN_FILE, "if (threadIdx.x < 32 && tile >= 0 && chain().protocol) "
                               "ctapipe::fence_proxy_async_global();", "")),
             model=("chain-tickets-no-proxy-fence", "chain-static")),
    Mutation("chain-tickets-signal-before-storers",
             "the signalling thread's warp arrives at the storers' barrier without waiting there (bar.arrive), then "
             "signals; the other warps wait (bar.sync). Warp-uniform: CUTLASS's SM90 TMA epilogue issues the tile's "
             "stores from that same warp, so in this kernel the bug has no other storer to pass",
             (Edit(CHAIN_FILE, _BAR, "if (threadIdx.x / 32 == kThreadsPerWarpGroup / 32) "
                   'asm volatile("bar.arrive %0, %1;" ::"n"(kSignalBarrier), "n"(kEpilogueThreads) : "memory");\n'
                   "      else " + _BAR),),
             model=("chain-tickets-signal-before-storers", "chain-static-signal-before-storers")),
    Mutation("static-clean", "the static design's protocol, unchanged (the clean build's sources)", control="clean",
             model=("chain-static", "chain-tickets"), design="static"),
    Mutation("chain-static-no-syncwarp", "static: the load warp's lanes fence and go on to the TMA loads without "
             "__syncwarp after lane 0's poll",
             (Edit(CHAIN_FILE, "    __syncwarp();\n    ctapipe::fence_proxy_async_global();\n  }\n\n  // Layer-0 tiles",
                   "    ctapipe::fence_proxy_async_global();\n  }\n\n  // Layer-0 tiles"),),
             model=("chain-static-no-syncwarp", "chain-tickets"), design="static"),
    Mutation("chain-static-no-load-fence", "static: no fence.proxy.async in the load warp after wait_inputs' poll",
             (Edit(CHAIN_FILE, "    __syncwarp();\n    ctapipe::fence_proxy_async_global();\n  }\n\n  // Layer-0 tiles",
                   "    __syncwarp();\n  }\n\n  // Layer-0 tiles"),),
             model=("chain-static-no-load-fence", "chain-tickets"), design="static"),
    Mutation("wait-group-read",
             "the storers wait with cp.async.bulk.wait_group.read 0 (the tile's shared memory read, its global writes "
             "maybe not done) before the fence and signal",
             (Edit(HEADER_FILE, "cp.async.bulk.wait_group 0;", "cp.async.bulk.wait_group.read 0;"),)),
    Mutation("no-bulk-wait", "the storers do not wait for their bulk stores at all before the fence and signal",
             (Edit(HEADER_FILE, "  bulk_wait_all_complete();\n", ""),)),
    # the work-queue protocol (ctapipe.cuh's signal / push / pop_n), both kernels on one GPU
    Mutation("queue-clean", "the queue protocol, unchanged (with the delays)", control="clean", library="queue",
             model=("kernel",)),
    Mutation("queue-push-first", "the first producer update of a counter in the epoch pushes its consumer tiles (a "
             "gross counting bug: the coarse control)",
             (Edit(HEADER_FILE, "    if (old + 1 == target) {",
                   "    if (old + static_cast<unsigned>(p.threshold[dep]) == target) {"),
              Edit(HEADER_FILE, "    } else if (old + 1 > target) {", "    } else if (false) {")),
             control="stale", library="queue"),
    Mutation("push-off-by-one", "the producer update that brings a counter to threshold - 1 pushes (one producer tile "
             "early)", (Edit(HEADER_FILE, "    if (old + 1 == target) {", "    if (old + 2 == target) {"),),
             model=("push-off-by-one",), library="queue"),
    Mutation("relaxed-poll", "the consumer polls its slot word with ld.relaxed.sys instead of ld.acquire.sys",
             (Edit(HEADER_FILE, "ld.acquire.sys.global.u64", "ld.relaxed.sys.global.u64"),),
             model=("relaxed-poll",), library="queue"),
    Mutation("no-signal-fence", "the producer's counter update is atom.relaxed.sys (no release) instead of "
             "atom.acq_rel.sys", (Edit(HEADER_FILE, "atom.acq_rel.sys.global.add.u32", "atom.relaxed.sys.global.add.u32"),),
             model=("no-signal-fence",), library="queue"),
    Mutation("no-proxy-fence-loads", "no fence.proxy.async between the consumer's acquire and its TMA loads",
             (Edit(HEADER_FILE, "    slots[i] = static_cast<int>(slot);\n  }\n  fence_proxy_async_global();",
                   "    slots[i] = static_cast<int>(slot);\n  }\n"),),
             model=("no-proxy-fence-loads",), library="queue"),
    Mutation("push-no-release", "push stores the slot words without its fence.acq_rel.sys (no release of what the "
             "completing update acquired)",
             (Edit(HEADER_FILE, "  fence_acq_rel_sys();  // release: everything acquired by the completing update",
                   "  // (no release)"),), library="queue"),
)}
"""Every stress build, by name: the model's mutant names where the model has the bug; the kernel files they edit are
copies (the shipped kernels are never edited)."""

CONTROLS = {name: m.control for name, m in MUTATIONS.items() if m.control}


def apply_edits(texts: dict[str, str], edits: Sequence[Edit], label: str) -> dict[str, str]:
    """``texts`` (file name -> source) with ``edits`` applied in order; :class:`EditError` names the first that does
    not match exactly once."""
    out = dict(texts)
    for e in edits:
        if e.file not in out:
            raise EditError(f"stress build {label}: no kernel file {e.file}")
        if e.old == "":
            out[e.file] += e.new
            continue
        n = out[e.file].count(e.old)
        if n != 1:
            raise EditError(f"stress build {label}: {e.old[:60]!r} occurs {n} times in {e.file}, not once "
                            "(the kernel changed shape: update ctahw.stress.MUTATIONS)")
        out[e.file] = out[e.file].replace(e.old, e.new)
    return out


def _kernel_texts(kernels_dir: Path | None = None) -> dict[str, str]:
    from ctahw.build import KERNELS_DIR  # noqa: PLC0415

    d = kernels_dir or KERNELS_DIR
    return {p.name: p.read_text() for p in sorted(d.iterdir()) if p.suffix in (".cu", ".cuh")}


def mutant_texts(name: str, kernels_dir: Path | None = None) -> dict[str, str]:
    """The kernel files of stress build ``name`` (every ``.cu`` / ``.cuh`` of ``kernels_dir``, edited)."""
    if name not in MUTATIONS:
        raise KeyError(f"no stress build {name!r} (known: {', '.join(MUTATIONS)})")
    m = MUTATIONS[name]
    return apply_edits(_kernel_texts(kernels_dir), JITTERS[m.library] + m.edits, name)


def mutant_sources(name: str, root: Path) -> Path:
    """Write stress build ``name``'s kernel files into ``root/name/`` (replacing what was there); returns the path
    there of its library's source (the chain kernel's, or the queue kernels')."""
    texts = mutant_texts(name)
    d = Path(root) / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    for f, t in texts.items():
        (d / f).write_text(t)
    return d / (CHAIN_FILE if MUTATIONS[name].library == "chain" else QUEUE_FILE)


def mutant_library(name: str, root: Path):
    """The :class:`ctahw.build.KernelLibrary` of stress build ``name`` (sources written under ``root``): its shipped
    library's spec (:data:`LIBRARY_OF`) with the edited files, plus the delay setter. Its cache key is the edited sources' hash, so it is
    built once and found again wherever the same sources are written."""
    import ctypes  # noqa: PLC0415

    from ctahw.build import LIBRARIES  # noqa: PLC0415

    src = mutant_sources(name, root)
    base = LIBRARIES[LIBRARY_OF[MUTATIONS[name].library]]
    sigs = dict(base.signatures, ctahw_stress_set_delay=(ctypes.c_int, (ctypes.c_uint, ctypes.c_int)))
    return dataclasses.replace(base, source=src, headers=tuple(src.parent / h.name for h in base.headers),
                               signatures=sigs)


def model_variants(name: str):
    """The model's variants whose operations stress build ``name``'s edited source must issue (a chain build: the
    tickets and static designs' chain variants; a queue build: the protocol's variant of that name), or None where the
    model does not express the bug."""
    from ctasim.protocol.chain import CHAIN_MUTANTS, CHAIN_PASSING  # noqa: PLC0415
    from ctasim.protocol.programs import KERNEL, MUTANTS  # noqa: PLC0415

    known = CHAIN_MUTANTS | CHAIN_PASSING if MUTATIONS[name].library == "chain" else MUTANTS | {KERNEL.name: KERNEL}
    names = MUTATIONS[name].model
    return tuple(known[n] for n in names) if names else None


@dataclass(frozen=True)
class StressCase:
    """One chain of ``layers`` M x H x H layers, run ``runs`` times per delay bound (in each build's design)."""

    m: int
    h: int
    layers: int
    delays_ns: tuple[int, ...] = (0, 2000, 20000)
    runs: int = 300

    @property
    def name(self) -> str:
        return f"{self.m}x{self.h}x{self.layers}"


CASES: tuple[StressCase, ...] = (StressCase(4096, 4096, 4), StressCase(8192, 2048, 8), StressCase(1024, 4096, 8),
                                 StressCase(512, 2048, 16))
"""The chains stressed: a square 4096 chain (tiles of ~40 us) and short tiles at H = 2048 (K = 2048), 8 layers, where
the ticket order runs the consumers far behind their producers; and two chains of less than one wave per layer
(1024 x 4096: 128 tiles a layer; 512 x 2048: 32 tiles a layer, 16 layers), where nearly every consumer tile spins on
its counter when the row-block completes -- the race a seeded bug opens. :func:`handoffs` counts them."""


def handoffs(tiles) -> dict:
    """How often one traced run exercised the hand-off a seeded bug races: of its consumer tiles (layer > 0; a
    :class:`ctasim.trace.Trace`'s ``tiles`` from the chain kernel), ``contended`` = those whose ticket was taken before
    the last producer tile of their row-block signalled (they spun on the counter when it completed), with
    ``react_ns_min`` / ``react_ns_p50`` = their inputs visible minus that last signal. Consumers that arrive after
    their row-block completed pass the poll at once, long after the data landed: no bug of the release or acquire can
    show there."""
    import numpy as np  # noqa: PLC0415

    last = tiles.groupby(["layer", "tile_m"])["t_signal"].max()
    c = tiles[tiles["layer"] > 0]
    done = np.array([last[(ly - 1, m)] for ly, m in zip(c["layer"], c["tile_m"])], dtype=float)
    hot = c["t_start"].to_numpy() < done
    react = c["t_ready"].to_numpy()[hot] - done[hot]
    return dict(handoffs=int(len(c)), contended=int(hot.sum()),
                react_ns_min=float(react.min()) if hot.any() else float("nan"),
                react_ns_p50=float(np.median(react)) if hot.any() else float("nan"))


def result_row(name: str, case, delay: int, **extra) -> dict:
    """A result row of build ``name`` on ``case`` (a :class:`StressCase` or :class:`QueueCase`) at ``delay`` ns, its
    counts at zero and ``hung`` = 0; ``extra`` adds or overrides columns."""
    m = MUTATIONS[name]
    row = dict(build=name, control=m.control, model=" ".join(m.model[:1]), case=case.name, m=case.m, h=case.h,
               layers=getattr(case, "layers", 2), delay_ns=delay, runs=case.runs, runs_stale=0, cells_stale=0,
               nan_runs=0, errors=0, first_error="", hung=0)
    row.update(extra)
    return row


def _poison_read(bits) -> bool:
    """Whether bf16 ``bits`` (a CuPy uint16 array) hold a NaN or an infinity: the poison, or what reading it made."""
    return bool(((bits & 0x7F80) == 0x7F80).any())


def fill_cell(row: dict, attempt: Callable[[], tuple[int, bool]], reset: Callable[[], None]) -> dict:
    """Count ``row["runs"]`` runs into ``row``: ``attempt()`` launches one, checks its errors (raising
    :class:`ctahw.runner.ProtocolError` or RuntimeError) and returns (stale cells, NaN seen); an error counts as one
    (the first one's message kept) and ``reset()`` readies the runner for the next run. Adds ``seconds``."""
    from ctahw.runner import ProtocolError  # noqa: PLC0415

    t0 = time.perf_counter()
    for _ in range(row["runs"]):
        try:
            cells, nan = attempt()
        except (ProtocolError, RuntimeError) as e:
            row["errors"] += 1
            row["first_error"] = row["first_error"] or str(e).splitlines()[0][:160]
            reset()
            continue
        if cells:
            row["runs_stale"] += 1
            row["cells_stale"] += cells
            row["nan_runs"] += int(nan)
    row["seconds"] = round(time.perf_counter() - t0, 2)
    return row


def _done(row: dict, rows: list, log: Callable[[str], None], on_row) -> None:
    log(f"stress {row['build']} {row['case']} delay {row['delay_ns']} ns: {row['runs_stale']}/{row['runs']} runs "
        f"stale, {row['errors']} errors ({row['seconds']} s)")
    rows.append(row)
    if on_row is not None:
        on_row(row)


def leads(tiles) -> dict:
    """Of one traced run's consumer tiles (layer > 0), ``early_tiles`` = those whose inputs were taken as visible
    (``t_acquire``: the slot acquired) before the last producer tile of their row-block had completed its stores, and
    ``lead_ns_max`` = the most by which one was early (0 when none was): where a stale read was possible at all. The
    shipped protocol has none; a counting bug has some when the delays spread the producers; an ordering bug's
    window is below what the stamps resolve."""
    last = tiles[tiles["layer"] == 0].groupby("tile_m")["t_store_end"].max()
    c = tiles[tiles["layer"] == 1]
    lead = last.reindex(c["tile_m"]).to_numpy() - c["t_acquire"].to_numpy()
    return dict(early_tiles=int((lead > 0).sum()), lead_ns_max=float(max(lead.max(), 0.0)) if len(lead) else 0.0)


@dataclass(frozen=True)
class QueueCase:
    """A square 2-layer M x H x H chain on the work-queue protocol (variant ``cutlass_ctapipe``: 1x1 CTAs, queue
    consumer), both kernels on one GPU with every CTA of both grids resident, run ``runs`` times per delay bound."""

    m: int
    h: int
    delays_ns: tuple[int, ...] = (0, 2000, 20000)
    runs: int = 300

    @property
    def name(self) -> str:
        return f"{self.m}x{self.h}x2-queue"


QUEUE_CASES: tuple[QueueCase, ...] = (QueueCase(1024, 1024), QueueCase(1024, 2048), QueueCase(512, 4096))
"""Chains of 32-64 tiles a layer (both grids resident on 132 SMs): every consumer CTA pops at launch and spins on its
slot until the push, so every hand-off is contended."""


def stress_queue(names: Sequence[str], cases: Sequence[QueueCase] = QUEUE_CASES, *, root: Path, seed: int = 20261204,
                 timeout_ns: int = 50_000_000, log: Callable[[str], None] = print,
                 on_row: Callable[[dict], object] | None = None) -> list[dict]:
    """:func:`stress` for the queue builds: per run the consumer's input and the output are poisoned (then the device
    synchronised: the kernels' streams do not wait for the poison's), both kernels launched, and the output compared
    bit for bit with the shipped kernels' (checked against fp32). Rows as :func:`stress`'s, with ``handoffs`` =
    ``contended`` = the consumer's tiles (each pops at launch and waits for its push), no reaction time, and the
    :func:`leads` of one traced run of the build at that delay.
    """
    import ctypes  # noqa: PLC0415

    from ctahw.baselines import Chain  # noqa: PLC0415
    from ctahw.build import Toolchain  # noqa: PLC0415
    from ctahw.device import REL_TOL_BF16, output_error, poison, require_cupy  # noqa: PLC0415
    from ctahw.executor import reference_bf16  # noqa: PLC0415
    from ctahw.onegpu import OneGpuRunner  # noqa: PLC0415
    from ctahw.pipelined import square_chain, variant_plan, workload_plan  # noqa: PLC0415
    from ctahw.runner import ProtocolError  # noqa: PLC0415
    from ctasim.variants import VARIANTS, clusters_of  # noqa: PLC0415

    for n in names:
        if MUTATIONS.get(n) is None or MUTATIONS[n].library != "queue":
            raise KeyError(f"no queue stress build {n!r}")
    cp = require_cupy()
    tc = Toolchain.detect()
    lib = LIBRARY_OF["queue"]
    loaded: dict[str, ctypes.CDLL] = {n: mutant_library(n, root).build_and_load(tc) for n in names}
    v = VARIANTS["cutlass_ctapipe"]
    data = Chain(cp, seed)
    rows: list[dict] = []
    rb = 128
    for case in cases:
        wl = square_chain(case.m, case.h, 2)
        plan = variant_plan(workload_plan(wl), v, wl=wl)
        dims = [case.h, case.h, case.h]
        x = data.rand(0, (case.m, case.h), salt=1)
        ws = [data.rand(0, (case.h, case.h), 1 / math.sqrt(case.h), salt=2 + i) for i in range(2)]

        def runner(libs=None, trace=False):
            return OneGpuRunner(plan, case.m, dims, x, ws, clusters=clusters_of(plan, v), timeout_ns=timeout_ns,
                                libraries=libs, trace=trace)

        def one_run(r):
            poison(r.out)
            for buf in r.inputs.values():
                if buf is not x:
                    poison(buf)
            r.sync()
            r.launch()
            r.sync()

        ref_runner = runner()
        one_run(ref_runner)
        ref_runner.check_errors()
        err = output_error(cp, ref_runner.out, reference_bf16(cp, x, ws, wl.layers))
        if not err <= REL_TOL_BF16:
            raise RuntimeError(f"stress {case.name}: the shipped kernels' relative error {err:.2e} against fp32")
        ref = ref_runner.out.copy()
        consumer_tiles = max(k.tiles for k in ref_runner.kernels if k.layer == 1)
        del ref_runner
        for n in names:
            r = runner({lib: loaded[n]})
            traced = runner({lib: loaded[n]}, trace=True)
            for delay in case.delays_ns:
                if int(loaded[n].ctahw_stress_set_delay(int(delay), 0)) != 0:
                    raise RuntimeError(f"stress build {n}: setting the delay failed")
                one_run(traced)  # this build, this delay, traced: where a stale read was possible
                try:
                    traced.check_errors()
                    lead = leads(traced.read_trace({0: 0.0}).tiles)
                except (ProtocolError, RuntimeError) as e:
                    lead = dict(early_tiles=-1, lead_ns_max=float("nan"))
                    traced.reset()
                    log(f"stress {n} {case.name}: the traced run failed: {str(e).splitlines()[0][:120]}")
                row = result_row(n, case, delay, handoffs=consumer_tiles, contended=consumer_tiles,
                           react_ns_min=float("nan"), react_ns_p50=float("nan"), **lead)

                def attempt(r=r):
                    one_run(r)
                    r.check_errors()
                    cells = int((r.out != ref).reshape(case.m // rb, rb * case.h).any(axis=1).sum())
                    return cells, _poison_read(r.out)

                _done(fill_cell(row, attempt, r.reset), rows, log, on_row)
            del r, traced
    return rows


def stress(names: Sequence[str], cases: Sequence[StressCase] = CASES, *, root: Path, seed: int = 20261204,
           timeout_ns: int = 50_000_000, log: Callable[[str], None] = print,
           on_row: Callable[[dict], object] | None = None) -> list[dict]:
    """Run every stress build of ``names`` on every case (GPU 0). Returns one row per (build, case, delay): runs,
    runs_stale (a bit of some layer's output differed from the reference), cells_stale (layer x row-block cells that
    differed, summed over the runs), nan_runs (runs whose output held NaN: poison read), errors (runs that recorded a
    protocol error), first_error, seconds, and the case's :func:`handoffs` (one traced run of the shipped kernel);
    ``on_row`` gets each row as it is finished. Raises if the reference kernel is wrong against fp32 (the check
    cannot then judge anything)."""
    import ctypes  # noqa: PLC0415

    from ctahw.baselines import Chain  # noqa: PLC0415
    from ctahw.build import Toolchain  # noqa: PLC0415
    from ctahw.chain import ChainRunner  # noqa: PLC0415
    from ctahw.device import BF16_NAN_BITS, output_error, reference_chain, require_cupy  # noqa: PLC0415
    from ctahw.tile_orders import ticket_plan  # noqa: PLC0415

    for n in names:
        if n not in MUTATIONS or MUTATIONS[n].library != "chain":
            raise KeyError(f"no chain stress build {n!r} (known: {', '.join(MUTATIONS)})")
    cp = require_cupy()
    tc = Toolchain.detect()
    loaded: dict[str, ctypes.CDLL] = {n: mutant_library(n, root).build_and_load(tc) for n in names}
    data = Chain(cp, seed)
    rows: list[dict] = []
    for case in cases:
        plan = ticket_plan(case.m, case.layers, case.h)
        x = data.rand(0, (case.m, case.h), salt=1)
        ws = [data.rand(0, (case.h, case.h), 1 / math.sqrt(case.h), salt=2 + i) for i in range(case.layers)]
        ref_runner = ChainRunner(plan, x, ws, timeout_ns=timeout_ns)  # the shipped kernel
        with ref_runner.stream:
            ref_runner.x[1:].fill(BF16_NAN_BITS)
        ref_runner.launch()
        ref_runner.synchronize()
        ref_runner.check_errors()
        err = output_error(cp, ref_runner.out, reference_chain(cp, x, ws, 0))
        if not err < 1e-2:
            raise RuntimeError(f"stress {case.name}: the shipped kernel's relative error {err:.2e} against fp32")
        ref = ref_runner.x[1:].copy()
        hands: dict[str, dict] = {}
        for design in sorted({MUTATIONS[n].design for n in names}):  # the shipped kernel, once per design, traced
            traced = ChainRunner(plan, x, ws, timeout_ns=timeout_ns, trace=True, design=design)
            traced.launch()
            traced.synchronize()
            traced.check_errors()
            hands[design] = handoffs(traced.read_trace().tiles)
            del traced
        rb = 128  # the kernel's tile rows: a row-block
        for n in names:
            r = ChainRunner(plan, x, ws, timeout_ns=timeout_ns, library=loaded[n], design=MUTATIONS[n].design)
            for delay in case.delays_ns:
                if int(loaded[n].ctahw_stress_set_delay(int(delay), 0)) != 0:
                    raise RuntimeError(f"stress build {n}: setting the delay failed")
                row = result_row(n, case, delay, design=MUTATIONS[n].design, **hands[MUTATIONS[n].design])

                def attempt(r=r):
                    with r.stream:
                        r.x[1:].fill(BF16_NAN_BITS)
                    r.launch()
                    r.synchronize()
                    r.check_errors()
                    with r.stream:
                        diff = r.x[1:] != ref
                        cells = int(diff.reshape(case.layers, case.m // rb, rb * case.h).any(axis=2).sum())
                        return cells, _poison_read(r.x[1:])

                _done(fill_cell(row, attempt, r.reset), rows, log, on_row)
            del r
    return rows
