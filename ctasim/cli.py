"""The ``ctasim`` command: run experiments, sweep parameters, export traces.

    ctasim run [EXPERIMENT]            simulate every case x strategy, print the summary table
    ctasim sweep EXPERIMENT --set F=V1,V2 ...   a parameter grid, progress bar, results to CSV/Parquet
    ctasim trace EXPERIMENT            export one run's trace (tables, Chrome/Perfetto JSON, Gantt PNG)
    ctasim predict EXPERIMENT --out D  register predictions (model and naive) before the GPUs run it
    ctasim compare PREDICTIONS RESULTS accuracy report: registered vs post-hoc, model vs naive
    ctasim list                        the specs shipped in specs/

EXPERIMENT is a name from ``ctasim list`` or a path to a TOML file; the default is ``default``.
A bad spec prints one line naming the file, field and problem, and exits with status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
import time
from pathlib import Path

import pandas as pd

from ctasim.cases import load_experiment
from ctasim.spec import Experiment, SpecError, _coerce, _validate_hardware, list_specs, validate_layer

__all__ = ["main"]

EXIT_SPEC = 2


def _table(df: pd.DataFrame) -> str:
    """The terminal table: latency, the variant chosen, speed-ups vs the baselines, busy fraction."""
    base_cols = [c for c in df.columns if c.startswith("speedup_vs_")]
    keep_baselines = {s for s, k in zip(df["strategy"], df["kind"]) if k in ("sequential", "microbatch", "tp")}
    speed = [c for c in base_cols if c[len("speedup_vs_"):] in keep_baselines]
    cols = ["case", "strategy", "gpus", "variant", "latency_us", *speed, "busy_mean"]
    out = df[cols].copy()
    out["latency_us"] = out["latency_us"].map(lambda v: f"{v:,.1f}")
    for c in speed:
        out[c] = out[c].map(lambda v: f"{v:.3f}x")
    out["busy_mean"] = out["busy_mean"].map(lambda v: f"{100 * v:.0f}%")
    out = out.rename(columns={c: "vs " + c[len("speedup_vs_"):] for c in speed} | {"busy_mean": "busy"})
    return out.to_string(index=False)


def _write_table(df: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        df.to_parquet(path, index=False)
    else:
        df.to_csv(path, index=False)
    return path


def cmd_run(args) -> int:
    from ctasim.run import run_experiment

    exp = load_experiment(args.experiment)
    t0 = time.perf_counter()
    df, results = run_experiment(exp, seed=args.seed, jitter=args.jitter, progress=not args.quiet,
                                 check=not args.no_check)
    wall = time.perf_counter() - t0
    print(f"{exp.name}: {exp.description}" if exp.description else exp.name)
    print(f"hardware {exp.hardware.name} ({'measured' if exp.hardware.measured else 'datasheet, not measured'}), "
          f"{len(df)} runs, {int(df['ctas_simulated'].sum()):,} CTAs simulated in {wall:.2f} s"
          + ("" if args.no_check else ", invariants checked on every trace"))
    print(_table(df))
    if args.out:
        out = Path(args.out)
        written = [_write_table(df, out / f"{exp.name}.{args.format}")]
        if args.plots:
            written += _figures(exp, df, results, out)
        for p in written:
            print(f"wrote {p}")
    return 0


def _figures(exp: Experiment, df: pd.DataFrame, results, out: Path) -> list[Path]:
    from ctasim import plots

    written = [plots.latency_bars(df, out / f"{exp.name}-latency.png", title=exp.description or exp.name),
               plots.breakdown_bars(df, out / f"{exp.name}-breakdown.png", title=f"{exp.name}: latency breakdown")]
    sweeps = {r.case.label: [(p["chunks"], ns) for p, ns in r.variants] for r in results if r.strategy.kind == "microbatch"}
    if sweeps:
        written.append(plots.chunk_sweep(sweeps, out / f"{exp.name}-chunks.png"))
    return written


def _parse_set(items: list[str]) -> list[tuple[str, list]]:
    grid = []
    for item in items:
        if "=" not in item:
            raise SpecError("--set", item, "expected FIELD=V1,V2,... (e.g. hardware.link_gbps=100,200)")
        name, values = item.split("=", 1)
        vals = []
        for v in values.split(","):
            v = v.strip()
            try:
                vals.append(int(v))
            except ValueError:
                try:
                    vals.append(float(v))
                except ValueError:
                    vals.append(v)
        grid.append((name.strip(), vals))
    return grid


_LAYER_FIELDS = ("m", "k", "n", "tile_m", "tile_n", "raster")


def _override(exp: Experiment, name: str, value) -> Experiment:
    """A copy of ``exp`` with one field replaced: ``hardware.<field>``, ``workload.<layer field>`` or ``m``/``layers``."""
    where = f"--set {name}"
    if name.startswith("hardware."):
        fld = name.split(".", 1)[1]
        fields = {f.name: f for f in dataclasses.fields(exp.hardware)}
        if fld not in fields or fld == "kernel_configs":
            raise SpecError(where, name, "unknown hardware field")
        hw = dataclasses.replace(exp.hardware, **{fld: _coerce(value, fields[fld].type, None, where, name)})
        _validate_hardware(hw, where)
        return dataclasses.replace(exp, hardware=hw)
    fld = name.split(".", 1)[1] if name.startswith("workload.") else name
    if fld == "layers":
        return dataclasses.replace(exp, sweep=tuple(a for a in exp.sweep if a[0] != "layers") + (("layers", (int(value),)),))
    if fld in _LAYER_FIELDS:
        layers = tuple(dataclasses.replace(l, **{fld: value}) for l in exp.workload.layers)
        for i, l in enumerate(layers):
            validate_layer(l, where, f"workload.layer[{i}].")
        sweep = tuple(a for a in exp.sweep if a[0] != fld)
        return dataclasses.replace(exp, workload=dataclasses.replace(exp.workload, layers=layers), sweep=sweep)
    raise SpecError(where, name, f"unknown field (hardware.<field>, m, k, n, tile_m, tile_n, raster, layers)")


def cmd_sweep(args) -> int:
    from tqdm import tqdm

    from ctasim.run import run_experiment

    exp = load_experiment(args.experiment)
    grid = _parse_set(args.set)
    points = list(itertools.product(*[vals for _, vals in grid]))
    variants = []
    for point in points:  # build and validate every point before running any
        e = exp
        for (name, _), v in zip(grid, point):
            e = _override(e, name, v)
        variants.append((point, e))
    frames = []
    for point, e in tqdm(variants, desc=f"sweep {exp.name}", unit="point", disable=args.quiet):
        df, _ = run_experiment(e, seed=args.seed, jitter=args.jitter, check=not args.no_check)
        for (name, _), v in zip(grid, point):
            if name in df.columns:  # a sweep axis of the experiment (m, layers) already has its column
                df = df.drop(columns=name)
            df.insert(0, name, v)
        frames.append(df)
    out = pd.concat(frames, ignore_index=True)
    path = _write_table(out, Path(args.out))
    cols = [n for n, _ in grid] + ["case", "strategy", "variant", "latency_us"]
    print(out[cols].to_string(index=False))
    print(f"wrote {path} ({len(out)} rows)")
    return 0


def cmd_trace(args) -> int:
    from ctasim import plots
    from ctasim.cases import expand
    from ctasim.run import run_strategy

    exp = load_experiment(args.experiment)
    cases = expand(exp)
    case = next((c for c in cases if c.label == args.case), None) if args.case else cases[-1]
    if case is None:
        raise SpecError(str(args.experiment), "--case", f"no case {args.case!r} (cases: {[c.label for c in cases]})")
    labels = [s.label for s in exp.strategies]
    strat = next((s for s in exp.strategies if s.label == args.strategy), None) if args.strategy else next(
        (s for s in exp.strategies if s.kind == "ctapipe"), exp.strategies[0])
    if strat is None:
        raise SpecError(str(args.experiment), "--strategy", f"no strategy {args.strategy!r} (strategies: {labels})")
    res = run_strategy(strat, case, exp.hardware, seed=args.seed, jitter=args.jitter, regime=exp.regime)
    out = Path(args.out)
    stem = f"{exp.name}-{strat.label}-{case.label}".replace(",", "_").replace("=", "")
    written = res.trace.save(out / stem, fmt=args.format)
    written.append(res.trace.write_chrome(out / f"{stem}.chrome.json"))
    written.append(plots.gantt(res.trace, out / f"{stem}-gantt.png",
                               title=f"{exp.name}: {strat.label}, {case.label} ({res.latency_ns / 1e3:,.1f} µs)"))
    print(f"{strat.label} {case.label}: {res.latency_ns / 1e3:,.1f} µs, {len(res.trace.tiles):,} CTAs")
    for p in written:
        print(f"wrote {p}")
    return 0


def cmd_predict(args) -> int:
    from ctasim.harness import load_harness
    from ctasim.predict import Naive, register
    from ctasim.spec import _resolve

    exp = load_experiment(args.experiment)
    exp_path = _resolve(str(args.experiment), "experiments", None)
    harness = load_harness(args.harness)
    out = Path(args.out)
    if out.exists() and not args.force:
        raise SpecError("--out", str(out), "exists: a registration is never overwritten (give --force to redo an "
                                           "uncommitted one)")
    if out.exists() and not out.is_dir():
        raise SpecError("--out", str(out), "is a file, not a folder")
    naive = None
    if args.naive_from:
        try:
            naive = Naive.fit(args.naive_from)
        except (OSError, ValueError, KeyError) as e:
            raise SpecError("--naive-from", str(args.naive_from), str(e).splitlines()[0]) from None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SpecError("--out", str(out), f"cannot create its parent folder ({e.strerror})") from None
    files = register(exp, exp_path, out, harness, naive, seed=args.seed)
    import pandas as pd

    df = pd.read_csv(out / "predictions.csv", keep_default_na=False, na_values=[""])
    model = df[(df["source"] == "model") & (df["status"] == "ok")]
    best = model.loc[model.groupby(["case", "strategy"], sort=False)["makespan_ms"].idxmin()]
    print(f"{exp.name}: predicted with {exp.hardware.name} and harness {args.harness}"
          + (f", naive line {naive.a_ms * 1e3:.1f} us + FLOPs at {naive.tflops:.1f} TFLOP/s" if naive else ""))
    print(best[["case", "strategy", "variant", "makespan_ms"]].to_string(index=False))
    for p in files:
        print(f"wrote {p}")
    return 0


def cmd_compare(args) -> int:
    from ctasim.accuracy import write_report
    from ctasim.results import ResultsError

    try:
        text, files = write_report(Path(args.predictions), Path(args.results), Path(args.out))
    except ResultsError as e:
        raise SpecError(str(args.results), "(results)", str(e)) from None
    except OSError as e:
        raise SpecError("--out", str(args.out), f"cannot write ({e.strerror})") from None
    print(text.split("## Judging rules")[0].rstrip())
    for p in files:
        print(f"wrote {p}")
    return 0


def cmd_list(args) -> int:
    for kind, names in list_specs().items():
        print(f"{kind}: {', '.join(names)}")
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=0, help="seed of the tile-time jitter (default 0)")
    p.add_argument("--jitter", type=float, default=0.0, help="relative tile-time noise, 0 = deterministic (default)")
    p.add_argument("--no-check", action="store_true", help="skip the invariant checks on each trace")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="ctasim", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="simulate an experiment and print the summary table")
    p.add_argument("experiment", nargs="?", default="default", help="experiment name or TOML path (default: default)")
    p.add_argument("--out", help="folder for the summary table (and plots with --plots)")
    p.add_argument("--plots", action="store_true", help="also write the figure-style plots into --out")
    p.add_argument("--format", choices=("csv", "parquet"), default="csv")
    _common(p)
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("sweep", help="run an experiment over a grid of parameter values")
    p.add_argument("experiment")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=V1,V2",
                   help="hardware.<field>, m, k, n, tile_m, tile_n, raster or layers; repeat for a grid")
    p.add_argument("--out", required=True, help="results file (.csv or .parquet)")
    _common(p)
    p.set_defaults(func=cmd_sweep)
    p = sub.add_parser("trace", help="export one run's trace, Chrome/Perfetto JSON and Gantt chart")
    p.add_argument("experiment", nargs="?", default="default")
    p.add_argument("--case", help="case label (default: the last case)")
    p.add_argument("--strategy", help="strategy label (default: the first ctapipe strategy)")
    p.add_argument("--out", default="out", help="output folder (default: out)")
    p.add_argument("--format", choices=("auto", "csv", "parquet"), default="auto")
    _common(p)
    p.set_defaults(func=cmd_trace)
    p = sub.add_parser("predict", help="register predictions for an experiment before it is measured")
    p.add_argument("experiment", help="experiment name or TOML path")
    p.add_argument("--out", required=True, help="registration folder (e.g. bench/predictions/NAME); never overwritten")
    p.add_argument("--harness", default="ctahw-timed-2xh200", help="timing-harness spec (specs/harness/; default "
                                                                   "ctahw-timed-2xh200)")
    p.add_argument("--naive-from", type=Path, default=None,
                   help="a ctahw baselines.csv whose CUTLASS gemm rows fit the naive predictor (none: no naive rows)")
    p.add_argument("--seed", type=int, default=0, help="seed of the tile-time draws (default 0)")
    p.add_argument("--force", action="store_true", help="replace an existing --out folder")
    p.set_defaults(func=cmd_predict)
    p = sub.add_parser("compare", help="accuracy report: registered predictions against a ctahw run")
    p.add_argument("predictions", help="a ctasim predict folder (predictions.csv, registration.json)")
    p.add_argument("results", help="a ctahw run EXPERIMENT --out folder (results.csv)")
    p.add_argument("--out", default="report", help="report folder (default: report)")
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("list", help="list the shipped specs")
    p.set_defaults(func=cmd_list)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except SpecError as e:
        print(f"ctasim: error: {e}", file=sys.stderr)
        return EXIT_SPEC
    except BrokenPipeError:  # output piped into `head` and closed: not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
