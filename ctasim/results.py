"""The result schema both executors write: one row per (case, strategy, variant) of an experiment spec.

``ctasim predict`` writes predictions in it, ``ctahw run EXPERIMENT`` writes measurements in it, and
``ctasim compare`` joins the two on :data:`KEY`.  A row says what ran (``case``, ``strategy`` as labelled in
the spec, ``variant``: e.g. ``chunks=8`` for one chunk count of micro-batching, '' otherwise), whether it ran
(``status``: ``ok``, ``skipped`` with its ``reason``, or ``failed`` with its error) and how long it took
(``makespan_ms``: the start-to-end time of the measurement harness, or its prediction).  ``source`` is
``model`` or ``naive`` for predictions and ``hw`` for measurements.

Left out: per-kernel breakdowns and per-CTA traces (those are separate files beside the table).
"""

from __future__ import annotations

import math
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pandas as pd

__all__ = ["COLUMNS", "KEY", "STATUSES", "ResultsError", "read", "write", "best_of", "staged_folder", "staged_file"]

COLUMNS = ("experiment", "case", "strategy", "kind", "variant", "gpus", "m", "layers", "source", "status", "reason",
           "makespan_ms", "rel_err")
"""Columns every results table has, in this order (more may follow: breakdowns, provenance)."""

KEY = ("experiment", "case", "strategy", "variant")
STATUSES = ("ok", "skipped", "failed")


class ResultsError(ValueError):
    """A results table is missing, unreadable or not in the schema; the message names the file and problem."""


def write(df: pd.DataFrame, path: str | Path) -> Path:
    """Write ``df`` (checked against the schema) to ``path`` (CSV) atomically: a temporary file renamed."""
    _check(df, str(path))
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    df.to_csv(tmp, index=False)
    tmp.replace(path)
    return path


@contextmanager
def staged_file(path: Path) -> Iterator[Path]:
    """A file written whole or not at all: yields a temporary sibling with the same suffix
    (``.<stem>.tmp<suffix>``, so writers that key on the suffix still work), renamed to ``path`` on success and
    removed on an exception."""
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    try:
        yield tmp
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def staged_folder(out: Path, merge: bool = False) -> Iterator[Path]:
    """A folder written whole or not at all: yields a temporary sibling (``.<name>.tmp``) to write into; on success
    it replaces ``out`` (``merge``: its files replace those of the same name in an existing ``out``, the others
    stay), on an exception it is removed and ``out`` is left as it was."""
    tmp = out.with_name(f".{out.name}.tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    made = tmp.parent  # the outermost parent folder this call creates (removed again on failure)
    while not made.parent.exists() and made.parent != made:
        made = made.parent
    made = None if made.exists() else made
    tmp.mkdir(parents=True)
    try:
        yield tmp
        if out.exists() and merge:
            for f in tmp.iterdir():
                target = out / f.name
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)  # a folder of the same name is replaced whole, like a file
                f.replace(target)
            tmp.rmdir()
            return
        if out.exists():
            shutil.rmtree(out)
        tmp.replace(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if made is not None and not out.exists():
            shutil.rmtree(made, ignore_errors=True)
        raise


def read(path: str | Path) -> pd.DataFrame:
    """A results table; :class:`ResultsError` (one line) if the file is missing, not CSV or not in the schema."""
    path = Path(path)
    if not path.is_file():
        raise ResultsError(f"{path}: no such results file")
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise ResultsError(f"{path}: not a results table (not text)") from None
    import csv  # noqa: PLC0415
    import io  # noqa: PLC0415

    rows = list(csv.reader(io.StringIO(text)))
    if not text.endswith("\n") or any(len(r) != len(rows[0]) for r in rows[1:] if r):
        raise ResultsError(f"{path}: truncated (a row with fewer fields than the header, or no final newline)")
    try:
        df = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise ResultsError(f"{path}: not a results table ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None
    _check(df, str(path))
    for c in ("variant", "reason"):
        df[c] = df[c].astype(object).where(df[c].notna(), "").astype(str)
    return df


def _check(df: pd.DataFrame, where: str) -> None:
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise ResultsError(f"{where}: not a results table (missing columns: {', '.join(missing)})")
    bad = sorted(set(df["status"].astype(str)) - set(STATUSES))
    if bad:
        raise ResultsError(f"{where}: unknown status {bad[0]!r} (known: {', '.join(STATUSES)})")
    ok = df[df["status"] == "ok"]
    ms = pd.to_numeric(ok["makespan_ms"], errors="coerce")
    if ms.isna().any() or not all(math.isfinite(v) and v > 0 for v in ms):
        raise ResultsError(f"{where}: an 'ok' row without a positive makespan_ms")


def best_of(df: pd.DataFrame) -> pd.DataFrame:
    """The fastest ``ok`` row of each (experiment, case, strategy, source): micro-batching's best chunk count."""
    ok = df[df["status"] == "ok"].copy()
    ok["makespan_ms"] = ok["makespan_ms"].astype(float)
    idx = ok.groupby(["experiment", "case", "strategy", "source"], sort=False)["makespan_ms"].idxmin()
    return ok.loc[idx.to_numpy()].reset_index(drop=True)
