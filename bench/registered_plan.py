"""The command line of a registered plan whose figures are the model's beside traced runs (no GPU): ``--register``
writes the registration, ``--judge RUN_DIR`` judges a measurement against it.

    python bench/planNN_....py --register [--out REGISTRATION]
    python bench/planNN_....py --judge RUN_DIR [--registered REGISTRATION] [--out RESULTS]

``--register`` writes ``predicted.csv`` into the registration folder and refuses one that holds it already (a
registration is never overwritten). ``--judge`` reads the registration's ``predicted.csv`` and the measurement, sets
the plan's cases and claims and writes ``cases.csv`` and ``claims.csv``, the claims labelled registered or post-hoc by
``ctasim.accuracy.provenance_order`` (git shows the registration before the measurement, or not). A missing
registration, run or case is refused in one line (:class:`JudgeError`), exit 2, nothing written. Each plan supplies
what differs (:class:`Plan`); ``bench/plan55_order_tiles.py`` and ``bench/plan56_gradual.py`` are two.
"""

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ctasim.accuracy import provenance_order  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402


class JudgeError(ValueError):
    """A registration or a run that cannot be judged (one line)."""


def traced_runs(run_dir: Path, experiment: str, pairs, why: str) -> dict:
    """The first traced run of every (case, strategy) in ``run_dir/experiment``'s chain-kernel trace bundle
    (``posthoc_order_mainloop.first_runs``), by that key; :class:`JudgeError` where the bundle is missing (``why``
    says what should have written it), cannot be read, or has no run of one of ``pairs``."""
    import posthoc_order_mainloop as pom  # noqa: PLC0415  (the chain-kernel plans' module, not every plan's)
    from ctasim.trace import TraceFileError  # noqa: PLC0415

    bundle = run_dir / experiment / pom.BUNDLE
    if not bundle.is_file():
        raise JudgeError(f"no {bundle} ({why})")
    try:
        traces = dict(pom.first_runs(bundle))
    except (TraceFileError, OSError, KeyError, ValueError) as e:
        raise JudgeError(f"{bundle}: not a trace bundle of this plan ({e})") from None
    missing = [p for p in pairs if p not in traces]
    if missing:
        raise JudgeError(f"{bundle}: no traced run of {missing[0][0]} {missing[0][1]} ({len(missing)} missing)")
    return traces


@dataclass(frozen=True)
class Plan:
    """What a registered plan's script supplies: its name (the messages' prefix and ``prog``), the first line of its
    docstring, the default registration and results folders, and its four steps -- the model's figures
    (``register() -> DataFrame``), the measured ones (``measured(run_dir) -> DataFrame``, raising :class:`JudgeError`),
    the cases (``cases(predicted, measured)``) and the claims (``claims(cases, provenance)``) -- and the measured file
    whose commit the registration's is compared with (``first_file(run_dir)``)."""

    name: str
    description: str
    registered: Path
    results: Path
    register: Callable[[], pd.DataFrame]
    measured: Callable[[Path], pd.DataFrame]
    cases: Callable[[pd.DataFrame, pd.DataFrame], pd.DataFrame]
    claims: Callable[[pd.DataFrame, str], pd.DataFrame]
    first_file: Callable[[Path], Path]


def main(plan: Plan, argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog=f"python bench/{plan.name}.py", description=plan.description)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--register", action="store_true", help="write the registration (predicted.csv) into --out")
    mode.add_argument("--judge", type=Path, metavar="RUN_DIR", help="the plan's measurement (its call's folder)")
    ap.add_argument("--registered", type=Path, default=plan.registered)
    ap.add_argument("--out", type=Path)
    args = parse_outputs(ap, argv, folders=("--out",))
    if args.register:
        out = args.out or plan.registered
        if (out / "predicted.csv").exists():
            print(f"{plan.name}: {out / 'predicted.csv'} exists (a registration is never overwritten)", file=sys.stderr)
            return 2
        pred = plan.register()
        out.mkdir(parents=True, exist_ok=True)
        pred.to_csv(out / "predicted.csv", index=False, float_format="%.4f")
        print(pred.to_string(index=False))
        return 0
    out = args.out or plan.results
    reg = args.registered / "predicted.csv"
    try:
        if not reg.is_file():
            raise JudgeError(f"no {reg}")
        pred = pd.read_csv(reg)
        meas = plan.measured(args.judge)
    except JudgeError as e:
        print(f"{plan.name}: {e}", file=sys.stderr)
        return 2
    c = plan.cases(pred, meas)
    prov = provenance_order(reg, plan.first_file(args.judge))
    cl = plan.claims(c, ("registered: " if prov.registered else "post-hoc: ") + prov.why)
    out.mkdir(parents=True, exist_ok=True)
    c.to_csv(out / "cases.csv", index=False, float_format="%.4f")
    cl.to_csv(out / "claims.csv", index=False)
    with pd.option_context("display.width", 250, "display.max_colwidth", 120):
        print(c.round(2).to_string(index=False))
        print()
        print(cl.to_string(index=False))
    return 0
