"""Post-hoc: the two L2 reuse laws on every committed one-GPU measurement of an H200 or an H100 (no GPU)

    python bench/posthoc_reuse_law.py [--gpu H200] [--out bench/results/posthoc-reuse-law]
    python bench/posthoc_reuse_law.py --gpu H100 [--out bench/results/posthoc-reuse-law-h100]
    (either with --through CALL: the call folders up to CALL in name order; default the committed tables' last, all)

Registered plans 67 and 68 ask whether a GEMM panel's reuse across waves follows the measured L2 survival curve
(``l2_reuse_law = "survival"``) or an LRU of the whole L2. This prices every committed one-GPU run on the GPU
(:func:`measurements`: each ``results.csv`` under its folder of calls (:data:`GPUS`) whose experiment is a spec that does
not share a device, from a call whose ``env*.txt`` names that GPU and not the other, its rows with ``gpus`` = 1 --
sequential and the chain kernel also where the spec has more GPUs; a run folder counts once per call), the
experiment's profile replaced by each law's (:data:`GPUS`: on an H200 ``h200-x1-calibrated`` and its twin
``h200-x1-calibrated-reuse``; experiments registered on ``h200-x2-calibrated``, as plans 1-6 and 18 were, are priced by
the one-H200 profile here; on an H100 ``h100-x1-datasheet`` as registered, with the LRU, and as adopted since
2026-12-05, with the curve), with the harness the registrations use (``posthoc_h100_exposed.model_rows``), and writes
``cases.csv`` (per run folder, experiment, case, strategy and law: measured, predicted, error %), ``summary.csv`` (per
class of strategy and law: cases, MAPE, worst; and the cases where the laws' errors are more than 0.5 points apart) and
``decisions.csv`` (per case measured under two or more strategies and law: the strategy the law puts fastest, whether
it measured fastest, the regret of following it) and ``row-over-groups.csv`` (per experiment and case: row order's
makespan over groups of 8's, measured and under each law; ``row-states.csv`` the same beside the GPU's profile now
with the threshold ticket law in each of its two consistent states, :func:`row_states`). Every figure is post-hoc:
these runs were seen (plans 67 and 68's H100 runs were registered tests of the twin; here they sit beside runs made
before it), and nothing is fitted. ~2 min
on 2 cores for the H200s, ~1 min for the H100s.
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

LAWS = ("lru", "survival")
"""The laws compared (``ctasim.l2.REUSE_LAWS``)."""
HW = ROOT / "bench/results/hw"
GPUS = {"H200": (HW, "H100", {"lru": "h200-x1-calibrated-lru", "survival": "h200-x1-calibrated"}),
        "H100": (ROOT / "bench/results/hw-h100", "H200", {"lru": "h100-x1-datasheet@lru",
                                                         "survival": "h100-x1-datasheet@tile"})}
"""GPU -> (its folder of calls, the GPU a call must not name, law -> the profile that prices by it; NAME@lru: the
profile as registered, ``plan64_h100_datasheet.as_registered``; NAME@tile: the profile with the drift's tile law, as
before registered plan 73's adoption on an H100, ``ctasim.profiles.before_h100_adoptions``; h200-x1-calibrated-lru: the
H200 profile before plan 67's adoption on an H200, 2026-12-06, ``ctasim.profiles.H200_BEFORE_REUSE``)."""
OUT = {"H200": ROOT / "bench/results/posthoc-reuse-law", "H100": ROOT / "bench/results/posthoc-reuse-law-h100"}
"""GPU -> the default ``--out``."""
APART = 0.5
"""Points of error between the laws above which a case counts as one where they part."""
CLASSES = {"sequential": "sequential", "intragpu": "groups of 8", "intragpu-g4": "groups of 4",
           "intragpu-g2": "pairs", "intragpu-row": "row order"}
"""Strategy -> its class in ``summary.csv`` (any other: ``other``)."""


def call_env(folder: Path, root: Path = HW) -> str:
    """The text of the ``env*.txt`` files of the nearest folder at or above ``folder`` (up to ``root``) that has one
    ('' if none): where a call recorded its GPUs."""
    for d in (folder, *folder.parents):
        envs = sorted(d.glob("env*.txt"))
        if envs:
            return "\n".join(e.read_text(errors="replace") for e in envs)
        if d == root:
            break
    return ""


THROUGH = {"H200": "2026-12-06-registered67-68-1gpu", "H100": "2026-12-06-registered69-1gpu"}
"""GPU -> the last call folder (in name order: the date first) its committed tables read; ``--through`` (``all``: every
call) reads the calls up to another. A later call (plan 74's H100 call, 2026-12-06) is not in them."""


def measurements(root: Path = HW, gpu: str = "H200", through: str | None = None) -> list[tuple[Path, str]]:
    """Every committed ``results.csv`` under ``root`` (its folder, its experiment) whose experiment (the file's
    ``experiment`` column) is a spec under ``specs/experiments`` that does not share a device, from a call whose
    ``env*.txt`` names ``gpu`` and not the other GPU of :data:`GPUS` (a call without one is left out) and, with
    ``through``, whose call folder (the first folder under ``root``) is named ``through`` or before it in name order."""
    from ctasim.cases import load_experiment  # noqa: PLC0415
    from ctasim.spec import SPECS_DIR  # noqa: PLC0415

    out, shared = [], {}  # experiment -> whether it shares a device, read once per experiment
    for res in sorted(root.glob("**/results.csv")):
        if through is not None and res.relative_to(root).parts[0] > through:
            continue
        env = call_env(res.parent, root)
        if gpu not in env or GPUS[gpu][1] in env:
            continue
        exps = pd.read_csv(res, usecols=["experiment"])["experiment"].unique()
        if len(exps) != 1 or not (SPECS_DIR / "experiments" / f"{exps[0]}.toml").is_file():
            continue
        exp = str(exps[0])
        if exp not in shared:
            shared[exp] = load_experiment(exp).shared_device
        if not shared[exp]:
            out.append((res.parent, exp))
    return out


def profile(name: str):
    """The profile ``name`` of :data:`GPUS` (``NAME@lru``: ``plan64_h100_datasheet.as_registered(NAME)``)."""
    from ctasim.spec import load_hardware  # noqa: PLC0415

    if name.endswith("@lru"):
        import plan64_h100_datasheet as p64  # noqa: PLC0415

        return p64.as_registered(name.removesuffix("@lru"))
    if name.endswith("@tile"):  # as before registered plan 73's adoption on an H100 (and so plan 76's)
        from ctasim.profiles import before_h100_adoptions  # noqa: PLC0415

        return before_h100_adoptions(name.removesuffix("@tile"))
    return load_hardware(name)


def cases(found: list[tuple[Path, str]], gpu: str = "H200") -> pd.DataFrame:
    """Each ok one-GPU row (``gpus`` = 1) of ``found`` against both laws' predictions of its experiment (the profiles
    of ``gpu`` in :data:`GPUS`)."""
    root, _, laws = GPUS[gpu]
    pred = ph.model_rows({law: profile(p) for law, p in laws.items()}, sorted({e for _, e in found}))
    parts = []
    for folder, exp in found:
        r = pd.read_csv(folder / "results.csv").query("status == 'ok' and gpus == 1")
        parts.append(r[["case", "strategy", "makespan_ms"]].assign(experiment=exp, call=str(folder.relative_to(root))))
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


def decisions(c: pd.DataFrame) -> pd.DataFrame:
    """Per run folder, experiment, case and law where two or more strategies were measured: the strategy the law's
    predictions put fastest (``pick``), whether it measured fastest (``right``) and what following it cost over the
    measured fastest (``regret_pct``)."""
    rows = []
    for (call, exp, case, law), g in c.groupby(["call", "experiment", "case", "law"], sort=True):
        if g["strategy"].nunique() < 2:
            continue
        pick = g.loc[g["predicted_ms"].idxmin()]
        best = g["measured_ms"].min()
        rows.append(dict(call=call, experiment=exp, case=case, law=law, pick=pick["strategy"],
                         fastest=g.loc[g["measured_ms"].idxmin(), "strategy"], right=pick["measured_ms"] == best,
                         regret_pct=(pick["measured_ms"] / best - 1) * 100))
    return pd.DataFrame(rows)


def row_over_groups(c: pd.DataFrame) -> pd.DataFrame:
    """Per experiment and case with both measured: row order's makespan over groups of 8's (the median over run
    folders of each), measured and as each law predicts it."""
    m = c[c["strategy"].isin(["intragpu", "intragpu-row"])].groupby(["experiment", "case", "law", "strategy"])[
        ["measured_ms", "predicted_ms"]].median().unstack("strategy").dropna()
    out = pd.DataFrame({"measured": m[("measured_ms", "intragpu-row")] / m[("measured_ms", "intragpu")],
                        "predicted": m[("predicted_ms", "intragpu-row")] / m[("predicted_ms", "intragpu")]})
    out = out.unstack("law")
    out.columns = [f"{a}_{b}" if a == "predicted" else a for a, b in out.columns]
    return out.loc[:, ~out.columns.duplicated()].reset_index()


STATE_PROFILES = {"H200": "h200-x1-calibrated", "H100": "h100-x1-datasheet@tile"}
"""GPU -> the profile its predictions use (each with the curve since plan 67's adoption on it: the H100's 2026-12-05,
the H200's 2026-12-06; the H100's with the drift's tile law, as before registered plan 73's adoption on it, 2026-12-06:
``NAME@tile``), which :func:`row_states` prices under the threshold law's states."""


def row_states(r: pd.DataFrame, gpu: str) -> pd.DataFrame:
    """:func:`row_over_groups`' rows ``r`` with row order over groups of 8 under ``gpu``'s profile now
    (:data:`STATE_PROFILES`) with the threshold ticket law in each consistent state (``hold``: every SM keeping row
    order's reuse, ``thrash``: every SM losing it; ``posthoc_sm_groups.state_prices``)."""
    import posthoc_sm_groups as psg  # noqa: PLC0415

    hw = profile(STATE_PROFILES[gpu])
    p = [psg.state_prices(e, c, hw) for e, c in zip(r["experiment"], r["case"])]
    return r.assign(**{f"threshold_{st}": [1 + x[f"{st}_pct"] / 100 for x in p] for st in ("hold", "thrash")})


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_reuse_law.py", description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", choices=tuple(GPUS), default="H200", help="whose committed runs (default H200)")
    ap.add_argument("--out", type=Path, default=None, help="folder for the tables (default by GPU: OUT)")
    ap.add_argument("--through", default=None, metavar="CALL",
                    help="read the call folders up to CALL in name order (a repeat CALL-run2 comes after CALL; "
                         "default by GPU: THROUGH, the committed tables' last call; all: every call)")
    args = parse_outputs(ap, argv, folders=("--out",))
    args.out = args.out or OUT[args.gpu]
    through = args.through or THROUGH[args.gpu]
    if through != "all" and not (GPUS[args.gpu][0] / through).is_dir():
        ap.error(f"--through {through!r}: no call folder of that name under {GPUS[args.gpu][0]}")
    c = cases(measurements(GPUS[args.gpu][0], args.gpu, None if through == "all" else through), args.gpu)
    s = summary(c)
    args.out.mkdir(parents=True, exist_ok=True)
    d = decisions(c)
    c.to_csv(args.out / "cases.csv", index=False, float_format="%.4f")
    s.to_csv(args.out / "summary.csv", index=False, float_format="%.4f")
    d.to_csv(args.out / "decisions.csv", index=False, float_format="%.4f")
    rog = row_over_groups(c)
    rog.to_csv(args.out / "row-over-groups.csv", index=False, float_format="%.4f")
    row_states(rog, args.gpu).to_csv(args.out / "row-states.csv", index=False, float_format="%.4f")
    with pd.option_context("display.width", 200):
        print(s.pivot_table(index=["subset", "class"], columns="law", values=["cases", "mape_pct"], sort=False)
              .round(2))
        print(d.groupby("law").agg(decisions=("right", "size"), right=("right", "sum"), regret_pct=("regret_pct", "mean"),
                                   worst_pct=("regret_pct", "max")).round(3))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
