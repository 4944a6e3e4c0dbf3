"""What the device probe scripts of bench/hw share around their measurement: a GPU check that exits 2 with the
reason, one JSON line per point as it is measured, and one JSON file of all points with provenance.

Imported by ``clock_probe.py``, ``persistent_tile_cv.py`` and ``copy_wait_probe.py`` (run as ``python bench/hw/<script>.py``, which puts
this folder on ``sys.path``)."""

from __future__ import annotations

import json
import sys
from typing import Callable, Iterable


def no_gpus(name: str, n: int = 1) -> int | None:
    """None when ``n`` usable GPUs are here, else 2 after printing why (``name``: the script, for the message)."""
    from ctahw.device import DeviceError, require_gpus

    try:
        require_gpus(n)
    except DeviceError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 2
    return None


def sweep_ms(name: str, out: str, ms: Iterable[int], measure: Callable[[int], dict], gpus: int = 1) -> int:
    """``measure(m)`` for each M (printed as it comes), then ``{"points": [...], "provenance": ...}`` into ``out``."""
    rc = no_gpus(name, gpus)
    if rc is not None:
        return rc
    from ctahw.provenance import collect

    points = []
    for m in ms:
        p = measure(int(m))
        print(json.dumps(p), flush=True)
        points.append(p)
    with open(out, "w") as f:
        json.dump({"points": points, "provenance": collect()}, f, indent=1, default=str)
    return 0
