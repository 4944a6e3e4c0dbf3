"""Provenance of a benchmark result: when, where, from which commit, by which command."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys


def provenance(command: str) -> dict:
    def git(*args):
        try:
            return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    import numpy
    import pandas
    import simpy

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "commit": git("rev-parse", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "simpy": simpy.__version__,
        "numpy": numpy.__version__,
        "pandas": pandas.__version__,
    }
