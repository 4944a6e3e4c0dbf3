"""The chain kernel on one GPU: intra-GPU CTA-pipelining of a square chain (``kernels/ctapipe_sm90_bf16_chain.cu``).

Every layer of an M x H x H chain runs in ONE persistent CUTLASS kernel: the layers are the batch mode of one GEMM
(layer l reads ``X[l]`` and writes ``X[l+1]`` of one ``[L+1, M, H]`` buffer), the CTAs take tiles in the plan's
topological order (:func:`ctasim.plan.chain_order`) by an atomic ticket, and a tile of layer l > 0 waits (bounded)
on a GPU-scope counter until its row-block of layer l - 1 is complete. The next layer's tiles so fill the
previous layer's last partial wave. The plan comes from ctasim (``Strategy(kind="ctapipe", gpus=1)``), so the
simulator and the GPU run the same order.

* :data:`DESC_FIELDS` is read from the kernel source's ``CTAHW_CHAIN_FIELDS`` list (the one definition); a loaded
  library's own list (``ctahw_chain_desc_names``) must match it by name, or :class:`ChainRunner` refuses it.
* :class:`ChainRunner`: buffers, the descriptor, launches (epochs: nothing reset between runs), error records
  (:class:`ctahw.runner.ProtocolError`), the ticket count check, stall injection, traces as ``ctasim.trace.Trace``.

Designs (:data:`DESIGNS`): dynamic tickets (cluster 1x1), or a static order per CTA (cluster 1x1 or 2x1, W
multicast; every CTA resident at once, the grid sized by the occupancy query).

Left out: fused epilogues and row-wise ops (the chain kernel runs square chains of plain GEMMs), more than one GPU
(placement of several layers per GPU over several GPUs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from ctasim.plan import Kernel, Plan
from ctasim.trace import EVENT_COLUMNS, EVENT_KINDS, Trace
from ctahw.runner import (ERROR_WORDS, KERNEL_TILE, TILE_STAMP_WORDS, check_desc_names, desc_fields_from_source,
                          parse_error)

__all__ = ["LIBRARY", "DESC_FIELDS", "DESIGNS", "chain_kernel", "chain_descriptor",
           "check_pairs", "ChainRunner", "parse_chain_trace"]

LIBRARY = "ctapipe_sm90_bf16_chain"
SOURCE = Path(__file__).resolve().parent / "kernels" / f"{LIBRARY}.cu"


DESC_FIELDS = desc_fields_from_source(SOURCE.read_text(), "CTAHW_CHAIN_FIELDS")
"""The chain kernel's int64 descriptor fields, in order (pointers as integers, 0 for none)."""

DESIGNS = {"tickets": 0, "static": 1, "static2x1": 2}
"""The kernel's designs and their launcher codes: ``tickets`` (scheduler warp, dynamic tickets, cluster 1x1: no
co-residency needed), ``static`` (CTA i runs order[i], order[i + grid], ...; the load warp waits; cluster 1x1) and
``static2x1`` (the same with 2x1 clusters sharing W by multicast). The static designs need every CTA resident at
once; the launcher refuses a larger grid."""


def check_pairs(order: np.ndarray, tiles_m: int, tiles_n: int) -> None:
    """A 2x1 cluster runs order entries 2p and 2p + 1 together: they must be one layer's tiles of one column
    (W is multicast), on different row-blocks. ValueError naming the first pair that is not."""
    o = np.asarray(order, dtype=np.int64)
    if len(o) % 2:
        raise ValueError(f"a 2x1 cluster design needs an even number of tiles, got {len(o)}")
    per = tiles_m * tiles_n
    a, b = o[0::2], o[1::2]
    bad = (a // per != b // per) | ((a % per) % tiles_n != (b % per) % tiles_n) | (a == b)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"order entries {2 * i} and {2 * i + 1} (tiles {a[i]}, {b[i]}) are not one layer's column pair")


def chain_kernel(plan: Plan) -> Kernel:
    """The plan's chain kernel (``source = "chain"``); ValueError if the plan is not a chain-kernel plan."""
    ks = plan.kernels()
    if len(ks) != 1 or ks[0].source != "chain":
        raise ValueError(f"plan {plan.strategy}/{plan.case} is not a chain-kernel plan (ctapipe with gpus = 1)")
    return ks[0]


def chain_descriptor(k: Kernel, ptrs: Mapping[str, int], *, grid: int, epoch: int, timeout_ns: int,
                     protocol: bool = True, stall_row: int = -1) -> np.ndarray:
    """The launcher's int64 descriptor for chain kernel ``k`` (pointers from ``ptrs`` by field name)."""
    if grid < 1 or grid > k.tiles:
        raise ValueError(f"grid {grid} must be within [1, {k.tiles}]")
    vals = {"num_tiles": k.tiles, "tiles_m": k.tiles_m, "tiles_n": k.tiles_n, "layers": k.chain_layers,
            "grid": grid, "protocol": 1 if protocol else 0, "epoch": epoch, "timeout_ns": timeout_ns,
            "stall_row": stall_row}
    unknown = set(ptrs) - set(DESC_FIELDS)
    if unknown:
        raise ValueError(f"not descriptor fields: {sorted(unknown)}")
    vals.update({n: int(v) for n, v in ptrs.items()})
    return np.array([int(vals.get(n, 0)) for n in DESC_FIELDS], dtype=np.int64)


class ChainRunner:
    """One chain-kernel plan on GPU ``device``: ``X[0]`` = ``x`` (M x H bf16 bits), ``weights[l]`` (H x H) per layer.

    ``launch`` enqueues one run on ``stream`` (default: the runner's); runs on one stream are ordered, so the
    epoch just advances. ``out`` is ``X[L]``. ``protocol=False`` launches the same kernel without waits or signals
    (the overhead baseline; a chain of more than one layer is then not correct)."""

    def __init__(self, plan: Plan, x, weights, *, device: int = 0, trace: bool = False,
                 timeout_ns: int = 2_000_000_000, grid: int = 0, design: str = "tickets"):
        from ctahw import build
        from ctahw.device import require_cupy

        self.cp = cp = require_cupy()
        self.plan, self.k = plan, chain_kernel(plan)
        k = self.k
        self.m, self.h = k.tiles_m * KERNEL_TILE[0], k.tiles_n * KERNEL_TILE[1]
        self.layers = k.chain_layers
        if len(weights) != self.layers:
            raise ValueError(f"{self.layers} layers but {len(weights)} weight matrices")
        if tuple(x.shape) != (self.m, self.h):
            raise ValueError(f"input is {tuple(x.shape)}, the plan needs {(self.m, self.h)}")
        self.lib = build.library(LIBRARY)
        check_desc_names(self.lib.ctahw_chain_desc_names(), DESC_FIELDS, "chain")
        if self.lib.ctahw_chain_tile_stamp_words() != TILE_STAMP_WORDS:
            raise RuntimeError("stamp record size differs between Python and the built library")
        if design not in DESIGNS:
            raise ValueError(f"unknown chain-kernel design {design!r} (known: {', '.join(DESIGNS)})")
        self.design, self.code = design, DESIGNS[design]
        if design == "static2x1":
            check_pairs(k.order, k.tiles_m, k.tiles_n)
        self.device, self.trace, self.timeout_ns = device, trace, int(timeout_ns)
        with cp.cuda.Device(device):
            sms = int(cp.cuda.runtime.getDeviceProperties(device)["multiProcessorCount"])
            self.grid = min(grid or sms, sms, k.tiles)
            if self.code:  # static designs: every CTA resident at once, whole clusters
                resident = int(self.lib.ctahw_chain_resident_ctas(self.code, device))
                if resident <= 0:
                    raise RuntimeError(f"{design}: could not query how many CTAs can be resident")
                self.grid = min(self.grid, resident)
                if design == "static2x1":
                    self.grid -= self.grid % 2
            self.x = cp.empty((self.layers + 1, self.m, self.h), dtype=cp.uint16)
            self.x[0] = x
            self.w = cp.stack([cp.asarray(w) for w in weights])
            self.order = cp.asarray(np.asarray(k.order, dtype=np.int32))
            self.ticket = cp.zeros(1, dtype=cp.uint32)
            self.counters = cp.zeros(self.layers * k.tiles_m, dtype=cp.uint32)
            self.error = cp.zeros(ERROR_WORDS, dtype=cp.int32)
            self.cta_tile = cp.zeros(self.grid, dtype=cp.int32)
            self.stamps = cp.zeros(k.tiles * TILE_STAMP_WORDS, dtype=cp.uint64) if trace else None
            self.stream = cp.cuda.Stream()
        self.epoch = 1
        self.runs = 0  # completed launches since the last reset (the ticket check)
        self.protocol_runs = 0

    @property
    def out(self):
        return self.x[self.layers]

    def descriptor(self, protocol: bool = True, stall_row: int = -1) -> np.ndarray:
        ptrs = {"order": self.order.data.ptr, "ticket": self.ticket.data.ptr, "counters": self.counters.data.ptr,
                "error": self.error.data.ptr, "cta_tile": self.cta_tile.data.ptr,
                "stamps": self.stamps.data.ptr if self.trace else 0}
        return chain_descriptor(self.k, ptrs, grid=self.grid, epoch=self.epoch, timeout_ns=self.timeout_ns,
                                protocol=protocol, stall_row=stall_row)

    def launch(self, stream=None, protocol: bool = True, stall_row: int = -1) -> None:
        """Enqueue one run. Counters advance only with ``protocol``: a protocol-off run leaves them, so its epoch
        is not consumed for them; the ticket advances either way (each run takes num_tiles + grid tickets)."""
        import ctypes

        desc = self.descriptor(protocol, stall_row)
        self._desc = desc  # the launch reads it on the host; kept until the next launch for safety
        s = stream or self.stream
        with self.cp.cuda.Device(self.device):
            rc = self.lib.ctahw_chain_gemm(self.x.data.ptr, self.w.data.ptr, self.m, self.h,
                                           desc.ctypes.data_as(ctypes.c_void_p), len(DESC_FIELDS),
                                           1 if self.trace else 0, self.code, self.device, s.ptr)
        if rc != 0:
            raise RuntimeError(f"{self.k.name}: launch failed: {self.lib.ctahw_chain_status_string(rc).decode()}")
        self.epoch += 1
        self.runs += 1

    def check_errors(self) -> None:
        """Raise the ProtocolError the kernel recorded, if any, then check the ticket count (call after the GPU
        finished): every run of the tickets design takes exactly num_tiles + grid tickets; the static designs none."""
        e = parse_error(self.error.get(), self.k.name)
        if e is not None:
            raise e
        got = int(self.ticket.get()[0])
        want = self.runs * (self.k.tiles + self.grid) if self.code == DESIGNS["tickets"] else 0
        if got != want:
            raise RuntimeError(f"{self.k.name}: ticket counter {got} after {self.runs} run(s), expected {want}")

    def reset(self) -> None:
        """Zero the ticket, counters, error record and scratch, and start again at epoch 1 (after a failed run)."""
        with self.cp.cuda.Device(self.device):
            self.cp.cuda.runtime.deviceSynchronize()
            for a in (self.ticket, self.counters, self.error, self.cta_tile):
                a.fill(0)
            self.cp.cuda.runtime.deviceSynchronize()
        self.epoch, self.runs = 1, 0

    def read_trace(self, meta: Mapping | None = None) -> Trace:
        if not self.trace:
            raise RuntimeError("the runner was built without tracing")
        return parse_chain_trace(self.plan, self.stamps.get(), meta)


def parse_chain_trace(plan: Plan, stamps: np.ndarray, meta: Mapping | None = None) -> Trace:
    """A measured :class:`Trace` from the chain kernel's stamps (u64 [tiles, TILE_STAMP_WORDS], tile ids of the plan).

    Per tile: t_start = its ticket taken (static designs: the load warp's wait began), t_ready = its inputs visible
    (the wait returned; the ticket time for layer 0), t_acquire = the MMA warp groups begin it, or its inputs
    visible if later, t_compute_end = epilogue math done (TMA stores issued),
    t_store_end = stores complete, t_signal = the release issued; ``t_mainloop_end`` beside. Times in ns since
    the earliest ticket; one row-completion event per (layer, row-block) at its last signal."""
    k = chain_kernel(plan)
    s = np.asarray(stamps, dtype=np.uint64).reshape(k.tiles, TILE_STAMP_WORDS)
    base = int(s[:, 0].min())

    def since(raw) -> np.ndarray:
        return (np.asarray(raw, dtype=np.uint64).astype(np.int64) - base).astype(np.float64)

    t = since(s[:, :6])
    ready = since(s[:, 7])
    per = k.tiles_m * k.tiles_n
    g = np.arange(k.tiles)
    layer, r = np.divmod(g, per)
    row, col = np.divmod(r, k.tiles_n)
    ready = np.where(layer == 0, t[:, 0], ready)
    # The static designs stamp the MMA warp groups' begin when they take the tile, which can precede the load warp's
    # wait: their mainloop cannot consume the tile before its loads, issued after the wait. The tile's compute starts
    # at the later of the two (the tickets design's MMA begin is after the wait anyway).
    t[:, 1] = np.maximum(t[:, 1], ready)
    tiles = pd.DataFrame({
        "source": "hw", "gpu": k.gpu, "kernel": k.id, "layer": k.layer + layer,
        "cta": (s[:, 6] & np.uint64(0xFFFFFFFF)).astype(np.int64), "sm": (s[:, 6] >> np.uint64(32)).astype(np.int64),
        "tile_m": row + k.row_offset, "tile_n": col,
        "t_start": t[:, 0], "t_acquire": t[:, 1], "t_ready": ready, "t_compute_end": t[:, 3],
        "t_store_end": t[:, 4], "t_signal": t[:, 5], "slot": -1, "t_mainloop_end": t[:, 2]})
    done = np.full(k.chain_layers * k.tiles_m, -np.inf)
    np.maximum.at(done, layer * k.tiles_m + row, t[:, 5])
    zero = EVENT_KINDS.index("zero")
    events = Trace.events_frame(np.array([(zero, -1, k.gpu, d, -1, -1, done[d]) for d in range(len(done))],
                                         dtype=np.float64).reshape(-1, len(EVENT_COLUMNS)))
    end = float(tiles["t_signal"].max())
    ops = pd.DataFrame([(k.id, k.name, "kernel", k.gpu, k.gpu, 0.0, k.layer, 0.0, end)],
                       columns=["op", "name", "kind", "gpu", "dst", "nbytes", "layer", "t_begin", "t_end"])
    return Trace(tiles=tiles, events=events, ops=ops, meta={"source": "hw", "strategy": plan.strategy,
                                                            "case": plan.case, "gpus": 1, **dict(meta or {})})
