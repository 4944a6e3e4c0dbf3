"""Post-hoc: the two L2 reuse laws on every committed one-H200 measurement (no GPU)

    python bench/posthoc_reuse_law.py [--out bench/results/posthoc-reuse-law]

Registered plans 67 and 68 ask whether a GEMM panel's reuse across waves follows the measured L2 survival curve
(``h200-x1-calibrated-reuse``, ``l2_reuse_law = "survival"``) or an LRU of the whole L2 (``h200-x1-calibrated``). This
prices every committed one-GPU measurement on an H200 (each ``bench/results/hw/**/EXP/results.csv`` whose experiment
is a one-GPU spec under ``specs/experiments``, not a shared device; ``EXP`` measured on several calls counts once per
call) under both, the experiment's profile replaced by each (an experiment registered on ``h200-x2-calibrated``, as
plans 1-3 were, is priced by the one-H200 profile here), with the harness the registrations use
(``posthoc_h100_exposed.model_rows``), and writes ``cases.csv`` (per call, experiment, case, strategy and law:
measured, predicted, error %) and ``summary.csv`` (per class of strategy and law: cases, MAPE, worst; and the cases
where the laws' errors are more than 0.5 points apart). Every figure is post-hoc: these runs were seen, and the twin
was registered (plan 67) before this table was made; nothing is fitted. ~3 min on 2 cores.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import posthoc_h100_exposed as ph  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

LAWS = {"lru": "h200-x1-calibrated", "survival": "h200-x1-calibrated-reuse"}
"""Law -> the profile that prices by it."""
HW = ROOT / "bench/results/hw"
APART = 0.5
"""Points of error between the laws above which a case counts as one where they part."""
CLASSES = {"sequential": "sequential", "intragpu": "groups of 8", "intragpu-g4": "groups of 4",
           "intragpu-g2": "pairs", "intragpu-row": "row order"}
"""Strategy -> its class in ``summary.csv`` (any other: ``other``)."""


def measurements(root: Path = HW) -> dict[str, list[Path]]:
    """One-GPU experiment -> the committed calls that measured it (``root/**/EXP/results.csv``, the experiment a spec
    with ``gpus = 1`` and no shared device)."""
    from ctasim.cases import load_experiment  # noqa: PLC0415
    from ctasim.spec import SPECS_DIR  # noqa: PLC0415

    out: dict[str, list[Path]] = {}
    for res in sorted(root.glob("**/results.csv")):
        exp = res.parent.name
        if not (SPECS_DIR / "experiments" / f"{exp}.toml").is_file():
            continue
        out.setdefault(exp, []).append(res.parent.parent)
    return {e: calls for e, calls in out.items()
            if (x := load_experiment(e)).gpus == 1 and not x.shared_device}


def cases(found: dict[str, list[Path]]) -> pd.DataFrame:
    from ctasim.spec import load_hardware  # noqa: PLC0415

    pred = ph.model_rows({law: load_hardware(p) for law, p in LAWS.items()}, list(found))
    parts = []
    for exp, calls in found.items():
        for call in calls:
            r = pd.read_csv(call / exp / "results.csv").query("status == 'ok'")
            parts.append(r[["case", "strategy", "makespan_ms"]].assign(
                experiment=exp, call=str(call.relative_to(HW))))
    meas = pd.concat(parts, ignore_index=True).rename(columns={"makespan_ms": "measured_ms"})
    c = meas.merge(pred.rename(columns={"profile": "law"}), on=["experiment", "case", "strategy"], how="inner")
    c["error_pct"] = (c["predicted_ms"] / c["measured_ms"] - 1) * 100
    c["class"] = c["strategy"].map(CLASSES).fillna("other")
    return c[["call", "experiment", "case", "strategy", "class", "law", "measured_ms", "predicted_ms", "error_pct"]]


def summary(c: pd.DataFrame) -> pd.DataFrame:
    """Per class (and ``all``) and law: cases, MAPE and worst error (%), over every case and over the cases where the
    laws' errors are more than :data:`APART` points apart (``subset`` = ``parted``)."""
    w = c.pivot_table(index=["call", "experiment", "case", "strategy"], columns="law", values="error_pct")
    parted = w.index[(w["survival"] - w["lru"]).abs() > APART]
    key = pd.MultiIndex.from_frame(c[["call", "experiment", "case", "strategy"]])
    rows = []
    for subset, d in (("all", c), ("parted", c[key.isin(parted)])):
        for cls, g in [("all", d), *d.groupby("class")]:
            for law, h in g.groupby("law"):
                a = h["error_pct"].abs()
                rows.append(dict(subset=subset, cls=cls, law=law, cases=len(h), mape_pct=a.mean(),
                                 worst_pct=h.loc[a.idxmax(), "error_pct"]))
    return pd.DataFrame(rows).rename(columns={"cls": "class"})


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_reuse_law.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-reuse-law")
    args = parse_outputs(ap, argv, folders=("--out",))
    c = cases(measurements())
    s = summary(c)
    args.out.mkdir(parents=True, exist_ok=True)
    c.to_csv(args.out / "cases.csv", index=False, float_format="%.4f")
    s.to_csv(args.out / "summary.csv", index=False, float_format="%.4f")
    with pd.option_context("display.width", 200):
        print(s.pivot_table(index=["subset", "class"], columns="law", values=["cases", "mape_pct"], sort=False)
              .round(2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
