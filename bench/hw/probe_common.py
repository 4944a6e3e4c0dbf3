"""What the device scripts of bench/hw share around their measurement: a GPU check that exits 2 with the reason in
one line (no CuPy, no GPU, not sm_90), one JSON line per point as it is measured, and one JSON file of all points
with provenance.

Imported by ``clock_probe.py``, ``persistent_tile_cv.py``, ``copy_wait_probe.py``, ``executor_overhead.py`` and
``l2_survival_probe.py`` (run as ``python bench/hw/<script>.py``, which puts this folder on ``sys.path``); the other
scripts make the same GPU check themselves, so that one carried alone into a device tree (``device_tree.sh --with``)
still runs. Left out: each script's own options and output checks (``ctasim.cliargs``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable


def no_gpus(name: str, n: int = 1) -> int | None:
    """None when ``n`` usable GPUs are here, else 2 after printing why (``name``: the script, for the message):
    ``ctahw.device.no_gpus``."""
    from ctahw.device import no_gpus as check

    return check(name, n)


def sweep_ms(name: str, out: str, ms: Iterable[int], measure: Callable[[int], dict], gpus: int = 1) -> int:
    """``measure(m)`` for each M (printed as it comes), then ``{"points": [...], "provenance": ...}`` into ``out``
    (its folder made if new); no ``gpus`` usable GPUs is one line and exit 2 (the callers' ``--ms`` is checked as
    their arguments are parsed: ``ctasim.cliargs.positive_ints``)."""
    rc = no_gpus(name, gpus)
    if rc is not None:
        return rc
    from ctahw.provenance import collect

    points = []
    for m in ms:
        p = measure(m)
        print(json.dumps(p), flush=True)
        points.append(p)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w") as f:
        json.dump({"points": points, "provenance": collect()}, f, indent=1, default=str)
    return 0
