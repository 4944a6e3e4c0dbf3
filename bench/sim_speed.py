"""Simulator speed: CTAs per second, the paper's largest case, linear scaling to 1M CTAs, peak memory.

    python bench/sim_speed.py [--out bench/results/sim_speed.csv] [--reps 5] [--baseline REV] [--rounds 3]

Each point runs in a fresh subprocess pinned to one CPU core (``os.sched_setaffinity``; the core where bare
SimPy runs fastest at the start, since one vCPU of a shared VM can be much slower than another), so that peak
memory (``ru_maxrss``, the whole process) belongs to that point alone.  Times: ``simulate()`` only (the
SimPy event loop plus building the trace tables), median of ``--reps`` runs; CPU time and wall time are
both recorded.  Invariant checks are timed separately (``check_s``); they are not part of the engine.
Cases are CTA-pipelined chains (every tile goes through the per-tile event path; no closed-form shortcut):
the ctapipe plan on h200-x8 (switch, fcfs links) from 1K to 1M CTAs, and at 16K CTAs the same on
h200-x2-calibrated (fair link sharing, tile_cv) and the chain kernel (one GPU); a 4-layer ring on 2 GPUs (one chain kernel per GPU) at 16K CTAs;
the chain kernel at 16K CTAs on h200-x1-calibrated (the one-H200 profile: L2 traffic, drift and ticket law priced).
``--baseline REV``: the same points also run the engine of git revision ``REV`` (its ``ctasim`` and ``specs``,
extracted with ``git archive``; or ``--baseline-path`` to such a tree), interleaved round by round with this
checkout's (``--rounds``); each engine's time is the median over rounds of each round's median, and
``speedup`` is the baseline's over this checkout's, from the same run.
Each point also measures, in the same process, the rate of bare SimPy timeouts (``simpy_floor``): the
cost of one CTA in units of that floor (``bare_timeouts_per_cta``) is a figure that a busy or slower
machine does not change.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

POINTS = [
    # (label, layers, M, hardware, ctapipe strategy fields): 128x256 tiles, N = 8192 -> 32 column tiles;
    # CTAs = layers * M/128 * 32
    ("paper-largest 8x8 layers", 8, 16384, "h200-x8", {}),
    ("1K", 2, 2048, "h200-x8", {}),
    ("4K", 2, 8192, "h200-x8", {}),
    ("16K", 2, 32768, "h200-x8", {}),
    ("64K", 2, 131072, "h200-x8", {}),
    ("256K", 2, 524288, "h200-x8", {}),
    ("1M", 2, 2097152, "h200-x8", {}),
    ("16K fair links", 2, 32768, "h200-x2-calibrated", {}),
    ("16K chain kernel", 2, 32768, "h200-x2-calibrated", {"gpus": 1}),
    ("16K ring", 4, 16384, "h200-x2-calibrated", {"gpus": 2}),
    ("16K chain kernel one-H200 profile", 2, 32768, "h200-x1-calibrated", {"gpus": 1}),
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
hw = load_hardware(sys.argv[5])
wl = Workload("chain", "bf16", (Layer(m, 8192, 8192, 128, 256),) * layers)
plan = build_plans(Strategy("ctapipe", **json.loads(sys.argv[6])), wl, hw, layers, "bench")[0]
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
import ctasim
print(json.dumps({"ctasim": ctasim.__file__, "ctas": n, "wall_s": statistics.median(wall), "cpu_s": statistics.median(cpu),
                  "check_s": check, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rss_before_mib": rss0 / 1024, "makespan_us": span / 1e3, "simpy_floor_events_per_cpu_s": simpy_floor}))
"""


PROBE = FLOOR + r"""
import os, sys
os.sched_setaffinity(0, {int(sys.argv[1])})
print(max(floor() for _ in range(3)))
"""


def tree_env(root: Path) -> dict:
    """The environment of a child that imports the ctasim of ``root``, not an installed copy."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(root)] + [p for p in [os.environ.get("PYTHONPATH")] if p])}


CHECKOUT = Path(__file__).resolve().parent.parent


def baseline_tree(rev: str, into: Path) -> Path:
    """``ctasim`` and ``specs`` of git revision ``rev`` of this checkout, extracted under ``into``."""
    archive = subprocess.run(["git", "-C", str(CHECKOUT), "archive", rev, "ctasim", "specs"], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def fastest_core() -> int:
    """The CPU on which bare SimPy runs fastest now: on a shared VM one vCPU can be much slower than another."""
    rates = {}
    for cpu in sorted(os.sched_getaffinity(0)):
        out = subprocess.run([sys.executable, "-c", PROBE, str(cpu)], capture_output=True, text=True, check=True)
        rates[cpu] = float(out.stdout.strip())
    return max(rates, key=rates.get)


def run_point(root: Path, layers: int, m: int, hw: str, fields: dict, reps: int, core: int) -> dict:
    res = subprocess.run([sys.executable, "-c", CHILD, str(layers), str(m), str(reps), str(core), hw,
                          json.dumps(fields)], capture_output=True, text=True, check=True, env=tree_env(root),
                         cwd=root)  # python -c puts the working directory first on sys.path
    r = json.loads(res.stdout.strip().splitlines()[-1])
    if not Path(r.pop("ctasim")).resolve().is_relative_to(root.resolve()):
        raise RuntimeError(f"the child imported a ctasim outside {root}")
    return r


def main(argv=None) -> int:
    import tempfile

    from provenance import provenance

    sys.path.insert(0, str(CHECKOUT))  # this checkout's ctasim, not an installed one
    from ctasim.cliargs import OneLineParser, parse_outputs

    ap = OneLineParser(prog="python bench/sim_speed.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "sim_speed.csv"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--max-ctas", type=int, default=2_000_000, help="skip points above this many CTAs")
    ap.add_argument("--only", default="", help="comma-separated labels of the points to run (default: all)")
    ap.add_argument("--baseline", default="", help="git revision whose engine runs beside this checkout's")
    ap.add_argument("--baseline-path", default="", help="a tree with a baseline's ctasim/ and specs/ (no git)")
    ap.add_argument("--rounds", type=int, default=0, help="interleaved rounds per point (default 3 with a baseline)")
    args = parse_outputs(ap, argv, files=("--out",))
    import pandas as pd

    tmp = tempfile.TemporaryDirectory(prefix="sim-speed-baseline-")
    engines = [("current", CHECKOUT)]
    if args.baseline:
        engines.append((f"baseline {args.baseline}", baseline_tree(args.baseline, Path(tmp.name))))
    elif args.baseline_path:
        engines.append((f"baseline {args.baseline_path}", Path(args.baseline_path).resolve()))
    rounds = args.rounds or (3 if len(engines) > 1 else 1)
    only = {x.strip() for x in args.only.split(",") if x.strip()}

    core = fastest_core()
    print(f"pinned to CPU {core} (the fastest core for bare SimPy timeouts here and now)", flush=True)
    rows = []
    for label, layers, m, hw, fields in POINTS:
        ctas = layers * (m // 128) * 32
        if ctas > args.max_ctas or (only and label not in only):
            continue
        reps = args.reps if ctas <= 300_000 else 1
        got = {name: [] for name, _ in engines}
        missing = set()  # a baseline engine that cannot run the point (it predates the strategy)
        for _ in range(rounds):  # interleaved: each round runs every engine once
            for name, root in engines:
                if name in missing:
                    continue
                try:
                    got[name].append(run_point(root, layers, m, hw, fields, reps, core))
                except subprocess.CalledProcessError as e:
                    if name == "current":
                        raise
                    missing.add(name)
                    last = (e.stderr or "").strip().splitlines()[-1:] or ["?"]
                    print(f"{label:>26} {name:>20}: cannot run this point ({last[0][:120]})", flush=True)
        base_cpu = None
        for name, _ in reversed(engines):  # the baseline first, so that the current row gets the ratio
            runs = got[name]
            if not runs:
                continue
            r = dict(runs[-1])
            for key in ("wall_s", "cpu_s", "check_s", "simpy_floor_events_per_cpu_s"):
                r[key] = statistics.median(x[key] for x in runs)
            r["peak_rss_mib"] = max(x["peak_rss_mib"] for x in runs)
            r.update(label=label, hardware=hw, strategy=json.dumps({"kind": "ctapipe", **fields}), engine=name,
                     layers=layers, m=m, reps=reps, rounds=rounds, cpu=core, ctas_per_cpu_s=r["ctas"] / r["cpu_s"],
                     ctas_per_wall_s=r["ctas"] / r["wall_s"],
                     cpu_s_rounds=";".join(f"{x['cpu_s']:.4f}" for x in runs))
            r["bare_timeouts_per_cta"] = r["simpy_floor_events_per_cpu_s"] / r["ctas_per_cpu_s"]
            r["speedup"] = base_cpu / r["cpu_s"] if base_cpu is not None else float("nan")
            if name != "current":
                base_cpu = r["cpu_s"]
            rows.append(r)
            print(f"{label:>26} {name:>20}: {r['ctas']:>9,} CTAs  cpu {r['cpu_s']:.3f} s  wall {r['wall_s']:.3f} s  "
                  f"{r['ctas_per_cpu_s']:>9,.0f} CTAs/cpu-s ({r['bare_timeouts_per_cta']:.1f} bare SimPy timeouts/CTA)  "
                  f"peak {r['peak_rss_mib']:.0f} MiB  check {r['check_s']:.3f} s"
                  + (f"  speed-up {r['speedup']:.2f}x" if r["speedup"] == r["speedup"] else ""), flush=True)
    tmp.cleanup()
    df = pd.DataFrame(rows)
    cols = ["label", "hardware", "strategy", "engine", "layers", "m", "ctas", "reps", "rounds", "cpu", "cpu_s",
            "wall_s", "ctas_per_cpu_s", "ctas_per_wall_s", "speedup", "cpu_s_rounds", "check_s", "peak_rss_mib",
            "rss_before_mib", "makespan_us", "simpy_floor_events_per_cpu_s", "bare_timeouts_per_cta"]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df[cols].round(4).to_csv(out, index=False)
    prov = provenance("python bench/sim_speed.py " + " ".join(sys.argv[1:] if argv is None else argv))
    prov["load_average"] = os.getloadavg()
    out.with_suffix(".provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
