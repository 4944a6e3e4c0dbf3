"""Plots: a Gantt chart of SM slots x time per GPU, latency vs micro-batch chunk count, figure-style bars.

matplotlib with the Agg backend (files only, no screen).  Each function writes one file and returns its path.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from ctasim.trace import Trace

__all__ = ["gantt", "gantt_pair", "chunk_sweep", "latency_bars", "breakdown_bars", "error_vs_m", "cta_overlay"]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def gantt(trace: Trace, path: str | Path, title: str = "") -> Path:
    """One panel per GPU: each tile a bar on its SM's row, coloured by layer; stores in grey."""
    plt = _plt()
    gpus = sorted(trace.tiles["gpu"].unique()) or [0]
    fig, axes = plt.subplots(len(gpus), 1, figsize=(12, 1.6 + 1.4 * len(gpus)), sharex=True, squeeze=False)
    _gantt_panels(plt, trace, axes[:, 0], gpus)
    axes[-1, 0].set_xlabel("time (µs)")
    fig.suptitle(_wrap(title or f"{trace.meta.get('strategy', '')} {trace.meta.get('case', '')}", 100))
    return _save(fig, plt, path)


def gantt_pair(measured: Trace, simulated: Trace, path: str | Path, title: str = "",
               labels: tuple[str, str] = ("measured", "simulated")) -> Path:
    """Two Gantt charts side by side (one column per trace, one row per GPU) on a shared time axis."""
    plt = _plt()
    gpus = sorted(set(measured.tiles["gpu"].unique()) | set(simulated.tiles["gpu"].unique())) or [0]
    fig, axes = plt.subplots(len(gpus), 2, figsize=(16, 1.6 + 1.4 * len(gpus)), sharex=True, sharey="row",
                             squeeze=False)
    for col, (tr, label) in enumerate(zip((measured, simulated), labels)):
        _gantt_panels(plt, tr, axes[:, col], gpus)
        axes[0, col].set_title(label)
        axes[-1, col].set_xlabel("time (µs)")
    fig.suptitle(title or f"{simulated.meta.get('strategy', '')} {simulated.meta.get('case', '')}")
    return _save(fig, plt, path)


def cta_overlay(measured: Trace, predicted: Trace, path: str | Path, title: str = "") -> Path:
    """Per-CTA start and end, predicted against measured, one point per tile matched by (kernel, layer, tile_m,
    tile_n) (:data:`ctasim.validation.traces.KEY`), coloured by layer; each trace shifted so that its first tile starts at 0. Points on the diagonal: the
    prediction placed that tile exactly."""
    plt = _plt()
    from ctasim.validation.traces import KEY  # noqa: PLC0415

    m, p = measured.tiles, predicted.tiles
    j = m.merge(p, on=KEY, suffixes=("_m", "_p"))
    om, op = float(m["t_acquire"].min()), float(p["t_acquire"].min())
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.8), sharex=True, sharey=True)
    for ax, col, what in ((axes[0], "t_acquire", "start"), (axes[1], "t_compute_end", "end")):
        for layer, g in j.groupby("layer"):
            ax.scatter((g[f"{col}_m"] - om) * 1e-3, (g[f"{col}_p"] - op) * 1e-3, s=3, label=f"layer {layer}")
        hi = float(max((j[f"{col}_m"] - om).max(), (j[f"{col}_p"] - op).max())) * 1e-3 if len(j) else 1.0
        ax.plot([0, hi], [0, hi], "k--", lw=0.8)
        ax.set_xlabel(f"measured tile {what} (µs)")
        ax.set_title(f"tile {what}")
    axes[0].set_ylabel("predicted (µs)")
    axes[0].legend(markerscale=4)
    fig.suptitle(_wrap(title or "per-CTA schedule: predicted vs measured"))
    return _save(fig, plt, path)


def _wrap(title: str, width: int = 64) -> str:
    """A title broken into lines that fit a small figure."""
    return "\n".join(textwrap.wrap(title, width)) if title else title


def _save(fig, plt, path) -> Path:
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _gantt_panels(plt, trace: Trace, axes, gpus) -> None:
    t = trace.tiles
    cmap = plt.get_cmap("tab10")
    for ax, g in zip(axes, gpus):
        rows = t[t["gpu"] == g]
        y = rows["sm"].to_numpy()
        t0 = rows["t_acquire"].to_numpy() / 1e3
        t1 = rows["t_compute_end"].to_numpy() / 1e3
        ts = rows["t_store_end"].to_numpy() / 1e3
        colors = cmap(rows["layer"].to_numpy() % 10)
        _bars(ax, y, t0, t1, colors)
        store = ts > t1
        if store.any():
            _bars(ax, y[store], t1[store], ts[store], "0.7")
        if len(y):
            ax.set_xlim(min(0.0, float(np.nanmin(t0))), float(np.nanmax(np.maximum(t1, ts))) * 1.01 or 1.0)
        ops = trace.ops[(trace.ops["gpu"] == g) & (trace.ops["kind"] != "kernel")]
        for row in ops.itertuples(index=False):
            ax.axvspan(row.t_begin / 1e3, row.t_end / 1e3, color="tab:red" if row.kind != "transfer" else "tab:olive",
                       alpha=0.25, linewidth=0)
        ax.set_ylabel(f"GPU {g}\nSM")
        ax.set_ylim(-1, max(1, int(y.max()) + 1) if len(y) else 1)


def _bars(ax, y, left, right, colors, height: float = 0.9) -> None:
    """Horizontal bars [left, right) on rows ``y`` as one PolyCollection (one artist, not one patch per bar: a
    Gantt chart of 10K tiles draws in well under a second)."""
    from matplotlib.collections import PolyCollection  # noqa: PLC0415

    h = height / 2
    lo, hi = y - h, y + h
    verts = np.stack([np.column_stack([left, lo]), np.column_stack([left, hi]),
                      np.column_stack([right, hi]), np.column_stack([right, lo])], axis=1)
    ax.add_collection(PolyCollection(verts, facecolors=colors, linewidths=0))


def chunk_sweep(variants: dict[str, list[tuple[int, float]]], path: str | Path, title: str = "") -> Path:
    """Latency vs micro-batch chunk count, one line per case."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, pts in variants.items():
        pts = sorted(pts)
        ax.plot([c for c, _ in pts], [ns / 1e3 for _, ns in pts], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("chunks")
    ax.set_ylabel("latency (µs)")
    ax.set_title(_wrap(title or "micro-batching: latency vs chunk count"), fontsize=10)
    ax.legend(fontsize=7)
    return _save(fig, plt, path)


def latency_bars(df: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """Grouped bars: latency per case (x) and strategy (colour), as in the paper's Fig. 4/5."""
    plt = _plt()
    piv = df.pivot_table(index="case", columns="strategy", values="latency_us", sort=False)
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(piv)), 4))
    width = 0.8 / max(1, len(piv.columns))
    x = np.arange(len(piv))
    for i, s in enumerate(piv.columns):
        ax.bar(x + i * width, piv[s].to_numpy() / 1e3, width, label=s)
    ax.set_xticks(x + 0.4 - width / 2, piv.index, rotation=20, fontsize=8)
    ax.set_ylabel("latency (ms)")
    ax.set_title(_wrap(title), fontsize=10)
    ax.legend(fontsize=7)
    return _save(fig, plt, path)


def breakdown_bars(df: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """Stacked bars of compute / communication / idle per strategy (the paper's Fig. 7 breakdown)."""
    plt = _plt()
    labels = [f"{r.case}\n{r.strategy}" if df["case"].nunique() > 1 else r.strategy for r in df.itertuples()]
    fig, ax = plt.subplots(figsize=(max(6, 1.0 * len(df)), 4))
    bottom = np.zeros(len(df))
    for col, color in (("compute_us", "tab:blue"), ("comm_us", "tab:red"), ("idle_us", "0.75")):
        vals = df[col].to_numpy() / 1e3
        ax.bar(labels, vals, bottom=bottom, color=color, label=col.replace("_us", ""))
        bottom += vals
    ax.set_ylabel("latency (ms)")
    ax.set_title(_wrap(title), fontsize=10)
    ax.legend(fontsize=7)
    ax.tick_params(axis="x", labelsize=7)
    return _save(fig, plt, path)


def error_vs_m(df: pd.DataFrame, path: str | Path, title: str = "", series: str = "series") -> Path:
    """Signed makespan error (%) vs M, one line per ``series`` value; held-out points filled, fitted hollow.

    ``df`` has columns ``m``, ``error`` (fraction), ``role`` (``fitted`` / ``held_out``) and ``series``.
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    cmap = plt.get_cmap("tab20")
    for i, (name, g) in enumerate(df.groupby(series, sort=False)):
        g = g.sort_values("m")
        color = cmap(i % 20)
        ax.plot(g["m"], 100 * g["error"], color=color, linewidth=1, label=name)
        for role, face in (("held_out", color), ("fitted", "none")):
            r = g[g["role"] == role]
            ax.scatter(r["m"], 100 * r["error"], edgecolors=color, facecolors=face, zorder=3, s=30)
    ax.axhline(0, color="0.3", linewidth=0.8)
    for b in (-6, 6):
        ax.axhline(b, color="tab:red", linewidth=0.6, linestyle="--")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("M (rows)")
    ax.set_ylabel("makespan error, simulated vs measured (%)")
    ax.set_title(title or "error vs M (filled: held out; hollow: M used for fitting)")
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, plt, path)
