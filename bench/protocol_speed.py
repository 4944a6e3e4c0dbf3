"""Protocol model search speed: distinct schedules of the correct protocol explored, and per second.

    python bench/protocol_speed.py [--walks 10400] [--processes N] [--out bench/results/protocol_speed.json]

Runs the random-walk search that every CI run uses (ctasim.protocol.walk.search_parallel over
ctasim.protocol.walk.SPACES, seeds from 0) with 1 process and with ``--processes`` (default: all cores), and
prints walks, distinct schedules, scheduler decisions, wall seconds and distinct schedules per second, with the
provenance of the run (commit, machine, Python).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's ctasim, not an installed one

from provenance import provenance  # noqa: E402

from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.protocol.walk import SPACES, search_parallel  # noqa: E402


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/protocol_speed.py", description=__doc__.splitlines()[0])
    ap.add_argument("--walks", type=int, default=10_400, help="walks of the correct protocol (a CI run made 10,400 until 2026-12-04, 4,160 since)")
    ap.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="worker processes")
    ap.add_argument("--out", type=Path, help="write the rows and the provenance as JSON here")
    args = parse_outputs(ap, argv, files=("--out",))
    rows = []
    for procs in sorted({1, max(1, args.processes)}):
        st = search_parallel("correct", SPACES, args.walks, processes=procs)
        row = dict(processes=procs, walks=st.walks, distinct_schedules=st.distinct, decisions=st.decisions,
                   violations=st.violations, seconds=round(st.seconds, 2),
                   schedules_per_second=round(st.per_second, 1))
        rows.append(row)
        print(f"{procs} process(es): {st.walks} walks, {st.distinct} distinct schedules, {st.decisions} decisions, "
              f"{st.violations} violations, {st.seconds:.1f} s, {st.per_second:.0f} distinct schedules/s")
    prov = provenance(" ".join(["python bench/protocol_speed.py", *(argv if argv is not None else sys.argv[1:])]))
    print(json.dumps(prov))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(dict(provenance=prov, rows=rows), indent=1) + "\n")
    return 0 if all(r["violations"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
