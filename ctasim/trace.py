"""The trace: one schema for simulated and measured runs.

A :class:`Trace` holds three tables (pandas DataFrames, columnar) and a ``meta`` dict.

``tiles`` — one row per CTA tile execution (``TILE_COLUMNS``):
    ``source`` (sim|hw), ``gpu``, ``kernel`` (op id in the plan), ``layer``, ``cta`` (persistent CTA
    index, or blockIdx for a non-persistent grid), ``sm``, ``tile_m`` (row-block, global over chunks),
    ``tile_n`` (column block), then times in ns on one timeline (GPU 0's clock; other GPUs shifted by
    their measured offset): ``t_start`` (CTA began this tile's iteration), ``t_acquire`` (tile id
    obtained), ``t_ready`` (its inputs became visible), ``t_compute_end``, ``t_store_end`` (output
    visible where it is read), ``t_signal`` (scoreboard updated), and ``slot`` (work-queue slot it was
    popped from, -1 if none).

``events`` — scoreboard and work-queue events (``EVENT_COLUMNS``): ``kind`` is ``zero`` (counter
    ``dep`` of pipe ``pipe`` completed at ``t_ns``) or ``push`` (``tile`` published in ``slot``, visible
    at ``t_ns``).  Pops are in ``tiles``: the ``slot`` a tile came from, read at ``t_acquire``.

``ops`` — one row per plan operation (``OP_COLUMNS``): kernels, transfers, collectives, memory passes
    with their begin and end times.

Exports: Parquet (with pyarrow) or CSV files, Chrome/Perfetto trace-event JSON, and trace bundles
(:func:`save_traces` / :func:`load_traces`: many named traces in one compressed ``.npz``, one array per
column, the meta as JSON text; what ``ctahw`` writes at capture time and what the validation reads, with no
pyarrow and no ctahw needed).

Left out: the plan a trace ran is not stored with it (a measured trace carries the fields that rebuild it
in ``meta``: ``m``, ``h``, ``gpus``, ``variant``).
"""

from __future__ import annotations

import copy
import functools
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["Trace", "TraceFileError", "save_traces", "load_traces", "BUNDLE_SUFFIX", "TRACES_FILE", "trace_key", "records_array", "TILE_COLUMNS", "EVENT_COLUMNS", "EVENT_KINDS", "OP_COLUMNS", "TIME_COLUMNS"]

TIME_COLUMNS = ("t_start", "t_acquire", "t_ready", "t_compute_end", "t_store_end", "t_signal")
TILE_COLUMNS = ("source", "gpu", "kernel", "layer", "cta", "sm", "tile_m", "tile_n") + TIME_COLUMNS + ("slot",)
EVENT_COLUMNS = ("kind", "pipe", "gpu", "dep", "slot", "tile", "t_ns")
EVENT_KINDS = ("zero", "push")
"""Event kinds; the engine records them by their index here."""
OP_COLUMNS = ("op", "name", "kind", "gpu", "dst", "nbytes", "layer", "t_begin", "t_end")

BUNDLE_SUFFIX = ".trace.npz"
"""File name ending of a trace bundle (:func:`save_traces`)."""
TRACES_FILE = "ctapipe_traces" + BUNDLE_SUFFIX
"""The trace bundle of a ``ctahw run`` results folder: every traced CTA-pipelined run, keyed by :func:`trace_key`."""


def trace_key(m: int, variant: str, run: int) -> str:
    """The bundle key of traced run ``run`` of ``variant`` at ``m`` (``m2048:cutlass_ctapipe_trace:run0``)."""
    return f"m{int(m)}:{variant}:run{int(run)}"


_BUNDLE_FORMAT = "ctasim-trace-bundle/1"
_TABLES = ("tiles", "events", "ops")

_INT_TILE = ("gpu", "kernel", "layer", "cta", "sm", "tile_m", "tile_n", "slot")


def records_array(records, width: int) -> np.ndarray:
    """A list of equal-length numeric tuples as a float64 array of shape (len, width)."""
    flat = np.fromiter(itertools.chain.from_iterable(records), dtype=np.float64, count=len(records) * width)
    return flat.reshape(-1, width)


@dataclass
class Trace:
    tiles: pd.DataFrame
    events: pd.DataFrame
    ops: pd.DataFrame
    meta: dict = field(default_factory=dict)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_records(cls, rows, events, ops, source: str, meta: dict | None = None, blocks=(),
                     event_blocks=()) -> "Trace":
        """Build from engine records: ``rows`` are tuples of TILE_COLUMNS without ``source``, ``events``
        tuples of EVENT_COLUMNS (kind as its index in EVENT_KINDS); ``blocks`` / ``event_blocks`` are
        arrays of such records made earlier (see :func:`records_array`)."""
        arr = np.concatenate([*blocks, records_array(rows, len(TILE_COLUMNS) - 1)])
        ev = np.concatenate([*event_blocks, records_array(events, len(EVENT_COLUMNS))])
        return cls.from_columns({c: arr[:, j] for j, c in enumerate(TILE_COLUMNS[1:])}, ev, ops, source, meta)

    @classmethod
    def from_columns(cls, columns: dict, events: np.ndarray, ops, source: str, meta: dict | None = None) -> "Trace":
        """Build from the tile table's columns (TILE_COLUMNS without ``source``: equal-length numeric arrays,
        cast to the schema's dtypes; the table holds copies), an array of EVENT_COLUMNS rows (see
        :meth:`from_records`) and the op rows."""
        n = len(columns[TILE_COLUMNS[1]])
        # One value repeated: taken from a one-row column of the dtype pandas gives it (far cheaper than
        # converting an object array of n copies).
        cols = {"source": pd.Series(np.array([source], dtype=object)).array.take(np.zeros(n, dtype=np.intp))}
        for c in TILE_COLUMNS[1:]:
            cols[c] = np.asarray(columns[c], dtype=np.int64 if c in _INT_TILE else np.float64)
        tiles = pd.DataFrame(cols, copy=True)
        opdf = pd.DataFrame(list(ops), columns=list(OP_COLUMNS))
        return cls(tiles, cls.events_frame(events), opdf, dict(meta or {}))

    @staticmethod
    def events_frame(arr: np.ndarray) -> pd.DataFrame:
        """The events table from rows ``(kind code, pipe, gpu, dep, slot, tile, t_ns)`` (float array, one row per
        event); codes index ``EVENT_KINDS``. Both executors build their events tables with it."""
        cols = {"kind": pd.Categorical.from_codes(arr[:, 0].astype(np.int64), categories=list(EVENT_KINDS))}
        for j, c in enumerate(EVENT_COLUMNS[1:-1], start=1):
            cols[c] = arr[:, j].astype(np.int64)
        cols["t_ns"] = arr[:, -1].copy()
        return pd.DataFrame(cols)

    def copy(self) -> "Trace":
        """An independent copy (tables and meta copied deeply)."""
        return Trace(self.tiles.copy(deep=True), self.events.copy(deep=True), self.ops.copy(deep=True),
                     copy.deepcopy(self.meta))

    # ------------------------------------------------------------------ derived figures
    @property
    def makespan_ns(self) -> float:
        """First operation begin (or 0) to the last end of any tile or operation."""
        ends = [self.ops["t_end"].max() if len(self.ops) else 0.0]
        if len(self.tiles):
            ends.append(self.tiles["t_store_end"].max())
        return float(max(ends))

    def busy_fraction(self, slots_per_gpu: dict[int, int]) -> dict[int, float]:
        """Per GPU: slot-time spent in tiles (acquire to compute end) / (slots x makespan)."""
        span = self.makespan_ns
        t = self.tiles
        busy = (t["t_compute_end"] - t["t_acquire"]).groupby(t["gpu"]).sum()
        return {g: float(busy.get(g, 0.0)) / (n * span) if span > 0 else 0.0 for g, n in slots_per_gpu.items()}

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path, fmt: str = "auto") -> list[Path]:
        """Write ``<path>.tiles.<ext>``, ``.events.<ext>``, ``.ops.<ext>`` and ``.meta.json``; return the paths.

        ``fmt``: ``parquet`` (needs pyarrow), ``csv``, or ``auto`` (parquet if pyarrow imports, else csv).
        """
        path = Path(path)
        if fmt == "auto":
            try:
                import pyarrow  # noqa: F401

                fmt = "parquet"
            except ImportError:
                fmt = "csv"
        if fmt not in ("parquet", "csv"):
            raise ValueError(f"unknown trace format {fmt!r} (parquet or csv)")
        path.parent.mkdir(parents=True, exist_ok=True)
        out = []
        for name in ("tiles", "events", "ops"):
            df = getattr(self, name)
            p = path.with_name(f"{path.name}.{name}.{fmt}")
            if fmt == "parquet":
                df.to_parquet(p, index=False)
            else:
                df.to_csv(p, index=False)
            out.append(p)
        p = path.with_name(f"{path.name}.meta.json")
        p.write_text(json.dumps(self.meta, indent=1, sort_keys=True, default=str))
        out.append(p)
        return out

    @classmethod
    def load(cls, path: str | Path) -> "Trace":
        path = Path(path)
        tables = {}
        for name in ("tiles", "events", "ops"):
            for ext, reader in (("parquet", pd.read_parquet), ("csv", pd.read_csv)):
                p = path.with_name(f"{path.name}.{name}.{ext}")
                if p.exists():
                    tables[name] = reader(p)
                    break
            else:
                raise FileNotFoundError(f"no {name} table for trace {path} (.{name}.parquet or .{name}.csv)")
        meta_p = path.with_name(f"{path.name}.meta.json")
        meta = json.loads(meta_p.read_text()) if meta_p.exists() else {}
        return cls(tables["tiles"], tables["events"], tables["ops"], meta)

    # ------------------------------------------------------------------ Chrome / Perfetto
    def to_chrome(self) -> dict:
        """Chrome trace-event JSON (open in ui.perfetto.dev or chrome://tracing).

        One process per GPU, one thread per SM slot (CTA); each tile is a complete event ('X') from
        acquire to compute end, with its store as a second event; non-kernel operations get a thread of
        their own; scoreboard completions and queue pushes are instant events.
        """
        ev = []
        us = 1e-3
        for g in sorted(set(self.tiles["gpu"].tolist()) | set(self.ops["gpu"].tolist())):
            ev.append({"ph": "M", "name": "process_name", "pid": int(g), "args": {"name": f"GPU {g}"}})
        t = self.tiles
        cols = [t[c].to_numpy() for c in ("gpu", "sm", "cta", "layer", "tile_m", "tile_n", "t_acquire",
                                          "t_compute_end", "t_store_end", "kernel")]
        for g, sm, cta, layer, tm, tn, ta, tc, ts, k in zip(*cols):
            ev.append({"ph": "X", "name": f"L{layer} ({tm},{tn})", "cat": "tile", "pid": int(g), "tid": int(sm),
                       "ts": ta * us, "dur": (tc - ta) * us, "args": {"kernel": int(k), "cta": int(cta)}})
            if ts > tc:
                ev.append({"ph": "X", "name": "store", "cat": "store", "pid": int(g), "tid": int(sm),
                           "ts": tc * us, "dur": (ts - tc) * us})
        for row in self.ops.itertuples(index=False):
            if row.kind == "kernel":
                continue
            ev.append({"ph": "X", "name": row.name, "cat": row.kind, "pid": int(row.gpu), "tid": 100000,
                       "ts": row.t_begin * us, "dur": (row.t_end - row.t_begin) * us})
        for row in self.events.itertuples(index=False):
            if row.kind in ("zero", "push"):
                ev.append({"ph": "i", "s": "t", "name": f"{row.kind} dep {row.dep}", "cat": row.kind,
                           "pid": int(row.gpu), "tid": 100001, "ts": row.t_ns * us})
        return {"traceEvents": ev, "displayTimeUnit": "ns", "otherData": {k: str(v) for k, v in self.meta.items()}}

    def write_chrome(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_chrome()))
        return path


class TraceFileError(ValueError):
    """A trace file that is missing, not a trace bundle, or damaged; the message names the file."""


def _column_array(col: pd.Series) -> np.ndarray:
    if pd.api.types.is_numeric_dtype(col.dtype) and not isinstance(col.dtype, pd.CategoricalDtype):
        return col.to_numpy()
    return col.astype(str).to_numpy(dtype=str)


def save_traces(traces: "dict[str, Trace]", path: str | Path) -> Path:
    """Write named traces to one compressed ``.npz`` (a trace bundle); return its path.

    Keys are names without ``/`` (the measured ctapipe traces use ``m<M>:<variant>:run<i>``).
    Every table column is one array (text columns as unicode arrays); ``meta`` is JSON. The file is written
    under a temporary name and renamed, so a failed write leaves nothing behind.
    """
    path = Path(path)
    arrays: dict[str, np.ndarray] = {"__format__": np.array(_BUNDLE_FORMAT),
                                     "__keys__": np.array(json.dumps(list(traces)))}
    for key, tr in traces.items():
        if "/" in key or not key:
            raise ValueError(f"trace bundle key {key!r}: must be non-empty and contain no '/'")
        for name in _TABLES:
            df = getattr(tr, name)
            arrays[f"{key}/{name}/__columns__"] = np.array(json.dumps(list(map(str, df.columns))))
            for c in df.columns:
                arrays[f"{key}/{name}/{c}"] = _column_array(df[c])
        arrays[f"{key}/meta"] = np.array(json.dumps(tr.meta, sort_keys=True, default=str))
    from ctasim.results import staged_file

    with staged_file(path) as tmp:
        np.savez_compressed(tmp, **arrays)
    return path


def load_traces(path: str | Path) -> "dict[str, Trace]":
    """The traces of a bundle written by :func:`save_traces`, by key, in the order they were saved: each call's own
    copies (the last :data:`BUNDLE_CACHE` bundles read are kept, parsed, by path, size and modification time, so a
    bundle read again is copied, not decompressed and parsed again).

    Raises :class:`TraceFileError` (one line naming the file) for a missing, truncated or foreign file.
    """
    path = Path(path)
    if not path.is_file():
        raise TraceFileError(f"{path}: no such trace file")
    st, resolved = path.stat(), str(path.resolve())
    try:
        traces = _read_bundle(resolved, st.st_size, st.st_mtime_ns)
    except _UnreadableBundle as e:  # named as the caller named it, not by its resolved path
        raise TraceFileError(f"{path}: {str(e).replace(resolved, str(path))}") from None
    return {key: tr.copy() for key, tr in traces.items()}


class _UnreadableBundle(ValueError):
    """Why :func:`_read_bundle` could not read a bundle (:func:`load_traces` names the file)."""


BUNDLE_CACHE = 16
"""Parsed trace bundles kept by :func:`load_traces` (the committed analyses read the same bundles again and again, some
in two passes over up to 15 bundles, which 8 kept missed every time; a committed bundle parses to 1-18 MB)."""


@functools.lru_cache(maxsize=BUNDLE_CACHE)
def _read_bundle(path: str, size: int, mtime_ns: int) -> "dict[str, Trace]":
    """:func:`load_traces`'s parse of the bundle at ``path`` (``size`` and ``mtime_ns`` key the cache: a rewritten
    file is read again); callers take copies."""
    import zipfile

    try:
        with np.load(path, allow_pickle=False) as z:
            files = set(z.files)
            if "__format__" not in files or str(z["__format__"]) != _BUNDLE_FORMAT:
                raise _UnreadableBundle(f"not a trace bundle ({_BUNDLE_FORMAT})")
            out = {}
            for key in json.loads(str(z["__keys__"])):
                tables = {}
                for name in _TABLES:
                    cols = json.loads(str(z[f"{key}/{name}/__columns__"]))
                    tables[name] = pd.DataFrame({c: z[f"{key}/{name}/{c}"] for c in cols}, columns=cols)
                ev = tables["events"]
                if "kind" in ev.columns:
                    ev["kind"] = pd.Categorical(ev["kind"].astype(str), categories=list(EVENT_KINDS))
                out[key] = Trace(tables["tiles"], ev, tables["ops"], json.loads(str(z[f"{key}/meta"])))
            return out
    except _UnreadableBundle:
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, json.JSONDecodeError) as e:
        raise _UnreadableBundle(f"not a readable trace bundle ({type(e).__name__}: {e})") from None
