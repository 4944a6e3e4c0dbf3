"""Command-line pieces shared by ``ctasim``, ``ctasim validate`` and ``ctahw``: a parser whose usage errors are one
line, and the check that an output folder can be written before anything runs.

Left out: each command's own options (``ctasim.cli``, ``ctasim.validation.pipeline``, ``ctahw.cli``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ctasim.spec import SpecError

__all__ = ["OneLineParser", "writable_folder"]


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
    parent = p if p.exists() else p.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise SpecError(flag, str(p), f"{parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SpecError(flag, str(p), f"{parent} is not writable")
    return p
