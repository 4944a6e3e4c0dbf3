"""Post-hoc: is the H100's exposed HBM time bandwidth or latency? (no GPU)

    python bench/posthoc_h100_exposed.py [--out bench/results/posthoc-h100-exposed]

Registered plan 64's three H100s ran the sequential GEMMs as fast as the H200s, and ``h100-x1-datasheet`` priced them
1.2-6.0% slow: the mainloop's exposed share of a wave's HBM time (``l2_hbm_exposed``, fitted on H200 tile orders) is
charged at the H100's slower HBM. ``h100-x1-datasheet-latency`` (``ctasim.profiles``) charges it at the H200's measured
rate (``Hardware.l2_hbm_exposed_gbps``: the exposed part as the loads' latency), the roofline's HBM time still at the
H100's. Both profiles predict plan 64's four experiments here (the model rows of ``ctasim.predict.predict``, the
registration's harness and seed) and are set against every committed H100 call (:data:`CALLS`).

Writes ``cases.csv`` (per call, experiment, case, strategy and profile: measured, predicted, error) and
``summary.csv`` (per call, profile and class of strategy: cases, MAPE, worst). Every figure is post-hoc: the twin was
made after these runs were seen. Left out: the H200s (the field is 0 on every H200 profile, which leaves them
bit-identical) and the H100's sustained regime.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan64_h100_datasheet as p64  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

PROFILES = ("h100-x1-datasheet", "h100-x1-datasheet-latency")
CALLS = ROOT / "bench/results/hw-h100"
"""Every committed H100 call that ran plan 64's four experiments (``CALLS/*/EXP/results.csv``)."""
HARNESS = "ctahw-timed-2xh200"
"""The harness plan 64's registrations were made with (``registration.json``)."""


def model_rows(profiles: dict, experiments) -> pd.DataFrame:
    """The model's makespan (``predicted_ms``) per experiment, case and strategy of ``experiments`` under each of
    ``profiles`` (label -> Hardware; the label in column ``profile``), with :data:`HARNESS` and the registrations'
    seed: the rows ``ctasim predict`` registers as source ``model`` (ok cases only)."""
    from ctasim.cases import load_experiment  # noqa: PLC0415
    from ctasim.harness import load_harness  # noqa: PLC0415
    from ctasim.predict import predict  # noqa: PLC0415

    harness, parts = load_harness(HARNESS), []
    for label, hw in profiles.items():
        for exp in experiments:
            df = predict(dataclasses.replace(load_experiment(exp), hardware=hw), harness, None)
            df = df[(df["source"] == "model") & (df["status"] == "ok")]
            parts.append(df[["experiment", "case", "strategy", "makespan_ms"]].assign(profile=label))
    return pd.concat(parts, ignore_index=True).rename(columns={"makespan_ms": "predicted_ms"})


def predicted() -> pd.DataFrame:
    """The model's makespan (ms) per profile, experiment, case and strategy."""
    return model_rows({p: p64.as_registered(p) for p in PROFILES}, p64.EXPERIMENTS)


def calls(root: Path = CALLS) -> list[Path]:
    """The H100 calls that ran every experiment of plan 64."""
    return [d for d in sorted(root.iterdir()) if d.is_dir()
            and all((d / e / "results.csv").is_file() for e in p64.EXPERIMENTS)]


def call_cases(pred: pd.DataFrame, calls: list[Path], experiments) -> pd.DataFrame:
    """Every ok timed case of ``experiments`` in ``calls`` (where the call ran the experiment) against ``pred``
    (experiment, case, strategy, predicted_ms and the other columns it has): the error (%) and the strategy's class."""
    parts = []
    for call in calls:
        for exp in experiments:
            if (call / exp / "results.csv").is_file():
                r = pd.read_csv(call / exp / "results.csv").query("status == 'ok'")
                r = r[["case", "strategy", "makespan_ms"]].rename(columns={"makespan_ms": "measured_ms"})
                parts.append(r.assign(experiment=exp, call=call.name))
    meas = pd.concat(parts, ignore_index=True)
    c = meas.merge(pred, on=["experiment", "case", "strategy"], how="inner")
    c["error_pct"] = (c["predicted_ms"] / c["measured_ms"] - 1) * 100
    c["class"] = c["strategy"].map(lambda s: {"sequential": "sequential", "intragpu-row": "row order",
                                              "intragpu-g2": "pairs"}.get(s, "groups of 8 and 4"))
    return c


def cases(pred: pd.DataFrame, root: Path = CALLS) -> pd.DataFrame:
    c = call_cases(pred, calls(root), p64.EXPERIMENTS)
    return c[["call", "experiment", "case", "strategy", "class", "profile", "measured_ms", "predicted_ms", "error_pct"]]


def summary(c: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (call, profile), d in c.groupby(["call", "profile"]):
        for cls, g in [("all", d), ("all but row order", d[d["class"] != "row order"]),
                       *d.groupby("class")]:
            a = g["error_pct"].abs()
            rows.append(dict(call=call, profile=profile, cls=cls, cases=len(g), mape_pct=a.mean(),
                             worst_pct=g.loc[a.idxmax(), "error_pct"]))
    return pd.DataFrame(rows).rename(columns={"cls": "class"})


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_h100_exposed.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/posthoc-h100-exposed")
    args = parse_outputs(ap, argv, folders=("--out",))
    c = cases(predicted())
    s = summary(c)
    args.out.mkdir(parents=True, exist_ok=True)
    c.to_csv(args.out / "cases.csv", index=False, float_format="%.4f")
    s.to_csv(args.out / "summary.csv", index=False, float_format="%.4f")
    with pd.option_context("display.width", 200):
        print(s.pivot_table(index=["call", "class"], columns="profile", values="mape_pct", sort=False).round(2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
