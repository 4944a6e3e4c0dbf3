"""A kernel's hardware counters through Nsight Compute (``ncu``): the bytes it moves to and from DRAM, its L2 reads
and hits, its duration.

What it measures
    ``ncu`` replays each profiled launch (one pass per group of counters), restoring the device memory the launch
    writes before each pass and flushing the caches before it (``--cache-control all``, ncu's default): every pass
    starts with a cold L2, as :mod:`ctasim.l2` assumes a kernel does. The clocks are left as the GPU sets them
    (``--clock-control none``; ncu's default would lock them to base). :data:`METRICS` is the one list of counters,
    each with the column it becomes; :func:`ncu_argv` profiles the launches whose demangled name matches
    :data:`CHAIN_KERNEL` (the chain kernel, ``ctahw.chain``) into a report, :func:`import_argv` reads the report back as
    ncu's raw CSV page in base units, :func:`parse_raw` turns that into one row per launch, and :func:`matched` joins
    the rows to the launch log a probe wrote (``bench/hw/hbm_bytes_probe.py``, the chain kernel; ``bench/hw/
    gemm_bytes_probe.py``, the plain CUTLASS GEMM, filtered by :data:`GEMM_KERNEL`: :data:`PROBES`), launch by launch,
    refusing a count, a kernel name or a grid that does not match.

What it leaves out
    Time inside the kernel (the counters are totals over a launch), anything a replay changes (a kernel that reads
    what an earlier launch left in L2: replays start cold), and the power and clock a kernel would reach in a timed
    loop (a launch under ncu runs alone, after the flush). ``gpu__time_duration`` under ncu is one cold run, not the
    harness's median.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["METRICS", "EXTRA_METRICS", "CHAIN_KERNEL", "GEMM_KERNEL", "PROBES", "UNITS", "probe_start", "ncu_argv", "import_argv", "available", "parse_raw",
           "matched", "profile", "main"]

METRICS = {
    "dram__bytes_read.sum": "dram_read_bytes",
    "dram__bytes_write.sum": "dram_write_bytes",
    "lts__t_sectors_op_read.sum": "l2_read_sectors",
    "lts__t_sectors_op_read_lookup_hit.sum": "l2_read_hit_sectors",
    "gpu__time_duration.sum": "duration_ns",
}
"""ncu metric -> the column :func:`parse_raw` gives it: DRAM bytes read and written, L2 sectors read (32 bytes each)
and those that hit, the launch's duration."""

EXTRA_METRICS = {
    "lts__t_sectors_srcunit_tex_op_read.sum": "l2_read_sectors_from_sm",
    "lts__t_sectors_srcunit_ltcfabric.sum": "l2_sectors_from_fabric",
}
"""Counters asked for where the GPU's ncu knows them (:func:`available`), left out otherwise: the L2 sectors read on
the SMs' requests, and those that came over the fabric between the L2's two partitions (a read that misses its near
partition is looked up again in the far one, so :data:`METRICS`' L2 reads may count it twice)."""

CHAIN_KERNEL = "regex:ChainTag"
"""ncu's kernel filter (``-k``, on the demangled name) for the chain kernel: its scheduler tag
(``ctahw::chain::ChainTag``) is in the template arguments of ``cutlass::device_kernel``."""

GEMM_KERNEL = "regex:GemmUniversal"
"""ncu's kernel filter for the project's plain CUTLASS GEMM (``ctahw.gemm.CutlassGemm``: ``device_kernel<
GemmUniversal<...>>``), in a process that launches no chain kernel (whose type is a GemmUniversal too) and takes its
fp32 references from cuBLAS (whose kernels are named otherwise)."""

UNITS = {"": 1.0, "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "B": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9,
         "sector": 1.0, "nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9, "ns": 1.0, "us": 1e3,
         "ms": 1e6, "s": 1e9}
"""ncu's units, long and short -> the factor to the base unit (bytes, sectors, ns). ``--print-units base`` asks for
base units; the others are accepted in case a version ignores it. Any other unit is refused."""


def ncu_argv(report: Path, program: list[str], kernel: str = CHAIN_KERNEL, metrics=METRICS) -> list[str]:
    """The command that runs ``program`` under ncu, profiling the launches matching ``kernel`` for ``metrics`` into
    ``report`` (``.ncu-rep`` added by ncu)."""
    if not program:
        raise ValueError("ncu_argv: no program to profile")
    return ["ncu", "--clock-control", "none", "--cache-control", "all", "--replay-mode", "kernel",
            "--kernel-name-base", "demangled", "-k", kernel, "--metrics", ",".join(metrics), "-f", "-o", str(report),
            *program]


def import_argv(report: Path) -> list[str]:
    """The command that prints ``report`` as ncu's raw CSV page in base units (:func:`parse_raw` reads it)."""
    return ["ncu", "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]


def _number(text: str, unit: str, metric: str) -> float:
    if unit not in UNITS:
        raise ValueError(f"ncu reports {metric} in unit {unit!r}, not one of {sorted(UNITS)}")
    t = text.replace(",", "").strip()
    try:
        return float(t) * UNITS[unit]
    except ValueError:
        raise ValueError(f"ncu reports {metric} as {text!r}, not a number") from None


def available(ncu: str = "ncu", wanted=EXTRA_METRICS) -> dict:
    """The metrics of ``wanted`` that ``ncu --query-metrics`` lists for the attached GPU (by base name, the part
    before ``.sum``); none where the query fails."""
    try:
        q = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if q.returncode != 0:
        return {}
    names = {line.split()[0] for line in q.stdout.splitlines() if line.strip()}
    return {m: short for m, short in wanted.items() if m.rsplit(".", 1)[0] in names}


def parse_raw(text: str, metrics=METRICS, optional=EXTRA_METRICS) -> pd.DataFrame:
    """ncu's raw CSV page (a header row starting ``"ID"``, a units row, a row per profiled launch; ncu's own
    ``==PROF==`` lines before it are skipped) as one row per launch: ``id``, ``kernel`` (the demangled name), ``grid``
    (the launch's CTAs, where the page has ``Grid Size``) and a column per metric (:data:`METRICS`' names, base units;
    those of ``optional`` the page holds too). A page without the header, without a metric of ``metrics``, with a
    short row or a value that is not a number (ncu's ``n/a``) is refused, naming what."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise ValueError("no ncu raw page in the text (no header row starting with \"ID\")")
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, body = rows[0], [r for r in rows[1:] if r]
    missing = [m for m in metrics if m not in header]
    if missing:
        raise ValueError(f"ncu's page lacks {', '.join(missing)}")
    asked = {**metrics, **{m: s for m, s in optional.items() if m in header}}
    units = {}
    if body and body[0][0] == "":  # the units row
        units = dict(zip(header, body[0]))
        body = body[1:]
    col = {name: header.index(name) for name in ("ID", "Kernel Name", *asked)}
    grid = header.index("Grid Size") if "Grid Size" in header else None
    out = []
    for r in body:
        if len(r) != len(header):
            raise ValueError(f"ncu's page has a row of {len(r)} fields under a header of {len(header)}")
        row = {"id": int(r[col["ID"]]), "kernel": r[col["Kernel Name"]]}
        if grid is not None:
            dims = [int(x) for x in r[grid].strip("() ").replace(" ", "").split(",") if x]
            row["grid"] = int(np.prod(dims)) if dims else -1
        for m, short in asked.items():
            row[short] = _number(r[col[m]], units.get(m, ""), m)
        out.append(row)
    cols = ["id", "kernel", *(["grid"] if grid is not None else []), *asked.values()]
    return pd.DataFrame(out, columns=cols)


def matched(launches: pd.DataFrame, counters: pd.DataFrame, kernel: str = CHAIN_KERNEL) -> pd.DataFrame:
    """The probe's launch log (one row per profiled launch, in launch order) beside the counters of the same launch
    (``counters`` by ``id``, ncu's launch order). Refused: counts that differ (a launch the filter missed, or an
    extra kernel it caught, would shift every row after it), a profiled kernel whose name lacks ``kernel``'s pattern,
    or a launch whose grid (where both name one) is not the one the probe logged."""
    if len(launches) != len(counters):
        raise ValueError(f"the probe logged {len(launches)} launches but ncu profiled {len(counters)}")
    c = counters.sort_values("id").reset_index(drop=True)
    pattern = kernel.split(":", 1)[1] if kernel.startswith("regex:") else kernel
    wrong = c[~c["kernel"].str.contains(pattern, regex=kernel.startswith("regex:"))]
    if len(wrong):
        raise ValueError(f"ncu profiled a kernel whose name lacks {pattern!r}: {wrong['kernel'].iloc[0][:80]}")
    log = launches.reset_index(drop=True)
    if "grid" in c and "grid" in log:
        off = log.index[log["grid"].to_numpy() != c["grid"].to_numpy()]
        if len(off):
            i = off[0]
            raise ValueError(f"launch {i}: the probe logged a grid of {log.at[i, 'grid']} CTAs, ncu {c.at[i, 'grid']}")
    return pd.concat([log, c.drop(columns=[x for x in ("grid",) if x in log])], axis=1)


def probe_start(name: str, argv, description: str, read_cases):
    """What a byte-counting probe of :data:`PROBES` does before its launches: its two arguments (``OUT`` checked
    writable, ``CASES``), its cases read by ``read_cases`` and one GPU checked. ``(args, cases)``, or 2 after one line
    on stderr (``name: why``) where any of them fails."""
    from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: PLC0415

    ap = OneLineParser(prog=f"python bench/hw/{name}.py", description=description)
    ap.add_argument("out", type=Path)
    ap.add_argument("cases", type=Path)
    args = parse_outputs(ap, argv, folders=("out",))
    try:
        cases = read_cases(args.cases)
    except (OSError, ValueError) as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 2
    from ctahw.device import no_gpus  # noqa: PLC0415

    if no_gpus(name, 1):
        return 2
    return args, cases


PROBES = {"chain": (Path(__file__).resolve().parent.parent / "bench" / "hw" / "hbm_bytes_probe.py", CHAIN_KERNEL),
          "gemm": (Path(__file__).resolve().parent.parent / "bench" / "hw" / "gemm_bytes_probe.py", GEMM_KERNEL)}
"""The probes :func:`profile` runs under ncu, by name: (the script, taking ``OUT CASES``; the kernel filter)."""
PROBE = PROBES["chain"][0]
OUTPUTS = ("launches.csv", "ncu-raw.csv", "counters.csv", "ncu.log")
"""What :func:`profile` writes into its folder (removed first: a failed rerun leaves none of an earlier run's)."""


def profile(out: Path, cases: Path, ncu: str = "ncu", probe: str = "chain") -> pd.DataFrame:
    """Run a probe of :data:`PROBES` (default the chain kernel's, ``bench/hw/hbm_bytes_probe.py OUT CASES``; ``gemm``:
    the plain CUTLASS GEMM's, ``bench/hw/gemm_bytes_probe.py``) under ncu, asking :data:`METRICS` and
    those of :data:`EXTRA_METRICS` the GPU's ncu knows, read the report back and write ``OUT/counters.csv``
    (:func:`matched`: the launch log beside each launch's counters); ncu's raw page is kept as ``OUT/ncu-raw.csv``,
    its log as ``OUT/ncu.log``. Raises RuntimeError naming the step that failed."""
    out.mkdir(parents=True, exist_ok=True)
    for name in OUTPUTS:
        (out / name).unlink(missing_ok=True)
    report = out / "report"
    script, kernel = PROBES[probe]
    metrics = {**METRICS, **available(ncu)}
    argv = ncu_argv(report, [sys.executable, str(script), str(out), str(cases)], kernel=kernel, metrics=metrics)
    argv[0] = ncu
    run = subprocess.run(argv, capture_output=True, text=True)
    (out / "ncu.log").write_text(run.stdout + run.stderr)
    if run.returncode != 0:
        raise RuntimeError(f"ncu around the probe exited {run.returncode} (see {out / 'ncu.log'})")
    raw = subprocess.run([ncu, *import_argv(report.with_suffix(".ncu-rep"))[1:]], capture_output=True, text=True)
    if raw.returncode != 0:
        raise RuntimeError(f"ncu --import exited {raw.returncode}: {raw.stderr.strip()[:200]}")
    (out / "ncu-raw.csv").write_text(raw.stdout)
    d = matched(pd.read_csv(out / "launches.csv"), parse_raw(raw.stdout), kernel=kernel)
    d.to_csv(out / "counters.csv", index=False)
    return d


def main(argv: list[str] | None = None) -> int:
    """``python -m ctahw.counters OUT CASES.csv [--probe chain|gemm]``: :func:`profile` (one GPU, ncu on the PATH). A
    cases file the probe cannot run or no ncu: one line, exit 2, nothing written."""
    from ctasim.cliargs import OneLineParser, parse_outputs

    ap = OneLineParser(prog="python -m ctahw.counters", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("cases", type=Path)
    ap.add_argument("--probe", choices=tuple(PROBES), default="chain")
    args = parse_outputs(ap, argv, folders=("out",))
    import importlib  # noqa: PLC0415

    script = PROBES[args.probe][0]
    sys.path.insert(0, str(script.parent))
    module = importlib.import_module(script.stem)  # bench/hw: the probe's own check of its cases
    try:
        module.read_cases(args.cases)
    except (OSError, ValueError) as e:
        print(f"ctahw.counters: {e}", file=sys.stderr)
        return 2
    if shutil.which("ncu") is None:
        print("ctahw.counters: no ncu on the PATH (Nsight Compute)", file=sys.stderr)
        return 2
    try:
        d = profile(args.out, args.cases, probe=args.probe)
    except (RuntimeError, ValueError, OSError) as e:
        print(f"ctahw.counters: {e}", file=sys.stderr)
        return 1
    print(d.drop(columns=["kernel"]).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
