"""CTA-pipelining: layer i on GPU i, every layer's kernel running at once.

Producer CTAs of GPU i store each output tile straight into GPU i+1's memory and signal the scoreboard
there; consumer CTAs on GPU i+1 pop ready tile ids from the work-queue (``tile_source = "queue"``) or
walk a fixed row-major order and wait on each tile's counter (``"wait"``, the no-queue variant).  A middle
GPU's kernel is consumer and producer at once.  A row-wise op on a layer's output is done once per
completed row-block before its tiles are pushed (``Pipe.ready_delay_ns``); after the last layer it is a
separate kernel.

With ``Strategy.gpus = 1`` every layer runs in one persistent kernel on GPU 0 (intra-GPU CTA-pipelining, the
chain kernel of ctahw): its CTAs take the chain's tiles in one topological order (:func:`ctasim.plan.chain_order`)
by tickets, the next ticket while the current tile computes (``tile_source = "queue"``, the default), or CTA w
takes entries w, w + W, ... (``"static"``; ctahw then runs 2x1 clusters where the row-blocks pair up, a hardware
detail this model does not see), and a tile of layer l > 0 waits until its row-block
of layer l - 1 is complete; a producer tile holds its CTA ``Hardware.local_signal_ns`` after its compute (stores
complete, GPU-scope release). The next layer's tiles so fill the previous layer's last partial wave. Where the
profile has the memory hierarchy, each tile takes its wave's time from the L2 reuse of its ticket order
(:func:`ctasim.costs.order_tile_times`; ``Strategy.chain_group`` picks the order's row-block groups): the tickets
design has no drift (a freed CTA takes the next ticket, so the running tiles stay one window of the order) but
the start times within that window spread (``KernelConfig.ticket_spread``), the static design the plain persistent
GEMM's drift. The kernel runs square chains with one fused activation for every layer or none
(:func:`chain_reason`). Left out there: row-wise ops, L2 hits of a layer's input that the layer before has just
written, and the static design's 2x1 cluster coupling (a pair waits for both its row-blocks).

With ``1 < Strategy.gpus < layers``, or ``Strategy.placement = "ring"``, the layers go round-robin (layer l on GPU
l mod G, :func:`build_ring`): one such persistent kernel per GPU runs its layers' tiles by tickets in the chain's one
order, a tile of layer l > 0 waits for its row-block of layer l - 1 on the GPU before, and every tile stores its
output into the next GPU and signals the counter there: the store priced at the per-SM store rate, the signal as if
hidden (the unloaded fence and atomic, no hold; :func:`build_ring`). ctahw runs it (``ctahw.chain``; checked on one
H200 with the kernels sharing it, not yet on two GPUs). With one layer per GPU, a LayerNorm after a residual, followed
by a layer with GeLU, has no pass of its own (:func:`norm_folds`): the first kernel adds its rows' sums into the
second's row statistics, the second folds the normalisation into its epilogue, each tile paying the fold's measured
epilogue time (:func:`ctasim.costs.norm_fold_ns`). Left out of the fold: any effect of the statistics' system-scope
atomics on the link, and RMSNorm (no kernel).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ctasim import costs, variants
from ctasim.plan import CHAIN_ROW_GROUP, Plan, chain_group_used, chain_order, push_order, row_block_pipe
from ctasim.spec import Hardware, SpecError, Strategy, Workload
from ctasim.strategies.common import add_gemm, add_rowwise, epilogue_pass_reason


def gpus_needed(strategy: Strategy, wl: Workload, gpus: int) -> int:
    """The strategy's ``gpus``, or with ``gpus = 0`` one GPU per layer (the 2-GPU kernels' layer i on GPU i; a ring of
    one GPU per layer: :func:`ring_gpus`)."""
    return strategy.gpus or len(wl.layers)


CHAIN_OPS = ("gelu", "silu", "relu")
"""Fused activations the batched chain kernel (one kernel for several layers) runs: one op for every layer."""


def chain_reason(wl: Workload) -> str | None:
    """Why the chain kernel (one GPU, every layer in one kernel) cannot run ``wl``, or None: layers of one square
    shape and tile, each with the same fused activation of :data:`CHAIN_OPS` or none (one batched kernel has one
    epilogue), no residual, no row-wise op."""
    first = wl.layers[0]
    for i, layer in enumerate(wl.layers):
        if (layer.m, layer.k, layer.n) != (first.m, first.k, first.k):
            return (f"the chain kernel runs layers of one square shape (K = N = {first.k}, M = {first.m}); layer {i} "
                    f"is {layer.m}x{layer.k}x{layer.n}")
        if (layer.tile_m, layer.tile_n) != (first.tile_m, first.tile_n):
            return f"the chain kernel runs one tile shape; layer {i} has {layer.tile_m}x{layer.tile_n}"
        if layer.rowwise:
            return f"the chain kernel has no row-wise op (layer {i}: {layer.rowwise})"
        ops = tuple(layer.epilogue)
        if ops != tuple(first.epilogue) or layer.epilogue_pass != first.epilogue_pass:
            return (f"the chain kernel fuses one epilogue for every layer (one batched kernel); layer {i} has "
                    f"{'+'.join(ops) or 'none'}, layer 0 {'+'.join(first.epilogue) or 'none'}")
        if ops and (len(ops) > 1 or ops[0] not in CHAIN_OPS or layer.epilogue_pass):
            return (f"the chain kernel fuses one activation of {', '.join(CHAIN_OPS)} (layer {i}: "
                    f"{'+'.join(ops)}{', unfused' if layer.epilogue_pass else ''})")
    return None


RING_PAIR_OPS = CHAIN_OPS + ("residual",)
"""Epilogue ops a ring kernel of one layer fuses (ctahw.chain: its tickets design, ABI 4)."""

NORM_FOLD_OPS = ("residual_stats", "lnfold_gelu")
"""The LayerNorm fold's ops, by the chain library's names (``ctahw.chain.NORM_OPS`` is this tuple): a one-layer ring
kernel with the residual and LayerNorm after it adds the residual and its rows' sums and sums of squares into the
next GPU's row statistics (``residual_stats``); the next layer's kernel folds LayerNorm of its input into its epilogue,
then GeLU (``lnfold_gelu``). No row-wise pass runs between them."""


def norm_folds(wl: Workload, gpus: int) -> tuple[int, ...]:
    """The layers whose LayerNorm a ring of ``gpus`` GPUs folds into the next layer: one layer per GPU, the layer's
    epilogue the residual alone, its row-wise op ``layernorm``, not the last layer, and the next layer's epilogue GeLU
    alone (the ops of :data:`NORM_FOLD_OPS`)."""
    if len(wl.layers) > gpus:
        return ()
    return tuple(i for i, (a, b) in enumerate(zip(wl.layers, wl.layers[1:]))
                 if a.rowwise == "layernorm" and tuple(a.epilogue) == ("residual",) and tuple(b.epilogue) == ("gelu",)
                 and a.epilogue_fused and b.epilogue_fused)


def fold_sides(wl: Workload, gpus: int) -> dict[int, str]:
    """{layer: its side of a LayerNorm fold}: ``"stats"`` for each layer of :func:`norm_folds`, ``"fold"`` for the
    layer after it (what :func:`ctasim.costs.norm_fold_ns` prices per tile); empty where the ring folds nothing."""
    sides = {}
    for i in norm_folds(wl, gpus):
        sides[i], sides[i + 1] = "stats", "fold"
    return sides


def ring_ops(wl: Workload, gpus: int) -> dict[int, str]:
    """{layer: the fused epilogue op of its ring kernel}: the layer's one op, the LayerNorm fold's ops where
    :func:`norm_folds` folds (what ``ctahw`` gives ``ChainRunner(epilogues=...)``)."""
    ops = {i: layer.epilogue[0] for i, layer in enumerate(wl.layers) if layer.epilogue}
    for i in norm_folds(wl, gpus):
        ops[i], ops[i + 1] = NORM_FOLD_OPS
    return ops


def ring_reason(wl: Workload, gpus: int) -> str | None:
    """Why a ring of ``gpus`` chain kernels cannot run ``wl``, or None. More layers than GPUs: the layers of one
    square shape (:func:`chain_reason`). One layer per GPU: any chain of GEMMs with one row count and tile shape
    (each layer's K = the layer before's N), each layer's epilogue fused (one op of :data:`RING_PAIR_OPS`; the
    residual adds the workload's input, so its layer's output has the input's shape, or the residual stream), a
    row-wise op after the last layer (its own kernel) or a LayerNorm folded into the next layer (:func:`norm_folds`)."""
    if len(wl.layers) > gpus:
        why = chain_reason(wl)
        return why.replace("the chain kernel runs", "the ring placement runs chain kernels of") if why else None
    first = wl.layers[0]
    sources = {layer.residual_source for layer in wl.layers if "residual" in layer.epilogue}
    if len(sources) > 1:
        return "a ring's residual layers add one operand (ctahw.chain.ChainRunner): the input or the stream, not both"
    folds = norm_folds(wl, gpus)
    for i, layer in enumerate(wl.layers):
        if layer.m != first.m or (layer.tile_m, layer.tile_n) != (first.tile_m, first.tile_n):
            return (f"a ring runs one row count and tile shape (M = {first.m}, {first.tile_m}x{first.tile_n}); "
                    f"layer {i} is {layer.m} rows, {layer.tile_m}x{layer.tile_n}")
        if i and layer.k != wl.layers[i - 1].n:
            return f"layer {i} reads K = {layer.k}, but layer {i - 1} writes N = {wl.layers[i - 1].n}"
        if layer.epilogue_pass or len(layer.epilogue) > 1 or any(op not in RING_PAIR_OPS for op in layer.epilogue):
            return (f"a ring kernel fuses one epilogue op of {', '.join(RING_PAIR_OPS)} (layer {i}: "
                    f"{'+'.join(layer.epilogue)}{', unfused' if layer.epilogue_pass else ''})")
        if "residual" in layer.epilogue and layer.residual_source == "input" and layer.n != first.k:
            return f"layer {i}'s residual adds the input ({first.m}x{first.k}) to its {layer.m}x{layer.n} output"
        if layer.rowwise and i < len(wl.layers) - 1 and i not in folds:
            return (f"a ring runs a row-wise op after the last layer, or a LayerNorm after a residual folded into a "
                    f"next layer with GeLU (layer {i}: {'+'.join(layer.epilogue) or 'no op'}, {layer.rowwise}; layer "
                    f"{i + 1}: {'+'.join(wl.layers[i + 1].epilogue) or 'no op'})")
    return None


def resolve(strategy: Strategy) -> Strategy:
    """``strategy`` with its ``variant``'s fields (:func:`ctasim.variants.strategy_fields`) filled in."""
    if not strategy.variant:
        return strategy
    return dataclasses.replace(strategy, **variants.strategy_fields(strategy.variant))


def is_ring(strategy: Strategy, wl: Workload) -> bool:
    """Whether ``strategy`` places ``wl`` as a ring of chain kernels (:func:`build_ring`): 1 < gpus < layers, or
    ``placement = "ring"``."""
    return strategy.placement == "ring" or 1 < strategy.gpus < len(wl.layers)


def ring_gpus(strategy: Strategy, wl: Workload) -> int:
    """The GPUs a ring places ``wl`` on: the strategy's ``gpus``, or with ``gpus = 0`` one per layer (a layer-count
    sweep of the ring with as many GPUs as layers, the paper's Fig. 4 placement): :func:`gpus_needed`'s rule."""
    return gpus_needed(strategy, wl, 0)


def ring_size_reason(strategy: Strategy, wl: Workload) -> str | None:
    """Why a ring cannot place ``wl`` on :func:`ring_gpus` GPUs for want of GPUs (fewer than 2), or None."""
    if ring_gpus(strategy, wl) < 2:
        return f"the ring placement needs 2 GPUs or more; {len(wl.layers)} layer(s), one GPU per layer"
    return None


def check(strategy: Strategy, wl: Workload, hw: Hardware, gpus: int) -> str | None:
    why = epilogue_pass_reason("ctapipe", wl)
    if why:
        return why
    if strategy.gpus == 1:
        return chain_reason(wl)
    if strategy.chain_group and not is_ring(strategy, wl):
        return (f"chain_group applies to the chain kernel (gpus = 1) or a ring; gpus = {strategy.gpus} places "
                f"{len(wl.layers)} layers one per GPU with the 2-GPU kernels, which have no chain order")
    if strategy.gpus and strategy.gpus > len(wl.layers):
        return f"gpus = {strategy.gpus} places {len(wl.layers)} layers: at most one GPU per layer"
    if is_ring(strategy, wl):
        why = ring_size_reason(strategy, wl) or ring_reason(wl, ring_gpus(strategy, wl))
        if why:
            return why
        if strategy.variant:
            return "the ring placement (1 < gpus < layers) runs the chain kernel, not a named ctahw variant"
        if strategy.tile_source == "static":
            return "the ring placement (1 < gpus < layers) is modelled with tickets only (tile_source = 'queue')"
        return None
    if strategy.variant:
        try:
            strategy = resolve(strategy)
        except ValueError as e:
            return str(e)
        for i, k in enumerate(strategy.kernels):
            layer = wl.layers[min(i, len(wl.layers) - 1)]
            try:
                hw.config(layer.tile_m, layer.tile_n, kernel=k)  # the one lookup rule (a family's config included)
            except SpecError:
                return f"variant {strategy.variant!r} runs kernel config {k!r}, which hardware {hw.name!r} does not have"
    if strategy.counter_rows:
        for i, layer in enumerate(wl.layers[1:], start=1):
            if strategy.counter_rows % layer.tile_m or layer.m % strategy.counter_rows:
                return (f"counter_rows={strategy.counter_rows} must be a multiple of layer {i}'s tile_m="
                        f"{layer.tile_m} and divide its M={layer.m}")
    return None


def consumer_source(strategy: Strategy) -> str:
    return "queue" if strategy.tile_source == "queue" else "wait"


def kernel_of(strategy: Strategy, layer: int) -> str:
    """The kernel variant of layer ``layer``: ``strategy.kernels[layer]``, the last entry past the list."""
    ks = strategy.kernels
    return ks[min(layer, len(ks) - 1)] if ks else ""


def build(strategy: Strategy, wl: Workload, hw: Hardware, gpus: int, case: str) -> list[Plan]:
    if strategy.gpus == 1:
        return [build_chain(strategy, wl, hw, case)]
    if is_ring(strategy, wl):
        return [build_ring(strategy, wl, hw, case)]
    variant = strategy.variant
    strategy = resolve(strategy)
    plan = Plan(strategy.label, case, len(wl.layers),
                params={"tile_source": strategy.tile_source, "persistent": strategy.persistent,
                        "counter_rows": strategy.counter_rows})
    kernels = []
    for i, layer in enumerate(wl.layers):
        src = "static" if i == 0 else consumer_source(strategy)
        raster = strategy.raster or layer.raster
        kernels.append(add_gemm(plan, hw, wl, i, layer, i, start_ns=hw.launch_ns, source=src,
                                persistent=strategy.persistent, raster=raster if src == "static" else "row",
                                name=f"ctapipe L{i} gpu{i}", kernel=kernel_of(strategy, i)))
    link_pipes(plan, hw, wl, list(wl.layers), kernels, strategy.counter_rows)
    last = wl.layers[-1]
    if last.rowwise:
        add_rowwise(plan, hw, wl, len(wl.layers) - 1, last, kernels[-1].gpu, kernels[-1].id)
    if variant:
        plan = variants.apply(plan, variants.VARIANTS[variant])
        plan.params = {"variant": variant, **{k: v for k, v in plan.params.items() if not k.startswith("order_op")}}
    if apply_memory(plan, wl, hw):
        plan.params["memory"] = "l2"
    return [plan]


def apply_memory(plan: Plan, wl: Workload, hw: Hardware) -> bool:
    """Give each layer's kernel its tiles' times from the memory hierarchy where the profile has it for the kernel's
    config (:func:`ctasim.costs.memory_model`); True if any kernel got them.

    The order is what the kernel walks: a producer or a waiting consumer its ``order``, a queue consumer the order
    its queue receives the tiles (:func:`ctasim.plan.push_order` of its producer's order; its times are then per
    queue slot). A grid that hands each freed CTA slot the next tile (one CTA per tile, or a queue) keeps its running
    tiles one window of that order, whose start times spread (``KernelConfig.ticket_spread``); a persistent grid with
    a fixed share per CTA drifts instead (``cta_drift``, with the config's ``cluster_m``). A variant's cluster shape
    does not enter: W multicast changes no wave's HBM traffic (a panel is read once a wave either way), and the
    multicast pairs are neighbours in every order the variants walk, so the spread does not part them.
    """
    ks = sorted(plan.kernels(), key=lambda k: k.layer)
    inbound = {p.consumer: p for p in plan.pipes}
    by_id = {k.id: k for k in ks}
    done = False
    for k in ks:
        layer = wl.layers[k.layer]
        cfg = hw.config(layer.tile_m, layer.tile_n, kernel=k.kernel)
        if not costs.memory_model(hw, cfg):
            continue
        queue = k.source == "queue"
        if queue:
            pipe = inbound[k.id]
            order = push_order(pipe, by_id[pipe.producer].order)
        else:
            order = np.asarray(k.order, dtype=np.int64)
        fixed_share = k.persistent and not queue
        k.tile_times = costs.order_tile_times(
            layer, hw, wl.elem_bytes, order, k.slots, kernel=k.kernel,
            drift=hw.config(layer.tile_m, layer.tile_n, kernel=k.kernel).cta_drift if fixed_share else 0.0,
            ticket_spread=0.0 if fixed_share else cfg.ticket_spread)
        k.tile_ns = float(k.tile_times.mean())
        done = True
    return done


def link_pipes(plan: Plan, hw: Hardware, wl: Workload, layers, kernels, counter_rows: int = 0) -> None:
    """Connect consecutive kernels ``kernels[i] -> kernels[i+1]`` with row-block scoreboards and queues
    (one counter per ``counter_rows`` rows; 0: per consumer row-block)."""
    for i in range(len(kernels) - 1):
        prod, cons = kernels[i], kernels[i + 1]
        pl, cl = layers[i], layers[i + 1]
        ready = costs.rowwise_ns(cl.tile_m, pl.out_n, wl.elem_bytes, hw) if pl.rowwise else 0.0
        pipe = row_block_pipe(len(plan.pipes), prod, cons, pl, cl, costs.tile_bytes(pl, wl.elem_bytes), ready,
                              counter_rows=counter_rows)
        plan.pipes.append(pipe)
        prod.outbound = pipe.id
        cons.inbound = pipe.id


def build_chain(strategy: Strategy, wl: Workload, hw: Hardware, case: str) -> Plan:
    """Every layer of a square chain in one persistent kernel on GPU 0 (module docstring)."""
    why = chain_reason(wl)
    if why:
        raise ValueError(why)
    layer = wl.layers[0]
    static = strategy.tile_source == "static"
    group = strategy.chain_group or CHAIN_ROW_GROUP
    plan = Plan(strategy.label, case, 1, params={"gpus": 1, "order": f"chain_group{group}",
                                                 "tile_source": "static" if static else "tickets"})
    k = add_gemm(plan, hw, wl, 0, layer, 0, start_ns=hw.launch_ns, source="chain", persistent=True,
                 name=f"ctapipe chain L0-{len(wl.layers) - 1} gpu0")
    k.chain_layers = len(wl.layers)
    k.chain_signal_ns = hw.local_signal_ns
    k.chain_static = static
    k.order = chain_order(len(wl.layers), layer.tiles_m, layer.tiles_n, group)
    if chain_tile_times(k, layer, hw, wl.elem_bytes, static, group):
        plan.params["memory"] = "l2"
    return plan


def chain_memory(layer, hw: Hardware, static: bool, group: int, layers: int) -> tuple[dict, float]:
    """The memory hierarchy's keywords for a chain kernel of ``layers`` layers of ``layer`` in chain group ``group``
    (:func:`ctasim.costs.order_traffic`, :func:`ctasim.costs.order_waves`) and its mainloop's slowdown: tickets hand
    each CTA the next tile as it frees (no drift; start times spreading by the config's ``ticket_spread``; the
    config's ``ticket_mainloop_factor``), the static design's CTAs keep a fixed share (``cta_drift``, factor 1)."""
    cfg = hw.config(layer.tile_m, layer.tile_n)
    slow = 1.0 if static else cfg.ticket_mainloop_factor
    # the static design's CTAs keep a fixed share, so drift: cta_drift tile times a round at every K (the drift's law
    # in K, KernelConfig.drift_k_ref, was judged on plain GEMMs only)
    kw = dict(drift=cfg.cta_drift if static else 0.0, cluster_m=chain_cluster_m(static, layer.tiles_m, group),
              layers=layers, ticket_spread=0.0 if static else cfg.ticket_spread)
    return kw, slow


def chain_traffic(k, layer, hw: Hardware, elem_bytes: int, group: int):
    """What chain kernel ``k`` of a one-GPU chain plan (its ``order``, ``slots``, ``chain_layers``, design), built in
    chain group ``group``, reads from and writes to HBM wave by wave (a :class:`ctasim.l2.WaveTraffic`), as
    :func:`chain_tile_times` prices its tiles. Needs the profile's memory hierarchy."""
    kw, _ = chain_memory(layer, hw, bool(k.chain_static), group, k.chain_layers)
    return costs.order_traffic(layer, hw, elem_bytes, k.order, k.slots, **kw)


def chain_tile_times(k, layer, hw: Hardware, elem_bytes: int, static: bool, group: int) -> bool:
    """Where the profile has the memory hierarchy, give chain kernel ``k`` its tiles' times over its ``order`` (its
    ``chain_layers`` layers' panels apart); True if it did. Tickets hand each CTA the next tile as it frees, so the
    running tiles stay one grid-wide window of the order (no drift) whose start times spread (``ticket_spread``); the
    static design's CTAs keep a fixed share, as the plain persistent GEMM's do (``cta_drift``). The tickets design's
    compute is the plain GEMM's times the config's ``ticket_mainloop_factor`` (measured: a one-layer chain kernel
    against the plain GEMM); :func:`chain_memory` holds both."""
    cfg = hw.config(layer.tile_m, layer.tile_n)
    if not costs.memory_model(hw, cfg):
        return False
    kw, slow = chain_memory(layer, hw, static, group, k.chain_layers)
    if hw.device_shares >= 2:  # one share of a device: a table per count of computing shares (costs.active_share)
        tables = []
        for active in range(1, hw.device_shares + 1):
            share, boost = costs.active_share(hw, active, k.slots)
            tables.append(costs.order_tile_times(layer, share, elem_bytes, k.order, k.slots, boost=boost / slow,
                                                 **kw))
        k.tile_times = tables[-1]
        k.tile_scale_by_active = tuple(t / tables[-1] for t in tables)
    else:
        k.tile_times = costs.order_tile_times(layer, hw, elem_bytes, k.order, k.slots, boost=1.0 / slow, **kw)
    k.tile_ns = float(k.tile_times.mean())
    return True


def build_ring(strategy: Strategy, wl: Workload, hw: Hardware, case: str) -> Plan:
    """The layers of a chain placed round-robin on G = :func:`ring_gpus` GPUs (layer l on GPU l mod G; more layers than
    GPUs: one square shape; one layer per GPU: any shapes, fused epilogues, a last row-wise op, :func:`ring_reason`), one
    persistent chain kernel per GPU running its layers' tiles by tickets in the chain's one topological order
    (:func:`ctasim.plan.chain_order` restricted to its layers). A tile of layer l > 0 waits for row-block r of layer
    l - 1 on the GPU before; a tile whose layer feeds the next GPU stores its output there at the per-SM store rate
    (``bytes / (sm_remote_store_gbps / cta_slots_per_sm) + link_latency_ns``: the CTA holds its slot for the store)
    and signals the counter there after the default config's ``signal_ns``, or the profile's unloaded
    ``fence_sys_ns + remote_atomic_ns`` where it has none (every profile so), holding its CTA the config's
    ``signal_hold_ns`` past the store's arrival (0 in every profile's default config): the store is priced, the
    signal is not held, as if the kernel hid it -- not the loaded costs of the one-CTA-per-tile 2-GPU kernels. The
    last layer's tiles store into the next GPU too, as ctahw's ring kernels do (their D is one batched tensor in the
    next GPU's memory; for G = 2 the output lands where the input began). Registered plan 12 (commit a7e3448) was
    predicted before that, with the last layer's tiles held ``local_signal_ns`` on their own GPU.
    A LayerNorm between two layers is folded (:func:`norm_folds`): no pass of its own; the layer before adds
    :func:`ctasim.costs.norm_fold_ns`'s ``"stats"`` time to each tile, the layer after its ``"fold"`` time, and the
    next layer's row-block wait is the plain counter wait (the statistics are complete when the row-block is).
    Deadlock-free by the chain kernel's rule: every GPU takes
    its tickets in an order that is one topological order of the whole chain, and a CTA takes its next ticket only
    while its tile has its inputs."""
    G, L = ring_gpus(strategy, wl), len(wl.layers)
    why = ring_reason(wl, G)
    if why:
        raise ValueError(why)
    group = strategy.chain_group or CHAIN_ROW_GROUP
    folds, sides = norm_folds(wl, G), fold_sides(wl, G)  # one layer per GPU where there are any: layer g on GPU g
    plan = Plan(strategy.label, case, G, params={"gpus": G, "placement": "ring", "order": f"chain_group{group}",
                                                 "tile_source": "tickets"})
    # more layers than GPUs: one square shape and the chain's one order, which every GPU restricts to its layers
    first = wl.layers[0]
    full = chain_order(L, first.tiles_m, first.tiles_n, group) if L > G else None
    for g in range(G):
        mine = list(range(g, L, G))
        layer = wl.layers[g]  # more layers than GPUs: one square shape; one layer per GPU: its own
        per = layer.tiles_m * layer.tiles_n
        cfg = hw.config(layer.tile_m, layer.tile_n)
        store_ns = costs.remote_store_ns(costs.tile_bytes(layer, wl.elem_bytes), hw, cfg.cta_slots_per_sm)
        k = add_gemm(plan, hw, wl, g, layer, g, start_ns=hw.launch_ns, source="chain", persistent=True,
                     name=f"ctapipe ring L{','.join(map(str, mine))} gpu{g}")
        k.chain_layers, k.chain_stride = len(mine), G
        k.chain_signal_ns = hw.local_signal_ns
        k.chain_remote = tuple(True for _ in mine)  # every layer's output goes to the next GPU (ctahw.chain.ring_layout)
        k.chain_store_ns = store_ns
        k.chain_remote_signal_ns = cfg.signal_ns if cfg.signal_ns > 0 else hw.fence_sys_ns + hw.remote_atomic_ns
        k.chain_remote_hold_ns = cfg.signal_hold_ns
        if full is None:  # one layer per GPU: its layer's order
            k.order = chain_order(1, layer.tiles_m, layer.tiles_n, group)
        else:  # this GPU's tiles in the chain's order, as local ids (its j-th layer: j * per + ...)
            own = full[(full // per) % G == g]
            k.order = ((own // per) // G) * per + own % per
        if chain_tile_times(k, layer, hw, wl.elem_bytes, False, group):
            plan.params["memory"] = "l2"
        if g in sides:  # the LayerNorm fold's epilogue work, on top of the layer's residual read or activation
            extra = costs.norm_fold_ns(layer, hw, sides[g])
            k.tile_ns += extra
            if len(k.tile_times):
                # a shared device's tables scale the memory-bound tile time, not the fold's fixed epilogue work
                k.tile_scale_by_active = tuple((s * k.tile_times + extra) / (k.tile_times + extra)
                                               for s in k.tile_scale_by_active)
                k.tile_times = k.tile_times + extra
    if folds:
        plan.params["norm_fold"] = ",".join(map(str, folds))
    last = wl.layers[-1]
    if last.rowwise:  # one layer per GPU: after the last layer, where its output lands (the next GPU)
        add_rowwise(plan, hw, wl, L - 1, last, L % G, plan.kernels()[(L - 1) % G].id)
    return plan


def chain_cluster_m(static: bool, tiles_m: int, group: int = CHAIN_ROW_GROUP) -> int:
    """Row-blocks per cluster of the chain kernel: the static design runs 2x1 clusters (W multicast) where its
    order pairs the row-blocks (a group of an even count, :func:`ctasim.plan.chain_group_used`), else 1x1; the
    tickets design runs 1x1 (ctahw's designs follow this rule)."""
    return 2 if static and chain_group_used(tiles_m, group) else 1
