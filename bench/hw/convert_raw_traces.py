"""Convert the raw stamp files of the CTA-pipelining runs before 2026-12-01 into ctasim trace bundles.

    python bench/hw/convert_raw_traces.py bench/results/hw/2026-11-29-ctapipe* [--check]

Each folder's ``ctapipe_traces.npz`` (raw ``%globaltimer`` stamp buffers, ``ctahw.pipelined.save_raw_traces``) is
parsed with the plan its run ran (``ctahw.pipelined.raw_to_bundle``) and written beside it as
``ctapipe_traces.trace.npz`` (``ctasim.trace.save_traces``), the file ``ctasim`` reads. Since 2026-12-02 only
``2026-11-29-ctapipe-run1`` keeps its raw file in the tree; the others are in git history
(``bench/results/hw/RAW-STAMPS.md`` says where and how to restore them). ``--check`` writes nothing and exits 1 if a
bundle is missing or differs from a fresh conversion (what ``tests/ctahw/test_ctahw_runner.py`` checks for run1). A
FOLDER that is not one (or, without ``--check``, cannot be written) is one line and exit 2 before anything is
converted.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy

RAW = "ctapipe_traces.npz"


def same(a, b) -> bool:
    """Two trace dicts with the same keys, metas and tables (NaN equal to NaN)."""
    if list(a) != list(b):
        return False
    for k in a:
        if a[k].meta != b[k].meta:
            return False
        for name in ("tiles", "events", "ops"):
            x, y = getattr(a[k], name), getattr(b[k], name)
            if list(x.columns) != list(y.columns) or len(x) != len(y):
                return False
            for c in x.columns:
                if x[c].astype(str).tolist() != y[c].astype(str).tolist():
                    return False
    return True


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, writable_folder
    from ctasim.spec import SpecError

    ap = OneLineParser(prog="python bench/hw/convert_raw_traces.py", description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a bundle is stale or missing")
    args = ap.parse_args(argv)
    for folder in args.folders:
        if not folder.is_dir():
            ap.error(f"{folder}: {'not a folder' if folder.exists() else 'no such folder'}")
        if not args.check:  # the bundle is written beside the raw file
            try:
                writable_folder(folder, "folders")
            except SpecError as e:
                ap.error(str(e))

    from ctahw.pipelined import raw_to_bundle
    from ctasim.trace import TraceFileError, load_traces, save_traces
    from ctasim.trace import TRACES_FILE
    bad = 0
    for folder in args.folders:
        raw = folder / RAW
        if not raw.is_file():
            print(f"{folder}: no {RAW} (restore it from git history: bench/results/hw/RAW-STAMPS.md)", file=sys.stderr)
            bad += 1
            continue
        fresh = raw_to_bundle(raw)
        if args.check:
            with tempfile.TemporaryDirectory() as d:  # compare through a file: what a reader sees
                fresh = load_traces(save_traces(fresh, Path(d) / TRACES_FILE))
            try:
                ok = same(load_traces(folder / TRACES_FILE), fresh)
            except TraceFileError as e:
                print(e, file=sys.stderr)
                ok = False
            print(f"{folder}: {'current' if ok else 'STALE'}")
            bad += not ok
        else:
            p = save_traces(fresh, folder / TRACES_FILE)
            print(f"{p}: {len(fresh)} traces, {p.stat().st_size / 1e6:.2f} MB")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
