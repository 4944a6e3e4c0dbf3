"""``ctahw``: the hardware backend's command line.

    ctahw info                      toolchain, kernel cache and GPUs ("no GPU: ..." and exit 2 without one)
    ctahw build                     compile every kernel source into the cache (nvcc + nvidia-cutlass; no GPU)
    ctahw ptx-diff --base REV       each kernel library's PTX at REV against the working tree's (nvcc; no GPU):
                                    exit 0 where every one is the same, 1 where one differs
    ctahw calibrate [--base NAME]   measure this machine into specs/hardware/<base>-calibrated.toml (memory
                                    hierarchy included unless --no-memory); --from-json JSON writes it again from
                                    an earlier calibration's --json against NAME (no GPU)
    ctahw run EXPERIMENT            an experiment spec (a name or TOML path, as ``ctasim run`` takes), or the
                                    flag shorthand: all | gemm | remote_d | sequential | microbatch | tp | ctapipe

Every command that needs a GPU takes ``--dry-run``: it prints what it would run and exits 0 without one.
Expected failures (no GPU, no CuPy, no nvcc, a compile error) print one line and exit non-zero; no traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Sequence

__all__ = ["main", "parser"]

EXIT_NO_GPU = 2
EXIT_BUILD = 3
EXIT_FAILED = 4


def _experiment_names() -> tuple[str, ...]:
    """``all`` and every experiment of the flag shorthand (:data:`ctahw.sweep.EXPERIMENTS`)."""
    from ctahw.sweep import EXPERIMENTS  # noqa: PLC0415 - no cupy at import

    return ("all", *EXPERIMENTS)


def _ints(s: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in s.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {s!r}") from None


def _strs(s: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in s.split(",") if x.strip())


def _experiments(s: str) -> tuple[str, ...]:
    names = _strs(s)
    known = _experiment_names()
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown experiment(s) {bad or s!r}: choose from {', '.join(known)}")
    return names


def parser() -> argparse.ArgumentParser:
    from ctahw.baselines import SweepConfig  # noqa: PLC0415 - pure module (no cupy at import)

    from ctasim.cliargs import OneLineParser  # noqa: PLC0415 - a usage error is one line

    p = OneLineParser(prog="ctahw", description="CUTLASS kernels, baselines and calibration on real GPUs")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="toolchain, kernel cache and GPUs")
    b = sub.add_parser("build", help="compile every kernel source into the cache (no GPU needed)")
    b.add_argument("--only", type=_strs, default=(), help="library names (default: all)")
    b.add_argument("--jobs", type=int, default=1, help="libraries compiled at once (nvcc processes; default 1)")

    x = sub.add_parser("ptx-diff", help="each kernel library's PTX at a git revision against the working tree's "
                                        "(nvcc; no GPU): exit 0 where all are the same, 1 where one differs")
    x.add_argument("--base", required=True, help="the git revision to compare against (e.g. HEAD, main~3)")
    x.add_argument("--only", type=_strs, default=(), help="library names (default: all)")
    x.add_argument("--jobs", type=int, default=2, help="nvcc processes at once (default 2)")
    x.add_argument("--out", type=Path, default=None, help="folder for each differing library's <name>.diff")

    c = sub.add_parser("calibrate", help="measure this machine into a hardware profile")
    c.add_argument("--base", default="h200-x2", help="profile to copy unmeasured fields from (default h200-x2)")
    c.add_argument("--out", type=Path, default=None, help="profile path (default specs/hardware/<base>-calibrated.toml)")
    c.add_argument("--name", default=None, help="profile name (default <base>-calibrated)")
    c.add_argument("--json", type=Path, default=None, help="also write every measured figure here")
    c.add_argument("--reps", type=int, default=10, help="repetitions per measurement (median)")
    c.add_argument("--quick", action="store_true", help="smaller transfers and fewer ping-pong rounds; one timed run "
                                                        "per tile order in the memory hierarchy's probes")
    c.add_argument("--no-memory", action="store_true",
                   help="skip the memory hierarchy's probes (tile orders, per-tile traces; ~50 s): l2_bytes, "
                        "l2_hbm_exposed, local_signal_ns and the 128x256 l2_sm_tflops, cta_drift, drift_form, "
                        "cluster_m, ticket_spread stay copied from --base")
    c.add_argument("--no-percta", action="store_true",
                   help="skip the one-CTA-per-tile producer's per-tile traces (ctahw.percta; ~15 s), whose steps go "
                        "into calibration.json, the probe folder and the profile's header")
    c.add_argument("--no-fold", action="store_true",
                   help="skip the LayerNorm fold's probe (traced ring pairs of the chain kernel on GPU 0, ~10 s): "
                        "norm_stats_epilogue_ns_per_element and norm_fold_epilogue_ns_per_element stay copied from --base")
    c.add_argument("--probe-out", type=Path, default=None,
                   help="folder for the probes' raw files (tile_orders.csv, timing.csv, tiles-*.csv.gz, l2-tile.csv; "
                        "percta.csv, percta-runs.csv, percta-tiles-<M>-<variant>.csv.gz)")
    c.add_argument("--dry-run", action="store_true", help="print what would be measured; needs no GPU")
    c.add_argument("--from-json", type=Path, default=None, metavar="JSON",
                   help="measure nothing: write the profile from an earlier calibration's --json against --base, "
                        "the L2 constants fitted again under --base's l2_reuse_law (no GPU)")

    r = sub.add_parser("run", help="run an experiment spec (or the flag shorthand) on the GPUs")
    r.add_argument("experiment",
                   help=f"an experiment spec (name or TOML path, as ctasim run takes), or the flag shorthand: "
                        f"{', '.join(_experiment_names())}, several joined by commas (run in one process)")
    r.add_argument("--registration", type=Path, default=None,
                   help="spec runs: the ctasim predict folder this run answers (recorded by sha256)")
    defaults = SweepConfig()
    for f in dataclasses.fields(SweepConfig):
        if f.name == "experiments":
            continue
        if f.name == "rest_ms":  # its default differs between the shorthand (0) and spec runs (250)
            r.add_argument("--rest-ms", type=float, default=None,
                           help="host sleep before each timed run, GPUs idle (default: 250 for a spec, 0 for the "
                                "shorthand, as its committed runs)")
            continue
        flag = "--" + f.name.replace("_", "-")
        d = getattr(defaults, f.name)
        if isinstance(d, tuple):
            conv = _ints if all(isinstance(x, int) for x in d) else _strs
            r.add_argument(flag, type=conv, default=d, help=f"{f.metadata['help']} (default {','.join(map(str, d))})")
        else:
            r.add_argument(flag, type=type(d), default=d, help=f"{f.metadata['help']} (default {d})")
    r.add_argument("--out", type=Path, default=None, help="folder for the results (results.csv, or baselines.csv for "
                                                          "the shorthand)")
    r.add_argument("--dry-run", action="store_true", help="print the cases; needs no GPU")
    r.add_argument("--strategies", type=_strs, default=(),
                   help="spec runs: measure only these strategies (labels, comma-separated; default: all), e.g. to "
                        "split one experiment over device calls whose libraries do not fit in one")
    r.add_argument("--gpus-assumed", type=int, default=2,
                   help="spec runs with --dry-run on a machine without GPUs: plan for this many (default 2)")
    v = sub.add_parser("validate", help="predict, run and compare an experiment spec in one go (post-hoc unless "
                                        "--registration names a committed registration)")
    v.add_argument("experiment", help="an experiment spec (name or TOML path)")
    v.add_argument("--out", type=Path, required=True,
                   help="folder for predictions/ (unless --registration), results/ and report/")
    v.add_argument("--registration", type=Path, default=None,
                   help="a committed ctasim predict folder to judge against (else predictions are made now: post-hoc)")
    v.add_argument("--harness", default="ctahw-timed-2xh200", help="timing-harness spec for new predictions")
    v.add_argument("--naive-from", type=Path, default=None, help="a ctahw baselines.csv for the naive predictor")
    from ctahw.experiment import RunConfig  # noqa: PLC0415 - pure module (no cupy at import)

    for f in dataclasses.fields(RunConfig):
        v.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=f.default,
                       help=f"{f.metadata['help']} (default {f.default})")
    return p


# --------------------------------------------------------------------------------------------------


def _err(msg: str) -> None:
    print(msg, file=sys.stderr)


def cmd_info(args) -> int:
    from ctahw import build  # noqa: PLC0415
    from ctahw.device import NoCupyError, NoGpuError, gpus  # noqa: PLC0415

    tc = build.Toolchain.detect()
    print(f"nvcc:     {tc.nvcc or 'not found'}{f' ({tc.nvcc_version})' if tc.nvcc_version else ''}")
    print(f"cutlass:  {tc.cutlass_version or 'headers not found (pip install --no-deps nvidia-cutlass==4.2.0.0)'}")
    print(f"cache:    {', '.join(str(d) for d in build.cache_dirs())}")
    for name, lib in build.LIBRARIES.items():
        art = lib.find_artifact(tc)
        print(f"  {name:16} {'built: ' + str(art) if art else 'not built (key ' + lib.key(tc) + ')'}")
    try:
        found = gpus()
    except (NoGpuError, NoCupyError) as e:
        _err(f"no GPU: {e}")
        return EXIT_NO_GPU
    for g in found:
        print(f"GPU {g.index}: {g.name} sm_{g.cc[0]}{g.cc[1]} {g.sm_count} SMs, L2 {g.l2_bytes >> 20} MiB, "
              f"{g.mem_bytes / 2**30:.0f} GiB{'' if g.is_sm90 else '  (not sm_90: the SM90 kernels cannot run)'}")
    if len(found) > 1:
        import cupy as cp  # noqa: PLC0415

        for a in range(len(found)):
            for b in range(len(found)):
                if a != b:
                    print(f"peer access {a} -> {b}: {'yes' if cp.cuda.runtime.deviceCanAccessPeer(a, b) else 'NO'}")
    return 0


def _libraries(args) -> tuple[str, ...]:
    """The libraries ``--only`` names (all by default), after ``--jobs`` and every name are checked (one line each):
    what ``ctahw build`` and ``ctahw ptx-diff`` compile."""
    from ctahw import build  # noqa: PLC0415

    if args.jobs < 1:
        raise _UsageError(f"--jobs {args.jobs}: must be >= 1")
    names = args.only or tuple(build.LIBRARIES)
    for n in names:
        if n not in build.LIBRARIES:
            raise _UsageError(f"--only: unknown library {n!r} (known: {', '.join(build.LIBRARIES)})")
    return names


def cmd_build(args) -> int:
    from ctahw import build  # noqa: PLC0415

    names = _libraries(args)
    tc = build.Toolchain.detect()
    if args.jobs == 1:
        for n in names:
            print(f"{n}: {build.LIBRARIES[n].build(tc, quiet=False)}")
        return 0
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415 - each build is an nvcc process

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:  # the cache's file lock serialises equal keys
        futures = {n: pool.submit(build.LIBRARIES[n].build, tc, quiet=True) for n in names}
        for n, f in futures.items():
            print(f"{n}: {f.result()}")  # the first failure raises (one line in main), after the others finished
    return 0


def cmd_ptx_diff(args) -> int:
    import tempfile  # noqa: PLC0415

    from ctahw import build, ptxdiff  # noqa: PLC0415

    names = _libraries(args)
    if args.out is not None:
        from ctasim.cliargs import writable_folder  # noqa: PLC0415

        writable_folder(args.out)  # SpecError: one line, exit 2
    with tempfile.TemporaryDirectory(prefix="ctahw-base-") as tmp:
        try:
            base = ptxdiff.kernels_at(args.base, Path(tmp))
        except ValueError as e:
            raise _UsageError(str(e)) from None
        nvcc = build.find_nvcc()
        if nvcc is None:
            raise build.NvccNotFoundError("nvcc is needed to compile the kernels to PTX and none was found "
                                          "(looked in $CTAHW_NVCC, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)")
        results = ptxdiff.compare_trees(base, build.KERNELS_DIR, names, nvcc, jobs=args.jobs)
    differ = [r for r in results if not r.identical]
    if differ and args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    for r in results:
        where = ""
        if not r.identical and args.out is not None:
            (args.out / f"{r.library}.diff").write_text(r.diff)
            (args.out / f"{r.library}.unnumbered.diff").write_text(r.unnumbered_diff)
            where = f" ({args.out / r.library}.diff, .unnumbered.diff)"
        state = ("the same PTX" if r.identical else f"{r.changed} of {r.lines} PTX lines changed, "
                 f"{r.unnumbered_changed} with register and label numbers erased{where}")
        print(f"{r.library}: {state}")
    return 1 if differ else 0


def cmd_calibrate(args) -> int:
    from ctahw import calibrate, provenance  # noqa: PLC0415
    from ctasim.spec import SPECS_DIR  # noqa: PLC0415

    from ctasim.spec import load_hardware  # noqa: PLC0415

    name = args.name or f"{args.base}-calibrated"
    out = args.out or SPECS_DIR / "hardware" / f"{name}.toml"
    base = load_hardware(args.base)  # an unknown base profile is one line before anything is measured
    if args.reps < 1:
        raise _UsageError(f"--reps {args.reps}: must be >= 1")
    for flag, path in (("--out", out), ("--json", args.json)):
        if path is not None:
            if path.exists() and not path.is_file():
                raise _UsageError(f"{flag} {path}: exists and is not a file")
            try:
                _check_out(path.parent, flag)
            except _UsageError as e:
                raise _UsageError(f"{flag} {path}: {str(e).split(': ', 1)[1]}") from None
    if args.probe_out is not None:
        if args.no_memory and args.no_percta and args.no_fold:
            raise _UsageError(f"--probe-out {args.probe_out}: the probes are skipped (--no-memory, --no-percta, "
                              "--no-fold)")
        _check_out(args.probe_out, "--probe-out")
    if args.from_json is not None:
        return _calibrate_from_json(args, base, out, name)
    if args.dry_run:
        skip = set(calibrate.FITTED_FIELDS) | {"l2_bytes"} if args.no_memory else set()
        if args.no_memory:
            skip |= {"local_signal_ns", "l2_survival_taken", "l2_survival_share",  # from the memory probes
                     "l2_hbm_exposed_gbps"}  # set with the memory hierarchy's fit
        if args.no_fold:
            skip |= {"norm_stats_epilogue_ns_per_element", "norm_fold_epilogue_ns_per_element"}
        cfg = calibrate.CONFIG_FIELDS[:2] if args.no_memory else calibrate.CONFIG_FIELDS
        print(f"would measure (see ctahw.calibrate): {', '.join(f for f in calibrate.MEASURED_FIELDS if f not in skip)}, "
              f"kernel_config 128x256 ({', '.join(cfg)})")
        if not args.no_memory:
            from ctahw import tile_orders as T  # noqa: PLC0415

            print(f"memory probes (the L2 constants fitted under {args.base}'s l2_reuse_law "
                  f"{base.l2_reuse_law!r}): the tile-order probe at N = K = 8192 (M = 2048 ... 32768, 12 orders), "
                  f"{len(T.TRACE_SHAPES) * len(T.TRACE_ORDERS)} per-tile order traces, {len(T.TICKET_SHAPES)} of the "
                  f"chain kernel's tickets and {len(T.GAP_SHAPES)} of its pairs (ctahw.tile_orders), the L2-to-SM "
                  "rate of the GEMM's tensor copies by tiles a row (ctahw.l2rate.measure_tiles; measured, not written "
                  "into a field), the L2 survival probe (ctahw.l2probe) and the tickets design's one-layer "
                  "microbenchmark "
                  "(ctasim.ticket_rate.RATE_EXPERIMENTS)"
                  f"{'; raw files into ' + str(args.probe_out) if args.probe_out else ''}")
        if not args.no_percta:
            from ctahw import percta  # noqa: PLC0415

            print(f"one-CTA-per-tile probe: the producers of {', '.join(percta.PERCTA_VARIANTS)} at M = "
                  f"{', '.join(map(str, percta.PERCTA_MS))} x {percta.PERCTA_H} x {percta.PERCTA_H}, local D, traced "
                  "(ctahw.percta): exposed epilogue, CTA turnover, mainloop, store and signal steps into the json and "
                  f"the profile's header{'; raw files into ' + str(args.probe_out) if args.probe_out else ''}")
        if not args.no_fold:
            print(f"fold probe: the block boundary's ring pair at M = {', '.join(map(str, calibrate.FOLD_MS))} with "
                  "and without the LayerNorm fold, both chain kernels on GPU 0, traced (ctahw.calibrate.fold_probe)"
                  f"{'; fold-steps.csv into ' + str(args.probe_out) if args.probe_out else ''}")
        print(f"would write {out} (base {args.base}) and {args.json or 'no json'}")
        return 0
    res = calibrate.measure(quick=args.quick, reps=args.reps, memory=not args.no_memory, probe_out=args.probe_out,
                            percta=not args.no_percta, fold=not args.no_fold, reuse_law=base.l2_reuse_law,
                            survival=(base.l2_survival_taken, base.l2_survival_share))
    prov = provenance.collect()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"provenance": prov, "measured": res}, indent=1, default=str))
    text = calibrate.write_profile(res, args.base, out, name, prov)
    print(text)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def _calibrate_from_json(args, base, out: Path, name: str) -> int:
    """``ctahw calibrate --from-json``: the profile of an earlier calibration's measurement against ``base``."""
    from ctahw import calibrate  # noqa: PLC0415

    given = [flag for flag, on in (("--json", args.json), ("--probe-out", args.probe_out), ("--dry-run", args.dry_run),
                                   ("--quick", args.quick), ("--no-memory", args.no_memory),
                                   ("--no-percta", args.no_percta), ("--no-fold", args.no_fold),
                                   ("--reps", args.reps != 10)) if on]
    if given:
        raise _UsageError(f"--from-json {args.from_json}: measures nothing, so {', '.join(given)} cannot go with it")
    try:
        data = json.loads(args.from_json.read_text())
    except OSError as e:
        raise _UsageError(f"--from-json {args.from_json}: {e.strerror or e}") from None
    except ValueError:
        raise _UsageError(f"--from-json {args.from_json}: not JSON") from None
    if not (isinstance(data, dict) and isinstance(data.get("measured"), dict) and data["measured"].get("gpu_name")):
        raise _UsageError(f"--from-json {args.from_json}: not a calibration (no 'measured' figures of a GPU; "
                          "ctahw calibrate --json writes one)")
    prov = data.get("provenance") or {}
    if not isinstance(prov, dict):
        raise _UsageError(f"--from-json {args.from_json}: its 'provenance' is not a table of names and values")
    from ctasim.spec import load_hardware  # noqa: PLC0415

    tmp = out.with_name(f".{out.name}.from-json")
    try:  # written aside and loaded before it takes the place of --out: nothing half-written, nothing unloadable
        res = calibrate.refit(data["measured"], base)
        text = calibrate.write_profile(res, args.base, tmp, name, prov, log=lambda s: None)
        load_hardware(tmp)
    except (KeyError, ValueError, TypeError, AttributeError) as e:
        tmp.unlink(missing_ok=True)
        why = (f"its measured figures lack {e}" if isinstance(e, KeyError) else
               str(e).splitlines()[0] if str(e) else type(e).__name__)
        raise _UsageError(f"--from-json {args.from_json}: {why}") from None
    tmp.replace(out)
    print(text)
    print(f"wrote {out} (from {args.from_json}, against {args.base})", file=sys.stderr)
    return 0


TABLE_COLS = ("experiment", "backend", "m", "chunks", "median_ms", "tflops", "compute_ms", "comm_ms", "copy_ms", "idle_ms",
              "rel_err", "best", "error")


def format_table(rows: Sequence[dict], cols: Sequence[str] = TABLE_COLS) -> str:
    def cell(v) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return ""
        if isinstance(v, bool):
            return "*" if v else ""
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 1e-2 else f"{v:.3f}" if abs(v) < 100 else f"{v:.1f}"
        return str(v)

    body = [[cell(r.get(c)) for c in cols] for r in rows]
    w = [max(len(c), *(len(b[i]) for b in body)) if body else len(c) for i, c in enumerate(cols)]
    lines = ["  ".join(c.rjust(w[i]) for i, c in enumerate(cols))]
    lines += ["  ".join(b[i].rjust(w[i]) for i in range(len(cols))) for b in body]
    return "\n".join(lines)


def _is_shorthand(arg: str) -> bool:
    names = _strs(arg)
    return bool(names) and all(n in _experiment_names() for n in names)


def _check_out(out: Path | None, flag: str = "--out") -> None:
    """An output folder that can be written: refused before anything runs (one line, exit 2)."""
    if out is None:
        return
    from ctasim.cliargs import writable_folder  # noqa: PLC0415
    from ctasim.spec import SpecError  # noqa: PLC0415

    try:
        writable_folder(out, flag)
    except SpecError as e:
        raise _UsageError(f"{flag} {out}: {e.problem}") from None


def _check_numbers(args) -> None:
    """The run's counts, sizes and times, checked before anything runs (one line, exit 2)."""
    for name in ("rest_ms", "gate_ms", "sustain_s"):
        v = getattr(args, name, None)
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise _UsageError(f"--{name.replace('_', '-')} {v}: must be a number >= 0")
    for name, low in (("reps", 1), ("warmup", 0), ("tune_rounds", 0), ("gpus", 1), ("h", 64), ("gpus_assumed", 1)):
        v = getattr(args, name, None)
        if v is not None and v < low:
            raise _UsageError(f"--{name.replace('_', '-')} {v}: must be >= {low}")
    if getattr(args, "h", 64) % 64:
        raise _UsageError(f"--h {args.h}: must be a multiple of 64 (the CUTLASS kernel's K tile)")
    for name in ("ms", "chunks"):
        bad = [v for v in getattr(args, name, ()) or () if v < 1]
        if bad:
            raise _UsageError(f"--{name} {','.join(map(str, bad))}: must be >= 1")


class _UsageError(Exception):
    """A bad command-line value: one line, exit 2."""


def cmd_run_spec(args) -> int:
    from ctahw.experiment import RunConfig, plan_runs, run  # noqa: PLC0415
    from ctasim.cases import load_experiment  # noqa: PLC0415

    exp = load_experiment(args.experiment)
    if args.strategies:
        labels = [st.label for st in exp.strategies]
        unknown = [x for x in args.strategies if x not in labels]
        if unknown:
            raise _UsageError(f"--strategies: {', '.join(unknown)} not in {exp.name} (its strategies: "
                              f"{', '.join(labels)})")
        exp = dataclasses.replace(exp, strategies=tuple(st for st in exp.strategies if st.label in args.strategies))
    # the spec's clock regime is what its predictions describe (ctasim runs it as exp.regime): the measurement must be
    # of the same regime, or compare would judge a burst prediction against sustained runs (or the reverse)
    if exp.regime == "sustained" and not args.sustain_s > 0:
        raise _UsageError(f"{exp.name} is a sustained-regime experiment (experiment.regime): give --sustain-s S > 0, "
                          f"how long each run repeats back to back")
    if exp.regime == "burst" and args.sustain_s > 0:
        raise _UsageError(f"--sustain-s {args.sustain_s:g}: {exp.name} is a burst-regime experiment "
                          f"(experiment.regime = 'burst'); a sustained measurement needs a sustained spec")
    _check_out(args.out)
    reg = None
    if args.registration is not None:
        rec = args.registration / "registration.json"
        if not rec.is_file():
            raise _UsageError(f"--registration {args.registration}: no registration.json there (ctasim predict writes it)")
        import hashlib  # noqa: PLC0415

        reg = {"path": str(args.registration), "sha256": hashlib.sha256(rec.read_bytes()).hexdigest(),
               "experiment": json.loads(rec.read_text()).get("experiment")}
        if reg["experiment"] != exp.name:
            raise _UsageError(f"--registration {args.registration}: registers {reg['experiment']!r}, not {exp.name!r}")
    if args.dry_run:
        from ctahw.device import NoCupyError, NoGpuError, gpus  # noqa: PLC0415

        try:
            n = len(gpus())
        except (NoGpuError, NoCupyError):
            n = args.gpus_assumed
        df = plan_runs(exp, n)
        print(df[["case", "strategy", "kind", "variant", "gpus", "status", "reason"]].to_string(index=False))
        print(f"{exp.name}: {int((df['status'] == 'planned').sum())} of {len(df)} runs planned on {n} GPU(s)",
              file=sys.stderr)
        return 0
    rest = {} if args.rest_ms is None else {"rest_ms": args.rest_ms}
    cfg = RunConfig(reps=args.reps, warmup=args.warmup, tune_rounds=args.tune_rounds, gate_ms=args.gate_ms,
                    sustain_s=args.sustain_s, seed=args.seed, **rest)
    traces: dict = {}
    df = run(exp, cfg, traces=traces)
    from ctahw import provenance  # noqa: PLC0415
    from ctasim import results  # noqa: PLC0415

    prov = provenance.collect()
    if args.out:
        with results.staged_folder(args.out, merge=True) as tmp:
            results.write(df, tmp / "results.csv")
            if traces:
                from ctasim.trace import save_traces  # noqa: PLC0415
                from ctasim.trace import TRACES_FILE  # noqa: PLC0415

                save_traces(traces, tmp / TRACES_FILE)
            (tmp / "run.json").write_text(json.dumps({"experiment": exp.name, "config": dataclasses.asdict(cfg),
                                                      "registration": reg, "provenance": prov}, indent=1) + "\n")
    print(df[["case", "strategy", "variant", "status", "makespan_ms", "rel_err", "reason"]].to_string(index=False))
    return 0 if not (df["status"] == "failed").any() else EXIT_FAILED


def cmd_validate(args) -> int:
    """Predict (or take a committed registration), run on the GPUs, and write the accuracy report, in one go."""
    from ctasim.accuracy import write_report  # noqa: PLC0415
    from ctasim.cases import load_experiment  # noqa: PLC0415
    from ctasim.results import ResultsError  # noqa: PLC0415

    from ctahw.device import gpus  # noqa: PLC0415

    _check_numbers(args)
    _check_out(args.out)
    exp = load_experiment(args.experiment)
    gpus()  # no GPU (or no CuPy): one line before anything is predicted or written
    pred = args.registration
    if pred is None:
        from ctasim.harness import load_harness  # noqa: PLC0415
        from ctasim.predict import Naive, register  # noqa: PLC0415
        from ctasim.spec import resolve_ref  # noqa: PLC0415

        pred = args.out / "predictions"
        if pred.exists():
            raise _UsageError(f"--out {args.out}: holds predictions/ already (a prediction is never overwritten)")
        naive = Naive.fit(args.naive_from) if args.naive_from else None
        register(exp, resolve_ref(str(args.experiment), "experiments", None), pred, load_harness(args.harness), naive)
        print(f"predicted into {pred} (not committed: the report will say post-hoc)", file=sys.stderr)
    run_args = argparse.Namespace(**vars(args))
    run_args.strategies = ()  # validate runs the whole spec
    run_args.out, run_args.registration, run_args.dry_run, run_args.gpus_assumed = (
        args.out / "results", pred, False, 2)
    rc = cmd_run_spec(run_args)
    try:
        text, _ = write_report(pred, args.out / "results", args.out / "report")
    except ResultsError as e:
        raise _UsageError(str(e)) from None
    print(text.split("## Judging rules")[0].rstrip())
    return rc


def cmd_run(args) -> int:
    from ctahw.baselines import SweepConfig, plan_sweep  # noqa: PLC0415
    from ctahw.sweep import run_sweep  # noqa: PLC0415

    _check_numbers(args)
    _check_out(args.out)
    if not _is_shorthand(args.experiment):
        return cmd_run_spec(args)
    if args.strategies:
        raise _UsageError("--strategies selects an experiment spec's strategies; the flag shorthand has none")
    args.experiment = _experiments(args.experiment)

    # "all" stands for every baseline; it can be joined with others (all,ctapipe)
    exps = tuple(dict.fromkeys(x for e in args.experiment for x in (SweepConfig().experiments if e == "all" else (e,))))
    kw = {f.name: getattr(args, f.name) for f in dataclasses.fields(SweepConfig)
          if f.name != "experiments" and getattr(args, f.name) is not None}
    cfg = SweepConfig(experiments=exps, **kw)
    if args.dry_run:
        cases = plan_sweep(cfg)
        print(format_table(cases, ("experiment", "backend", "m", "gpus", "layers", "chunks")))
        print(f"{len(cases)} cases, {cfg.reps} timed + {cfg.warmup} warm-up repetitions each", file=sys.stderr)
        return 0
    from ctahw import provenance  # noqa: PLC0415

    tuning: list[dict] = []
    traces: dict = {}
    rows = run_sweep(cfg, tuning=tuning, traces=traces)
    prov = provenance.collect()
    if args.out:
        import pandas as pd  # noqa: PLC0415

        from ctasim.results import staged_folder  # noqa: PLC0415

        df = pd.DataFrame(rows)
        for k, v in prov.items():
            df[f"prov_{k}"] = v
        with staged_folder(args.out, merge=True) as tmp:  # whole or not at all
            df.to_csv(tmp / "baselines.csv", index=False)
            try:
                df.to_parquet(tmp / "baselines.parquet", index=False)
            except (ImportError, ValueError):
                pass
            if traces:
                from ctasim.trace import save_traces  # noqa: PLC0415
                from ctasim.trace import TRACES_FILE  # noqa: PLC0415

                save_traces(traces, tmp / TRACES_FILE)
            (tmp / "baselines_config.json").write_text(json.dumps(
                {"config": dataclasses.asdict(cfg), "provenance": prov, "cutlass_tuning": tuning}, indent=1))
    print(format_table(rows))
    return 0 if all(r.get("ok") for r in rows) else EXIT_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    from ctahw.build import BuildError  # noqa: PLC0415
    from ctahw.device import DeviceError, NoCupyError, NoGpuError, UnsupportedGpuError, is_cuda_fault  # noqa: PLC0415
    from ctahw.runner import ProtocolError  # noqa: PLC0415
    from ctasim.spec import SpecError  # noqa: PLC0415
    from ctasim.trace import TraceFileError  # noqa: PLC0415

    args = parser().parse_args(argv)
    handlers = {"info": cmd_info, "build": cmd_build, "ptx-diff": cmd_ptx_diff, "calibrate": cmd_calibrate, "run": cmd_run,
                "validate": cmd_validate}
    try:
        return handlers[args.cmd](args)
    except (NoGpuError, NoCupyError) as e:
        _err(f"no GPU: {e}")
        return EXIT_NO_GPU
    except UnsupportedGpuError as e:
        _err(f"ctahw: {e}")
        return EXIT_NO_GPU
    except DeviceError as e:
        _err(f"ctahw: {type(e).__name__}: {e}")
        return EXIT_FAILED
    except BuildError as e:
        _err(f"ctahw: {type(e).__name__}: {e}")
        return EXIT_BUILD
    except (_UsageError, argparse.ArgumentTypeError) as e:
        _err(f"ctahw: error: {e}")
        return 2
    except (SpecError, TraceFileError) as e:
        _err(f"ctahw: error: {e}")
        return 2
    except ProtocolError as e:
        _err(f"ctahw: protocol error: {e}")
        return EXIT_FAILED
    except RuntimeError as e:
        if not is_cuda_fault(e):
            raise
        _err(f"ctahw: CUDA fault, run stopped: {type(e).__name__}: {e}")
        return EXIT_FAILED

if __name__ == "__main__":
    sys.exit(main())
