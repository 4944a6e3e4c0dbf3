"""Provenance of a device run: date, machine, GPU, driver, CUDA, software versions and the project commit.

The commit comes from ``git`` where the working tree is a checkout, else from ``$CTAHW_COMMIT`` (the device
machine gets the working tree without ``.git``; the device script is started with the commit in that variable).
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
from pathlib import Path

__all__ = ["collect", "git_commit"]

_ROOT = Path(__file__).resolve().parent.parent


def git_commit() -> str:
    env = os.environ.get("CTAHW_COMMIT")
    if env:
        return env
    try:
        out = subprocess.run(["git", "-C", str(_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                             check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(_ROOT), "status", "--porcelain", "--", "ctahw"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def collect(gpu: bool = True) -> dict[str, str]:
    """Everything that identifies a run; GPU fields only where CuPy and a GPU are there."""
    p = {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d"),
        "time_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": platform.node(),
        "python": platform.python_version(),
        "commit": git_commit(),
    }
    if not gpu:
        return p
    try:
        import cupy as cp  # noqa: PLC0415

        rt = cp.cuda.runtime
        n = rt.getDeviceCount()
        names = []
        for i in range(n):
            nm = rt.getDeviceProperties(i)["name"]
            names.append(nm.decode() if isinstance(nm, bytes) else str(nm))
        dv, rv = rt.driverGetVersion(), rt.runtimeGetVersion()
        p.update({"gpus": str(n), "gpu": ", ".join(sorted(set(names))),
                  "cuda_driver_api": f"{dv // 1000}.{dv % 1000 // 10}", "cuda_runtime": f"{rv // 1000}.{rv % 1000 // 10}",
                  "cupy": cp.__version__})
    except Exception as e:  # no cupy or no GPU: provenance says so rather than failing the run
        p["gpu"] = f"unavailable ({type(e).__name__}: {e})"
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        if smi.returncode == 0 and smi.stdout.strip():
            p["driver"] = smi.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    p["machine"] = f"{p.get('gpus', '?')} x {p.get('gpu', '?')}, driver {p.get('driver', '?')}, CUDA {p.get('cuda_runtime', '?')}"
    return p
