"""Post-hoc: the chain kernel's row order keeps or loses its L2 reuse by fixed groups of SMs (no GPU).

    python bench/posthoc_sm_groups.py [--out bench/results/posthoc-sm-groups] [--runs GLOB] [--as-of DATE|all]
    python bench/posthoc_sm_groups.py --bundle RUN/EXP/ctapipe_traces.trace.npz [--bundle ...]

The model gives a tile one time per wave: every SM of the grid runs the wave's tiles alike. The traces stamp the SM
each tile ran on (``sm``), so this asks whether the SMs of one run do run alike. For every traced chain-kernel run
(``posthoc_order_mainloop.bundles`` of :data:`EXPERIMENTS`; ``--runs`` a glob on the run's folder name), per case and
order with a groups-of-8 run beside it, it takes each SM's **late mainloop**: the median of ``t_mainloop_end -
t_acquire`` over that SM's tiles in the second half of the run (by ``t_acquire``, as
``posthoc_order_mainloop.late_median`` takes the run's), as a penalty in percent over the groups of 8's late mainloop
of the same case and run. Sorted, the SMs' penalties are split at their largest step (:func:`split`); a step of
:data:`CLEAR_POINTS` or more is a **clear split** into a fast and a slow group.

What the committed traces show (every one seen before this was written: the figures are post-hoc):

* Only row order splits. Its clear splits have a smaller side of 24 SMs (fast: the rest lost the reuse) or 54 (slow:
  the rest kept it), 60 on one machine (plan 58's, slow) and 18 on another (plan 62's, fast: 18 of the 24 that run fast
  elsewhere). No other size occurs, and no groups of 8, 4 or pairs run splits.
* On one machine every split of a size names the same SMs (``sets.csv``: 13 machines), in TPC pairs (SMs 2i and
  2i + 1), and the fast set and the 54 are disjoint (5 machines show both). Machines share their sets: one 24 on 7
  machines of 10, one 54 on 3 of 6, another on 2. 132 = 6 x 18 + 2 x 12: the H200's SMs in six GPCs of 18 and two of 12 (the GH100's
  floor-swept GPCs; an assumption the traces do not check), so the 24 would be the two small GPCs, the 54 three of the
  large ones, and the GPU two halves of 66 (3 x 18 + 12) each keeping or losing the reuse on its own, as the L2's two
  partitions would.
* So row order's penalty takes three levels where the weights are 1.6-4 times the L2 (``row-states.csv``): every SM
  near the penalty without the re-reads ("uniform", low), one half lost (54 slow), every SM lost (24 fast: the small
  GPCs less slowed, or uniform high). The same shape lands at different levels on different machines, and on one
  machine in two runs (plan 56's machine at H = 7936, M = 12288). A model with one state per shape cannot price that
  within the spread between the levels; ``row-states.csv`` gives, per shape measured more than once, the range of the
  measured makespan penalties beside the model's.
* The splits are mostly the second layer's (``layer-splits.csv``): split per layer of the 2-layer chains, the second
  layer splits clearly in 40 of row order's 109 runs, the first in 15, and its SMs' mean penalty is the higher (27.4
  against 18.3 points); the run's "late" half is mostly the second layer's tiles.
* Given the state, the mechanism prices it (``by-state.csv``): the threshold ticket law in its two consistent states
  (``KernelConfig.ticket_state``: every SM holding, every SM thrashing; :func:`state_prices`) and their mean (one half
  in each) put row order's makespan penalty nearer than the profile, in mean |error|, on the runs where all lost the
  reuse (thrash) and where one half did (the mean). The state is read from the same run's timings, so this says the
  prices fit the states, not that anything predicts them; the uniform runs (most low, a few high) are not priced by a
  state, and there the profile's survival law is the nearer. The state prices are the profile's as it was when this
  was written: a panel's reuse across waves an LRU of the whole L2, before registered plan 67's adoption on an H200
  (2026-12-06; :func:`dated_profile`).

The committed 2xH200 CTA-pipelining traces are read the same way (``pairs-2gpu.csv``; ``bench/ctapipe_mechanism.py``'s
runs): per run, variant, M and GPU, each SM's median ``t_compute_end - t_acquire`` over the second half of its tiles, in
percent over the kernel's median, split the same way. The one-CTA-per-tile 1x1 consumer (GPU 1) splits at M >= 8192 in
9 of its 10 traced kernels, its 24 SMs (12 in one run) 9.5-11.6% faster than the rest, and one producer (M = 8192,
``-rerun3``) 54 slow by 13%: the same groups (the other clear splits are one to three SMs at M = 1024, a single wave).

Writes ``splits.csv`` (one row per run, experiment, case and order: the SMs' penalty percentiles, the split's sizes,
step and the two groups' median penalties, the state), ``sets.csv`` (per machine, state and set: the SMs, how many
cases show that set), ``row-states.csv`` (row order per experiment and case: each run's state, its SMs' mean penalty,
the measured makespan penalty and the profile's, ``bench/results/posthoc-gap-machine/cases.csv``, and the state
prices), ``by-state.csv`` (the profile's and the state prices' errors on row order by the run's state),
``lost-share.csv`` (:func:`lost_share`: per run the share of row order's reuse lost, beside its gap spread),
``layer-splits.csv`` (:func:`layer_splits`: row order's split per layer of the chain, each layer's tiles alone),
``pairs-2gpu.csv`` and ``summary.csv`` (per order: runs, clear splits by size); prints the summary. ~10-15 s on 2
cores.

Left out: which GPC an SM is in (``%smid`` does not say; the sets are read from the timings alone), why a half keeps or
loses the reuse when it does (the start of the loss is not timed here, and nothing here predicts a run's state), and
the halves' sharing of HBM (the half-lost state is priced as the mean of the two, not from the bandwidth each half
gets).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import posthoc_order_mainloop as pom  # noqa: E402
from ctasim import l2  # noqa: E402
from ctasim.cases import load_experiment  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.profiles import before_h200_reuse  # noqa: E402

EXPERIMENTS = (*pom.EXPERIMENTS, "reg58-gap-law-*", "reg59-adopted-*")
"""The experiments read: the dated records' and the registered plans' since."""
CLEAR_POINTS = 5.0
"""A clear split: the largest step between two neighbouring SMs' sorted penalties is this many points or more (the
SMs of a run that does not split lie within about 2-4 points of each other)."""
SIZES = (24, 54, 60)
"""The smaller sides of the clear splits the committed traces show (post-hoc)."""
PROFILE_CASES = ROOT / "bench/results/posthoc-gap-machine/cases.csv"
PROFILE = "profile (gap cv 0.74)"
"""The predictor of ``PROFILE_CASES`` whose penalties ``row-states.csv`` sets beside the measured ones."""
OUT = ROOT / "bench/results/posthoc-sm-groups"

AS_OF = "2026-12-05"
"""The committed tables (``bench/results/posthoc-sm-groups``) read the traced runs dated this day or before; ``--as-of``
another day (or ``all``) reads the runs committed since too."""


def sm_late(tiles: pd.DataFrame, end: str = "t_mainloop_end") -> pd.Series:
    """Each SM's median of ``end - t_acquire`` (µs) over its tiles in the second half of the run (by ``t_acquire``)."""
    t = tiles.sort_values("t_acquire", kind="stable")
    late = t.iloc[len(t) // 2:]
    return ((late[end] - late["t_acquire"]) / 1e3).groupby(late["sm"]).median()


def split(penalty: pd.Series, clear: float = CLEAR_POINTS) -> dict:
    """The largest step of the SMs' sorted ``penalty`` (index: SM): the two groups' sizes, their median penalties, the
    step, whether it is clear (>= ``clear``), the fast group's SMs where it is, and the state: ``"uniform"`` where it is
    not clear, else the smaller side's size and whether it is the slow or the fast group (``"54 slow"``, ``"24 fast"``).
    """
    s = penalty.dropna().sort_values(kind="stable")
    if len(s) < 2:
        raise ValueError(f"a split needs two SMs with a penalty or more, got {len(s)}")
    steps = np.diff(s.to_numpy())
    i = int(np.argmax(steps))
    fast, slow = s.iloc[:i + 1], s.iloc[i + 1:]
    ok = bool(steps[i] >= clear)
    small = "fast" if len(fast) <= len(slow) else "slow"
    state = f"{min(len(fast), len(slow))} {small}" if ok else "uniform"
    return dict(sms=len(s), n_fast=len(fast), n_slow=len(slow), step=float(steps[i]), clear=ok,
                fast_pct=float(fast.median()), slow_pct=float(slow.median()), mean_pct=float(s.mean()),
                p5=float(np.percentile(s, 5)), p50=float(s.median()), p95=float(np.percentile(s, 95)),
                state=state, fast_sms=" ".join(str(int(x)) for x in sorted(fast.index)) if ok else "")


def bundle_splits(bundle: Path, runs: dict | None = None) -> pd.DataFrame:
    """One row per case and order of a bundle's first traced runs that has groups of 8 beside it (:func:`split` of the
    SMs' late mainloop, in percent over groups of 8's late mainloop); ``runs``: the bundle's first runs by (case,
    order) where the caller has read them (``dict(posthoc_order_mainloop.first_runs(bundle))``)."""
    runs = dict(pom.first_runs(bundle)) if runs is None else runs
    rows = []
    for (case, order), tr in runs.items():
        ref = runs.get((case, pom.REFERENCE))
        if ref is None:
            continue
        ref_us = pom.late_median(ref.tiles, "t_mainloop_end")
        pen = (sm_late(tr.tiles) / ref_us - 1) * 100
        rows.append(dict(run=pom.run_label(bundle), machine=pom.machine(bundle), experiment=bundle.parent.name,
                         case=case, order=order, **split(pen)))
    return pd.DataFrame(rows)


def layer_splits(bundle: Path, order: str = "intragpu-row", runs: dict | None = None) -> pd.DataFrame:
    """Per case of ``order`` in a bundle (with groups of 8 beside it) and per layer of the chain: :func:`split` of the
    SMs' late mainloop over that layer's tiles alone (the second half of them by ``t_acquire``), in percent over groups
    of 8's late mainloop. Traces without a ``layer`` column give none. ``runs``: as :func:`bundle_splits`'."""
    runs = dict(pom.first_runs(bundle)) if runs is None else runs
    rows = []
    for (case, o), tr in runs.items():
        ref = runs.get((case, pom.REFERENCE))
        if o != order or ref is None or "layer" not in tr.tiles:
            continue
        ref_us = pom.late_median(ref.tiles, "t_mainloop_end")
        for layer, t in tr.tiles.groupby("layer", sort=True):
            sp = split((sm_late(t) / ref_us - 1) * 100)
            rows.append(dict(run=pom.run_label(bundle), experiment=bundle.parent.name, case=case, order=o,
                             layer=int(layer), state=sp["state"], step=sp["step"], mean_pct=sp["mean_pct"],
                             fast_pct=sp["fast_pct"], slow_pct=sp["slow_pct"]))
    return pd.DataFrame(rows, columns=["run", "experiment", "case", "order", "layer", "state", "step", "mean_pct",
                                       "fast_pct", "slow_pct"])


def sets(s: pd.DataFrame) -> pd.DataFrame:
    """Per machine, clear state and distinct set of the smaller side's SMs: the set and the cases that show it."""
    c = s[s["clear"]].copy()
    c["set"] = [f if st.endswith("fast") else _complement(f) for f, st in zip(c["fast_sms"], c["state"])]
    g = c.groupby(["machine", "state", "set"], sort=True)
    out = g.agg(cases=("case", "size"), runs=("run", "nunique")).reset_index()
    out["sets_of_machine_state"] = out.groupby(["machine", "state"])["set"].transform("size")
    out["tpc_pairs"] = [_in_pairs(x) for x in out["set"]]
    return out[["machine", "state", "cases", "runs", "sets_of_machine_state", "tpc_pairs", "set"]]


def _complement(fast: str, sms: int = 132) -> str:
    f = {int(x) for x in fast.split()}
    return " ".join(str(x) for x in range(sms) if x not in f)


def _in_pairs(members: str) -> bool:
    """Whether a set of SMs is whole TPCs: SM 2i with 2i + 1."""
    m = {int(x) for x in members.split()}
    return all((x ^ 1) in m for x in m)


def disjoint(t: pd.DataFrame) -> pd.DataFrame:
    """Per machine with both a fast set (24, or 18 on one machine) and a slow set: whether they share an SM."""
    rows = []
    for mach, g in t.groupby("machine"):
        fast = [set(map(int, x.split())) for x in g[g["state"].str.endswith("fast")]["set"]]
        slow = [set(map(int, x.split())) for x in g[g["state"].str.endswith("slow")]["set"]]
        for f in fast:
            for s in slow:
                rows.append(dict(machine=mach, fast=len(f), slow=len(s), shared=len(f & s)))
    return pd.DataFrame(rows, columns=["machine", "fast", "slow", "shared"])


def dated_profile(experiment: str):
    """``experiment``'s profile as this dated record priced it: a panel's reuse across waves an LRU of the whole L2, as
    before registered plan 67's adoption on an H200 (2026-12-06, ``ctasim.profiles.before_h200_reuse``)."""
    return before_h200_reuse(load_experiment(experiment).hardware)


def row_states(s: pd.DataFrame, profile_cases: Path = PROFILE_CASES) -> pd.DataFrame:
    """Row order per run, experiment and case: its state and SMs' mean penalty beside the measured and modelled
    penalties of ``profile_cases`` (the profile's, :data:`PROFILE`), and per experiment and case the number of runs,
    of distinct states and the range of the measured makespan penalty."""
    r = s[s["order"] == "intragpu-row"][["run", "machine", "experiment", "case", "state", "fast_pct", "slow_pct",
                                          "mean_pct"]]
    p = pd.read_csv(profile_cases)
    p = p[(p["predictor"] == PROFILE) & (p["order"] == "intragpu-row")]
    p = p[["run", "experiment", "case", "mainloop_pct_meas", "mainloop_pct_model", "makespan_pct_meas",
           "makespan_pct_model"]]
    j = r.merge(p, on=["run", "experiment", "case"], how="inner")
    g = j.groupby(["experiment", "case"])
    j["runs"] = g["run"].transform("size")
    j["states"] = g["state"].transform("nunique")
    j["makespan_range"] = g["makespan_pct_meas"].transform(lambda x: x.max() - x.min())
    # a dated table made before registered plan 67's adoption on an H200 (2026-12-06): its prices by the profile before
    prices = pd.DataFrame([dict(experiment=e, case=c, **state_prices(e, c, dated_profile(e)))
                           for e, c in j[["experiment", "case"]].drop_duplicates().itertuples(index=False)],
                          columns=["experiment", "case", "hold_pct", "thrash_pct", "half_pct"])
    j = j.merge(prices, on=["experiment", "case"], how="left")
    return j.sort_values(["experiment", "case", "run"]).reset_index(drop=True)


def state_prices(experiment: str, case: str, hardware=None) -> dict:
    """Row order's makespan penalty over groups of 8 (percent) of ``experiment``'s ``case`` under its profile (or
    ``hardware``, a profile, where given) with the threshold ticket law in each of its consistent states
    (``ctasim.l2.TICKET_STATES``, ``KernelConfig.ticket_state``: every SM keeping row order's reuse or every SM losing
    it; ``hold_pct``, ``thrash_pct``), and their mean (``half_pct``: one half of the GPU in each)."""
    out = {}
    for st in l2.TICKET_STATES:
        tr = pom.simulated(experiment, [(case, pom.REFERENCE), (case, "intragpu-row")],
                           profile=lambda hw, st=st: (hardware or hw).with_ticket_law("threshold")
                           .with_tickets(ticket_state=st))
        out[f"{st}_pct"] = (tr[(case, "intragpu-row")].makespan_ns / tr[(case, pom.REFERENCE)].makespan_ns - 1) * 100
    out["half_pct"] = (out["hold_pct"] + out["thrash_pct"]) / 2
    return out


def by_state(r: pd.DataFrame) -> pd.DataFrame:
    """Per state of :func:`row_states`' runs: how many, the SMs' mean penalty, the profile's mean and mean absolute
    errors (modelled less measured, points) of the mainloop and makespan penalties, and the mean absolute error of the
    makespan penalty priced by the threshold law in each state and half (:func:`state_prices`)."""
    e = r.assign(mainloop_err=r["mainloop_pct_model"] - r["mainloop_pct_meas"],
                 makespan_err=r["makespan_pct_model"] - r["makespan_pct_meas"],
                 **{f"{p}_abs_err": (r[f"{p}_pct"] - r["makespan_pct_meas"]).abs()
                    for p in (*l2.TICKET_STATES, "half")})
    out = e.groupby("state").agg(runs=("run", "size"), mean_pct=("mean_pct", "mean"),
                                 mainloop_err=("mainloop_err", "mean"),
                                 mainloop_abs_err=("mainloop_err", lambda x: x.abs().mean()),
                                 makespan_err=("makespan_err", "mean"),
                                 makespan_abs_err=("makespan_err", lambda x: x.abs().mean()),
                                 hold_abs_err=("hold_abs_err", "mean"), half_abs_err=("half_abs_err", "mean"),
                                 thrash_abs_err=("thrash_abs_err", "mean"))
    return out.reset_index().round(2)


PART_POINTS = 8.0
""":func:`lost_share`'s cases: where the threshold law's two states part by this many points of makespan penalty or
more."""
MACHINES = ROOT / "bench/results/posthoc-gap-machine/machines.csv"
"""Each run's median gap spread of its sharers (``bench/posthoc_gap_machine.py``)."""


def lost_share(r: pd.DataFrame, machines: Path = MACHINES) -> tuple[pd.DataFrame, float]:
    """Per run, over its row-order cases where the two states part by :data:`PART_POINTS` or more: the share of the
    reuse its makespan penalty says it lost, ``(measured - hold) / (thrash - hold)`` (0 every SM kept it, 1 every SM
    lost it; the mean over those cases), its states, and the run's median gap spread (``cv_median``); and the rank
    correlation over the runs of the share with the gap spread."""
    m = pd.read_csv(machines)[["run", "cv_median"]]
    c = r[(r["thrash_pct"] - r["hold_pct"]) >= PART_POINTS].merge(m, on="run", how="left")
    c = c.assign(share=(c["makespan_pct_meas"] - c["hold_pct"]) / (c["thrash_pct"] - c["hold_pct"]))
    per = c.groupby("run").agg(machine=("machine", "first"), cv_median=("cv_median", "first"), cases=("case", "size"),
                               share=("share", "mean"),
                               states=("state", lambda x: ", ".join(sorted(set(x))))).reset_index()
    rho = float(per[["cv_median", "share"]].corr(method="spearman").iloc[0, 1]) if len(per) > 2 else float("nan")
    return per.sort_values("cv_median").round(4), rho


def pairs_2gpu() -> pd.DataFrame:
    """The committed 2xH200 CTA-pipelining traces (``bench/ctapipe_mechanism.py``'s runs, stalls left out): per run,
    variant, M, GPU and kernel, :func:`split` of each SM's late ``t_compute_end - t_acquire`` in percent over the
    kernel's median."""
    import ctapipe_mechanism as cm  # noqa: PLC0415  (loads the 2-GPU validation's run list)

    rows = []
    for mt in cm.load_runs():
        for (gpu, kernel), t in mt.trace.tiles.groupby(["gpu", "kernel"]):
            us = sm_late(t, "t_compute_end")
            if len(us) < 2:
                continue
            rows.append(dict(run=mt.run, variant=mt.variant, m=mt.m, gpu=int(gpu), kernel=int(kernel),
                             median_us=float(us.median()), **split((us / us.median() - 1) * 100)))
    return pd.DataFrame(rows).drop(columns=["fast_sms"])


def summary(s: pd.DataFrame) -> pd.DataFrame:
    """Per order: runs and clear splits, by state."""
    out = s.groupby("order").agg(runs=("case", "size"), clear=("clear", "sum")).reset_index()
    states = s[s["clear"]].groupby(["order", "state"]).size().unstack(fill_value=0)
    return out.merge(states, left_on="order", right_index=True, how="left").fillna(0).astype(
        {c: int for c in states.columns})


def print_bundles(paths: list[Path]) -> int:
    """``--bundle``: each bundle's :func:`bundle_splits` and its clear splits' sets, printed; 2 and one line for a
    path that is not a chain-kernel trace bundle."""
    from ctasim.trace import TraceFileError  # noqa: PLC0415

    for p in paths:
        try:
            s = bundle_splits(p)
        except (TraceFileError, OSError, KeyError, ValueError) as e:
            print(f"posthoc_sm_groups: {p}: not a chain-kernel trace bundle ({e})", file=sys.stderr)
            return 2
        with pd.option_context("display.width", 200):
            print(s.drop(columns=["fast_sms", "run"]).round(1).to_string(index=False))
        for _, r in s[s["clear"]].iterrows():
            members = r["fast_sms"] if r["state"].endswith("fast") else _complement(r["fast_sms"])
            print(f"{r['case']} {r['order']} {r['state']}: {members}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_sm_groups.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--runs", default="*", help="a glob on the run folder's name (default: every traced run)")
    ap.add_argument("--as-of", default=AS_OF, metavar="YYYY-MM-DD|all",
                    help=f"only the runs dated this day or before (default {AS_OF}, the committed tables' runs)")
    ap.add_argument("--bundle", type=Path, action="append", default=[],
                    help="print the splits of this chain-kernel trace bundle (any traced run) and write nothing")
    args = parse_outputs(ap, argv, folders=("--out",))
    if args.bundle:
        return print_bundles(args.bundle)
    try:
        paths = pom.selected(EXPERIMENTS, args.runs, None if args.as_of == "all" else args.as_of)
    except ValueError as e:
        print(f"posthoc_sm_groups: {e}", file=sys.stderr)
        return 2
    if not paths:
        print(f"posthoc_sm_groups: no traced chain-kernel run matches {args.runs!r}"
              f"{'' if args.as_of == 'all' else f' dated {args.as_of} or before'}",
              file=sys.stderr)
        return 2
    read = {p: dict(pom.first_runs(p)) for p in paths}  # each bundle read once
    s = pd.concat([bundle_splits(p, r) for p, r in read.items()], ignore_index=True).round(4)
    ls_ = pd.concat([layer_splits(p, runs=r) for p, r in read.items()], ignore_index=True).infer_objects().round(4)
    t = sets(s)
    r = row_states(s)
    sm = summary(s)
    bs = by_state(r)
    ls, rho = lost_share(r)
    two = pairs_2gpu().round(4) if args.runs == "*" else None
    args.out.mkdir(parents=True, exist_ok=True)
    s.to_csv(args.out / "splits.csv", index=False)
    ls_.to_csv(args.out / "layer-splits.csv", index=False)
    t.to_csv(args.out / "sets.csv", index=False)
    r.to_csv(args.out / "row-states.csv", index=False)
    sm.to_csv(args.out / "summary.csv", index=False)
    bs.to_csv(args.out / "by-state.csv", index=False)
    ls.to_csv(args.out / "lost-share.csv", index=False)
    if two is not None:
        two.to_csv(args.out / "pairs-2gpu.csv", index=False)
    with pd.option_context("display.width", 200):
        print(sm.to_string(index=False))
        print()
        print(t.drop(columns="set").to_string(index=False))
        print()
        print(disjoint(t).to_string(index=False))
        print()
        print(bs.to_string(index=False))
        shapes = r[r["runs"] > 1].groupby(["experiment", "case"])["makespan_range"].first()
        print()
        print(ls.to_string(index=False))
        print(f"rank correlation over the runs of the share lost with the gap spread: {rho:.2f}")
        by_layer = ls_.assign(clear=ls_["state"] != "uniform").groupby("layer").agg(
            runs=("case", "size"), clear=("clear", "sum"), mean_pct=("mean_pct", "mean"))
        print()
        print(by_layer.round(2).to_string())
        print(f"\nrow order, shapes measured more than once: {len(shapes)}; the runs' makespan penalties span more "
              f"than 6 points in {int((shapes > 6).sum())}, median span {shapes.median():.1f} points")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
