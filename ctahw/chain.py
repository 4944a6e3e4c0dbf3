"""The chain kernel: CTA-pipelining of a square chain in one persistent kernel per GPU
(``kernels/ctapipe_sm90_bf16_chain.cu``), on one GPU (intra-GPU) or on a ring of GPUs.

On one GPU every layer of an M x H x H chain runs in ONE persistent CUTLASS kernel: the layers are the batch mode
of one GEMM (layer l reads ``X[l]`` and writes ``X[l+1]``), the CTAs take tiles in the plan's topological order
(:func:`ctasim.plan.chain_order`) by an atomic ticket, and a tile of layer l > 0 waits (bounded) on a GPU-scope
counter until its row-block of layer l - 1 is complete. The next layer's tiles so fill the previous layer's last
partial wave. On a ring (``Strategy(kind="ctapipe", gpus=G)`` with more layers than GPUs: layer l on GPU l mod G)
each GPU runs one such kernel over its own layers, in the restriction of the chain's one order; every tile stores
its output into the next GPU's memory and signals the counter there at system scope (:func:`ring_layout`). The
plan comes from ctasim (``build_chain`` / ``build_ring``), so the simulator and the GPUs run the same order.

* :data:`DESC_FIELDS` is read from the kernel source's ``CTAHW_CHAIN_FIELDS`` list (the one definition); a loaded
  library's own list (``ctahw_chain_desc_names``) must match it by name, or :class:`ChainRunner` refuses it.
* :class:`ChainRunner`: buffers, the descriptors, launches (epochs: nothing reset between runs), error records
  (:class:`ctahw.runner.ProtocolError`), the ticket count checks, stall injection, traces as ``ctasim.trace.Trace``.
  A ring's kernels may share one device (each with its share of the SMs): the protocol's one-GPU check.

Designs (:data:`DESIGNS`): dynamic tickets (cluster 1x1), or a static order per CTA (cluster 1x1 or 2x1, W
multicast; every CTA resident at once, the grid sized by the occupancy query; one GPU only).

A ring of one layer per GPU (``placement = "ring"`` with as many GPUs as layers) runs layers of any shapes that chain
(each kernel M x N x K) with one fused epilogue op per kernel (:func:`epilogue_codes`: gelu, silu, relu, or the
residual of a one-layer kernel, the tickets design): the MLP block as a pair. On a ring the last layer's output is
stored into the next GPU too (where the chain's input came from, for G = 2); ctasim's ring plan does the same.

A kernel of several layers (the one-GPU chain, a ring of more layers than GPUs) is one batched GEMM: one shape and
one fused activation for all its layers (gelu, silu, relu, or none).

LayerNorm with no pass of its own (:data:`NORM_OPS`): on such a ring layer l adds the residual and its rows' sums and
sums of squares into the next GPU's row statistics, layer l + 1 folds LayerNorm of its input into its epilogue
(``ChainRunner(..., layernorm=(gamma, beta))``, :func:`layernorm_fold`), then GeLU. ``ctahw run`` folds where
ctasim's ring plan does (``ctasim.strategies.ctapipe.ring_ops``: a block boundary, ``specs/workloads/mlp-boundary.toml``).

Left out: a residual or different ops per layer in a kernel of several layers, other row-wise ops inside a kernel (a
row-wise op runs after the last layer, :func:`ctahw.experiment.chain_case`), RMSNorm's fold.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from ctasim.plan import Kernel, Plan
from ctasim.strategies.ctapipe import NORM_FOLD_OPS
from ctasim.trace import EVENT_COLUMNS, EVENT_KINDS, Trace
from ctahw.runner import (ERROR_WORDS, KERNEL_TILE, TILE_STAMP_WORDS, check_desc_names, desc_fields_from_source,
                          parse_error)

__all__ = ["LIBRARY", "DESC_FIELDS", "DESIGNS", "chain_kernel", "chain_kernels", "chain_descriptor", "ring_layout",
           "chain_slots", "output_place", "wait_tiles", "slot_cols", "kernel_shape", "epilogue_codes", "check_pairs",
           "layernorm_fold", "fold_pair_plan", "reference_fold_pair", "FOLD_PAIRS", "fold_pair_inputs", "fold_pair_steps", "steps_row", "op_names", "NORM_OPS", "NORM_EPS", "ChainRunner", "parse_chain_trace"]

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


def chain_kernels(plan: Plan) -> list[Kernel]:
    """The plan's chain kernels (``source = "chain"``), by GPU: one on one GPU, one per GPU on a ring; ValueError if
    the plan is not a chain-kernel plan."""
    ks = plan.kernels()
    if not ks or any(k.source != "chain" for k in ks) or [k.gpu for k in ks] != list(range(len(ks))):
        raise ValueError(f"plan {plan.strategy}/{plan.case} is not a chain-kernel plan (ctapipe, one chain kernel "
                         f"per GPU)")
    return ks


def chain_kernel(plan: Plan) -> Kernel:
    """The plan's one chain kernel; ValueError if the plan is not a one-GPU chain-kernel plan."""
    ks = chain_kernels(plan)
    if len(ks) != 1:
        raise ValueError(f"plan {plan.strategy}/{plan.case} runs {len(ks)} chain kernels (a ring), not one")
    return ks[0]


def ring_layout(plan: Plan) -> list[dict]:
    """Where each chain kernel of ``plan`` reads, writes and signals (the one definition the runner wires).

    Every GPU g holds ``slots`` input slots ``X_g[s]`` (M x H) and as many row-block counter sets ``C_g[s]``
    (tiles_m each). Kernel g's local layer j (global layer ``g + j * G``) reads ``X_g[j]`` and waits on ``C_g[j]``;
    it writes ``X_t[j + s0]`` and signals ``C_t[j + s0]`` on GPU ``t = (g + 1) mod G``, with ``s0 = 1`` on the GPU
    that wraps around to GPU 0 (the one GPU of a one-GPU chain included), else 0. The chain's input is ``X_0[0]``;
    its output lands where its last layer writes (:func:`output_place`). Per kernel: ``gpu``, ``to``, ``slot``
    (s0), ``layers``, ``first_layer``, ``stride`` (G)."""
    ks = chain_kernels(plan)
    G = len(ks)
    for k in ks:
        if k.layer != k.gpu or (G > 1 and k.chain_stride != G) or k.row_offset:
            raise ValueError(f"{k.name}: not a ring kernel (layer {k.layer} on GPU {k.gpu}, stride {k.chain_stride})")
    return [{"gpu": g, "to": (g + 1) % G, "slot": 1 if g == G - 1 else 0, "layers": k.chain_layers,
             "first_layer": k.layer, "stride": G} for g, k in enumerate(ks)]


def chain_slots(plan: Plan) -> int:
    """Input slots (and counter sets) each GPU of :func:`ring_layout` holds: its most layers, plus one."""
    return max(k.chain_layers for k in chain_kernels(plan)) + 1


def kernel_shape(k: Kernel) -> tuple[int, int, int]:
    """(M, N, K) of chain kernel ``k``'s layers."""
    return k.tiles_m * KERNEL_TILE[0], k.tiles_n * KERNEL_TILE[1], k.region.k if k.region is not None else 0


def slot_cols(plan: Plan) -> list[list[int]]:
    """Per GPU of :func:`ring_layout`, the columns of each input slot (M rows each): the K of the layer that reads
    it, or the N of the layer that writes it (the chain's output slot); 0 where no layer uses the slot, except in a
    square chain, where every slot has H. ValueError where a writer and a reader disagree (a layer's N is not the
    next layer's K)."""
    ks, lay = chain_kernels(plan), ring_layout(plan)
    S = chain_slots(plan)
    cols = [[0] * S for _ in ks]

    def put(g: int, s: int, c: int, what: str) -> None:
        if cols[g][s] and cols[g][s] != c:
            raise ValueError(f"GPU {g} slot {s}: {what} has {c} columns, another layer {cols[g][s]}")
        cols[g][s] = c

    for g, (k, p) in enumerate(zip(ks, lay)):
        _, n, kk = kernel_shape(k)
        for j in range(k.chain_layers):
            put(g, j, kk, f"layer {k.layer + j * p['stride']}'s input")
            put(p["to"], j + p["slot"], n, f"layer {k.layer + j * p['stride']}'s output")
    used = {c for row in cols for c in row if c}
    if len(used) == 1:  # a square chain: every slot H columns (each GPU's slots one [S, M, H] array)
        h = used.pop()
        cols = [[h] * S for _ in ks]
    return cols


def wait_tiles(plan: Plan) -> list[int]:
    """Per chain kernel: the column tiles of the layer before its first (the kernel of the previous GPU on a ring):
    the count a row-block's counter reaches when that row-block is complete (the descriptor's ``wait_tiles``)."""
    ks = chain_kernels(plan)
    return [ks[(g - 1) % len(ks)].tiles_n for g in range(len(ks))]


def output_place(plan: Plan) -> tuple[int, int]:
    """(GPU, slot) of :func:`ring_layout` that holds the chain's output: the last layer's output slot."""
    lay = ring_layout(plan)
    G = len(lay)
    L = sum(p["layers"] for p in lay)
    last = lay[(L - 1) % G]
    return last["to"], (L - 1) // G + last["slot"]


def chain_descriptor(k: Kernel, ptrs: Mapping[str, int], *, grid: int, epoch: int, timeout_ns: int,
                     protocol: bool = True, stall_row: int = -1, sys_scope: bool | None = None,
                     wait_tiles: int = 0) -> np.ndarray:
    """The launcher's int64 descriptor for chain kernel ``k`` (pointers from ``ptrs`` by field name). ``sys_scope``
    defaults to a ring's (``k.chain_stride > 1``): acquire and release at system scope. ``wait_tiles``: the column
    tiles of the layer before (0: ``k``'s own, a square chain's)."""
    if grid < 1 or grid > k.tiles:
        raise ValueError(f"grid {grid} must be within [1, {k.tiles}]")
    vals = {"num_tiles": k.tiles, "tiles_m": k.tiles_m, "tiles_n": k.tiles_n, "layers": k.chain_layers,
            "grid": grid, "protocol": 1 if protocol else 0, "epoch": epoch, "timeout_ns": timeout_ns,
            "stall_row": stall_row, "first_layer": k.layer, "layer_stride": k.chain_stride,
            "sys_scope": int(k.chain_stride > 1 if sys_scope is None else sys_scope),
            "wait_tiles": wait_tiles or k.tiles_n}
    unknown = set(ptrs) - set(DESC_FIELDS)
    if unknown:
        raise ValueError(f"not descriptor fields: {sorted(unknown)}")
    vals.update({n: int(v) for n, v in ptrs.items()})
    return np.array([int(vals.get(n, 0)) for n in DESC_FIELDS], dtype=np.int64)


RESIDUAL_CODE = 4
"""The residual's op code (ctapipe_gemm.cuh's CTAPIPE_EPILOGUE_OPS; checked by name in :func:`epilogue_codes`)."""

RESIDUAL_OPS = ("residual", "residual_stats")
"""The ops with a C operand (the residual, D = acc + C)."""

NORM_OPS = NORM_FOLD_OPS
"""The LayerNorm fold's two ops (ctasim's :data:`~ctasim.strategies.ctapipe.NORM_FOLD_OPS`, which a ring plan's
:func:`~ctasim.strategies.ctapipe.ring_ops` names; held to the kernel source's ``CTAHW_CHAIN_NORM_OPS`` by a test):
layer l adds the residual and its rows' sums and sums of squares into the next GPU's row statistics
(``residual_stats``), layer l + 1 applies LayerNorm to its input by folding it into its epilogue, then GeLU
(``lnfold_gelu``): :func:`layernorm_fold`."""

NORM_EPS = float(re.search(r"constexpr float kNormEps = ([0-9.eE+-]+)f;", SOURCE.read_text()).group(1))
"""The fold's LayerNorm epsilon, read from the kernel source (compiled in)."""


def op_names(lib) -> list[str]:
    """The loaded chain library's fused-op names, by code (``ctahw_chain_epilogue_names``)."""
    return [n for n in lib.ctahw_chain_epilogue_names().decode().split(",") if n]


def epilogue_codes(lib, ks: list[Kernel], epilogues: Mapping[int, str], design: str, has_residual: bool,
                   has_layernorm: bool = False) -> list[int]:
    """Each chain kernel's fused-op code from ``epilogues`` (global layer -> op name, '' or absent: none), by the
    names the loaded library exports; ValueError where a kernel's layers differ in op, an op needs the tickets
    design, the residual or a LayerNorm-fold op is not a one-layer kernel's, ``residual_stats`` on layer l and
    ``lnfold_gelu`` on layer l + 1 do not come as a pair, or the residual operand (``has_residual``) or the LayerNorm
    parameters (``has_layernorm``) are missing or unused."""
    names = op_names(lib)
    if names[RESIDUAL_CODE] != "residual":
        raise RuntimeError(f"the chain library's op {RESIDUAL_CODE} is {names[RESIDUAL_CODE]!r}, not 'residual'")
    out = []
    for k in ks:
        want = {epilogues.get(k.layer + j * k.chain_stride, "") or "none" for j in range(k.chain_layers)}
        if len(want) > 1:
            raise ValueError(f"{k.name}: one kernel fuses one op for all its layers, got {sorted(want)}")
        (op,) = want
        if op not in names:
            raise ValueError(f"{k.name}: no fused epilogue op {op!r} in the chain kernel (has {', '.join(names)})")
        if op != "none" and design != "tickets":
            raise ValueError(f"{k.name}: fused epilogue ops run in the tickets design only, not {design!r}")
        if op in RESIDUAL_OPS + NORM_OPS and k.chain_layers != 1:
            raise ValueError(f"{k.name}: {op} is fused into a one-layer kernel only")
        out.append(names.index(op))
    layers = sum(k.chain_layers for k in ks)
    for layer in range(layers):
        op = epilogues.get(layer, "")
        if op == "residual_stats" and epilogues.get(layer + 1, "") != "lnfold_gelu":
            raise ValueError(f"layer {layer} adds row statistics (residual_stats) but layer {layer + 1} does not "
                             "read them (lnfold_gelu)")
        if op == "lnfold_gelu" and epilogues.get(layer - 1, "") != "residual_stats":
            raise ValueError(f"layer {layer} folds LayerNorm (lnfold_gelu) but layer {layer - 1} does not add its "
                             "row statistics (residual_stats)")
    used = {names[c] for c in out}
    if has_residual != bool(used & set(RESIDUAL_OPS)):
        raise ValueError("a residual operand is given but no layer adds it" if has_residual else
                         "a layer adds the residual but no residual operand is given")
    if has_layernorm != ("lnfold_gelu" in used):
        raise ValueError("LayerNorm parameters are given but no layer folds them (lnfold_gelu)" if has_layernorm
                         else "a layer folds LayerNorm (lnfold_gelu) but no LayerNorm parameters are given")
    return out


def fold_pair_plan(m: int, h: int, ffn: int, hardware: str = "h200-x2-calibrated") -> Plan:
    """The ring pair the fold runs at a block boundary (``specs/workloads/mlp-boundary.toml`` at M x ``ffn`` -> ``h``
    -> ``ffn``): a block's FC2 then the next block's FC1, one layer per kernel (``placement = "ring"``, two GPUs).
    The runner's ops (``ChainRunner(epilogues=..., layernorm=...)``) decide what runs: the probes also run this plan
    with the ops the fold replaces."""
    import dataclasses

    from ctasim.spec import Strategy, load_hardware, load_workload
    from ctasim.strategies.ctapipe import build_ring

    wl = load_workload("mlp-boundary")
    fc2, fc1 = wl.layers
    layers = (dataclasses.replace(fc2, m=m, k=ffn, n=h), dataclasses.replace(fc1, m=m, k=h, n=ffn))
    return build_ring(Strategy(kind="ctapipe", gpus=2, placement="ring"), dataclasses.replace(wl, layers=layers),
                      load_hardware(hardware), f"m={m}")


FOLD_PAIRS = {"fold": dict(enumerate(NORM_OPS)), "no_layernorm": {0: "residual", 1: "gelu"}}
"""The fold probe's two ring pairs (:func:`fold_pair_steps`): with the LayerNorm fold, and the same pair with the
ops it replaces and no LayerNorm."""


def fold_pair_inputs(cp, data, m: int, h: int, ffn: int, salt: int, affine: bool = True):
    """The fold pair's inputs on GPU 0 (``data``: a :class:`ctahw.baselines.Chain`): FC2's input (m x ``ffn``), the
    residual (m x ``h``), both weights, and LayerNorm's gamma and beta (random around 1 and 0 with ``affine``, else
    1 and 0); the salts ``salt`` .. ``salt + 4``."""
    import math

    x = data.rand(0, (m, ffn), salt=salt)
    res = data.rand(0, (m, h), salt=salt + 1)
    ws = [data.rand(0, (h, ffn), 1 / math.sqrt(ffn), salt=salt + 2),
          data.rand(0, (ffn, h), 1 / math.sqrt(h), salt=salt + 3)]
    with cp.cuda.Device(0):
        if affine:
            rng = cp.random.default_rng(salt + 4)
            gamma = 1 + 0.2 * rng.standard_normal(h, dtype=cp.float32)
            beta = 0.2 * rng.standard_normal(h, dtype=cp.float32)
        else:
            gamma, beta = cp.ones(h, dtype=cp.float32), cp.zeros(h, dtype=cp.float32)
    return x, res, ws, gamma, beta


def fold_pair_steps(timed, x, residual, weights, gamma, beta, device: int = 0) -> dict:
    """One traced run of each pair of :data:`FOLD_PAIRS` (:func:`fold_pair_plan`'s shape from ``x`` (M x ffn) and
    ``weights``; both kernels on ``device``, on the harness's compute and copy streams): {(pair, layer): (median
    mainloop, epilogue, store-to-signal ns of its tiles)}. What ``ctahw calibrate`` and ``bench/hw/chain_probe.py
    --fold`` take the fold's epilogue cost from (``ctahw.calibrate.norm_fold_epilogue_cost``)."""
    m, ffn = (int(v) for v in x.shape)
    h = int(residual.shape[1])
    plan = fold_pair_plan(m, h, ffn)
    s0, s1 = timed.compute[device], timed.copy[device]
    steps = {}
    for name, ops in FOLD_PAIRS.items():
        norm = {"layernorm": (gamma, beta)} if NORM_OPS[1] in ops.values() else {}
        r = ChainRunner(plan, x, weights, devices=(device, device), trace=True, residual=residual, epilogues=ops,
                        **norm)
        timed.run(lambda tm, r=r: (tm.part("compute", device, s0, lambda: r.launch(streams=[s0, s1])),
                                   [(s0, device), (s1, device)])[1])
        r.check_errors()
        for layer, g in r.read_trace().tiles.groupby("layer"):
            steps[(name, int(layer))] = (float((g["t_mainloop_end"] - g["t_acquire"]).median()),
                                         float((g["t_compute_end"] - g["t_mainloop_end"]).median()),
                                         float((g["t_signal"] - g["t_compute_end"]).median()))
        del r
    return steps


def steps_row(m: int, h: int, ffn: int, pair: str, steps: Mapping) -> dict:
    """One row of the fold probe's table (``fold.csv``): a pair's per-layer median steps from :func:`fold_pair_steps`
    as ``l<layer>_mainloop_ns``, ``l<layer>_epilogue_ns``, ``l<layer>_signal_ns``."""
    row = {"m": m, "h": h, "ffn": ffn, "variant": pair}
    for layer in (0, 1):
        if (pair, layer) in steps:
            ml, ep, sig = steps[(pair, layer)]
            row.update({f"l{layer}_mainloop_ns": ml, f"l{layer}_epilogue_ns": ep, f"l{layer}_signal_ns": sig})
    return row


def reference_fold_pair(cp, x_bits, residual_bits, weights_bits, gamma, beta):
    """fp32 reference of the fold's ring pair (what ``ChainRunner`` with ops residual_stats, lnfold_gelu computes):
    y = residual + x W0^T, stored as bf16, then GeLU(LayerNorm(y) W1^T) with the biased variance and ``NORM_EPS``.
    CuPy arrays on the current device in, fp32 out."""
    from ctahw.device import bf16_bits_to_f32, f32_to_bf16_bits
    from ctahw.rowwise import reference_epilogue, reference_rowwise

    def f(b):
        return bf16_bits_to_f32(b, cp)

    y = f(f32_to_bf16_bits(f(residual_bits) + f(x_bits) @ f(weights_bits[0]).T, cp))
    ln = reference_rowwise(y, "layernorm", NORM_EPS, gamma, beta)
    del y
    return reference_epilogue(ln @ f(weights_bits[1]).T, ("gelu",))


def layernorm_fold(w_bits, gamma, beta, xp):
    """LayerNorm folded into the next GEMM: LN(x) W^T = diag(rstd) (x W'^T - mean c1^T) + c2^T, with mean and rstd
    per row of x, W' = W diag(gamma) (rounded to bf16: what the GEMM multiplies), c1 = W' 1 (fp32, of the rounded
    W'), c2 = W beta (fp32). ``w_bits``: N x K bf16 bits; ``gamma``, ``beta``: K floats. Returns (W' bits, c1, c2)."""
    from ctahw.device import bf16_bits_to_f32, f32_to_bf16_bits

    w = bf16_bits_to_f32(w_bits, xp)
    gamma = xp.asarray(gamma, dtype=xp.float32)
    beta = xp.asarray(beta, dtype=xp.float32)
    if w.ndim != 2 or gamma.shape != (w.shape[1],) or beta.shape != (w.shape[1],):
        raise ValueError(f"LayerNorm over {w.shape[1] if w.ndim == 2 else '?'} columns needs gamma and beta of that "
                         f"length, got {tuple(gamma.shape)} and {tuple(beta.shape)}")
    folded = f32_to_bf16_bits(w * gamma[None, :], xp)
    c1 = bf16_bits_to_f32(folded, xp).astype(xp.float64).sum(axis=1).astype(xp.float32)
    c2 = (w.astype(xp.float64) @ beta.astype(xp.float64)).astype(xp.float32)
    return folded, c1, c2


class _ChainGpu:
    """One chain kernel's state on its device: input slots (one contiguous buffer: ``slots[s]`` is slot s, M x its
    columns; ``x`` the [S, M, H] view where every slot has H columns), weights of its layers, order, ticket,
    counters, error record, scratch, stamps, stream, the fused op's code and the residual operand."""

    def __init__(self, cp, k: Kernel, weights, device: int, grid: int, cols: list[int], m: int, trace: bool):
        self.k, self.device, self.grid = k, device, grid
        self.op, self.op_name, self.c = 0, "none", None
        self.stats = self.c1 = self.c2 = None  # the LayerNorm fold's (lnfold_gelu's kernel): [2][2][M] f32, [N], [N]
        with cp.cuda.Device(device):
            sizes = [m * c for c in cols]
            self.buf = cp.empty(max(1, sum(sizes)), dtype=cp.uint16)
            at = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
            self.slots = [self.buf[at[s]:at[s + 1]].reshape(m, c) for s, c in enumerate(cols)]
            self.x = self.buf[:sum(sizes)].reshape(len(cols), m, cols[0]) if len(set(cols)) == 1 else None
            self.w = cp.stack([cp.asarray(w) for w in weights])
            self.order = cp.asarray(np.asarray(k.order, dtype=np.int32))
            self.ticket = cp.zeros(1, dtype=cp.uint32)
            self.counters = cp.zeros(len(cols) * k.tiles_m, dtype=cp.uint32)
            self.error = cp.zeros(ERROR_WORDS, dtype=cp.int32)
            self.cta_tile = cp.zeros(grid, dtype=cp.int32)
            self.stamps = cp.zeros(k.tiles * TILE_STAMP_WORDS, dtype=cp.uint64) if trace else None
            self.stream = cp.cuda.Stream()  # blocking: ordered after work on the legacy default stream (poison)


class ChainRunner:
    """A chain-kernel plan on the GPUs: one kernel (``Strategy(kind="ctapipe", gpus=1)``), or one per GPU of a ring
    (layer l on GPU l mod G), wired by :func:`ring_layout`. ``x`` = the chain's input (M x K bf16 bits),
    ``weights[l]`` (N x K of layer l) per global layer; ``epilogues`` (global layer -> op name) and ``residual`` (the
    operand of the layer whose op is the residual): :func:`epilogue_codes`. ``layernorm`` = (gamma, beta): LayerNorm of
    the ``lnfold_gelu`` layer's input, folded into that layer (:func:`layernorm_fold`; its weights are given unfolded),
    its row statistics added by the layer before (``residual_stats``) into two buffers on the reading kernel's device
    that alternate by epoch (the reader zeroes the other). ``devices[g]``: the CUDA device of the plan's GPU g
    (default g); a ring may put every kernel on one device, each on its own stream with its share of the SMs (the
    one-GPU check of the ring's protocol: the kernels must then be resident together, which the grids ensure).
    ``library``: a loaded build of the chain kernel to run instead of the shipped one (:mod:`ctahw.stress`'s
    seeded-bug builds; its descriptor names are checked as the shipped one's are).

    ``launch`` enqueues one run (every kernel; on ``stream`` for a one-kernel plan, default: the runner's); runs
    are ordered per stream, so the epoch just advances. ``out`` is the chain's output. ``protocol=False`` launches
    the same kernels without waits or signals (the overhead baseline; a chain of more than one layer is then not
    correct). A one-kernel runner's ``x``, ``w``, ``counters``, ``stream``, ``grid``, ``k`` are its kernel's."""

    def __init__(self, plan: Plan, x, weights, *, device: int = 0, devices=None, trace: bool = False,
                 timeout_ns: int = 2_000_000_000, grid: int = 0, design: str = "tickets",
                 epilogues: Mapping[int, str] | None = None, residual=None, layernorm=None, library=None):
        from ctahw import build
        from ctahw.device import require_cupy

        self.cp = cp = require_cupy()
        self.plan = plan
        ks = chain_kernels(plan)
        self.layout = ring_layout(plan)
        self.wait_tiles = wait_tiles(plan)  # per kernel, the descriptor's wait target (fixed for the plan)
        G = len(ks)
        self.m = ks[0].tiles_m * KERNEL_TILE[0]
        self.layers = sum(k.chain_layers for k in ks)
        cols = slot_cols(plan)
        if len(weights) != self.layers:
            raise ValueError(f"{self.layers} layers but {len(weights)} weight matrices")
        if tuple(x.shape) != (self.m, cols[0][0]):
            raise ValueError(f"input is {tuple(x.shape)}, the plan needs {(self.m, cols[0][0])}")
        for l, w in enumerate(weights):
            _, n, kk = kernel_shape(ks[l % G])
            if tuple(w.shape) != (n, kk):
                raise ValueError(f"layer {l}'s weights are {tuple(w.shape)}, the plan needs {(n, kk)}")
        devices = list(devices) if devices is not None else ([device] if G == 1 else list(range(G)))
        if len(devices) != G:
            raise ValueError(f"the plan runs {G} chain kernels, {len(devices)} device(s) given")
        self.lib = library if library is not None else build.library(LIBRARY)
        check_desc_names(self.lib.ctahw_chain_desc_names(), DESC_FIELDS, "chain")
        if self.lib.ctahw_chain_tile_stamp_words() != TILE_STAMP_WORDS:
            raise RuntimeError("stamp record size differs between Python and the built library")
        if design not in DESIGNS:
            raise ValueError(f"unknown chain-kernel design {design!r} (known: {', '.join(DESIGNS)})")
        if G > 1 and design != "tickets":
            raise ValueError(f"a ring runs the tickets design (a static order needs every CTA of every kernel "
                             f"resident, which is not checked across kernels); got {design!r}")
        self.design, self.code = design, DESIGNS[design]
        if design == "static2x1":
            check_pairs(ks[0].order, ks[0].tiles_m, ks[0].tiles_n)
        self.trace, self.timeout_ns = trace, int(timeout_ns)
        ops = epilogue_codes(self.lib, ks, epilogues or {}, design, residual is not None, layernorm is not None)
        names = op_names(self.lib)
        self.gpus = []
        for g, k in enumerate(ks):
            d = devices[g]
            with cp.cuda.Device(d):
                sms = int(cp.cuda.runtime.getDeviceProperties(d)["multiProcessorCount"])
            share = sms // devices.count(d)  # kernels sharing a device split its SMs (all resident together)
            n = min(grid or share, share, k.tiles)
            if self.code:  # static designs: every CTA resident at once, whole clusters
                resident = int(self.lib.ctahw_chain_resident_ctas(self.code, d))
                if resident <= 0:
                    raise RuntimeError(f"{design}: could not query how many CTAs can be resident")
                n = min(n, resident)
                if design == "static2x1":
                    n -= n % 2
            self.gpus.append(_ChainGpu(cp, k, [weights[k.layer + j * G] for j in range(k.chain_layers)], d, n,
                                       cols[g], self.m, trace))
            p = self.gpus[-1]
            p.op, p.op_name = ops[g], names[ops[g]]
            if p.op_name in RESIDUAL_OPS:
                want = kernel_shape(k)[:2]
                if tuple(residual.shape) != want:
                    raise ValueError(f"{k.name}: the residual is {tuple(residual.shape)}, its output {want}")
                with cp.cuda.Device(d):
                    p.c = cp.array(cp.asarray(residual))  # on this kernel's device
            if p.op_name == "lnfold_gelu":
                gamma, beta = layernorm
                with cp.cuda.Device(d):
                    folded, p.c1, p.c2 = layernorm_fold(p.w[0], cp.array(cp.asarray(gamma)), cp.array(cp.asarray(beta)), cp)
                    p.w[0] = folded
                    p.stats = cp.zeros((2, 2, self.m), dtype=cp.float32)
        with cp.cuda.Device(devices[0]):
            self.gpus[0].slots[0][...] = x
        self.load_kernels()
        self.epoch = 1
        self.runs = 0  # completed launches since the last reset (the ticket check)
        self._ends: list = []  # a ring's previous run: one event per kernel

    def load_kernels(self) -> None:
        """Load every kernel into its device's context before the first launch (``ctahw_chain_load``): with CUDA's
        lazy loading a kernel loads at its first launch, which may wait for the kernels running there -- on a device
        that holds several of a ring's kernels, one spinning on a counter would keep a kernel of another function
        (another op or shape) from loading until its bounded wait ran out."""
        for p in self.gpus:
            rc = int(self.lib.ctahw_chain_load(self.code, p.op, 1 if self.trace else 0, p.device))
            if rc != 0:
                raise RuntimeError(f"{p.k.name}: loading the kernel failed: "
                                   f"{self.lib.ctahw_chain_status_string(rc).decode()}")

    # A one-kernel runner's own buffers (the single-GPU callers' names).
    def _one(self) -> _ChainGpu:
        if len(self.gpus) != 1:
            raise AttributeError("a ring runner has one set of buffers per GPU: use .gpus[g]")
        return self.gpus[0]

    k = property(lambda self: self._one().k)
    x = property(lambda self: self._one().x)
    w = property(lambda self: self._one().w)
    counters = property(lambda self: self._one().counters)
    stream = property(lambda self: self._one().stream)

    @property
    def grid(self) -> int:
        return self._one().grid

    @grid.setter
    def grid(self, n: int) -> None:
        self._one().grid = n

    @property
    def out(self):
        g, s = output_place(self.plan)
        return self.gpus[g].slots[s]

    def poison_outputs(self) -> None:
        """Poison every slot a run writes (all but the chain's input), so a tile that is not written shows."""
        from ctahw.device import poison

        for i, p in enumerate(self.gpus):
            with self.cp.cuda.Device(p.device):
                for s, a in enumerate(p.slots):
                    if a.size and (i, s) != (0, 0):
                        poison(a)

    def descriptor(self, protocol: bool = True, stall_row: int = -1, g: int = 0) -> np.ndarray:
        p, lay = self.gpus[g], self.layout[g]
        to = self.gpus[lay["to"]]
        ptrs = {"order": p.order.data.ptr, "ticket": p.ticket.data.ptr, "counters": p.counters.data.ptr,
                "signals": to.counters.data.ptr + lay["slot"] * p.k.tiles_m * to.counters.itemsize,
                "error": p.error.data.ptr, "cta_tile": p.cta_tile.data.ptr,
                "stamps": p.stamps.data.ptr if self.trace else 0}
        parity = self.epoch % 2  # the row statistics' buffer of this epoch (the reader zeroes the other)
        if p.op_name == "residual_stats":  # adds into the next layer's (its kernel reads them)
            ptrs["stats_out"] = to.stats[parity].data.ptr
        if p.op_name == "lnfold_gelu":
            ptrs.update(stats_in=p.stats[parity].data.ptr, stats_clear=p.stats[1 - parity].data.ptr,
                        fold_c1=p.c1.data.ptr, fold_c2=p.c2.data.ptr, norm_cols=kernel_shape(p.k)[2])
        return chain_descriptor(p.k, ptrs, grid=p.grid, epoch=self.epoch, timeout_ns=self.timeout_ns,
                                protocol=protocol, stall_row=stall_row if g == 0 else -1,
                                wait_tiles=self.wait_tiles[g])

    def launch(self, stream=None, protocol: bool = True, stall_row: int = -1, streams=None) -> None:
        """Enqueue one run of every kernel. ``stream`` (a one-kernel plan) or ``streams[g]``: where kernel g is
        enqueued (default: its own). Counters advance only with ``protocol``: a protocol-off run leaves them, so its
        epoch is not consumed for them; the ticket advances either way (each run takes num_tiles + grid tickets).
        ``stall_row``: GPU 0's first layer's tiles of that row-block never signal (the timeout check)."""
        import ctypes

        if stream is not None:
            if len(self.gpus) != 1:
                raise ValueError("a ring launches one kernel per GPU: pass streams=")
            streams = [stream]
        self._desc = []  # the launches read them on the host; kept until the next launch for safety
        ss = [streams[g] if streams is not None else p.stream for g, p in enumerate(self.gpus)]
        ends = []
        for g, p in enumerate(self.gpus):
            desc = self.descriptor(protocol, stall_row, g)
            self._desc.append(desc)
            d = self.gpus[self.layout[g]["to"]].slots[self.layout[g]["slot"]].data.ptr
            m, n, k = kernel_shape(p.k)
            with self.cp.cuda.Device(p.device):
                # a ring's run begins after every kernel's previous run ended: a kernel one run ahead would
                # overwrite an input its successor still reads and count a counter past the epoch it waits for
                for e in self._ends:
                    ss[g].wait_event(e)
                rc = self.lib.ctahw_chain_gemm(p.slots[0].data.ptr, d, p.c.data.ptr if p.c is not None else None,
                                               p.w.data.ptr, m, n, k, desc.ctypes.data_as(ctypes.c_void_p),
                                               len(DESC_FIELDS), 1 if self.trace else 0, self.code, p.op, p.device,
                                               ss[g].ptr)
                if rc == 0 and len(self.gpus) > 1:
                    ends.append(self.cp.cuda.Event(disable_timing=True))
                    ends[-1].record(ss[g])
            if rc != 0:
                raise RuntimeError(f"{p.k.name}: launch failed: {self.lib.ctahw_chain_status_string(rc).decode()}")
        self._ends = ends
        self.epoch += 1
        self.runs += 1

    def synchronize(self) -> None:
        for p in self.gpus:
            p.stream.synchronize()

    def check_errors(self) -> None:
        """Raise the ProtocolError a kernel recorded, if any, then check the ticket counts (call after the GPUs
        finished): every run of the tickets design takes exactly num_tiles + grid tickets per kernel; the static
        designs none."""
        for p in self.gpus:
            e = parse_error(p.error.get(), p.k.name)
            if e is not None:
                raise e
        for p in self.gpus:
            got = int(p.ticket.get()[0])
            want = self.runs * (p.k.tiles + p.grid) if self.code == DESIGNS["tickets"] else 0
            if got != want:
                raise RuntimeError(f"{p.k.name}: ticket counter {got} after {self.runs} run(s), expected {want}")

    def reset(self) -> None:
        """Zero the tickets, counters, error records and scratch, and start again at epoch 1 (after a failed run)."""
        for p in self.gpus:
            with self.cp.cuda.Device(p.device):
                self.cp.cuda.runtime.deviceSynchronize()
        for p in self.gpus:
            with self.cp.cuda.Device(p.device):
                for a in (p.ticket, p.counters, p.error, p.cta_tile) + ((p.stats,) if p.stats is not None else ()):
                    a.fill(0)
                self.cp.cuda.runtime.deviceSynchronize()
        self.epoch, self.runs = 1, 0

    def read_trace(self, meta: Mapping | None = None, offsets_ns: Mapping[int, float] | None = None) -> Trace:
        """The last run's trace. ``offsets_ns[g]``: GPU g's ``%globaltimer`` minus GPU 0's (a ring on several
        devices; :func:`ctahw.pipelined.measure_offsets`); kernels sharing a device share its clock."""
        if not self.trace:
            raise RuntimeError("the runner was built without tracing")
        return parse_chain_trace(self.plan, [p.stamps.get() for p in self.gpus], meta, offsets_ns)


def parse_chain_trace(plan: Plan, stamps, meta: Mapping | None = None,
                      offsets_ns: Mapping[int, float] | None = None) -> Trace:
    """A measured :class:`Trace` from the chain kernels' stamps (per kernel u64 [tiles, TILE_STAMP_WORDS], its local
    tile ids of the plan; one array for a one-kernel plan).

    Per tile: t_start = its ticket taken (static designs: the load warp's wait began), t_ready = its inputs visible
    (the wait returned; the ticket time for the chain's first layer), t_acquire = the MMA warp groups begin it, or
    its inputs visible if later, t_compute_end = epilogue math done (TMA stores issued),
    t_store_end = stores complete, t_signal = the release issued; ``t_mainloop_end`` beside. Times in ns since
    the earliest ticket, on GPU 0's clock (``offsets_ns``); layers are global (``layer + j * chain_stride``). One
    row-completion event per (layer, row-block) at its last signal, on the GPU whose counter it is (the next GPU's
    on a ring)."""
    ks = chain_kernels(plan)
    arrays = [stamps] if isinstance(stamps, np.ndarray) and len(ks) == 1 else list(stamps)
    if len(arrays) != len(ks):
        raise ValueError(f"{len(ks)} chain kernels but {len(arrays)} stamp arrays")
    offs = {int(g): int(round(float(v))) for g, v in (offsets_ns or {}).items()}
    raw = [np.asarray(a, dtype=np.uint64).reshape(k.tiles, TILE_STAMP_WORDS) for a, k in zip(arrays, ks)]
    # on GPU 0's clock, in ns since the earliest ticket of the run (in integers: %globaltimer exceeds a double's
    # 53 bits of exact nanoseconds)
    shifted = [s.astype(np.int64) - offs.get(k.gpu, 0) for s, k in zip(raw, ks)]
    base = min(int(s[:, 0].min()) for s in shifted)
    G = len(ks)
    frames, done = [], {}
    for k, s, r0 in zip(ks, shifted, raw):
        t = (s[:, :6] - base).astype(np.float64)
        ready = (s[:, 7] - base).astype(np.float64)
        per = k.tiles_m * k.tiles_n
        j, r = np.divmod(np.arange(k.tiles), per)
        row, col = np.divmod(r, k.tiles_n)
        layer = k.layer + j * k.chain_stride
        ready = np.where(layer == 0, t[:, 0], ready)
        # The static designs stamp the MMA warp groups' begin when they take the tile, which can precede the load
        # warp's wait: their mainloop cannot consume the tile before its loads, issued after the wait. The tile's
        # compute starts at the later of the two (the tickets design's MMA begin is after the wait anyway).
        t[:, 1] = np.maximum(t[:, 1], ready)
        frames.append(pd.DataFrame({
            "source": "hw", "gpu": k.gpu, "kernel": k.id, "layer": layer,
            "cta": (r0[:, 6] & np.uint64(0xFFFFFFFF)).astype(np.int64),
            "sm": (r0[:, 6] >> np.uint64(32)).astype(np.int64),
            "tile_m": row + k.row_offset, "tile_n": col,
            "t_start": t[:, 0], "t_acquire": t[:, 1], "t_ready": ready, "t_compute_end": t[:, 3],
            "t_store_end": t[:, 4], "t_signal": t[:, 5], "slot": -1, "t_mainloop_end": t[:, 2]}))
        where = (k.gpu + 1) % G if G > 1 else k.gpu
        for (ly, rw), v in pd.Series(t[:, 5]).groupby([layer, row]).max().items():
            done[int(ly) * k.tiles_m + int(rw)] = (where, float(v))
    tiles = pd.concat(frames, ignore_index=True)
    zero = EVENT_KINDS.index("zero")
    events = Trace.events_frame(np.array([(zero, -1, g, d, -1, -1, v) for d, (g, v) in sorted(done.items())],
                                         dtype=np.float64).reshape(-1, len(EVENT_COLUMNS)))
    end = float(tiles["t_signal"].max())
    ops = pd.DataFrame([(k.id, k.name, "kernel", k.gpu, k.gpu, 0.0, k.layer, 0.0, end) for k in ks],
                       columns=["op", "name", "kind", "gpu", "dst", "nbytes", "layer", "t_begin", "t_end"])
    return Trace(tiles=tiles, events=events, ops=ops, meta={"source": "hw", "strategy": plan.strategy,
                                                            "case": plan.case, "gpus": G, **dict(meta or {})})
