"""The CTA-pipelined kernel variants of ``ctahw``: one declarative table, read by the simulator and the GPU runner.

A *variant* is a way to run a CTA-pipelining plan on the GPUs: the cluster shape of each layer's kernel, the
producer's tile order, how many rows one scoreboard counter covers, whether consumers pop the work-queue or wait
on counters in a fixed order, and (for the persistent kernels) which persistent design runs.  Everything that
depends on the variant is derived from :data:`VARIANTS`:

* the ctasim strategy fields (:func:`strategy_fields`: ``tile_source``, ``counter_rows``, ``persistent=False``,
  and ``kernels``: the hardware profile's kernel config of each layer, e.g. ``ctapipe-2x1``);
* the plan's tile orders (:func:`apply`);
* in ``ctahw``: the kernel library and launch (``ctahw.runner.library_of``), the clusters per layer, the trace
  build (``_trace`` twins).

An experiment spec names a variant with ``[[experiment.strategy]] kind = "ctapipe"`` and ``variant = "..."``;
``ctasim`` then simulates the plan the GPUs run.

Left out: the C++ side (template instantiations in ``ctahw/kernels``) is selected by cluster shape and persistent
design, which this table holds; it is not generated from it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ctasim.plan import ORDERS, Plan, named_order, with_order

__all__ = ["Variant", "VARIANTS", "DEFAULT_RUN", "strategy_fields", "clusters_of", "apply", "base_name"]


@dataclass(frozen=True)
class Variant:
    """A way to run the plan: cluster shape per layer (producer first) and the producer's tile order."""

    clusters: tuple[str, ...]
    order: str = "plan"  # "plan": ctasim's plan order (row order); else a name of ctasim.plan.ORDERS
    trace: bool = False
    persistent: str = ""  # variant (b), kernels/ctapipe_sm90_bf16_persistent.cu: "smem" or "ring" (ctahw.runner)
    help: str = ""
    counter_rows: int = 0  # rows per scoreboard counter (ctasim Strategy.counter_rows; 0: one row-block)
    consumer: str = "queue"  # "queue": pops; "wait": a fixed order (pair_rows with 2x1 clusters), counter waits
    kernels: tuple[str, ...] = ()  # the hardware profile's kernel config per layer (KernelConfig.kernel); () = none


_UNTRACED = {
    "cutlass_ctapipe": Variant(("1x1", "1x1"), kernels=("ctapipe-1x1",),
                               help="cluster 1x1, the plan's row order, queue pops"),
    "cutlass_ctapipe_c12": Variant(("1x2", "1x2"), kernels=("ctapipe-1x2",),
                                   help="clusters 1x2 (A multicast), plan order, pair pops"),
    "cutlass_ctapipe_c21": Variant(("2x1", "1x2"), order="pair_rows", kernels=("ctapipe-2x1", "ctapipe-1x2-c21"),
                                   help="producer clusters 2x1 (W multicast) over row-block pairs; consumer 1x2"),
    "cutlass_ctapipe_p": Variant(("1x1", "1x1"), persistent="smem",
                                 help="variant (b): persistent kernels (scheduler warp + shared-memory pipeline), "
                                      "cluster 1x1, plan order, queue pops"),
    "cutlass_ctapipe_pr": Variant(("1x1", "1x1"), persistent="ring",
                                  help="variant (b), ring design (CUTLASS's static-persistent path, the load warp "
                                       "pops), cluster 1x1"),
    "cutlass_ctapipe_pr21": Variant(("2x1", "1x1"), order="pair_rows", persistent="ring",
                                    help="variant (b), ring design: producer 2x1 over row-block pairs, consumer 1x1"),
    "cutlass_ctapipe_g21": Variant(("2x1", "2x1"), order="pair_rows", counter_rows=256, kernels=("ctapipe-2x1",),
                                   help="clusters 2x1 on both sides (W multicast): producer over row-block pairs, "
                                        "one counter per 256 rows whose tiles are pushed column by column, so "
                                        "the consumer's cluster pops two tiles of one column"),
    "cutlass_ctapipe_w21": Variant(("2x1", "2x1"), order="pair_rows", consumer="wait", kernels=("ctapipe-2x1",),
                                   help="no work-queue: clusters 2x1 on both sides, the consumer walks row-block "
                                        "pairs and waits on each tile's counter; the producer counts with a "
                                        "release reduction (no returned value, no push)"),
    "cutlass_ctapipe_w21g4": Variant(("2x1", "2x1"), order="group4", consumer="wait", kernels=("ctapipe-2x1",),
                                     help="w21 with both GPUs walking groups of 4 row-blocks column by column"),
    "cutlass_ctapipe_w21g8": Variant(("2x1", "2x1"), order="group8", consumer="wait", kernels=("ctapipe-2x1",),
                                     help="w21 with both GPUs walking groups of 8 row-blocks column by column "
                                          "(a wave reads ~1/4 of the weights: L2 reuse; row-blocks complete "
                                          "8 at a time)"),
    "cutlass_ctapipe_w21g8t": Variant(("2x1", "2x1"), order="group8_taper", consumer="wait", kernels=("ctapipe-2x1",),
                                      help="w21g8 whose last 8 row-blocks go in pairs (a short tail for the "
                                           "consumer after the producer's last tile)"),
    "cutlass_ctapipe_w21g8tt": Variant(("2x1", "2x1"), order="group8_taper2", consumer="wait",
                                       kernels=("ctapipe-2x1",),
                                       help="w21g8 whose first and last 8 row-blocks go in pairs (the consumer "
                                            "starts as early as with pairs; a short tail)"),
    "cutlass_ctapipe_g21g8": Variant(("2x1", "2x1"), order="group8", counter_rows=1024, kernels=("ctapipe-2x1",),
                                     help="g21 with the producer walking groups of 8 row-blocks column by column, "
                                          "one counter per group (1024 rows), its tiles pushed column by column"),
}


def _with_traced_twins(variants: dict[str, Variant]) -> dict[str, Variant]:
    """Each variant followed by ``<name>_trace``: the same kernel compiled with %globaltimer stamps."""
    out = {}
    for name, v in variants.items():
        out[name] = v
        out[f"{name}_trace"] = dataclasses.replace(v, trace=True, help="the same with %globaltimer stamps")
    return out


VARIANTS = _with_traced_twins(_UNTRACED)
"""Every variant ``ctahw`` can run, by name (``<name>_trace``: the same kernel with per-CTA stamps)."""

DEFAULT_RUN = ("cutlass_ctapipe_w21g4", "cutlass_ctapipe_w21g4_trace", "cutlass_ctapipe_g21",
               "cutlass_ctapipe_g21_trace", "cutlass_ctapipe_c21", "cutlass_ctapipe_c21_trace")
"""What ``ctahw run ... ctapipe`` runs when no variant is named: the fastest measured (w21g4), its queue
counterpart (g21) and the earlier best (c21), each with its traced twin."""


def base_name(name: str) -> str:
    """The variant without its ``_trace`` suffix (a traced twin runs the same plan)."""
    return name.removesuffix("_trace")


def _get(name: str) -> Variant:
    try:
        return VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown ctapipe variant {name!r} (known: {', '.join(_UNTRACED)})") from None


def strategy_fields(name: str) -> dict:
    """The ctasim ``Strategy`` fields of variant ``name``: one CTA per tile, its consumer's tile source, its
    counter rows and kernel configs.  A persistent variant has no kernel config in the profiles (ValueError)."""
    v = _get(name)
    if not v.kernels:
        raise ValueError(f"ctapipe variant {name!r} has no kernel config in the hardware profiles "
                         f"(the simulator cannot model it)")
    return {"persistent": False, "tile_source": "static" if v.consumer == "wait" else "queue",
            "counter_rows": v.counter_rows, "kernels": v.kernels}


def clusters_of(plan: Plan, v: Variant) -> dict[int, str]:
    """Cluster shape of each kernel op of ``plan`` (layers past ``v.clusters`` take its last entry)."""
    ks = sorted(plan.kernels(), key=lambda k: k.layer)
    cl = list(v.clusters) + [v.clusters[-1]] * (len(ks) - len(v.clusters))
    return {k.id: cl[i] for i, k in enumerate(ks)}


def apply(plan: Plan, v: Variant) -> Plan:
    """``plan`` with the variant's tile orders: its producer (and a waiting consumer of 2x1 clusters, or of any
    grouped order) walking ``v.order``.  The plan must already carry the variant's strategy fields."""
    if v.consumer not in ("queue", "wait"):
        raise ValueError(f"variant consumer {v.consumer!r}: queue or wait")
    if v.order == "plan":
        return plan
    if v.order not in ORDERS:
        raise ValueError(f"variant order {v.order!r}: plan or one of {', '.join(ORDERS)}")
    ks = sorted(plan.kernels(), key=lambda k: k.layer)
    plan = with_order(plan, ks[0].id, named_order(v.order, ks[0].tiles_m, ks[0].tiles_n))
    if v.consumer == "wait":
        cl = clusters_of(plan, v)
        for k in ks[1:]:
            if cl[k.id] == "2x1" or v.order != "pair_rows":
                plan = with_order(plan, k.id, named_order(v.order, k.tiles_m, k.tiles_n))
    return plan
