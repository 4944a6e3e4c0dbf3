"""Accuracy of a registration: predictions (``ctasim predict``) against measurements (``ctahw run EXPERIMENT``).

:func:`judge` joins the two tables of :mod:`ctasim.results` on their key and computes, for the model and for the
naive predictor beside it, the error of every measured ``ok`` row, MAPE and the worst error per strategy kind, the
best micro-batching chunk count and the per-case ranking of strategies (where more than one was measured).
CTA-pipelining on one GPU (the chain kernel) and a ring whose kernels share one device are kinds of their own
(:data:`ONE_GPU_CTAPIPE`, :data:`SHARED_CTAPIPE`): their accuracy is not the multi-GPU protocol's. :func:`per_cta`
judges every traced run of a pipelined strategy against its predicted per-CTA schedule (errors and overlays).

:func:`provenance_order` decides whether the figures are **registered** or **post-hoc**: registered only when git
history shows the commit that added the predictions before (an ancestor of) the commit that added the measurement;
anything else -- either file uncommitted, no git, the wrong order -- is post-hoc, and the report says which.

Left out: run-to-run spread beyond what the measurement file holds.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ctasim import results
from ctasim.predict import PREDICTORS

__all__ = ["Provenance", "provenance_order", "judge", "summary", "report", "write_report"]


@dataclass(frozen=True)
class Provenance:
    registered: bool
    why: str
    prediction_commit: str = ""
    measurement_commit: str = ""


_ADDING_COMMITS: dict[tuple[str, str, str], list[str]] = {}
""":func:`_adding_commits` by (repository, HEAD commit, path): in a repository with its full history, what ``git log``
finds from a commit is fixed (commits never change), so compare and the plans' judges, which ask of the same files
again and again, ask git once per file and HEAD. A shallow repository (whose history can deepen under the same HEAD) is
asked each time."""


def _adding_commits(top: str, rel: Path) -> list[str]:
    """The commits of HEAD's history that added ``rel`` (``git log --diff-filter=A``, newest first) in the repository
    at ``top`` (:data:`_ADDING_COMMITS`)."""
    state = subprocess.run(["git", "-C", top, "rev-parse", "--is-shallow-repository", "HEAD"], capture_output=True,
                           text=True)
    words = state.stdout.split()
    key = (top, words[1], str(rel)) if state.returncode == 0 and len(words) == 2 and words[0] == "false" else None
    if key in _ADDING_COMMITS:
        return list(_ADDING_COMMITS[key])
    out = subprocess.run(["git", "-C", top, "log", "--diff-filter=A", "--format=%H", "--", str(rel)],
                         capture_output=True, text=True, check=True).stdout.split()
    if key is not None:
        _ADDING_COMMITS[key] = list(out)
    return out


def _added_in(path: Path) -> str:
    """The commit that first added ``path`` (''= not committed or no git)."""
    try:
        top = subprocess.run(["git", "-C", str(path.parent), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, check=True).stdout.strip()
        rel = path.resolve().relative_to(Path(top).resolve())
        out = _adding_commits(top, rel)
        if not out:
            return ""
        dirty = subprocess.run(["git", "-C", top, "status", "--porcelain", "--", str(rel)], capture_output=True,
                               text=True, check=True).stdout.strip()
        return "" if dirty else out[-1]
    except (OSError, ValueError, subprocess.CalledProcessError):
        return ""


def provenance_order(predictions: Path, measurement: Path) -> Provenance:
    """Registered iff the prediction file's adding commit is a strict ancestor of the measurement's."""
    p, m = _added_in(predictions), _added_in(measurement)
    if not p:
        return Provenance(False, f"{predictions} is not committed unchanged (no registration date)")
    if not m:
        return Provenance(False, f"{measurement} is not committed unchanged", p)
    if p == m:
        return Provenance(False, "predictions and measurement were added in the same commit", p, m)
    top = subprocess.run(["git", "-C", str(predictions.parent), "rev-parse", "--show-toplevel"], capture_output=True,
                         text=True).stdout.strip()
    ok = subprocess.run(["git", "-C", top, "merge-base", "--is-ancestor", p, m]).returncode == 0
    if not ok:
        return Provenance(False, f"the predictions ({p[:10]}) do not come before the measurement ({m[:10]})", p, m)
    return Provenance(True, f"predictions added in {p[:10]}, before the measurement ({m[:10]})", p, m)


ONE_GPU_CTAPIPE = "ctapipe-1gpu"
"""The kind under which :func:`summary` reports CTA-pipelining on one GPU (``Strategy.gpus = 1``)."""
SHARED_CTAPIPE = "ctapipe-shared"
"""The kind under which :func:`summary` reports a ring whose kernels share one device (``Experiment.shared_device``)."""


def judge(pred: pd.DataFrame, meas: pd.DataFrame, shared_device: bool = False) -> pd.DataFrame:
    """One row per measured ``ok`` (case, strategy, variant) and predictor: predicted, measured, error.
    ``shared_device``: the experiment ran its rings' kernels on one device (their kind is :data:`SHARED_CTAPIPE`)."""
    hw = meas[(meas["status"] == "ok")][list(results.KEY) + ["kind", "gpus", "m", "makespan_ms"]]
    hw = hw.rename(columns={"makespan_ms": "measured_ms"})
    # CTA-pipelining on one GPU (the chain kernel, or a ring's kernels sharing one device) is judged as its own kind:
    # its accuracy says nothing of the multi-GPU protocol's (what `ctasim advise` reads per kind)
    one = SHARED_CTAPIPE if shared_device else ONE_GPU_CTAPIPE
    hw["kind"] = hw["kind"].where(~((hw["kind"] == "ctapipe") & ((hw["gpus"] == 1) | shared_device)), one)
    hw = hw.drop(columns="gpus")
    pr = pred[pred["status"] == "ok"][list(results.KEY) + ["source", "makespan_ms"]]
    pr = pr.rename(columns={"makespan_ms": "predicted_ms"})
    j = hw.merge(pr, on=list(results.KEY), how="left")
    missing = j[j["predicted_ms"].isna()]
    if len(missing):
        r = missing.iloc[0]
        raise results.ResultsError(f"measured {r['case']} {r['strategy']} {r['variant']!s} has no prediction "
                                   f"(is this the registration of experiment {r['experiment']!r}?)")
    j["error"] = (j["predicted_ms"] - j["measured_ms"]) / j["measured_ms"]
    return j.sort_values(["source", "case", "strategy", "variant"]).reset_index(drop=True)


def summary(j: pd.DataFrame) -> pd.DataFrame:
    """MAPE and worst error per predictor, per strategy kind and over all. Where ``j`` pools several experiments the
    worst case names its experiment too."""
    pooled = j["experiment"].nunique() > 1
    rows = []
    for (src, kind), g in list(j.groupby(["source", "kind"])) + [((s, "all"), g) for s, g in j.groupby("source")]:
        w = g.loc[g["error"].abs().idxmax()]
        where = f"{w['experiment']} " if pooled else ""
        rows.append({"predictor": src, "kind": kind, "cases": len(g), "mape_pct": 100 * g["error"].abs().mean(),
                     "worst_pct": 100 * w["error"],
                     "worst_case": f"{where}{w['case']} {w['strategy']} {w['variant']}".strip()})
    return pd.DataFrame(rows)


def choices(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per case: best micro-batching chunk count and strategy ranking, measured vs each predictor (where > 1 ran)."""
    hw = results.best_of(meas)
    rows = []
    for case, g in hw.groupby("case", sort=False):
        order_hw = list(g.sort_values("makespan_ms")["strategy"])
        for src, gp in results.best_of(pred[pred["case"] == case]).groupby("source"):
            gp = gp[gp["strategy"].isin(order_hw)]
            row = {"case": case, "predictor": src}
            if len(order_hw) > 1:
                row["ranking_measured"] = " < ".join(order_hw)
                row["ranking_agrees"] = list(gp.sort_values("makespan_ms")["strategy"]) == order_hw
            mb = g[g["kind"] == "microbatch"]
            if len(mb):
                ran = set(meas[(meas["case"] == case) & (meas["kind"] == "microbatch") & (meas["status"] == "ok")]["variant"])
                p = pred[(pred["case"] == case) & (pred["kind"] == "microbatch") & (pred["source"] == src)
                         & pred["variant"].isin(ran)]
                row["best_chunks_measured"] = mb.iloc[0]["variant"]
                row["best_chunks_predicted"] = p.loc[p["makespan_ms"].idxmin(), "variant"] if len(p) else ""
            if len(row) > 2:
                rows.append(row)
    return pd.DataFrame(rows)


def report(j: pd.DataFrame, s: pd.DataFrame, ch: pd.DataFrame, prov: Provenance, pred_dir: Path, meas_dir: Path,
           skipped: pd.DataFrame, rules: dict) -> str:
    label = "registered" if prov.registered else "post-hoc"
    lines = [f"# Accuracy: {pred_dir.name} against {meas_dir}", "",
             f"**{label.upper()}** -- {prov.why}.", "",
             "Only registered figures may be quoted as a test of the model; post-hoc figures are labelled so.", ""]
    lines += [f"## {label.capitalize()} figures", "", "| predictor | kind | cases | MAPE | worst | worst case |",
              "| --- | --- | --- | --- | --- | --- |"]
    for r in s.itertuples():
        lines.append(f"| {r.predictor} | {r.kind} | {r.cases} | {r.mape_pct:.2f}% | {r.worst_pct:+.2f}% | {r.worst_case} |")
    others = [src for src in PREDICTORS[1:] if src in set(j["source"])]
    lines += ["", "| case | strategy | variant | measured ms | model ms | model error | "
              + " | ".join(f"{src} ms | {src} error" for src in others) + " |",
              "| --- | --- | --- | --- | --- | --- |" + " --- | --- |" * len(others)]
    wide = j.pivot_table(index=["case", "strategy", "variant", "measured_ms"], columns="source",
                         values=["predicted_ms", "error"], aggfunc="first").reset_index()
    for _, r in wide.iterrows():
        def cell(what, src):
            try:
                v = r[(what, src)]
            except KeyError:
                return ""
            return "" if pd.isna(v) else (f"{100 * v:+.2f}%" if what == "error" else f"{v:.4f}")
        lines.append(f"| {r[('case', '')]} | {r[('strategy', '')]} | {r[('variant', '')]} | {r[('measured_ms', '')]:.4f} | "
                     f"{cell('predicted_ms', 'model')} | {cell('error', 'model')} | "
                     + " | ".join(f"{cell('predicted_ms', src)} | {cell('error', src)}" for src in others) + " |")
    if len(ch):
        lines += ["", "## Choices", "", ch.to_markdown(index=False) if _has_tabulate() else ch.to_string(index=False)]
    if len(skipped):
        lines += ["", f"## Not measured ({len(skipped)} rows)", ""]
        for why, g in skipped.groupby("reason"):
            lines.append(f"* {len(g)} x {why}")
    lines += ["", "## Judging rules (fixed by the registration)", ""]
    lines += [f"* **{k}**: {v}" for k, v in rules.items()]
    return "\n".join(lines) + "\n"


def per_cta(pred_dir: Path, meas_dir: Path) -> tuple[pd.DataFrame, list[tuple[str, object, object]]]:
    """Every traced run of the measurement (its trace bundle; ``meta`` names the case and strategy it answers)
    against the registration's predicted schedule of that case and strategy (``schedules/``): one row per run
    (makespans, per-CTA start and end errors as fractions of the measured makespan, dequeue-order agreement), and
    (stem, measured trace, predicted trace) for the overlays. Runs without a schedule are left out. Empty
    without a bundle."""
    from ctasim.validation.traces import compare  # noqa: PLC0415
    from ctasim.predict import schedule_name  # noqa: PLC0415
    from ctasim.trace import EVENT_COLUMNS, OP_COLUMNS, Trace, load_traces  # noqa: PLC0415
    from ctasim.trace import TRACES_FILE  # noqa: PLC0415

    bundle = meas_dir / TRACES_FILE
    if not bundle.is_file():
        return pd.DataFrame(), []
    rows, pairs, cache = [], [], {}
    for key, tr in load_traces(bundle).items():
        case, strategy = tr.meta.get("case"), tr.meta.get("strategy")
        sched = pred_dir / "schedules" / schedule_name(str(case), str(strategy)) if case and strategy else None
        if sched is None or not sched.is_file():
            continue
        if sched not in cache:
            tiles = pd.read_csv(sched)
            cache[sched] = Trace(tiles, pd.DataFrame(columns=list(EVENT_COLUMNS)),
                                 pd.DataFrame(columns=list(OP_COLUMNS)), {"case": case, "strategy": strategy})
        c = compare(tr, cache[sched])
        sm = c.summary()
        rows.append({"case": case, "strategy": strategy, "variant": tr.meta.get("variant", ""),
                     "run": tr.meta.get("run", 0), "kept": bool(tr.meta.get("kept", True)),
                     "makespan_meas_us": sm["makespan_meas_us"], "makespan_pred_us": sm["makespan_sim_us"],
                     "tiles_error": sm["makespan_error"], "start_median_frac": sm["start_median_frac"],
                     "start_p95_frac": sm["start_p95_frac"], "end_median_frac": sm["end_median_frac"],
                     "dequeue_spearman": sm["dequeue_spearman"], "tiles_matched": sm["tiles_matched"],
                     "tiles_unmatched": sm["tiles_unmatched"]})
        pairs.append((sched.name.removesuffix(".tiles.csv.gz") + f"-run{tr.meta.get('run', 0)}", tr, cache[sched]))
    return pd.DataFrame(rows), pairs


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401, PLC0415
        return True
    except ImportError:
        return False


def _shared_device(reg_file: Path) -> bool:
    """Whether a registration's experiment runs its rings on one shared device: ``registration.json``'s
    ``shared_device`` (recorded since registered plan 40), else its experiment's spec under specs/experiments by the
    name it records (plan 40's two registrations); a registration with neither predates shared devices (False).
    ResultsError where the record names a spec that does not load."""
    from ctasim.spec import SpecError, read_experiment, resolve_ref  # noqa: PLC0415

    reg = json.loads(reg_file.read_text())
    if "shared_device" in reg:
        return bool(reg["shared_device"])
    try:
        path = resolve_ref(str(reg["experiment"]), "experiments", None)
    except SpecError:  # an experiment given as a path, or one removed since
        return False
    try:
        return bool(read_experiment(path)[0].shared_device)
    except SpecError as e:
        raise results.ResultsError(f"{reg_file}: its experiment's spec does not load ({e})") from None


OVERLAYS = "Overlays: `overlay-<case>-<strategy>-run<i>.png`."
"""The per-CTA section's last sentence where the overlays are drawn ..."""
NO_OVERLAYS = "Overlays: not drawn (`ctasim compare --no-plots`)."
"""... and where they are not."""


def write_report(pred_dir: Path, meas_dir: Path, out: Path, *, plots: bool = True) -> tuple[str, list[Path]]:
    """Judge and write ``report.md``, ``accuracy.csv``, ``summary.csv`` and ``predicted-vs-measured.png`` into ``out``
    (written whole into a temporary folder, then renamed). ``plots=False`` leaves out the figures (the scatter and
    the per-CTA overlays, most of the time a report takes); the tables and the report's text are the same but for
    the overlays' sentence (:data:`OVERLAYS`, :data:`NO_OVERLAYS`)."""
    pred_file, meas_file = pred_dir / "predictions.csv", meas_dir / "results.csv"
    pred, meas = results.read(pred_file), results.read(meas_file)
    reg_file = pred_dir / "registration.json"
    try:
        rules = json.loads(reg_file.read_text())["rules"]
    except (OSError, ValueError, KeyError, TypeError):
        raise results.ResultsError(f"{reg_file}: missing or not a registration (ctasim predict writes it)") from None
    if set(pred["experiment"]) != set(meas["experiment"]):
        raise results.ResultsError(f"{meas_file}: measures {sorted(set(meas['experiment']))}, the predictions are of "
                                   f"{sorted(set(pred['experiment']))}")
    j = judge(pred, meas, shared_device=_shared_device(reg_file))
    if j.empty:
        raise results.ResultsError(f"{meas_file}: no measured 'ok' row to judge")
    s, ch = summary(j), choices(pred, meas)
    prov = provenance_order(pred_file, meas_file)
    text = report(j, s, ch, prov, pred_dir, meas_dir, meas[meas["status"] == "skipped"], rules)
    cta, pairs = per_cta(pred_dir, meas_dir)
    if len(cta):
        label = "registered" if prov.registered else "post-hoc"
        lines = ["", f"## Per-CTA schedules of the pipelined strategies ({label})", "",
                 "Every traced run against the predicted schedule of its case and strategy; each trace shifted so "
                 "that its first tile starts at 0; errors as fractions of the measured makespan (`tiles_error`: the "
                 "tiles' span, not the harness's makespan above). " + (OVERLAYS if plots else NO_OVERLAYS),
                 "", "| case | strategy | run | kept | measured µs | predicted µs | tiles error | start median | "
                 "start p95 | end median | dequeue ρ |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in cta.itertuples():
            lines.append(f"| {r.case} | {r.strategy} | {r.run} | {'yes' if r.kept else 'no'} | {r.makespan_meas_us:,.1f} | "
                         f"{r.makespan_pred_us:,.1f} | {100 * r.tiles_error:+.2f}% | {100 * r.start_median_frac:.2f}% | "
                         f"{100 * r.start_p95_frac:.2f}% | {100 * r.end_median_frac:.2f}% | {r.dequeue_spearman:.3f} |")
        head, sep, tail = text.partition("\n## Judging rules")
        text = head.rstrip("\n") + "\n" + "\n".join(lines) + "\n" + sep + tail
    with results.staged_folder(out) as tmp:
        j.assign(registered=prov.registered).to_csv(tmp / "accuracy.csv", index=False)
        s.assign(registered=prov.registered).to_csv(tmp / "summary.csv", index=False)
        (tmp / "report.md").write_text(text)
        if plots:
            _plot(j, tmp / "predicted-vs-measured.png",
                  f"{pred_dir.name} ({'registered' if prov.registered else 'post-hoc'})")
        if len(cta):
            cta.assign(registered=prov.registered).to_csv(tmp / "per-cta.csv", index=False)
        if plots and pairs:
            from ctasim import plots as figures  # noqa: PLC0415

            for stem, measured, predicted in pairs:
                figures.cta_overlay(measured, predicted, tmp / f"overlay-{stem}.png",
                                    f"{pred_dir.name}: {predicted.meta['strategy']} {predicted.meta['case']}, run "
                                    f"{measured.meta.get('run', 0)} ({'registered' if prov.registered else 'post-hoc'})")
    return text, sorted(out.iterdir())


def _plot(j: pd.DataFrame, path: Path, title: str) -> None:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(5, 5))
    for src, mk in (("model", "o"), ("naive", "x")):
        g = j[j["source"] == src]
        ax.scatter(g["measured_ms"], g["predicted_ms"], marker=mk, label=src)
    lo, hi = float(j[["measured_ms", "predicted_ms"]].min().min()), float(j[["measured_ms", "predicted_ms"]].max().max())
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured makespan (ms)")
    ax.set_ylabel("predicted makespan (ms)")
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
