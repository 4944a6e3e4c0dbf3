"""The post-hoc validation pipeline: the simulator against the committed 2026-11-29 runs, in one command.

    ctasim validate [RESULTS] [--runs DIR] [--out DIR] ...        (also: python -m ctasim.validation)

One pass over the committed measurements of the 2×H200 machine, each step a module of this package:

1. :mod:`ctasim.validation.baselines` fits what the profile cannot measure (``kernel_fixed_ns``,
   ``max_clock_boost``, the timing harness) on the baseline runs' components at ``FIT_MS`` and judges every other M;
2. :mod:`ctasim.validation.ctapipe` fits the CTA-pipelined kernel configs on per-CTA traces at its ``FIT_MS`` and
   judges every other trace;
3. :mod:`ctasim.validation.traces` compares each measured trace with its simulated one (makespan, per-CTA start and
   end errors, dequeue order) -- the comparison ``ctasim compare`` (:mod:`ctasim.accuracy`) also uses for registered
   runs' traced runs.

Writes one report folder (``report.md``, CSV tables, plots, ``provenance.json``), whole or not at all. Every figure
here is **post-hoc** (docs/validation.md): the registered path is ``ctasim predict`` -> ``ctahw run`` -> ``ctasim
compare``.

Left out: anything measured after 2026-11-29 (the registered runs have their own reports).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pandas as pd

from ctasim.engine import simulate
from ctasim.spec import Hardware, Layer, Strategy, Workload
from ctasim.strategies import build_plans
from ctasim.validation.baselines import (FIT_MS, Harness, ValidationInputError, apply_fit, choice_agreement, fit,
                                         load_cases, summary, validate)

__all__ = ["main", "ctapipe_section", "CTAPIPE_RUN", "CTAPIPE_FIT_ALSO", "CTAPIPE_ALSO", "CTAPIPE_TILE_TABLES"]

CTAPIPE_RUN = "2026-11-29-ctapipe"
CTAPIPE_FIT_ALSO = ("2026-11-29-ctapipe-range", "2026-11-29-ctapipe-trace3")
CTAPIPE_ALSO = ("2026-11-29-ctapipe-run1", "2026-11-29-ctapipe-rerun3", "2026-11-29-ctapipe-clean")
"""The committed ctapipe runs (folders of bench/results/hw) behind the committed profile: the main run (fitted at
``ctasim.validation.ctapipe.FIT_MS``, judged at the others), the runs fitted on at those M values too, and the runs judged in
full; :func:`main`'s defaults, bench/validate_new_variants.py and the CI gates take them from here."""

# ------------------------------------------------------------------------------------------------ report
def _md(df: pd.DataFrame, floatfmt: str = ".2f") -> str:
    cols = list(df.columns)
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in df.itertuples(index=False):
        out.append("| " + " | ".join(format(v, floatfmt) if isinstance(v, float) else str(v) for v in r) + " |")
    return "\n".join(out)


def _per_cta_demo(hw: Hardware, out: Path, ms=(1024, 4096, 16384)) -> pd.DataFrame:
    """The per-CTA comparison on CTA-pipelined plans, against a stand-in "measured" trace (1% tile jitter)."""
    from ctasim import plots
    from ctasim.validation.traces import compare

    rows = []
    for m in ms:
        layer = Layer(m, 8192, 8192, 128, 256)
        plan = build_plans(Strategy("ctapipe"), Workload(f"chain2-{m}", "bf16", (layer, layer)), hw, 2, f"m={m}")[0]
        meas, sim = simulate(plan, hw, seed=3, jitter=0.01), simulate(plan, hw)
        c = compare(meas, sim, plan)
        rows.append({"m": m, **{k: v for k, v in c.summary().items()}})
        if m == ms[0]:
            plots.gantt_pair(meas, sim, out / f"gantt-ctapipe-m{m}.png",
                             title=f"ctapipe M={m}: stand-in measured (1% jitter) vs simulated",
                             labels=("stand-in 'measured' (simulated, 1% tile jitter)", "simulated"))
    return pd.DataFrame(rows)


CTAPIPE_TILE_TABLES = ((1024, "cutlass_ctapipe"), (4096, "cutlass_ctapipe_c21"))
"""Measured traces committed as reduced tile tables (``ctapipe-tiles-m<M>-<variant>.csv.gz``) for the CI
gates: held-out M, the 1x1 kernel and the best variant."""


def ctapipe_section(hw0: Hardware, hw: Hardware, folder: Path, also: list[Path], out: Path,
                    fit_also: list[Path] = ()) -> list[str]:
    """Fit the ctapipe kernel variants on the FIT_MS traces of ``folder`` and ``fit_also``, judge every trace,
    write CSVs, plots, tile tables."""
    from ctasim import plots
    from ctasim.validation import ctapipe as VC

    traces = VC.load_folder(folder)
    missing = [str(p) for p in fit_also if not (Path(p) / VC.TRACES_FILE).exists()]
    if missing:
        raise FileNotFoundError(f"--ctapipe-fit-also: no {VC.TRACES_FILE} in {', '.join(missing)}")
    both = {Path(p).resolve() for p in fit_also} & {Path(p).resolve() for p in also}
    if both:
        raise ValueError(f"{', '.join(map(str, sorted(both)))} given both to fit on and to judge in full")
    extra = [VC.load_folder(p) for p in fit_also]
    fields, evidence = VC.fit(traces + [t for e in extra for t in e], hw0)
    hw_c = VC.apply_fit(hw, fields)
    df, sims = VC.judge(traces, hw_c)
    df_extra = [VC.judge(e, hw_c)[0] for e in extra]
    base = hw0.config(128, 256)
    before = {k: dict(sm_tflops=base.sm_tflops, tile_fixed_ns=base.tile_fixed_ns, wave_slowdown=0.0,
                      wave_slowdown_waves=1.0, cta_launch_ns=0.0, signal_hold_ns=0.0, signal_ns=0.0, tile_cv=0.0) for k in fields}
    df_before, _ = VC.judge(traces, VC.apply_fit(hw, before))
    others = [VC.judge(VC.load_folder(p), hw_c, fit_ms=())[0] for p in also if (p / VC.TRACES_FILE).exists()]
    cols = ["run", "m", "variant", "role", "stalled", "makespan_meas_us", "makespan_sim_us", "makespan_error",
            "start_median_frac", "start_p95_frac", "end_median_frac", "end_p95_frac", "dequeue_spearman",
            "start_order_spearman", "consumer_source", "first_tile_delay_L1_meas_ns", "first_tile_delay_L1_sim_ns", "busy_gpu0_meas", "busy_gpu0_sim",
            "busy_gpu1_meas", "busy_gpu1_sim", "overlap_L0-L1_meas", "overlap_L0-L1_sim"]
    allrows = pd.concat([df] + df_extra + others, ignore_index=True)
    allrows[cols].round(5).to_csv(out / "ctapipe.csv", index=False)
    summ = VC.summary(df)
    summ.round(3).to_csv(out / "ctapipe-summary.csv", index=False)
    summ_all = VC.summary(allrows)
    evidence.to_csv(out / "ctapipe-fit.csv", index=False)
    plots.error_vs_m(df.assign(error=df["makespan_error"], series=df["variant"]), out / "ctapipe-error-vs-m.png",
                     title=f"{folder.name}: CTA-pipelining makespan, simulated vs measured traces")
    for m, v in ((16384, "cutlass_ctapipe_c21"), (1024, "cutlass_ctapipe")):
        mt = next((t for t in traces if t.m == m and t.variant == v), None)
        if mt is not None:
            plots.gantt_pair(mt.trace, sims[(mt.run, m, v)][1], out / f"gantt-ctapipe-hw-m{m}-{v}.png",
                             title=f"{v} M={m}: measured trace (2xH200) vs simulated ({hw_c.name} + ctapipe fit)",
                             labels=("measured (%globaltimer)", "simulated"))
    for m, v in CTAPIPE_TILE_TABLES:
        mt = next((t for t in traces if t.m == m and t.variant == v), None)
        if mt is not None:
            VC.save_tiles(mt, out / f"ctapipe-tiles-m{m}-{v}.csv.gz")
    show = ["m", "variant", "role", "stalled", "makespan_meas_us", "makespan_sim_us", "makespan_error", "start_median_frac",
            "start_p95_frac", "end_median_frac", "dequeue_spearman", "start_order_spearman", "first_tile_delay_L1_meas_ns",
            "first_tile_delay_L1_sim_ns"]
    lines = ["## CTA-pipelining: measured per-CTA traces (" + folder.name + ")", "",
             "Kernel variants fitted on the traces at M in " + str(VC.FIT_MS) + " of " + ", ".join(
                 [folder.name] + [p.name for p in fit_also]) + "; judged on the others. Makespan = "
             "first CTA start to last tile end in the trace (no harness); per-CTA errors as fractions of it. "
             f"Traces with a first-wave store stall (the consumer's first tile more than {VC.STALL_NS / 1e3:.0f} us "
             "later than simulated: `stalled`) are listed but left out of the summaries.", "",
             "### Fitted kernel-config fields", "", _md(evidence[["kernel", "field", "value", "fitted to"]], ".4f"), "",
             "### Accuracy on held-out M", "", _md(summ), "",
             "Every held-out trace of every run judged here (this run, the runs fitted on too, the other runs; "
             "stalls left out):", "", _md(summ_all), "",
             "### Every trace", "", _md(df[show], ".4f"), "",
             "### Without the fitted variant configs (the default 128x256 config for every layer)", "",
             _md(VC.summary(df_before)), "", _md(df_before[show], ".4f"), ""]
    for e in df_extra:
        lines += [f"### Run fitted on at M in {VC.FIT_MS}, judged at the others: {e['run'].iloc[0]}", "",
                  _md(e[show], ".4f"), ""]
    for o in others:
        lines += [f"### Other run, judged in full: {o['run'].iloc[0]}", "", _md(o[show], ".4f"), ""]
    lines += ["Plots: `ctapipe-error-vs-m.png`, `gantt-ctapipe-hw-m16384-cutlass_ctapipe_c21.png`, "
              "`gantt-ctapipe-hw-m1024-cutlass_ctapipe.png`. Tile tables for the CI gates: "
              + ", ".join(f"`ctapipe-tiles-m{m}-{v}.csv.gz`" for m, v in CTAPIPE_TILE_TABLES) + ".", ""]
    print(_md(summ))
    return lines


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, writable_folder
    from ctasim.results import staged_folder
    from ctasim.spec import SpecError
    from ctasim.trace import TraceFileError

    ap = OneLineParser(prog="ctasim validate", description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="?", default=None,
                    help="ctahw run results folder (baselines.csv; default: RUNS/2026-11-29-run2)")
    ap.add_argument("--runs", type=Path, default=None,
                    help="the folder of committed measurements (a checkout's bench/results/hw; default: the one beside "
                         "this package when it runs from a checkout)")
    ap.add_argument("--profile", default="h200-x2-calibrated")
    ap.add_argument("--also", nargs="*", default=None,
                    help="other runs judged in full with the same fit (nothing fitted on them; default RUNS/2026-11-29-run1)")
    ap.add_argument("--out", default="out/validation",
                    help="report folder (default out/validation; the committed report is bench/results/validation, "
                         "rewritten only when named here)")
    ap.add_argument("--ctapipe", default=None,
                    help=f"ctapipe results folder with per-CTA traces (ctapipe_traces.trace.npz; default RUNS/{CTAPIPE_RUN}); "
                         "'' skips")
    ap.add_argument("--ctapipe-also", nargs="*", default=None, help="other ctapipe runs judged in full with the same fit")
    ap.add_argument("--ctapipe-fit-also", nargs="*", default=None,
                    help="other ctapipe runs whose traces at the fitting M values are fitted on too (the others judged)")
    args = ap.parse_args(argv)
    try:
        runs = args.runs or Path(__file__).resolve().parents[2] / "bench" / "results" / "hw"
        if not runs.is_dir():
            raise ValidationInputError(f"{runs}: no committed measurements there; give --runs DIR (a checkout's "
                                       f"bench/results/hw)")
        args.results = args.results or str(runs / "2026-11-29-run2")
        args.also = [str(runs / "2026-11-29-run1")] if args.also is None else args.also
        args.ctapipe = str(runs / CTAPIPE_RUN) if args.ctapipe is None else args.ctapipe
        args.ctapipe_also = [str(runs / r) for r in CTAPIPE_ALSO] if args.ctapipe_also is None else args.ctapipe_also
        args.ctapipe_fit_also = ([str(runs / r) for r in CTAPIPE_FIT_ALSO] if args.ctapipe_fit_also is None
                                 else args.ctapipe_fit_also)
        out = writable_folder(args.out)
        with staged_folder(out, merge=True) as tmp:
            _validate_main(args, tmp, argv)
    except (ValidationInputError, TraceFileError, FileNotFoundError) as e:
        print(f"ctasim validate: error: {e}", file=sys.stderr)
        return 2
    except SpecError as e:
        print(f"ctasim validate: error: {e}", file=sys.stderr)
        return 2
    return 0


def _validate_main(args, out: Path, argv) -> None:
    import json

    from ctasim import plots
    from ctasim.spec import load_hardware

    hw0 = load_hardware(args.profile)
    cases = load_cases(args.results)
    fields, harness, evidence = fit(cases, hw0)
    hw = apply_fit(hw0, fields)
    df = validate(cases, hw, harness)
    # The reverse split: fitted on the other M values, judged on these (a check that the fit is stable).
    rev_ms = tuple(sorted({c.m for c in cases} - set(FIT_MS)))
    rf, rh, rev_evidence = fit(cases, hw0, rev_ms)
    rev = validate(cases, apply_fit(hw0, rf), rh, rev_ms)
    plain = validate(cases, hw0, Harness(0.0, hw0.kernel_gap_ns, 0.0))
    plain_nofit = validate(cases, apply_fit(hw0, {"kernel_fixed_ns": 0.0, "max_clock_boost": 1.0}), harness)
    others = [validate([dataclasses.replace(c) for c in load_cases(p)], hw, harness, fit_ms=()) for p in args.also]

    df["series"] = [f"microbatch c={c}" if s == "microbatch" else s for s, c in zip(df["strategy"], df["chunks"])]
    df.round(5).to_csv(out / "validation.csv", index=False)
    summ = summary(df)
    summ.round(3).to_csv(out / "summary.csv", index=False)
    agree = choice_agreement(df)
    agree.to_csv(out / "choices.csv", index=False)
    evidence.to_csv(out / "fit.csv", index=False)
    plots.error_vs_m(df, out / "error-vs-m.png", title=f"{Path(args.results).name}: simulated vs measured makespan")
    demo = _per_cta_demo(hw, out)
    demo.round(5).to_csv(out / "per-cta-demo.csv", index=False)

    lines = [
        f"# Validation: {Path(args.results).name} vs `{args.profile}`", "",
        "Written by `ctasim validate` (see docs/validation.md); CUTLASS backend rows; makespan = the "
        "harness's start-to-end event time; error = (simulated - measured) / measured.", "",
        f"Fitted on M in {FIT_MS} (components only), judged on the other M values.", "",
        "## Fitted parameters", "", _md(evidence, ".3f"), "",
        "## Accuracy on held-out M (this fit)", "", _md(summ), "",
        "## Reverse split (fitted on " + ", ".join(map(str, rev_ms)) + f"; judged on {FIT_MS})", "",
        _md(summary(rev)), "", _md(rev_evidence, ".3f"), "",
        "## Without the model change or the harness (same held-out rows)", "",
        "Profile fields only, no harness model:", "", _md(summary(plain)), "",
        "Harness model, but kernel_fixed_ns = 0 and max_clock_boost = 1:", "", _md(summary(plain_nofit)), "",
        "## Best chunk count and strategy ranking per M", "", _md(agree), "",
        "## Every case", "", _md(df[["case", "role", "measured_ms", "simulated_ms", "error"]], ".4f"), "",
    ]
    for p, o in zip(args.also, others):
        lines += [f"## Other run, judged in full: {Path(p).name}", "", _md(summary(o.assign(role="held_out"))), ""]
    lines += ["## Per-CTA comparison, CTA-pipelining (stand-in measured traces)", "",
              "No per-CTA hardware traces exist yet; 'measured' here is the simulator with 1% tile jitter, to show "
              "the figures the comparison reports. Not evidence of accuracy.", "",
              _md(demo[["m", "makespan_error", "start_median_frac", "start_p95_frac", "end_median_frac",
                        "dequeue_spearman", "tiles_matched"]], ".4f"), "",
              "Plots: `error-vs-m.png`, `gantt-ctapipe-m1024.png`.", ""]
    if args.ctapipe:
        lines += ctapipe_section(hw0, hw, Path(args.ctapipe), [Path(p) for p in args.ctapipe_also], out,
                                 [Path(p) for p in args.ctapipe_fit_also])
    (out / "report.md").write_text("\n".join(lines))
    prov = {"command": "ctasim validate " + " ".join(argv or []), "results": str(args.results),
            "profile": args.profile, "fit_ms": FIT_MS, "harness": dataclasses.asdict(harness), "fitted": fields}
    (out / "provenance.json").write_text(json.dumps(prov, indent=1, default=str) + "\n")
    print(_md(summ))
    print()
    print(_md(agree))
    print(f"\nwrote {args.out}/report.md, validation.csv, summary.csv, choices.csv, fit.csv, per-cta-demo.csv, plots")


