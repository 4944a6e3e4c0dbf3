"""Plots: a Gantt chart of SM slots x time per GPU, latency vs micro-batch chunk count, figure-style bars.

matplotlib with the Agg backend (files only, no screen).  Each function writes one file and returns its path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ctasim.trace import Trace

__all__ = ["gantt", "chunk_sweep", "latency_bars", "breakdown_bars"]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def gantt(trace: Trace, path: str | Path, title: str = "") -> Path:
    """One panel per GPU: each tile a bar on its SM's row, coloured by layer; stores in grey."""
    plt = _plt()
    t = trace.tiles
    gpus = sorted(t["gpu"].unique()) or [0]
    fig, axes = plt.subplots(len(gpus), 1, figsize=(12, 1.6 + 1.4 * len(gpus)), sharex=True, squeeze=False)
    cmap = plt.get_cmap("tab10")
    for ax, g in zip(axes[:, 0], gpus):
        rows = t[t["gpu"] == g]
        y = rows["sm"].to_numpy()
        t0 = rows["t_acquire"].to_numpy() / 1e3
        t1 = rows["t_compute_end"].to_numpy() / 1e3
        ts = rows["t_store_end"].to_numpy() / 1e3
        colors = cmap(rows["layer"].to_numpy() % 10)
        ax.barh(y, t1 - t0, left=t0, height=0.9, color=colors, linewidth=0)
        store = ts > t1
        if store.any():
            ax.barh(y[store], (ts - t1)[store], left=t1[store], height=0.9, color="0.7", linewidth=0)
        ops = trace.ops[(trace.ops["gpu"] == g) & (trace.ops["kind"] != "kernel")]
        for row in ops.itertuples(index=False):
            ax.axvspan(row.t_begin / 1e3, row.t_end / 1e3, color="tab:red" if row.kind != "transfer" else "tab:olive",
                       alpha=0.25, linewidth=0)
        ax.set_ylabel(f"GPU {g}\nSM")
        ax.set_ylim(-1, max(1, int(y.max()) + 1) if len(y) else 1)
    axes[-1, 0].set_xlabel("time (µs)")
    fig.suptitle(title or f"{trace.meta.get('strategy', '')} {trace.meta.get('case', '')}")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


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
    ax.set_title(title or "micro-batching: latency vs chunk count")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


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
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


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
    ax.set_title(title)
    ax.legend(fontsize=7)
    ax.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
