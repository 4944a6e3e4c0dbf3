"""Post-hoc: registered block experiments' model error against the power cap's onset (no GPU).

    python bench/posthoc_onset.py RUN_FOLDER EXP [EXP ...] [--onsets 52.9,45,40,35] [--out DIR]

The profile's ``clock_onset_ns`` (busy time from a rested start before the power cap slows kernel tiles; h200-x1
profiles: 52.9 ms, the median of runs that spread 31-70 ms on one H200) decides whether a block of ~50 ms pays the
sustained slowdown. For each experiment (its registration's harness, the profile it names) and each onset, the
model's makespan against the committed measurement ``RUN_FOLDER/EXP/results.csv``; writes ``onset.csv`` (exp, m,
measured_ms, onset_ms, model_ms, error_pct) into ``--out`` if given, and prints the errors. Post-hoc: it asks what
onset the measurement is consistent with; nothing here changes the profile. Bad input: one line, exit 2.
The profiles are taken with the clock's one step (``ctasim.predict.one_step``), as the plans judged here were
registered; ``bench/posthoc_clock_curve.py`` judges the clock curve, and with the reuse law they had when the table
was written (2026-12-03): a panel's reuse across waves an LRU of the whole L2, as before registered plan 67's
adoption on an H200 (``ctasim.profiles.before_h200_reuse``).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402
from posthoc_drift_form import judged  # noqa: E402

from ctasim.cases import load_experiment  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.predict import one_step  # noqa: E402
from ctasim.profiles import before_h200_reuse  # noqa: E402


def errors(run: Path, exps, onsets_ms) -> pd.DataFrame:
    """Each experiment's sequential cases under its profile at each onset (``posthoc_drift_form.judged``, one
    predictor per onset), in the order given: exp, m, measured_ms, onset_ms, model_ms, error_pct."""
    parts = []
    for i, e in enumerate(exps):
        hw = before_h200_reuse(load_experiment(e).hardware)  # a table made before plan 67's adoption on an H200
        hw = one_step(hw)  # the one step whose onset this varies (a clock curve would ignore it)
        preds = {onset: (dataclasses.replace(hw, clock_onset_ns=onset * 1e6), ("model",)) for onset in onsets_ms}
        j = judged(str(run.resolve()), e, preds)  # an absolute run folder, not one under bench/results/hw
        parts.append(pd.DataFrame({"exp": e, "m": j.m.astype(int), "measured_ms": j.measured_ms, "onset_ms": j.source,
                                   "model_ms": j.predicted_ms, "error_pct": 100 * j.error,
                                   "_exp": i, "_onset": j.source.map({o: n for n, o in enumerate(onsets_ms)})}))
    d = pd.concat(parts, ignore_index=True).sort_values(["_exp", "_onset", "m"], kind="stable")
    return d.drop(columns=["_exp", "_onset"]).reset_index(drop=True)


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_onset.py", description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("exps", nargs="+")
    ap.add_argument("--onsets", default="52.9,45,40,35")
    ap.add_argument("--out", type=Path)
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        onsets = [float(x) for x in args.onsets.split(",")]
    except ValueError:
        onsets = []
    if not onsets or min(onsets) <= 0:
        print(f"posthoc_onset: --onsets must be positive ms, got {args.onsets!r}", file=sys.stderr)
        return 2
    for e in args.exps:
        if not (args.run / e / "results.csv").is_file() or not (ROOT / "bench/predictions" / e / "registration.json").is_file():
            print(f"posthoc_onset: {e}: no {args.run / e / 'results.csv'} or no registration", file=sys.stderr)
            return 2
    d = errors(args.run, args.exps, onsets)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        d.round(4).to_csv(args.out / "onset.csv", index=False)
    pd.set_option("display.width", 200)
    print(d.pivot_table(index=["exp", "m"], columns="onset_ms", values="error_pct").round(2).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
