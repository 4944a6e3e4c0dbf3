"""Compare two traces of the same plan: a measured one (``ctahw``) and a simulated one (``ctasim``).

Both traces follow :mod:`ctasim.trace`'s schema; tiles are matched by ``(kernel, tile_m, tile_n)`` (the
plan's operation id and the output tile), so the comparison needs nothing but the two traces.

Figures (:func:`compare`, one :class:`Comparison`):

* makespan of each and the relative error ``(sim - meas) / meas``;
* per-CTA start and end errors: for every matched tile, ``sim - meas`` of ``t_acquire`` (mainloop start)
  and ``t_compute_end``; median and p95 of their absolute values in ns and as a fraction of the measured
  makespan.  Each trace is first shifted so that its earliest tile starts at 0 (``align="first_tile"``):
  a measured trace's origin (the host's start event, GPU 0's clock) is not the simulator's;
* the consumer's first-tile delay per layer > 0: its first mainloop start after the previous layer's;
* dequeue-order agreement per consumer kernel: Spearman rank correlation of the tiles' ``t_acquire`` order
  (1: same order; pops of a work-queue follow publication, so this says whether row-blocks complete in the
  same order).  Consumers are the kernels that pop a work-queue (``slot >= 0``) or wait on counters in a
  fixed order (``source == "wait"``: ``slot == -1``, no push events; from the plan's ``inbound`` pipe, or,
  without a plan, tiles whose ``t_ready`` differs from ``t_start``).  A waiting consumer's tile order is
  fixed by the kernel, so its correlation (``start_order_spearman``) only says whether its tiles *start* in
  the same order; the headline ``dequeue_spearman`` is over queue consumers only (NaN in
  :meth:`Comparison.summary` when there is none, rather than a vacuous 1);
* per-GPU busy fraction (slot-time in tiles / (slots x makespan)), slots from the plan or the traces;
* overlap between consecutive layers: time both are running (from a layer's first mainloop start to its
  last compute end) as a fraction of the makespan.

:func:`gates` checks a comparison against bounds (:data:`GATES`); plots are in :mod:`ctasim.plots`
(``gantt_pair``).  A measured trace may lack tiles a plan has (a dropped stamp); those are counted
(``unmatched``) and left out of the per-CTA figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ctasim.trace import Trace

__all__ = ["Comparison", "compare", "gates", "GATES", "spearman", "layer_spans", "slots_of", "consumer_kernels"]

KEY = ["kernel", "layer", "tile_m", "tile_n"]
"""A tile: the chain kernel runs the tiles of several layers (Kernel.source "chain"), so the layer is part of it."""

GATES = {
    "makespan_abs_error": 0.06,
    "start_median_frac": 0.02,
    "end_median_frac": 0.02,
    "dequeue_spearman_min": 0.9,
}
"""Default bounds: the issue's targets (worst makespan error 6%, median per-CTA start error <= 2% of the
makespan), and a dequeue-order rank correlation of at least 0.9.  :func:`gates` takes others."""


@dataclass
class Comparison:
    """The figures of one measured-vs-simulated comparison (see the module docstring)."""

    makespan_meas_ns: float
    makespan_sim_ns: float
    start_err_ns: np.ndarray
    end_err_ns: np.ndarray
    matched: int
    unmatched: int
    first_tile_delay: pd.DataFrame  # layer, meas_ns, sim_ns, error_ns
    dequeue: pd.DataFrame  # kernel, layer, tiles, spearman
    busy: pd.DataFrame  # gpu, meas, sim
    overlap: pd.DataFrame  # layers, meas, sim
    meta: dict = field(default_factory=dict)

    @property
    def makespan_error(self) -> float:
        return (self.makespan_sim_ns - self.makespan_meas_ns) / self.makespan_meas_ns

    def _stat(self, err: np.ndarray, q: float) -> float:
        return float(np.quantile(np.abs(err), q)) if len(err) else float("nan")

    @property
    def start_median_ns(self) -> float:
        return self._stat(self.start_err_ns, 0.5)

    @property
    def start_p95_ns(self) -> float:
        return self._stat(self.start_err_ns, 0.95)

    @property
    def end_median_ns(self) -> float:
        return self._stat(self.end_err_ns, 0.5)

    @property
    def end_p95_ns(self) -> float:
        return self._stat(self.end_err_ns, 0.95)

    @property
    def dequeue_spearman(self) -> float:
        """The lowest rank correlation over work-queue consumer kernels (1.0 when there is none: no dequeue
        order to disagree on; :meth:`summary` reports NaN then)."""
        q = self.dequeue[self.dequeue["source"] == "queue"]
        return float(q["spearman"].min()) if len(q) else 1.0

    @property
    def start_order_spearman(self) -> float:
        """The lowest start-order rank correlation over every consumer kernel, queue or wait (1.0 if none)."""
        return float(self.dequeue["spearman"].min()) if len(self.dequeue) else 1.0

    def summary(self) -> dict:
        """One flat row of the headline figures (ns and fractions of the measured makespan)."""
        span = self.makespan_meas_ns
        row = {
            "makespan_meas_us": span / 1e3,
            "makespan_sim_us": self.makespan_sim_ns / 1e3,
            "makespan_error": self.makespan_error,
            "tiles_matched": self.matched,
            "tiles_unmatched": self.unmatched,
            "start_median_ns": self.start_median_ns,
            "start_p95_ns": self.start_p95_ns,
            "start_median_frac": self.start_median_ns / span,
            "start_p95_frac": self.start_p95_ns / span,
            "end_median_ns": self.end_median_ns,
            "end_p95_ns": self.end_p95_ns,
            "end_median_frac": self.end_median_ns / span,
            "end_p95_frac": self.end_p95_ns / span,
            "dequeue_spearman": self.dequeue_spearman if (self.dequeue["source"] == "queue").any() else float("nan"),
            "start_order_spearman": self.start_order_spearman,
            "consumer_source": "+".join(sorted(set(self.dequeue["source"]))),
        }
        for r in self.first_tile_delay.itertuples():
            row[f"first_tile_delay_L{r.layer}_meas_ns"] = r.meas_ns
            row[f"first_tile_delay_L{r.layer}_sim_ns"] = r.sim_ns
        for r in self.busy.itertuples():
            row[f"busy_gpu{r.gpu}_meas"] = r.meas
            row[f"busy_gpu{r.gpu}_sim"] = r.sim
        for r in self.overlap.itertuples():
            row[f"overlap_{r.layers}_meas"] = r.meas
            row[f"overlap_{r.layers}_sim"] = r.sim
        return row


def spearman(a, b) -> float:
    """Spearman rank correlation of two equal-length sequences (average ranks for ties); 1.0 if constant."""
    ra = pd.Series(a).rank(method="average").to_numpy()
    rb = pd.Series(b).rank(method="average").to_numpy()
    if len(ra) < 2 or ra.std() == 0 or rb.std() == 0:
        return 1.0
    return float(np.corrcoef(ra, rb)[0, 1])


def slots_of(trace: Trace, plan=None) -> dict[int, int]:
    """CTA slots per GPU: the plan's kernels' slots, or the distinct (sm, cta) pairs seen in the trace."""
    if plan is not None:
        out: dict[int, int] = {}
        for k in plan.kernels():
            out[k.gpu] = max(out.get(k.gpu, 0), k.slots)
        return out
    t = trace.tiles
    return {int(g): int(grp["cta"].nunique()) for g, grp in t.groupby("gpu")}


def layer_spans(trace: Trace) -> pd.DataFrame:
    """Per layer: first mainloop start and last compute end (ns)."""
    t = trace.tiles
    return t.groupby("layer").agg(begin=("t_acquire", "min"), end=("t_compute_end", "max"))


def _origin(trace: Trace, align: str) -> float:
    if align == "none" or not len(trace.tiles):
        return 0.0
    if align == "first_tile":
        return float(trace.tiles["t_acquire"].min())
    raise ValueError(f"unknown alignment {align!r} (first_tile or none)")


def consumer_kernels(measured: Trace, simulated: Trace, plan=None) -> dict[int, str]:
    """Consumer kernel ids and how they obtain tiles (``"queue"`` or ``"wait"``).

    From the plan when given (kernels with an ``inbound`` pipe, their ``source``); otherwise from the
    traces: a kernel with popped tiles (``slot >= 0``) is a queue consumer, one whose tiles waited on a
    counter (``t_ready != t_start``, ``slot == -1``) a waiting one.  Static producers and plain kernels have
    ``t_ready == t_start`` and are not consumers.
    """
    if plan is not None:
        return {int(k.id): ("queue" if k.source == "queue" else "wait")
                for k in sorted(plan.kernels(), key=lambda k: k.id) if k.inbound >= 0}
    out: dict[int, str] = {}
    for t in (measured.tiles, simulated.tiles):
        for k in t.loc[t["slot"] >= 0, "kernel"].unique():
            out[int(k)] = "queue"
        waits = (t["slot"] < 0) & (t["t_ready"] != t["t_start"]) & t["t_ready"].notna()
        for k in t.loc[waits, "kernel"].unique():
            out.setdefault(int(k), "wait")
    return dict(sorted(out.items()))


def compare(measured: Trace, simulated: Trace, plan=None, align: str = "first_tile") -> Comparison:
    """Every figure of the module docstring for two traces of the same plan."""
    tm, ts = measured.tiles, simulated.tiles
    om, os_ = _origin(measured, align), _origin(simulated, align)
    cols = KEY + ["gpu", "t_acquire", "t_compute_end"]
    j = tm[cols].merge(ts[cols], on=KEY, how="outer", suffixes=("_m", "_s"), indicator=True)
    both = j[j["_merge"] == "both"]
    start_err = ((both["t_acquire_s"] - os_) - (both["t_acquire_m"] - om)).to_numpy()
    end_err = ((both["t_compute_end_s"] - os_) - (both["t_compute_end_m"] - om)).to_numpy()

    sm, ss = layer_spans(measured), layer_spans(simulated)
    delays = []
    for layer in sm.index:
        if layer == sm.index.min() or layer not in ss.index or layer - 1 not in sm.index:
            continue
        dm = sm.loc[layer, "begin"] - sm.loc[layer - 1, "begin"]
        ds = ss.loc[layer, "begin"] - ss.loc[layer - 1, "begin"]
        delays.append({"layer": int(layer), "meas_ns": float(dm), "sim_ns": float(ds), "error_ns": float(ds - dm)})
    first = pd.DataFrame(delays, columns=["layer", "meas_ns", "sim_ns", "error_ns"])

    deq = []
    for k, source in consumer_kernels(measured, simulated, plan).items():
        kb = both[both["kernel"] == k]
        if len(kb):
            deq.append({"kernel": int(k), "layer": int(kb["layer"].iloc[0]), "source": source, "tiles": len(kb),
                        "spearman": spearman(kb["t_acquire_m"], kb["t_acquire_s"])})
    dequeue = pd.DataFrame(deq, columns=["kernel", "layer", "source", "tiles", "spearman"])

    slots = slots_of(simulated, plan)
    bm, bs = measured.busy_fraction(slots), simulated.busy_fraction(slots)
    busy = pd.DataFrame([{"gpu": g, "meas": bm.get(g, 0.0), "sim": bs.get(g, 0.0)} for g in sorted(slots)],
                        columns=["gpu", "meas", "sim"])

    ov = []
    for layer in sm.index:
        if layer + 1 in sm.index and layer in ss.index and layer + 1 in ss.index:
            def frac(s, span):
                both_on = min(s.loc[layer, "end"], s.loc[layer + 1, "end"]) - max(s.loc[layer, "begin"], s.loc[layer + 1, "begin"])
                return max(0.0, float(both_on)) / span
            ov.append({"layers": f"L{layer}-L{layer + 1}", "meas": frac(sm, measured.makespan_ns),
                       "sim": frac(ss, simulated.makespan_ns)})
    overlap = pd.DataFrame(ov, columns=["layers", "meas", "sim"])

    return Comparison(measured.makespan_ns, simulated.makespan_ns,
                      start_err, end_err, int(len(both)), int((j["_merge"] != "both").sum()),
                      first, dequeue, busy, overlap,
                      meta={"strategy": simulated.meta.get("strategy", ""), "case": simulated.meta.get("case", "")})


def gates(c: Comparison, bounds: dict | None = None) -> dict[str, tuple[bool, float, float]]:
    """Each gate's ``(passed, value, bound)``; a comparison passes when every gate does."""
    b = {**GATES, **(bounds or {})}
    span = c.makespan_meas_ns
    return {
        "makespan_abs_error": (abs(c.makespan_error) <= b["makespan_abs_error"], abs(c.makespan_error), b["makespan_abs_error"]),
        "start_median_frac": (c.start_median_ns / span <= b["start_median_frac"], c.start_median_ns / span, b["start_median_frac"]),
        "end_median_frac": (c.end_median_ns / span <= b["end_median_frac"], c.end_median_ns / span, b["end_median_frac"]),
        "dequeue_spearman_min": (c.dequeue_spearman >= b["dequeue_spearman_min"], c.dequeue_spearman, b["dequeue_spearman_min"]),
    }
