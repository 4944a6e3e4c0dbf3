"""Post-hoc: registered block experiments' model error against the power cap's onset (no GPU).

    python bench/posthoc_onset.py RUN_FOLDER EXP [EXP ...] [--onsets 52.9,45,40,35] [--out DIR]

The profile's ``clock_onset_ns`` (busy time from a rested start before the power cap slows kernel tiles; h200-x1
profiles: 52.9 ms, the median of runs that spread 31-70 ms on one H200) decides whether a block of ~50 ms pays the
sustained slowdown. For each experiment (its registration's harness, the profile it names) and each onset, the
model's makespan against the committed measurement ``RUN_FOLDER/EXP/results.csv``; writes ``onset.csv`` (exp, m,
measured_ms, onset_ms, model_ms, error_pct) into ``--out`` if given, and prints the errors. Post-hoc: it asks what
onset the measurement is consistent with; nothing here changes the profile. Bad input: one line, exit 2.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from ctasim.cases import load_experiment  # noqa: E402
from ctasim.cliargs import OneLineParser  # noqa: E402
from ctasim.harness import load_harness  # noqa: E402
from ctasim.predict import predict  # noqa: E402


def errors(run: Path, exps, onsets_ms) -> pd.DataFrame:
    rows = []
    for e in exps:
        res = pd.read_csv(run / e / "results.csv")
        res = res[(res.status == "ok") & (res.kind == "sequential")]
        measured = dict(zip(res.m, res.makespan_ms))
        reg = json.loads((ROOT / "bench/predictions" / e / "registration.json").read_text())
        harness = load_harness(reg["harness"]["name"])
        exp = load_experiment(e)
        for onset in onsets_ms:
            hw = dataclasses.replace(exp.hardware, clock_onset_ns=onset * 1e6)
            p = predict(dataclasses.replace(exp, hardware=hw), harness, None)
            for r in p[(p.source == "model") & (p.kind == "sequential")].itertuples():
                if r.m in measured:
                    rows.append({"exp": e, "m": int(r.m), "measured_ms": measured[r.m], "onset_ms": onset,
                                 "model_ms": r.makespan_ms, "error_pct": 100 * (r.makespan_ms / measured[r.m] - 1)})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("exps", nargs="+")
    ap.add_argument("--onsets", default="52.9,45,40,35")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
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
