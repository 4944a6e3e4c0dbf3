"""The ``ctasim`` command: run experiments, sweep parameters, export traces.

    ctasim run [EXPERIMENT]            simulate every case x strategy, print the summary table
    ctasim sweep EXPERIMENT --set F=V1,V2 ...   a parameter grid, progress bar, results to CSV/Parquet
    ctasim trace EXPERIMENT            export one run's trace (tables, Chrome/Perfetto JSON, Gantt PNG)
    ctasim predict EXPERIMENT --out D  register predictions (model and naive) before the GPUs run it
    ctasim compare PREDICTIONS RESULTS accuracy report: registered vs post-hoc, model vs naive
    ctasim validate [RESULTS]          the post-hoc validation on the committed 2xH200 runs (ctasim.validation)
    ctasim list                        the specs shipped in specs/

EXPERIMENT is a name from ``ctasim list`` or a path to a TOML file; the default is ``default``.
A bad spec prints one line naming the file, field and problem, and exits with status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ctasim.cases import load_experiment
from ctasim.cliargs import OneLineParser, writable_folder
from ctasim.spec import Experiment, SpecError, coerce, validate_hardware, list_specs, validate_layer

if TYPE_CHECKING:  # pandas is imported where a command needs it (a bad command line fails without its import time)
    import pandas as pd

__all__ = ["main", "OneLineParser"]

EXIT_SPEC = 2


def _jitter(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 0.5), got {s!r}") from None
    if not 0.0 <= v < 0.5:  # NaN fails too
        raise argparse.ArgumentTypeError(f"must be within [0, 0.5) (relative tile-time noise), got {s}")
    return v


def _int_at_least(low: int):
    """An argparse type: an integer >= ``low`` (one line naming the value otherwise)."""
    def parse(s: str) -> int:
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {s!r}") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {v}")
        return v
    return parse


_positive_int, _nonneg_int = _int_at_least(1), _int_at_least(0)


REFERENCE_RATIO_WARN = 1.2
"""``ctasim predict --reference-ms``: a measured over modelled ratio of the calibration GEMM beyond this factor either
way is warned about (31 lent H200s spread 7.1% on it, bench/results/machine-spread: a ratio of 1.2 is another machine or
shape, not this one's speed)."""


def _positive_ms(s: str) -> float:
    """An argparse type: a finite time in ms > 0 (one line naming the value otherwise)."""
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a time in ms, got {s!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"must be a finite time > 0 ms, got {s}")
    return v


def _out_file(path: str | Path, flag: str = "--out") -> Path:
    """``path`` if a .csv or .parquet table can be written there (parquet: pyarrow installed); else SpecError."""
    p = Path(path)
    if p.suffix not in (".csv", ".parquet"):
        raise SpecError(flag, str(p), "the results file must end in .csv or .parquet")
    if p.exists() and not p.is_file():
        raise SpecError(flag, str(p), "exists and is not a file")
    writable_folder(p.parent, flag)
    if p.suffix == ".parquet":
        _need_pyarrow(flag)
    return p


def _need_pyarrow(flag: str) -> None:
    import importlib.util

    if importlib.util.find_spec("pyarrow") is None:
        raise SpecError(flag, "parquet", "needs pyarrow (pip install pyarrow), or use csv")


def _jobs(args, exps: list[Experiment]) -> int:
    """Local processes for these experiments' runs: ``--jobs`` if given (> 0), else :func:`ctasim.parallel.auto_jobs`."""
    from ctasim.cases import estimate_ctas, expand
    from ctasim.parallel import auto_jobs

    if args.jobs:
        return args.jobs
    runs = sum(len(expand(e)) * len(e.strategies) for e in exps)
    return auto_jobs(runs, sum(estimate_ctas(e) for e in exps))


def _check_size(exp: Experiment, max_ctas: int, where: str) -> None:
    from ctasim.cases import estimate_ctas

    n = estimate_ctas(exp)
    if n > max_ctas:
        raise SpecError(where, "size", f"would simulate about {n:,} CTAs, above the limit of {max_ctas:,} "
                                       f"(--max-ctas N raises it)")


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
    """Write ``df`` as CSV or Parquet (by suffix) under a temporary name, then rename: whole or not at all."""
    from ctasim.results import staged_file

    path.parent.mkdir(parents=True, exist_ok=True)
    with staged_file(path) as tmp:
        if path.suffix == ".parquet":
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False)
    return path


def cmd_run(args) -> int:
    from ctasim.run import run_experiment

    exp = load_experiment(args.experiment)
    if args.out:
        writable_folder(args.out)
        if args.format == "parquet":
            _need_pyarrow("--format")
    _check_size(exp, args.max_ctas, str(args.experiment))
    jobs = _jobs(args, [exp])
    t0 = time.perf_counter()
    df, results = run_experiment(exp, seed=args.seed, jitter=args.jitter, progress=not args.quiet,
                                 check=not args.no_check, jobs=jobs, scheduler=args.scheduler)
    wall = time.perf_counter() - t0
    print(f"{exp.name}: {exp.description}" if exp.description else exp.name)
    print(f"hardware {exp.hardware.name} ({'measured' if exp.hardware.measured else 'not measured'}), "
          f"{len(df)} runs, {int(df['ctas_simulated'].sum()):,} CTAs simulated in {wall:.2f} s"
          + ("" if args.no_check else ", invariants checked on every trace")
          + (f", on the Dask cluster at {args.scheduler.scheduler.address}" if args.scheduler
             else f", {jobs} processes" if jobs > 1 else ""))
    print(_table(df))
    if args.out:
        from ctasim.results import staged_folder

        out = Path(args.out)
        with staged_folder(out, merge=True) as tmp:
            names = [_write_table(df, tmp / f"{exp.name}.{args.format}").name]
            if args.plots:
                names += [p.name for p in write_figures(exp, df, results, tmp)]
        for name in names:
            print(f"wrote {out / name}")
    return 0


def write_figures(exp: Experiment, df: pd.DataFrame, results, out: Path) -> list[Path]:
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
    where = "--set"
    if name.startswith("hardware."):
        fld = name.split(".", 1)[1]
        fields = {f.name: f for f in dataclasses.fields(exp.hardware)}
        if fld not in fields or fld == "kernel_configs":
            raise SpecError(where, name, "unknown hardware field")
        hw = dataclasses.replace(exp.hardware, **{fld: coerce(value, fields[fld].type, None, where, name)})
        validate_hardware(hw, where)
        return dataclasses.replace(exp, hardware=hw)
    fld = name.split(".", 1)[1] if name.startswith("workload.") else name
    if fld in ("m", "k", "n", "tile_m", "tile_n", "layers"):
        value = coerce(value, "int", None, where, name)
        if value < 1:
            raise SpecError(where, name, f"must be >= 1, got {value}")
    if fld == "layers":
        return dataclasses.replace(exp, sweep=tuple(a for a in exp.sweep if a[0] != "layers") + (("layers", (value,)),))
    if fld in _LAYER_FIELDS:
        layers = tuple(dataclasses.replace(l, **{fld: value}) for l in exp.workload.layers)
        for i, l in enumerate(layers):
            validate_layer(l, where, f"workload.layer[{i}].")
        sweep = tuple(a for a in exp.sweep if a[0] != fld)
        return dataclasses.replace(exp, workload=dataclasses.replace(exp.workload, layers=layers), sweep=sweep)
    raise SpecError(where, name, "unknown field (hardware.<field>, m, k, n, tile_m, tile_n, raster, layers)")


def cmd_sweep(args) -> int:
    from tqdm import tqdm

    from ctasim.cases import check_experiment

    exp = load_experiment(args.experiment)
    out_path = _out_file(args.out)
    if not args.set:
        raise SpecError("--set", "(none)", "give at least one FIELD=V1,V2,... to sweep")
    grid = _parse_set(args.set)
    points = list(itertools.product(*[vals for _, vals in grid]))
    variants = []
    for point in points:  # build and validate every point before running any
        e = exp
        for (name, _), v in zip(grid, point):
            e = _override(e, name, v)
        where = "--set " + " ".join(f"{n}={v}" for (n, _), v in zip(grid, point))
        check_experiment(e, where)
        _check_size(e, args.max_ctas, where)
        variants.append((point, e))
    from ctasim.parallel import map_ordered
    from ctasim.run import run_one, summarize, work_items

    items, spans = [], []
    for point, e in variants:  # every run of every point in one list: the processes stay busy across points
        w = work_items(e, seed=args.seed, jitter=args.jitter, check=not args.no_check)
        spans.append((len(items), len(items) + len(w)))
        items += w
    jobs = _jobs(args, [e for _, e in variants])
    with tqdm(total=len(items), desc=f"sweep {exp.name}", unit="run", disable=args.quiet) as bar:
        results = map_ordered(run_one, items, jobs=jobs, scheduler=args.scheduler, progress=bar.update)
    frames = []
    for (point, e), (a, b) in zip(variants, spans):
        df = summarize(results[a:b], e.name)
        for (name, _), v in zip(grid, point):
            if name in df.columns:  # a sweep axis of the experiment (m, layers) already has its column
                df = df.drop(columns=name)
            df.insert(0, name, v)
        frames.append(df)
    import pandas as pd  # noqa: PLC0415 (a bad command line fails without pandas' import time)

    out = pd.concat(frames, ignore_index=True)
    path = _write_table(out, out_path)
    cols = [n for n, _ in grid] + ["case", "strategy", "variant", "latency_us"]
    shown = out[cols].copy()
    shown["latency_us"] = shown["latency_us"].map(lambda v: f"{v:,.1f}")
    print(shown.to_string(index=False))
    print(f"wrote {path} ({len(out)} rows)")
    return 0


def cmd_trace(args) -> int:
    from ctasim import plots
    from ctasim.cases import expand
    from ctasim.run import run_strategy

    exp = load_experiment(args.experiment)
    writable_folder(args.out)
    if args.format == "parquet":
        _need_pyarrow("--format")
    cases = expand(exp)
    case = next((c for c in cases if c.label == args.case), None) if args.case else cases[-1]
    if case is None:
        raise SpecError(str(args.experiment), "--case", f"no case {args.case!r} (cases: {[c.label for c in cases]})")
    labels = [s.label for s in exp.strategies]
    strat = next((s for s in exp.strategies if s.label == args.strategy), None) if args.strategy else next(
        (s for s in exp.strategies if s.kind == "ctapipe"), exp.strategies[0])
    if strat is None:
        raise SpecError(str(args.experiment), "--strategy", f"no strategy {args.strategy!r} (strategies: {labels})")
    _check_size(dataclasses.replace(exp, workload=case.workload, strategies=(strat,), sweep=()), args.max_ctas,
                str(args.experiment))
    res = run_strategy(strat, case, exp.hardware, seed=args.seed, jitter=args.jitter, regime=exp.regime)
    from ctasim.results import staged_folder

    out = Path(args.out)
    stem = f"{exp.name}-{strat.label}-{case.label}".replace(",", "_").replace("=", "")
    with staged_folder(out, merge=True) as tmp:
        written = res.trace.save(tmp / stem, fmt=args.format)
        written.append(res.trace.write_chrome(tmp / f"{stem}.chrome.json"))
        written.append(plots.gantt(res.trace, tmp / f"{stem}-gantt.png",
                                   title=f"{exp.name}: {strat.label}, {case.label} ({res.latency_ns / 1e3:,.1f} µs)"))
    print(f"{strat.label} {case.label}: {res.latency_ns / 1e3:,.1f} µs, {len(res.trace.tiles):,} CTAs")
    for p in written:
        print(f"wrote {out / p.name}")
    return 0


def cmd_predict(args) -> int:
    from ctasim.harness import load_harness
    from ctasim.predict import Naive, register
    from ctasim.spec import resolve_ref

    exp = load_experiment(args.experiment)
    exp_path = resolve_ref(str(args.experiment), "experiments", None)
    if args.hardware:  # another profile for the same cases (recorded in registration.json and its spec hashes)
        import dataclasses

        from ctasim.spec import load_hardware

        exp = dataclasses.replace(exp, hardware=load_hardware(args.hardware))
    _check_size(exp, args.max_ctas, str(args.experiment))
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
        except KeyError as e:
            raise SpecError("--naive-from", str(args.naive_from),
                            f"not a ctahw run baselines.csv (no {e} column)") from None
        except (OSError, ValueError) as e:
            raise SpecError("--naive-from", str(args.naive_from), str(e).splitlines()[0]) from None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SpecError("--out", str(out), f"cannot create its parent folder ({e.strerror})") from None
    files = register(exp, exp_path, out, harness, naive, seed=args.seed, schedules=not args.no_schedules,
                     reference_ms=args.reference_ms)
    import pandas as pd

    df = pd.read_csv(out / "predictions.csv", keep_default_na=False, na_values=[""])
    model = df[(df["source"] == "model") & (df["status"] == "ok")]
    best = model.loc[model.groupby(["case", "strategy"], sort=False)["makespan_ms"].idxmin()]
    print(f"{exp.name}: predicted with {exp.hardware.name} and harness {args.harness}"
          + (f", naive line {naive.a_ms * 1e3:.1f} us + FLOPs at {naive.tflops:.1f} TFLOP/s" if naive else ""))
    print(best[["case", "strategy", "variant", "makespan_ms"]].to_string(index=False))
    if args.reference_ms is not None:
        ref = json.loads((out / "registration.json").read_text())["reference"]
        print(f"model-ref rows: every model row x {ref['ratio']:.4f} (the calibration GEMM {ref['measured_ms']:g} ms "
              f"measured, {ref['model_ms']:.4f} ms modelled)")
        if not 1 / REFERENCE_RATIO_WARN <= ref["ratio"] <= REFERENCE_RATIO_WARN:
            print(f"warning: --reference-ms is {ref['ratio']:.2f} x the profile's own time of that GEMM; lent H200s "
                  f"differ by 7.1% on it: was it timed on the machine {exp.hardware.name} describes, at M = 16384?",
                  file=sys.stderr)
    for p in files:
        print(f"wrote {p}")
    return 0


def cmd_compare(args) -> int:
    from ctasim.accuracy import write_report
    from ctasim.results import ResultsError

    try:
        text, files = write_report(Path(args.predictions), Path(args.results), Path(args.out),
                                   plots=not args.no_plots)
    except ResultsError as e:
        raise SpecError(str(args.results), "(results)", str(e)) from None
    except OSError as e:
        raise SpecError("--out", str(args.out), f"cannot write ({e.strerror})") from None
    print(text.split("## Judging rules")[0].rstrip())
    for p in files:
        print(f"wrote {p}")
    return 0


def _tokens(s: str) -> tuple[int, ...]:
    try:
        v = tuple(int(x) for x in s.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated token counts, got {s!r}") from None
    if not v or any(x < 1 for x in v):
        raise argparse.ArgumentTypeError(f"token counts must be >= 1, got {s!r}")
    return v


DOC_HARDWARE = ("h200-x2-calibrated", "h200-x8-mechanism", "h100-x8-mechanism", "h100-x8", "h200-x8", "b200-x8",
                "gb200-nvl72")
"""The machines docs/advice.md covers (every model of specs/models on each)."""


ADVISE_MAX_CTAS = 12_000_000


def cmd_advise(args) -> int:
    from ctasim import advise as A
    from ctasim.spec import load_hardware, load_model

    if args.doc:
        return _advise_doc(args)
    if not args.model or not args.hardware:
        raise SpecError("advise", "--model/--hardware", "give both (or --doc PATH for every model on every machine)")
    model, hw = load_model(args.model), load_hardware(args.hardware)
    args.tokens = args.tokens or A.TOKENS
    if args.gpus and args.gpus > hw.gpus:
        raise SpecError("--gpus", str(args.gpus), f"profile {hw.name!r} has {hw.gpus} GPUs")
    if args.out:
        writable_folder(args.out)
    exp = A.experiment(model, hw, args.tokens, args.gpus, args.regime)
    _check_size(exp, args.max_ctas, f"advise {model.name}")
    jobs = _jobs(args, [exp])
    df = A.advise(model, hw, args.tokens, args.gpus, args.regime, jobs=jobs, scheduler=args.scheduler)
    text = A.markdown(model, hw, df, args.regime, gpus=args.gpus)
    print(text)
    if args.out:
        from ctasim.results import staged_folder

        out = Path(args.out)
        stem = f"{model.name}-{hw.name}"
        with staged_folder(out, merge=True) as tmp:
            df.to_csv(tmp / f"{stem}.csv", index=False)
            (tmp / f"{stem}.md").write_text(text)
            A.plot(df, tmp / f"{stem}.png", f"{model.name} MLP block on {hw.name} ({args.regime})")
        for ext in ("csv", "md", "png"):
            print(f"wrote {out / f'{stem}.{ext}'}")
    return 0


def _advise_doc(args) -> int:
    """docs/advice.md: every model of specs/models on every machine of DOC_HARDWARE, with plots beside it."""
    from ctasim import advise as A
    from ctasim.results import staged_file, staged_folder
    from ctasim.spec import list_specs, load_hardware, load_model

    doc = Path(args.doc)
    writable_folder(doc.parent, "--doc")
    figs = doc.parent / "advice"
    sections = []
    frames = {}
    for hname in DOC_HARDWARE:
        hw = load_hardware(hname)
        for mname in list_specs()["models"]:
            model = load_model(mname)
            exp = A.experiment(model, hw, A.TOKENS)
            _check_size(exp, args.max_ctas, f"advise {mname} on {hname}")
            df = A.advise(model, hw, A.TOKENS, None, args.regime, jobs=_jobs(args, [exp]), scheduler=args.scheduler)
            frames[(mname, hname)] = df
            sections.append(A.markdown(model, hw, df, args.regime)
                            + f"\n![{mname} on {hname}](advice/{mname}-{hname}.png)\n")
    import pandas as pd  # noqa: PLC0415

    points = pd.concat([A.best_table(df).assign(model=m, hardware=h) for (m, h), df in frames.items()])
    # a strategy that could not run a block's shape makes its comparison incomplete; the ring pair left out of a gated
    # block (no ring kernel fuses a gated activation) leaves the default CTA-pipelining design in the comparison
    missing = {(m, h): {s: why for s, why in A.dropped(load_model(m), load_hardware(h), A.TOKENS).items()
                        if s != "ctapipe-ring"} for m, h in frames}
    incomplete = {key for key, left in missing.items() if left}
    summary = A.machine_summary(points, incomplete)
    head = [
        "# Will CTA-pipelining help my model on my machine?",
        "",
        "Generated by `ctasim advise --doc docs/advice.md` (a test keeps it current): the MLP block of every model in",
        "`specs/models/` on every machine below, every strategy at "
        + ", ".join(map(str, A.TOKENS)) + " tokens, "
        f"{args.regime} clocks. `ctasim advise --model NAME --hardware NAME [--tokens ...] [--gpus N]` answers one case.",
        "",
        "Read the verdict column: the best CTA-pipelined strategy (ctapipe on 2 GPUs -- the fastest of the simulator's",
        "default design and ctahw's variants the profile models, named where a variant won, or, for blocks whose ops the",
        "chain kernel fuses, its persistent ring pair `ctapipe-ring` -- or hybrid: TP groups pipelined between them)",
        "against the best of the others, on the whole machine, and the faster ctapipe design against micro-batching and",
        "TP on two GPUs. Only `h200-x2-calibrated` was measured; `h200-x8-mechanism` is derived",
        "from the 2xH200 mechanism profile for the whole HGX host, and `h100-x8-mechanism` from it with the H100",
        "datasheet's L2 and HBM (`ctasim.profiles`); the others (H100 and H200 HGX, B200 HGX, GB200 NVL72) are datasheet",
        "profiles with flat tile rates (no memory hierarchy), and no multi-GPU strategy has yet been predicted before it",
        "was measured (the trust lines under each table).",
        "",
        f"**In short (model estimates):** a CTA-pipelined strategy is the fastest at {int(summary['wins'].sum())} of "
        f"{len(points)} (model, machine, token count) points, {int(summary['complete_wins'].sum())} of them in blocks "
        "where every strategy ran (elsewhere a strategy could not split the block's shape, 'Not run' under its table, "
        "and the comparison is incomplete). By machine:",
        "",
        *A.summary_markdown(summary),
        "",
        "On the two mechanism profiles ctapipe is priced a second time with the one-CTA-per-tile grids of",
        "ctahw's variants keeping their weights' L2 reuse (registered plans 83 and 84 measured the producer alone",
        "anywhere between that level and the profile's near the edge of that reuse; the trust lines under each table):",
        "the answer changes between the two ends at "
        f"{sum(len(A.kept_changes(df)) for df in frames.values())} of the "
        f"{sum(int(df['kept_us'].notna().sum()) for df in frames.values())} points priced so.",
        "",
        "Most blocks here",
        "are gated (SwiGLU; GPT-3 and Falcon use GeLU): the gate-and-up GEMM computes 2 × I columns against the down",
        "projection's I, so it holds two thirds of the block's FLOPs, and placing one layer per GPU can at best run",
        "1.5× faster than one GPU, where tensor parallelism splits both layers evenly.",
        "",
    ]
    with staged_folder(figs) as tmp:
        for (mname, hname), df in frames.items():
            A.plot(df, tmp / f"{mname}-{hname}.png", f"{mname} MLP block on {hname} ({args.regime})")
    with staged_file(doc) as tmp_doc:
        tmp_doc.write_text("\n".join(head) + "\n" + "\n".join(sections))
    print(f"wrote {doc} and {figs}/ ({len(frames)} plots)")
    return 0


def cmd_list(args) -> int:
    for kind, names in list_specs().items():
        print(f"{kind}: {', '.join(names)}")
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=_int_at_least(0), default=0, help="seed of the tile-time jitter (default 0)")
    p.add_argument("--jitter", type=_jitter, default=0.0,
                   help="relative tile-time noise in [0, 0.5), 0 = deterministic (default)")
    _max_ctas(p)
    p.add_argument("--no-check", action="store_true", help="skip the invariant checks on each trace")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def _parallel(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=_nonneg_int, default=0,
                   help="local processes for the runs (default 0: one per core when the experiment is large enough "
                        "to gain, else 1); results are the serial run's")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on a Dask distributed cluster at ADDRESS (tcp://host:port; needs dask[distributed])")


def _max_ctas(p: argparse.ArgumentParser) -> None:
    from ctasim.cases import MAX_CTAS

    p.add_argument("--max-ctas", type=_positive_int, default=MAX_CTAS,
                   help=f"refuse experiments estimated above this many simulated CTAs (default {MAX_CTAS:,})")


def parser() -> argparse.ArgumentParser:
    ap = OneLineParser(prog="ctasim", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="simulate an experiment and print the summary table")
    p.add_argument("experiment", nargs="?", default="default", help="experiment name or TOML path (default: default)")
    p.add_argument("--out", help="folder for the summary table (and plots with --plots)")
    p.add_argument("--plots", action="store_true", help="also write the figure-style plots into --out")
    p.add_argument("--format", choices=("csv", "parquet"), default="csv")
    _common(p)
    _parallel(p)
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("sweep", help="run an experiment over a grid of parameter values")
    p.add_argument("experiment")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=V1,V2",
                   help="hardware.<field>, m, k, n, tile_m, tile_n, raster or layers; repeat for a grid")
    p.add_argument("--out", required=True, help="results file (.csv or .parquet)")
    _common(p)
    _parallel(p)
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
    p.add_argument("--seed", type=_int_at_least(0), default=0, help="seed of the tile-time draws (default 0)")
    p.add_argument("--hardware", default=None, help="predict with this profile (specs/hardware) instead of the "
                                                    "experiment's")
    p.add_argument("--force", action="store_true", help="replace an existing --out folder")
    p.add_argument("--no-schedules", action="store_true",
                   help="leave out the per-CTA schedules of the pipelined strategies (compare judges makespans only)")
    p.add_argument("--reference-ms", type=_positive_ms, default=None,
                   help="the calibration GEMM (16384 x 8192 x 8192, sequential; reg49-reference m=16384) as timed on "
                        "the machine: adds every model row scaled by it over the model's time (source model-ref; "
                        "registered plan 63)")
    _max_ctas(p)
    p.set_defaults(func=cmd_predict)
    p = sub.add_parser("compare", help="accuracy report: registered predictions against a ctahw run")
    p.add_argument("predictions", help="a ctasim predict folder (predictions.csv, registration.json)")
    p.add_argument("results", help="a ctahw run EXPERIMENT --out folder (results.csv)")
    p.add_argument("--out", default="report", help="report folder (default: report)")
    p.add_argument("--no-plots", action="store_true",
                   help="tables and report only: no predicted-vs-measured scatter, no per-CTA overlays (the figures "
                        "take most of a report's time)")
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("advise", help="which strategy is fastest for a model's MLP block on a machine, per token count")
    p.add_argument("--model", help="a model from specs/models (ctasim list)")
    p.add_argument("--hardware", help="a hardware profile from specs/hardware")
    p.add_argument("--tokens", type=_tokens, default=None, help="token counts, comma-separated (default "
                                                                 "1024,2048,4096,8192,16384,32768)")
    p.add_argument("--gpus", type=_positive_int, default=None, help="GPUs to use (default: the profile's)")
    p.add_argument("--regime", choices=("burst", "sustained"), default="burst", help="clock regime (default burst)")
    p.add_argument("--out", help="folder for <model>-<hardware>.csv, .md and .png")
    p.add_argument("--doc", help="write the advice for every model on every documented machine to this markdown "
                                 "file (and its plots beside it, in advice/)")
    p.add_argument("--max-ctas", type=_positive_int, default=ADVISE_MAX_CTAS,
                   help=f"refuse above this many simulated CTAs (default {ADVISE_MAX_CTAS:,}: most of an advice's runs "
                        "are closed-form kernels, cheaper per CTA than a pipelined run)")
    _parallel(p)
    p.set_defaults(func=cmd_advise)
    sub.add_parser("validate", add_help=False, help="the post-hoc validation on the committed 2xH200 runs "
                                                      "(`ctasim validate --help`)")
    p = sub.add_parser("list", help="list the shipped specs")
    p.set_defaults(func=cmd_list)
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["validate"]:  # its own options (ctasim.validation.pipeline), parsed there
        from ctasim.validation.pipeline import main as validate_main

        return validate_main(argv[1:])
    args = parser().parse_args(argv)
    client = None
    try:
        if getattr(args, "scheduler", None):  # reach the cluster before anything runs (one line if not)
            from ctasim.parallel import connect

            client = connect(args.scheduler)
            args.scheduler = client
        return args.func(args)
    except SpecError as e:
        print(f"ctasim: error: {e}", file=sys.stderr)
        return EXIT_SPEC
    except BrokenPipeError:  # output piped into `head` and closed: not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        if client is not None:
            client.close()


if __name__ == "__main__":
    sys.exit(main())
