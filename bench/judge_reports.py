"""What the registered plans' judges share: reading a ``ctasim compare`` report (one line of refusal for a missing,
foreign or unregistered one), writing a claim row, and writing the claims and tables.

Used by ``bench/plan38_judge.py``, ``bench/plan40_judge.py`` and ``bench/plan42_judge.py``; not a script.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd


COLUMNS = ("experiment", "case", "strategy", "source", "measured_ms", "predicted_ms", "error", "registered")
"""The columns of ``accuracy.csv`` the judges read."""


def read_report(folder: Path, experiment: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(``accuracy.csv``: every judged row, ``per-cta.csv``: the traced runs' per-CTA errors, empty where there is
    none) of a ``ctasim compare`` report of ``experiment``; ValueError (one line) when the accuracy table is missing,
    of another experiment, or holds a row not labelled registered."""
    path = Path(folder) / "accuracy.csv"
    if not path.is_file():
        raise ValueError(f"{path}: no such file (run ctasim compare bench/predictions/{experiment} ... first)")
    acc = pd.read_csv(path, dtype={"variant": str}).fillna({"variant": ""})
    missing = sorted(set(COLUMNS) - set(acc.columns))
    if missing:
        raise ValueError(f"{path}: no column {', '.join(missing)} (not ctasim compare's accuracy table)")
    if acc["error"].isna().any() or acc["measured_ms"].isna().any():
        raise ValueError(f"{path}: a row without its error or measured time")
    if set(acc["experiment"]) != {experiment}:
        raise ValueError(f"{path}: holds {sorted(set(acc['experiment']))}, not {experiment}")
    if not acc["registered"].astype(bool).all():
        raise ValueError(f"{path}: rows not labelled registered (the measurement came before the predictions?)")
    per = Path(folder) / "per-cta.csv"
    return acc, (pd.read_csv(per) if per.is_file() else pd.DataFrame())


def claim(rows: list, name: str, predictor: str, value: float, threshold: float, met: bool) -> None:
    """Append one claim's row (claim, predictor, value, threshold, met) to ``rows``."""
    rows.append({"claim": name, "predictor": predictor, "value": value, "threshold": threshold, "met": bool(met)})


def write_judgement(out: Path, claims: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> None:
    """Write ``claims.csv`` and each table (file name -> frame) into ``out`` whole or not at all (a staged folder
    merged into ``out``, which may hold the reports), and print the claims."""
    from ctasim.results import staged_folder  # noqa: PLC0415

    with staged_folder(Path(out), merge=True) as tmp:
        for name, table in tables.items():
            table.to_csv(tmp / name, index=False, float_format="%.6g")
        claims.to_csv(tmp / "claims.csv", index=False, float_format="%.6g")
    with pd.option_context("display.width", 200, "display.max_colwidth", 100):
        print(claims.to_string(index=False))
