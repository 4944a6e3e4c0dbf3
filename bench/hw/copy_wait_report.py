"""The harness's cross-GPU wait costs from a ``copy_wait_probe.py`` result, beside the values ``ctasim.validation.baselines`` fits.

    PYTHONPATH=. python bench/hw/copy_wait_report.py RESULT.json [RESULT.json ...] [--profile h200-x2-calibrated]

From the probe's runs (sleep kernels of k us, peer copies of N bytes, the ``Timed`` harness of ``ctahw``), with the
same definitions as :func:`ctasim.validation.baselines.fit`: ``run_ns`` = idle of the 1-kernel run, ``gap_ns`` = idle(2 kernels)
- idle(1 kernel), ``copy_ns`` = copy event time - N / ``copy_engine_gbps`` - ``link_latency_ns``, k = GPU 1's
kernel event time.  Micro-batching with c chunks is GPU-1 bound (each chunk's kernel is longer than its copy), so
the harness model of ``ctasim.validation.baselines.Harness`` gives

    makespan(c) = run + 2k + copy_ns + N/bw + latency + 2 event_wait + hop + (c - 1)(k + gap + wait)

``wait_ns`` = the least-squares slope over c >= 2 minus k and gap; ``hop_ns`` from that line's intercept, and
from c = 1 alone. A RESULT that cannot be read or is not a probe result, or an unknown ``--profile``, is one line and
exit 2 before anything is printed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy

import numpy as np  # noqa: E402


def analyse(res: dict, hw) -> dict:
    rows = {(r["experiment"], r["chunks"]): r for r in res["rows"]}
    nbytes = res["args"]["mib"] << 20
    g1, s2 = rows[("gemm", 0)], rows[("sequential", 0)]
    run = (g1["median_ms"] - g1["compute_ms_gpu0"]) * 1e6
    gap = (s2["median_ms"] - s2["compute_ms_gpu0"]) * 1e6 - run
    mb = sorted((c, r) for (e, c), r in rows.items() if e == "microbatch")
    k = float(np.median([r["compute_ms_gpu1"] * 1e6 / c for c, r in mb]))
    copy_ns = float(np.median([r["copy_ms"] * 1e6 / c for c, r in mb])) - nbytes / hw.copy_engine_gbps - hw.link_latency_ns
    fixed = run + 2 * k + copy_ns + nbytes / hw.copy_engine_gbps + hw.link_latency_ns + 2 * hw.event_wait_ns
    cs = np.array([c for c, _ in mb if c >= 2], float)
    ys = np.array([r["median_ms"] * 1e6 for c, r in mb if c >= 2])
    slope, icept = np.polyfit(cs, ys, 1)
    wait = slope - k - gap
    hop_line = icept + slope - fixed  # the line at c = 1
    one = dict(mb).get(1)
    hop_c1 = one["median_ms"] * 1e6 - fixed if one else float("nan")
    return {"kernel_us": res["args"]["kernel_us"], "mib": res["args"]["mib"], "run_ns": run, "gap_ns": gap,
            "k_ns": k, "copy_ns": copy_ns, "per_chunk_ns": slope, "wait_ns": wait, "hop_ns_line": hop_line,
            "hop_ns_c1": hop_c1}


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser
    from ctasim.spec import SpecError, load_hardware

    ap = OneLineParser(prog="python bench/hw/copy_wait_report.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--profile", default="h200-x2-calibrated")
    args = ap.parse_args(argv)
    try:
        hw = load_hardware(args.profile)
    except SpecError as e:
        ap.error(f"--profile: {e}")
    found = []
    for path in args.results:  # every result read before anything is printed
        try:
            with open(path) as fh:
                found.append(analyse(json.load(fh), hw))
        except OSError as e:
            ap.error(f"{path}: {e.strerror or e}")
        except (ValueError, KeyError, TypeError) as e:
            ap.error(f"{path}: not a copy_wait_probe.py result ({type(e).__name__}: {e})")
    cols = ["kernel_us", "mib", "run_ns", "gap_ns", "k_ns", "copy_ns", "per_chunk_ns", "wait_ns", "hop_ns_line", "hop_ns_c1"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for a in found:
        print("| " + " | ".join(f"{a[c]:.0f}" if isinstance(a[c], float) else str(a[c]) for c in cols) + " |")
    print(f"\n(event_wait_ns {hw.event_wait_ns:g}, copy_engine_gbps {hw.copy_engine_gbps:g}, link_latency_ns "
          f"{hw.link_latency_ns:g} from {args.profile})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
