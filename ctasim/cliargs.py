"""Command-line pieces shared by ``ctasim``, ``ctasim validate``, ``ctahw`` and the scripts under ``bench/``: a parser
whose usage errors are one line, and the checks that an output folder or file can be written before anything runs.

Left out: each command's own options (``ctasim.cli``, ``ctasim.validation.pipeline``, ``ctahw.cli``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Sequence

from ctasim.spec import SpecError

__all__ = ["OneLineParser", "parse_outputs", "positive_ints", "writable_file", "writable_folder"]


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (``prog: error: ...``) and exit 2, with no usage block."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        self.exit(2, f"{self.prog}: error: {message}\n")


def writable_folder(path: str | Path, flag: str = "--out") -> Path:
    """``path`` if a folder can be written there (an existing folder, or a new one whose nearest existing parent is
    a writable folder); else SpecError. Checked before anything is simulated."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise SpecError(flag, str(p), "exists and is not a folder")
    _writable_parent(p if p.exists() else p.parent, p, flag)
    return p


def _writable_parent(start: Path, p: Path, flag: str) -> None:
    """SpecError naming ``p`` unless the nearest existing folder at or above ``start`` is a writable folder."""
    parent = start
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise SpecError(flag, str(p), f"{parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SpecError(flag, str(p), f"{parent} is not writable")


def positive_ints(text: str) -> tuple[int, ...]:
    """An argparse ``type``: comma-separated positive integers (``"4096,16384"``); anything else is a usage error,
    reported as the arguments are parsed (``argument --ms: takes positive integers, comma-separated, got '...'``)."""
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"takes positive integers, comma-separated, got {text!r}")
    return values


def writable_file(path: str | Path, flag: str = "--out") -> Path:
    """``path`` if a file can be written there (not a folder; its folder an existing writable one or a new one that
    :func:`writable_folder` allows); else SpecError naming ``path``."""
    p = Path(path)
    if p.is_dir():
        raise SpecError(flag, str(p), "is a folder, not a file")
    _writable_parent(p.parent, p, flag)
    return p


def parse_outputs(ap: argparse.ArgumentParser, argv: Sequence[str] | None, *, folders: Sequence[str] = (),
                  files: Sequence[str] = ()) -> argparse.Namespace:
    """``ap.parse_args(argv)``, then every output option checked before anything runs: each flag of ``folders``
    (``"--out"``) by :func:`writable_folder`, each of ``files`` by :func:`writable_file`; one left unset (None) is
    skipped. One that cannot be written is a usage error: one line (``prog: error: --out: PATH: why``) and exit 2,
    through ``ap.error``."""
    args = ap.parse_args(argv)
    try:
        for flags, check in ((folders, writable_folder), (files, writable_file)):
            for flag in flags:
                value = getattr(args, flag.lstrip("-").replace("-", "_"))
                if value is not None:
                    check(value, flag)
    except SpecError as e:
        ap.error(str(e))
    return args
