"""Simulator speed: CTAs per second, the paper's largest case, linear scaling to 1M CTAs, peak memory.

    python bench/sim_speed.py [--out bench/results/sim_speed.csv] [--reps 5]

Each point runs in a fresh subprocess pinned to one CPU core (``os.sched_setaffinity``; the core where bare
SimPy runs fastest at the start, since one vCPU of a shared VM can be much slower than another), so that peak
memory (``ru_maxrss``, the whole process) belongs to that point alone.  Times: ``simulate()`` only (the
SimPy event loop plus building the trace tables), median of ``--reps`` runs; CPU time and wall time are
both recorded.  Invariant checks are timed separately (``check_s``); they are not part of the engine.
Cases are CTA-pipelined chains (every tile goes through per-tile SimPy events; no closed-form shortcut).
Each point also measures, in the same process, the rate of bare SimPy timeouts (``simpy_floor``): the
cost of one CTA in units of that floor (``bare_timeouts_per_cta``) is a figure that a busy or slower
machine does not change.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

POINTS = [
    # (label, layers, M): 128x256 tiles, N = 8192 -> 32 column tiles; CTAs = layers * M/128 * 32
    ("paper-largest 8x8 layers", 8, 16384),
    ("1K", 2, 2048),
    ("4K", 2, 8192),
    ("16K", 2, 32768),
    ("64K", 2, 131072),
    ("256K", 2, 524288),
    ("1M", 2, 2097152),
]

FLOOR = r"""
import time, simpy
def floor():  # bare SimPy: 8 processes x 4096 timeouts, the cheapest a per-tile event can be here and now
    env = simpy.Environment()
    def p(env):
        for _ in range(4096):
            yield env.timeout(1.0)
    for _ in range(8):
        env.process(p(env))
    c = time.process_time(); env.run(); return 32768 / (time.process_time() - c)
"""

CHILD = FLOOR + r"""
import json, os, resource, statistics, sys
os.sched_setaffinity(0, {int(sys.argv[4])})
from ctasim.engine import simulate
from ctasim.invariants import check_trace
from ctasim.spec import Layer, Strategy, Workload, load_hardware
from ctasim.strategies import build_plans
layers, m, reps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
hw = load_hardware("h200-x8")
wl = Workload("chain", "bf16", (Layer(m, 8192, 8192, 128, 256),) * layers)
plan = build_plans(Strategy("ctapipe"), wl, hw, layers, "bench")[0]
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
wall, cpu = [], []
for _ in range(reps):
    w0, c0 = time.perf_counter(), time.process_time()
    tr = simulate(plan, hw)
    wall.append(time.perf_counter() - w0); cpu.append(time.process_time() - c0)
    n = len(tr.tiles); span = tr.makespan_ns
    if _ < reps - 1:
        del tr
c0 = time.process_time(); check_trace(tr, plan); check = time.process_time() - c0
simpy_floor = statistics.median(floor() for _ in range(5))
print(json.dumps({"ctas": n, "wall_s": statistics.median(wall), "cpu_s": statistics.median(cpu),
                  "check_s": check, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rss_before_mib": rss0 / 1024, "makespan_us": span / 1e3, "simpy_floor_events_per_cpu_s": simpy_floor}))
"""


PROBE = FLOOR + r"""
import os, sys
os.sched_setaffinity(0, {int(sys.argv[1])})
print(max(floor() for _ in range(3)))
"""


CHECKOUT_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(__file__).resolve().parent.parent)] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
"""The children import this checkout's ctasim, not an installed copy."""


def fastest_core() -> int:
    """The CPU on which bare SimPy runs fastest now: on a shared VM one vCPU can be much slower than another."""
    rates = {}
    for cpu in sorted(os.sched_getaffinity(0)):
        out = subprocess.run([sys.executable, "-c", PROBE, str(cpu)], capture_output=True, text=True, check=True)
        rates[cpu] = float(out.stdout.strip())
    return max(rates, key=rates.get)


def main() -> int:
    from provenance import provenance

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "sim_speed.csv"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--max-ctas", type=int, default=2_000_000, help="skip points above this many CTAs")
    args = ap.parse_args()
    import pandas as pd

    core = fastest_core()
    print(f"pinned to CPU {core} (the fastest core for bare SimPy timeouts here and now)", flush=True)
    rows = []
    for label, layers, m in POINTS:
        ctas = layers * (m // 128) * 32
        if ctas > args.max_ctas:
            continue
        reps = args.reps if ctas <= 300_000 else 1
        res = subprocess.run([sys.executable, "-c", CHILD, str(layers), str(m), str(reps), str(core)],
                             capture_output=True, text=True, check=True, env=CHECKOUT_ENV)
        r = json.loads(res.stdout.strip().splitlines()[-1])
        r.update(label=label, layers=layers, m=m, reps=reps, cpu=core, ctas_per_cpu_s=r["ctas"] / r["cpu_s"],
                 ctas_per_wall_s=r["ctas"] / r["wall_s"])
        r["bare_timeouts_per_cta"] = r["simpy_floor_events_per_cpu_s"] / r["ctas_per_cpu_s"]
        rows.append(r)
        print(f"{label:>26}: {r['ctas']:>9,} CTAs  cpu {r['cpu_s']:.3f} s  wall {r['wall_s']:.3f} s  "
              f"{r['ctas_per_cpu_s']:>9,.0f} CTAs/cpu-s ({r['bare_timeouts_per_cta']:.1f} bare SimPy timeouts/CTA)  peak {r['peak_rss_mib']:.0f} MiB  check {r['check_s']:.3f} s",
              flush=True)
    df = pd.DataFrame(rows)
    cols = ["label", "layers", "m", "ctas", "reps", "cpu", "cpu_s", "wall_s", "ctas_per_cpu_s", "ctas_per_wall_s",
            "check_s", "peak_rss_mib", "rss_before_mib", "makespan_us", "simpy_floor_events_per_cpu_s",
            "bare_timeouts_per_cta"]
    out = Path(args.out)
    df[cols].round(4).to_csv(out, index=False)
    prov = provenance("python bench/sim_speed.py")
    prov["load_average"] = os.getloadavg()
    out.with_suffix(".provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
