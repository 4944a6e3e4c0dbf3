"""``ctasim advise``: for one model's MLP block on one machine, which strategy is fastest at each token count.

Inputs: a model (``specs/models/``: the block from the model's published configuration, gated activations as they
are), a hardware profile (``specs/hardware/``), token counts, the GPUs to use (default: the node's), a clock regime.
For every token count M the block runs with M rows under every strategy that fits the GPUs:

* ``sequential`` on one GPU;
* ``ctapipe-1gpu`` (the chain kernel: both layers in one persistent kernel, intra-GPU CTA-pipelining) where one GPU is
  all there is; it runs layers of one square shape (the same fused activation in each, at most), which no MLP block
  has, so for a block its answer is the reason it does not run (``Not run``);
* ``microbatch`` (layer i on GPU i, the chunk sweep :data:`CHUNKS`; the best count is reported);
* ``tp`` at each power-of-two degree up to the GPUs;
* ``ctapipe`` (layer i on GPU i): the fastest of the simulator's default design (persistent CTAs popping the
  work-queue, the producer in row order) and every variant ``ctahw`` runs whose kernel configs the profile has
  (:func:`ctapipe_designs`: clusters, the producer's row-block groups, queue or counter-waiting consumers), as
  micro-batching takes its best chunk count; the design that won is reported;
* ``ctapipe-ring`` (the chain kernel's persistent pair: one kernel per GPU taking its tiles by tickets,
  ``placement = "ring"``; ctahw's kernel for layers of different shapes with fused epilogues, registered plans 16
  and 19) where the block's ops fuse into it (gated activations do not);
* ``hybrid`` (tensor-parallel groups of t GPUs per layer, CTA-pipelined between them) where 2t GPUs fit.

The answer states how far to trust it: whether the profile was measured or read off a datasheet, and the registered
validation of the strategies involved (the latest ``bench/results/validation-registered*`` of a checkout: which
strategies have been predicted before they were measured, and how close the model came: the profile in hand's and its
bases' by name, every other profile's in one summary; per kind, the pooled record of every registration measured on
the profile's GPU, ``bench/results/registered-record-h100/record.csv`` for an H100's, else the lent H200s'
``bench/results/registered-record/record.csv``, both written by ``bench/registered_record.py``).

Where the profile prices the one-CTA-per-tile grids of ctahw's variants with a ticket spread (the mechanism profiles),
``ctapipe`` is priced again with that spread at 0 (:func:`kept_reuse`: producers and consumers keep their weights' L2
reuse), and the answer says how far it moves and whether the verdict changes between the two ends: registered plans
83 and 84 measured the producer alone anywhere between them near the edge of its reuse (no run has a consumer's).

Left out: attention and everything else :attr:`ctasim.spec.Model.leaves_out` names; the placement of deeper chains on
fewer GPUs (layers = GPUs for the pipelined strategies here); invariant checks (the predictions are the same; ``ctasim
run`` checks them).
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Sequence

import pandas as pd

from ctasim.cases import check_experiment
from ctasim.run import run_experiment
from ctasim.spec import Experiment, Hardware, Model, Strategy

__all__ = ["CHUNKS", "TOKENS", "strategies_for", "advise", "trust", "lineage", "registered_runs",
           "registered_by_profile", "best_table", "markdown"]

CHUNKS = (1, 2, 4, 8, 16, 32, 64)
"""Micro-batching chunk counts tried (the best is reported, with its count)."""
TOKENS = (1024, 2048, 4096, 8192, 16384, 32768)
"""Default token counts (rows M of the block)."""


DESIGN = "ctapipe:"
"""Label prefix of a ``ctapipe`` design other than the default (``ctapipe:<variant>``); :func:`advise` keeps the
fastest design per token count under the one label ``ctapipe``."""
DEFAULT_DESIGN = "default"
"""What the ``variant`` column says where the simulator's default ``ctapipe`` design won."""


def ctapipe_designs() -> tuple[str, ...]:
    """The ``ctahw`` variants (:data:`ctasim.variants.VARIANTS`, traced twins left out: the same plan) that the
    simulator can model: those with a kernel config per layer (the persistent ones have none)."""
    from ctasim.variants import VARIANTS, base_name  # noqa: PLC0415

    return tuple(n for n, v in VARIANTS.items() if n == base_name(n) and v.kernels)


def strategies_for(gpus: int) -> tuple[Strategy, ...]:
    """Every strategy of the module docstring that fits ``gpus`` GPUs for a 2-layer block (each ``ctapipe`` design
    its own strategy, ``ctapipe:<variant>``; :func:`advise` keeps the fastest)."""
    out = [Strategy("sequential")]
    if gpus == 1:
        out.append(Strategy("ctapipe", name="ctapipe-1gpu", gpus=1))
    if gpus >= 2:
        out.append(Strategy("microbatch", chunks=CHUNKS))
        out.append(Strategy("ctapipe"))
        out += [Strategy("ctapipe", name=DESIGN + v, variant=v) for v in ctapipe_designs()]
        out.append(Strategy("ctapipe", name="ctapipe-ring", gpus=2, placement="ring"))
    t = 2
    while t <= gpus:
        out.append(Strategy("tp", name=f"tp{t}", tp_degree=t))
        t *= 2
    t = 2
    while 2 * t <= gpus:
        out.append(Strategy("hybrid", name=f"hybrid-tp{t}", tp_degree=t))
        t *= 2
    return tuple(out)


def experiment(model: Model, hw: Hardware, tokens, gpus: int | None = None, regime: str = "burst") -> Experiment:
    """The experiment ``advise`` simulates (checked: every case tiles and every strategy kept fits); the strategies
    that cannot run this block on these GPUs are left out (:func:`left_out` says why)."""
    g = gpus or hw.gpus
    exp = Experiment(name=f"advise-{model.name}", hardware=hw, workload=model.workload,
                     strategies=strategies_for(g), sweep=(("m", tuple(tokens)),), gpus=g,
                     description=f"{model.name} MLP block on {hw.name}", regime=regime)
    dropped = left_out(exp)
    exp = dataclasses.replace(exp, strategies=tuple(s for s in exp.strategies if s.label not in dropped))
    return check_experiment(exp, f"advise {model.name} on {hw.name}")


def _left_out_all(model: Model, hw: Hardware, tokens, gpus: int | None) -> tuple[tuple[Strategy, ...], dict[str, str]]:
    """Every strategy :func:`strategies_for` gives this machine's GPUs, and :func:`left_out`'s reasons among them."""
    g = gpus or hw.gpus
    strategies = strategies_for(g)
    return strategies, left_out(Experiment(name=f"advise-{model.name}", hardware=hw, workload=model.workload,
                                           strategies=strategies, sweep=(("m", tuple(tokens)),), gpus=g))


def dropped(model: Model, hw: Hardware, tokens, gpus: int | None = None) -> dict[str, str]:
    """{strategy label: why} of the strategies ``advise`` leaves out for this model on this machine (a ``ctapipe``
    design only where every design is left out: the others are :func:`designs_tried`'s)."""
    _, out = _left_out_all(model, hw, tokens, gpus)
    return {k: v for k, v in out.items() if not k.startswith(DESIGN)}


def designs_tried(model: Model, hw: Hardware, tokens, gpus: int | None = None) -> list[str]:
    """The ``ctapipe`` designs :func:`advise` runs for this model on this machine: the default and each ctahw variant
    the profile models (empty where ``ctapipe`` itself does not run)."""
    strategies, out = _left_out_all(model, hw, tokens, gpus)
    if "ctapipe" in out or (gpus or hw.gpus) < 2:
        return []
    return [DEFAULT_DESIGN] + [s.label.removeprefix(DESIGN) for s in strategies
                               if s.label.startswith(DESIGN) and s.label not in out]


def left_out(exp: Experiment) -> dict[str, str]:
    """{strategy label: why it cannot run some case of ``exp``} (e.g. N that does not split into whole tiles)."""
    from ctasim.cases import expand
    from ctasim.strategies import check_placement

    out = {}
    for s in exp.strategies:
        for case in expand(exp):
            why = check_placement(s, case.workload, exp.hardware, case.gpus)
            if why:
                out[s.label] = why
                break
    return out


def advise(model: Model, hw: Hardware, tokens=TOKENS, gpus: int | None = None, regime: str = "burst",
           jobs: int = 1, scheduler=None) -> pd.DataFrame:
    """One row per (tokens, strategy): latency, GPUs, the variant chosen, and, for ``ctapipe`` where the profile prices
    the one-CTA-per-tile grids of ctahw's variants with a ticket spread, ``kept_us`` and ``kept_variant``: its latency
    and design (the fastest again) with those grids keeping their L2 reuse (:func:`kept_reuse`; the persistent default
    design as priced; NaN and "" elsewhere: the ring pair and hybrid run no such grid)."""
    exp = experiment(model, hw, tokens, gpus, regime)
    raw = _latencies(exp, jobs, scheduler)
    df = fastest_design(raw).assign(kept_us=float("nan"), kept_variant="")
    kept = kept_reuse(hw)
    grids = tuple(x for x in exp.strategies if x.label.startswith(DESIGN))  # ctahw's variants: one CTA per tile
    if kept is None or not grids:
        return df
    again = _latencies(dataclasses.replace(exp, hardware=kept, strategies=grids), jobs, scheduler)
    low = fastest_design(pd.concat([raw[raw["strategy"] == "ctapipe"], again], ignore_index=True))
    low = low.set_index(["tokens", "strategy"])
    for i, r in df[df["strategy"] == "ctapipe"].iterrows():
        df.loc[i, ["kept_us", "kept_variant"]] = low.loc[(r["tokens"], "ctapipe"), ["latency_us", "variant"]].values
    return df


def _latencies(exp: Experiment, jobs: int, scheduler) -> pd.DataFrame:
    """``exp`` run: one row per (tokens, strategy label) with its kind, GPUs, variant and latency."""
    df, _ = run_experiment(exp, check=False, jobs=jobs, scheduler=scheduler)
    df = df.rename(columns={"m": "tokens"}) if "m" in df.columns else df.assign(
        tokens=df["case"].str.removeprefix("m=").astype(int))
    return df[["tokens", "strategy", "kind", "gpus", "variant", "latency_us"]].reset_index(drop=True)


def _one_cta_per_tile(c) -> bool:
    """A kernel config of the CTA-pipelined one-CTA-per-tile grids priced with a ticket spread: the ``ctapipe`` family
    (``ctapipe``, ``ctapipe-2x1``, ...), not the chain kernel's (``kernel = ""``)."""
    return c.kernel.split("-", 1)[0] == "ctapipe" and c.ticket_spread > 0


def kept_reuse(hw: Hardware) -> Hardware | None:
    """``hw`` with the ticket spread of the configs of its one-CTA-per-tile grids (:func:`_one_cta_per_tile`: the
    producers' and the consumers' of ctahw's variants) at 0: their tiles read their panels in lockstep and keep the L2
    reuse the spread costs them (the chain kernel's configs as they are); None where the profile has no such config.
    Registered plans 83 and 84 measured the producer alone anywhere between this level and the profile's (45 of 45
    runs of plan 84 inside the range), moving with H, the run and the GPU; no run has measured a consumer grid's
    level alone."""
    if not any(_one_cta_per_tile(c) for c in hw.kernel_configs):
        return None
    return dataclasses.replace(hw, kernel_configs=tuple(
        dataclasses.replace(c, ticket_spread=0.0) if _one_cta_per_tile(c) else c for c in hw.kernel_configs))


def fastest_design(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (advise's rows) with the ``ctapipe`` designs of each token count reduced to the fastest, labelled
    ``ctapipe``, its ``variant`` the design's name (:data:`DEFAULT_DESIGN` or a ctahw variant)."""
    design = (df["strategy"] == "ctapipe") | df["strategy"].str.startswith(DESIGN)
    d = df[design].copy()
    d["variant"] = d["strategy"].str.removeprefix(DESIGN).where(d["strategy"] != "ctapipe", DEFAULT_DESIGN)
    d["strategy"] = "ctapipe"
    best = d.loc[d.groupby("tokens", sort=False)["latency_us"].idxmin()]
    return pd.concat([df[~design], best]).sort_index().reset_index(drop=True)


PIPELINED = ("ctapipe", "hybrid")
"""Strategy kinds that CTA-pipeline (hybrid: tensor-parallel groups, CTA-pipelined between them)."""


def _design_label(row: pd.Series) -> str:
    """A strategy's label; for ``ctapipe``, the ctahw variant that won (``cutlass_ctapipe_w21g4``) or ``ctapipe``
    where the simulator's default design did."""
    if row["strategy"] != "ctapipe" or row["variant"] == DEFAULT_DESIGN:
        return str(row["strategy"])
    return str(row["variant"])


def best_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per token count: the fastest strategy and its latency; the best CTA-pipelined strategy (ctapipe or hybrid, any
    GPU count) against the best of the others (``pipelined_vs_other`` < 1: CTA-pipelining wins by that much); the
    same on two GPUs (ctapipe against micro-batching and TP2); the best micro-batching chunk count and TP degree."""
    rows = []
    for tokens, g in df.groupby("tokens", sort=True):
        best = g.loc[g["latency_us"].idxmin()]
        pipe, other = g[g["kind"].isin(PIPELINED)], g[~g["kind"].isin(PIPELINED)]
        bp = pipe.loc[pipe["latency_us"].idxmin()] if len(pipe) else None
        bo = other.loc[other["latency_us"].idxmin()]
        two = g[g["gpus"] == 2]
        p2, o2 = two[two["kind"] == "ctapipe"], two[~two["kind"].isin(PIPELINED)]
        mb, tp = g[g["kind"] == "microbatch"], g[g["kind"] == "tp"]
        rows.append({
            "tokens": int(tokens), "best": best["strategy"], "best_gpus": int(best["gpus"]),
            "best_us": float(best["latency_us"]),
            "pipelined": _design_label(bp) if bp is not None else "",
            "pipelined_us": float(bp["latency_us"]) if bp is not None else float("nan"),
            "best_other": bo["strategy"],
            "pipelined_vs_other": float(bp["latency_us"]) / float(bo["latency_us"]) if bp is not None else float("nan"),
            "ctapipe_vs_other_2gpu": (float(p2["latency_us"].min()) / float(o2["latency_us"].min())
                                      if len(p2) and len(o2) else float("nan")),
            "ctapipe_2gpu": (_design_label(p2.loc[p2["latency_us"].idxmin()]) if len(p2) else ""),
            "microbatch_chunks": mb["variant"].iloc[0] if len(mb) else "",
            "tp_best": tp.loc[tp["latency_us"].idxmin(), "strategy"] if len(tp) else "",
        })
    return pd.DataFrame(rows)


def trust(hw: Hardware, kinds, results_dir: Path | None = None) -> list[str]:
    """Lines on how far to trust the answer: the profile's provenance, the registered validation per kind."""
    from ctasim.profiles import DERIVED  # noqa: PLC0415

    if hw.measured:
        how = "measured on the machine it describes"
    elif hw.name in DERIVED:
        how = (f"derived from {DERIVED[hw.name].base} by ctasim.profiles: its measured figures, estimates where the "
               "file marks them; not measured as a whole (its registered validations, where any, are quoted below "
               "by kind)")
    else:
        how = "datasheet figures, not measured (no validation applies to it as such)"
    lines = [f"profile {hw.name}: {how}"]
    from ctasim.engine import clock_factor, clock_steps  # noqa: PLC0415

    burst, sustained = clock_steps(hw, "burst"), clock_steps(hw, "sustained")
    if burst[0] or sustained[0]:
        if hw.clock_curve_ns:
            how = ("a burst run follows the measured mean clock curve (" + ", ".join(
                f"{clock_factor(hw, 'burst', t):.3f}x at {t / 1e6:.0f} ms" for t in (3e7, 5e7, 7e7))
                + f" busy, {clock_factor(hw, 'burst', math.inf):.3f}x from {hw.clock_curve_ns[-1] / 1e6:.0f} ms)")
        elif burst[0]:
            how = f"a burst run slows {burst[1][-1]:.3f}x after {burst[0][0] / 1e6:.0f} ms busy"
        else:
            how = "a burst run never reaches the cap"
        lines.append(f"clock regime: in the profile ({how}); --regime sustained: every tile "
                     f"{clock_factor(hw, 'sustained', 0.0):.3f}x from the start")
    else:
        lines.append("clock regime: not in this profile (no power-cap slowdown): burst and sustained give the same "
                     "figures, both at full clock")
    root = _results_root(results_dir)
    s = registered_runs(root)
    if s is None:
        lines.append("registered validation: none found in this installation (a checkout has it under "
                     "bench/results/validation-registered*)")
        return lines
    own = lineage(hw.name, hw.calibrated_from)
    record, on = record_of(hw.gpu)
    rec = pd.read_csv(root / record).set_index(["kind", "source"]) if (root / record).is_file() else None
    for kind in kinds:
        if rec is not None and (kind, "model") in rec.index:
            m = rec.loc[(kind, "model")]
            naive = f", the naive FLOPs line {rec.loc[(kind, 'naive'), 'mape_pct']:.2f}%" if (kind, "naive") in \
                rec.index else ""
            lines.append(f"{kind} (every registration measured on {on} pooled, as registered): model MAPE "
                         f"{m['mape_pct']:.2f}% over {int(m['cases'])} measured cases, {m['within_6_pct']:.0f}% within "
                         f"6%, worst {m['worst_pct']:+.1f}%{naive} (bench/results/{record.parent}, docs/validation.md)")
        k = s[s["kind"] == kind]
        if not len(k):
            lines.append(f"{kind}: not yet predicted-then-measured (no registered validation): treat as a model "
                         f"estimate")
            continue
        label = ["this profile", "its base", "its base's base"] + ["an earlier base"] * max(0, len(own) - 3)
        parts = [f"{label[i]} {prof}: {_runs_text(k[k['profile'] == prof])}"
                 for i, prof in enumerate(own) if (k["profile"] == prof).any()]
        others = k[~k["profile"].isin(own)]
        if len(others):
            n = others["profile"].nunique()
            parts.append(f"{n} other profile{'s' if n > 1 else ''} ({', '.join(sorted(others['profile'].unique()))}): "
                         f"MAPE {others['mape_pct'].min():.1f}-{others['mape_pct'].max():.1f}%, worst "
                         f"{others.loc[others['worst_pct'].abs().idxmax(), 'worst_pct']:+.1f}% over {len(others)} "
                         f"measured runs of {others['registration'].nunique()} registrations (each profile's: "
                         "bench/results/validation-registered*, docs/validation.md)")
        if not any(p.startswith("this profile") for p in parts):
            parts.insert(0, "none of this profile's own")
        lines.append(f"{kind}: registered model: " + "; ".join(parts))
    return lines


def lineage(name: str, calibrated_from: str = "") -> list[str]:
    """``name`` and the profiles it comes from: ``calibrated_from`` (the base ``ctahw calibrate`` copied it from, where
    it is a calibration's), then each profile's base in ``ctasim.profiles`` (the base's base, ...)."""
    from ctasim.profiles import DERIVED  # noqa: PLC0415

    out = [name] + ([calibrated_from] if calibrated_from and calibrated_from != name else [])
    while out[-1] in DERIVED and DERIVED[out[-1]].base not in out:
        out.append(DERIVED[out[-1]].base)
    return out


def registered_runs(root: Path) -> pd.DataFrame | None:
    """Every registered model row per kind of strategy of the judged validations under ``root``
    (``validation-registered*/REG/summary.csv``), with the profile each registration was predicted with
    (``profile``; its registration.json, '?' where absent) and whether that profile's file has changed since
    (``earlier``); None where this installation has none."""
    found = sorted(root.glob("validation-registered*/*/summary.csv")) if root.is_dir() else []
    if not found:
        return None
    s = _summaries(tuple((p, p.stat().st_mtime_ns, p.stat().st_size) for p in found))
    profiles = {r: _registered_profile(root, r) for r in s["registration"].unique()}  # read and hashed once each
    return s.assign(profile=[profiles[r][0] for r in s["registration"]],
                    earlier=[not profiles[r][1] for r in s["registration"]])


_SUMMARIES: dict[tuple, pd.DataFrame] = {}
"""The registered model rows of :func:`registered_runs` by the summaries' (path, mtime, size): several hundred small
files, read once per process while none changes (``ctasim advise`` and its tests read them for every kind)."""


def _summaries(files: tuple) -> pd.DataFrame:
    if files not in _SUMMARIES:
        s = pd.concat([pd.read_csv(p).assign(registration=p.parent.name) for p, _, _ in files], ignore_index=True)
        _SUMMARIES.clear()
        _SUMMARIES[files] = s[(s["predictor"] == "model") & (s["kind"] != "all") & s["registered"].astype(bool)]
    return _SUMMARIES[files].copy()


def _runs_text(g: pd.DataFrame) -> str:
    """One profile's registered runs of a kind (rows of :func:`registered_runs`): its MAPE range, worst error, runs
    and registrations, named."""
    earlier = g.loc[g["earlier"], "registration"].nunique()
    then = f", {earlier} of them with an earlier version of the profile's file" if earlier else ""
    return (f"MAPE {g['mape_pct'].min():.1f}-{g['mape_pct'].max():.1f}%, worst "
            f"{g.loc[g['worst_pct'].abs().idxmax(), 'worst_pct']:+.1f}% over {len(g)} measured runs of "
            f"{g['registration'].nunique()} registrations{then} ({', '.join(sorted(set(g['registration'])))})")


def registered_by_profile(kind: str, results_dir: Path | None = None) -> dict[str, str]:
    """Profile -> the text :func:`trust` gives its registered runs of ``kind`` (every profile, as filed by
    :func:`registered_runs`); empty where there are none."""
    s = registered_runs(_results_root(results_dir))
    if s is None:
        return {}
    k = s[s["kind"] == kind]
    return {prof: _runs_text(g) for prof, g in k.groupby("profile", sort=True)}


ACTIVATION_OUTPUTS = ("gelu", "silu", "swiglu")
"""Epilogue ops whose output the next layer reads as A, priced by the model at the random-operand rate (factor 1;
a ``relu``'s output has ``Hardware.relu_input_tile_factor``)."""
RECORD = Path("registered-record") / "record.csv"
"""The pooled record of every registered prediction measured on the lent H200s (``bench/registered_record.py``), under
the results root."""
RECORDS = {"H100": Path("registered-record-h100") / "record.csv"}
"""The pooled records of other GPUs' calls, by :attr:`ctasim.spec.Hardware.gpu` (``bench/registered_record.py
--machine h100``)."""


def record_of(gpu: str) -> tuple[Path, str]:
    """The pooled record a profile of ``gpu`` is quoted with (under the results root) and the machines it pooled: the
    GPU's own (:data:`RECORDS`), else the lent H200s' (:data:`RECORD`; a B200 profile has no measured call)."""
    return (RECORDS[gpu], f"lent {gpu}s") if gpu in RECORDS else (RECORD, "lent H200s")


def _results_root(results_dir: Path | None) -> Path:
    """``results_dir``, or this checkout's bench/results."""
    return results_dir or Path(__file__).resolve().parent.parent / "bench" / "results"


def _pooled(root: Path, folders: Sequence[str], name: str) -> tuple[pd.DataFrame | None, int]:
    """The committed table ``name`` of each of ``folders`` under ``root`` (one folder per machine) that this
    installation has, concatenated, and how many there were (None, 0 where none)."""
    found = [f for f in (root / folder / name for folder in folders) if f.is_file()]
    return (pd.concat((pd.read_csv(f) for f in found), ignore_index=True) if found else None), len(found)


OPERAND_PLAN = ("reg36-gelu-k", "validation-registered36")
"""The registered measurement of a GEMM on a GeLU's output against K (docs/validation.md, registered plan 36): its
registration under bench/predictions and its judged tables under bench/results."""
OPERAND_MACHINE_PLANS = ("validation-registered43", "validation-registered43-run2", "validation-registered44",
                         "validation-registered44-run2")
"""Registered plans 43 and 44's judged pairs, each on two machines (``pairs.csv``: the GeLU'd-A factor measured at ten
and five shapes on four other machines), which say how far plan 36's factors are the machine's."""


def operand_lines(model: Model, results_dir: Path | None = None) -> list[str]:
    """Trust lines on what the profile's rates leave out about the operands and the machine: where a layer reads a
    GeLU's, SiLU's or SwiGLU's output, registered plan 36's factors of that GEMM against random operands at rest by K
    and plans 43 and 44's range of them on four other machines (from their committed tables; nothing where this installation has
    none); and the lent machines' spread on the
    reference GEMM (``bench/results/machine-spread/summary.csv``)."""
    root = _results_root(results_dir)
    layers = model.workload.layers
    ks = sorted({nxt.k for prev, nxt in zip(layers, layers[1:]) if set(prev.epilogue) & set(ACTIVATION_OUTPUTS)})
    lines = []
    reg, kernels = (root.parent / "predictions" / OPERAND_PLAN[0] / "kernels.csv",
                    root / OPERAND_PLAN[1] / "kernels.csv")
    if ks and kernels.is_file() and reg.is_file():
        t = pd.read_csv(kernels).merge(pd.read_csv(reg)[["kernel", "k", "op"]], on="kernel")
        t["op"] = t["op"].fillna("")
        plain = t[t["op"] == ""].set_index("k")["rested_ms"]
        gelu = t[t["op"] == "gelu_input"].set_index("k")["rested_ms"]
        factors = ", ".join(f"{gelu[k] / plain[k]:.3f}x at K = {k}" for k in sorted(set(plain.index) & set(gelu.index)))
        lines.append(f"operands: the profile's tile rates come from random normal operands; this block's GEMM at "
                     f"K = {', '.join(map(str, ks))} reads an activation's output, which the model prices at the same "
                     f"rate; registered plan 36 timed a GEMM on a GeLU's output at {factors} of the random-operand "
                     f"time at rest (16384 x 8192 x K, one H200; docs/validation.md): not modelled")
        p, machines = _pooled(root, OPERAND_MACHINE_PLANS, "pairs.csv")
        if machines:
            lines[-1] += (f"; registered plans 43 and 44 timed {p['measured'].min():.3f}-{p['measured'].max():.3f}x "
                          f"at {len(p)} shapes (K = {p['k'].min()}-{p['k'].max()}) on {machines} other H200s: the "
                          f"gain is the machine's as much as the shape's")
    spread = root / "machine-spread" / "summary.csv"
    if spread.is_file():
        m = pd.read_csv(spread).set_index("m")
        if 16384 in m.index:
            r = m.loc[16384]
            lines.append(f"machine: {int(r.machines)} lent H200s timed the 16384 x 8192 x 8192 GEMM "
                         f"{r['min']:.3f}-{r['max']:.3f} ms ({r.spread_pct:.1f}% apart; the profile describes one): "
                         f"at rest a limiter NVML does not report slows random operands by a machine's own amount "
                         f"(registered plans 32-36)")
    return lines


LONG_K = 20480
"""A GEMM's K from which the model's long-K error goes with the machine (registered plans 29, 45 and 46)."""
LONG_K_PLANS = ("validation-registered45", "validation-registered45-run2", *(
    f"validation-registered46{run}/traces" for run in ("", "-run2", "-run3", "-run4")))
"""Registered plans 45 and 46's judged traces, on two and four machines (``results.csv``: square GEMMs at K =
28672-53248, the model's and the naive line's errors)."""


def long_k_lines(model: Model, results_dir: Path | None = None) -> list[str]:
    """A trust line where a layer's K is at least :data:`LONG_K`: registered plans 45 and 46's errors of the model and
    of the naive FLOPs line on long-K GEMMs in the high-reuse order (from their committed tables; nothing where this
    installation has none). Where the machine matters most, :func:`own_profile_lines` says how to calibrate it."""
    ks = sorted({layer.k for layer in model.workload.layers if layer.k >= LONG_K})
    r, machines = _pooled(_results_root(results_dir), LONG_K_PLANS, "results.csv")
    if not ks or not machines:
        return []
    r = r[r["role"] == "long"]
    return [f"long K: this block's GEMM at K = {', '.join(map(str, ks))} is where the machine decides the model's "
            f"error: registered plans 45-46 timed square GEMMs at K = {r['h'].min()}-{r['h'].max()} on {machines} "
            f"H200s, the model's time {r['model_err_pct'].min():+.1f} to {r['model_err_pct'].max():+.1f}% from the "
            f"measured (over it on all but the slowest machine; the naive FLOPs line's "
            f"{r['naive_err_pct'].min():+.1f} to {r['naive_err_pct'].max():+.1f}%; docs/validation.md)"]


EDGE_PLANS = {"H200": (("validation-registered13", "judged.csv", 12288),
                       ("validation-registered14", "judged.csv", None)),
              "H100": (("validation-registered83", "means.csv", None),
                       ("validation-registered85", "cases.csv", None),
                       ("validation-registered86", "cases.csv", None),
                       ("validation-registered88", "cases.csv", None))}
"""Registered plans 13, 14 (one H200 each) and 83, 85, 86, 88 (one H100 each, four units): the row-order producer
alone's mean tile time over the no-miss (lockstep) one, per H (``judged.csv``: ``lockstep_error`` or
``lockstep_mean_error``;
``means.csv``: ``measured_us`` and ``lockstep``; ``cases.csv``: ``measured_us`` and ``predicted_us`` of the
``lockstep`` predictor), and the H of a table without an ``h`` column (plan 13 ran H = 12288 only)."""
EDGE_RATIOS = {"H100": ("validation-registered84", "cases.csv")}
"""Registered plan 84 (a second H100 unit): per H its traced runs' late-over-early mainloop ratios (``cases.csv``:
``ratio_min``, ``ratio_max``), the run-to-run range at the edge on another unit than plan 83's."""
EDGE_RUNS = ("hw-h100/2026-12-06-registered83-1gpu", "hw-h100/2026-12-06-registered84-1gpu")
"""Plans 83 and 84's H100 calls: each H's untraced run times (``OUT_H<h>/percta-runs.csv``), the spread between runs at
the edge (the call and H where it is widest)."""
EDGE_PRODUCER = "cutlass_ctapipe"


def _ratios_by_h(ratios: dict[int, list[float]]) -> str:
    """``{h: values}`` as "h lo-hix, ..." (one figure where they agree to 0.005)."""
    return ", ".join(f"{h} {min(x):.2f}" + (f"-{max(x):.2f}" if max(x) - min(x) >= 0.005 else "") + "x"
                     for h, x in sorted(ratios.items()))


def kept_changes(df: pd.DataFrame) -> list[str]:
    """Per token count where it changes between the profile's level and the kept one (``kept_us``, where there is
    one): the fastest strategy, or else the CTA-pipelined verdict (``pipelined_vs_other`` against 1); empty where
    neither does or nothing was priced at the kept level."""
    if "kept_us" not in df or df["kept_us"].isna().all():
        return []
    low = best_table(df.assign(latency_us=df["kept_us"].fillna(df["latency_us"])))
    changes = []
    for (_, a), (_, b) in zip(best_table(df).iterrows(), low.iterrows()):
        if a["best"] != b["best"]:
            changes.append(f"{a['tokens']} tokens the fastest {a['best']} -> {b['best']}")
        elif (a["pipelined_vs_other"] < 1) != (b["pipelined_vs_other"] < 1):
            changes.append(f"{a['tokens']} tokens CTA-pipelining {a['pipelined_vs_other']:.3f}x -> "
                           f"{b['pipelined_vs_other']:.3f}x the best other")
    return changes


KEPT_RANGE = "validation-mechanism/kept-range.csv"
"""The committed 2xH200 one-CTA-per-tile traces placed in the range (``bench/ctapipe_mechanism.py``'s
``kept_range``: the kept level to the mechanism profile's, per trace; post-hoc)."""


def _kept_range_text(results_dir: Path | None) -> str:
    """How the committed 2xH200 traces sit in the range, where this installation has the table; "" elsewhere."""
    path = _results_root(results_dir) / KEPT_RANGE
    if not path.is_file():
        return ""
    k = pd.read_csv(path)
    r = k[k["place"].notna()]
    if r.empty:
        return ""
    return (f"; post-hoc, the committed 2xH200 runs of {r['variant'].nunique()} variants (M = {r['m'].min()}-"
            f"{r['m'].max()}, where the two ends differ) lay inside that range on h200-x2-mechanism in "
            f"{int(r['inside'].sum())} of {len(r)} traces, from {r['place'].min():.2f} to {r['place'].max():.2f} of "
            "the way from the kept level to the profile's")


def kept_lines(df: pd.DataFrame, results_dir: Path | None = None) -> list[str]:
    """Where :func:`advise` priced CTA-pipelined strategies at the kept level too (``kept_us``): how far they move, and
    whether the fastest strategy or the CTA-pipelined verdict (``pipelined_vs_other`` against 1) changes at any token
    count between the two ends."""
    if "kept_us" not in df or df["kept_us"].isna().all():
        return []
    p = df[df["kept_us"].notna()]
    move = (p["kept_us"] / p["latency_us"] - 1) * 100
    worst = p.loc[move.abs().idxmax()]
    design = _design_label(pd.Series({**worst.to_dict(), "variant": worst["kept_variant"]}))
    moved = _design_label(worst) + ("" if design == _design_label(worst) else f" (kept: {design})")
    changes = kept_changes(df)
    verdict = ("the fastest strategy and the CTA-pipelined verdict are the same at every token count either way"
               if not changes else "the answer changes between the two ends: " + "; ".join(changes))
    span = (f"by {move.min():+.1f} to {move.max():+.1f}%" if move.max() - move.min() >= 0.05
            else f"by {move.min():+.1f}%")
    return [f"with the one-CTA-per-tile grids of ctahw's variants (producers and consumers) keeping their weights' L2 "
            "reuse (their ticket spread at 0; registered plans 83 and 84 measured the producer alone anywhere from "
            "this level to the profile's near the edge of that reuse; no run has measured a consumer grid alone), "
            f"ctapipe's latency moves {span} (the most: {moved} at {worst['tokens']} tokens); {verdict}"
            + _kept_range_text(results_dir)]


def producer_edge_lines(kinds, results_dir: Path | None = None) -> list[str]:
    """Where a CTA-pipelined strategy is priced on two or more GPUs (``ctapipe`` or ``hybrid`` in ``kinds``, the kinds
    of those strategies; the one-GPU chain kernel is another kernel): registered plans 13, 14, 83, 85 and
    86's producer alone in row order (``cutlass_ctapipe``'s), its mean tile time over the no-miss one
    per GPU and H, plan 84's run-to-run ratios on another H100, and the spread of plans 83 and 84's untraced runs
    at the call and H where they spread most (from the committed tables; nothing where this installation has none)."""
    if not {"ctapipe", "hybrid"} & set(kinds):
        return []
    root, parts, units = _results_root(results_dir), [], False
    for gpu, sources in EDGE_PLANS.items():
        ratios, plans = {}, []
        for folder, name, only_h in sources:
            path = root / folder / name
            if not path.is_file():
                continue
            plans.append(folder.removeprefix("validation-registered"))
            d = pd.read_csv(path)
            d = d[d["variant"] == EDGE_PRODUCER]
            if "predictor" in d:
                d = d[d["predictor"] == "lockstep"]
                r = d["measured_us"] / d["predicted_us"]
            elif "lockstep" in d:
                r = d["measured_us"] / d["lockstep"]
            else:
                r = 1.0 / (1.0 + d["lockstep_mean_error" if "lockstep_mean_error" in d else "lockstep_error"])
            hs = d["h"] if only_h is None else pd.Series(only_h, index=d.index)
            for h, x in zip(hs, r):
                ratios.setdefault(int(h), []).append(float(x))
        if ratios:
            who = (f"{gpu}s (plans {', '.join(plans)}, one GPU each)" if len(plans) > 1
                   else f"an {gpu} (plan {plans[0]})")
            parts.append(who + " " + _ratios_by_h(ratios))
        folder, name = EDGE_RATIOS.get(gpu, (None, None))
        if folder and (root / folder / name).is_file():
            d = pd.read_csv(root / folder / name)
            ranges = {int(h): [lo, hi] for h, lo, hi in zip(d["h"], d["ratio_min"], d["ratio_max"])}
            parts.append(f"{'another' if ratios else 'an'} {gpu} (plan "
                         f"{folder.removeprefix('validation-registered')}, each run's late mainloop over its early "
                         "one) " + _ratios_by_h(ranges))
            units |= bool(ratios)
    runs = {}
    for call in EDGE_RUNS:
        for f in sorted((root / call).glob("OUT_H*/percta-runs.csv")):
            t = pd.read_csv(f)
            t = t.loc[t["variant"] == EDGE_PRODUCER, "plain_ms"]
            if len(t):
                runs[(call, int(f.parent.name.removeprefix("OUT_H")))] = (float(t.min()), float(t.max()))
    if not parts:
        return []
    line = ("ctahw's CTA-pipelined producer in row order (cutlass_ctapipe, one CTA per tile), alone on one GPU, keeps "
            "its weights' L2 reuse at small H and loses it, gradually or suddenly, as H grows; its mean tile time "
            "over the no-miss one by H (M = 12288-16384), as registered plans measured it: " + "; ".join(parts))
    if runs:
        (_, h), (lo, hi) = max(runs.items(), key=lambda kv: kv[1][1] / kv[1][0])
        line += (f"; at the edge, runs of one case took {lo:.2f}-{hi:.2f} ms (H = {h}, M = 16384, one H100)"
                 + (", and the edge's H differs between GPUs of one kind" if units else "")
                 + ": near it a CTA-pipelined figure lies between the kept and the lost levels, not at a point")
    return [line + " (docs/validation.md)"]


GROUPED_KEPT = ("validation-registered85", "validation-registered86", "validation-registered88")
"""Registered plans 85, 86 and 88 (three H100 units, M = 16384): per H and producer alone its measured mean over full
waves, each predictor's error of it and the traced runs' late-over-early mainloop ratios (each folder's ``cases.csv``;
plan 87's call, at M = 32768, is quoted for its adoption: :data:`GROUPED_ADOPTED`)."""
_UNITS = {1: "an H100", 2: "two H100s", 3: "three H100s", 4: "four H100s"}
GROUPED_ADOPTED = "validation-registered87"
"""Registered plan 87 (a fifth H100, M = 32768): its ``claims.csv``, whether ``h100-x8-mechanism`` took the H200's
exposed rate and claim (a)'s mean |error| of the grouped producers under it."""
GROUPED_PRODUCERS = ("cutlass_ctapipe_w21g4", "cutlass_ctapipe_w21g8")
"""The grouped producers (groups of 4 and 8 row-blocks) the advice's CTA-pipelined designs order their tiles in."""
GROUPED_ESCAPE = 1.15
"""A traced run whose late mainloop is this many times its early one has lost part of its reuse (registered plan 85's
bound, from plan 84's row-order runs: kept 1.08, lost 1.58-2.09)."""


def grouped_kept_lines(kinds, results_dir: Path | None = None) -> list[str]:
    """Where a CTA-pipelined strategy is priced on two or more GPUs (as :func:`producer_edge_lines`): registered plans
    85, 86 and 88's grouped producers alone on an H100 each (and plan 87's adoption, where its table says so) --
    whether every traced run kept its reuse, and how far the profile's and the flat predictor's means were from the
    measured ones, per plan (from the committed tables; a table gone leaves its plan out, nothing where this
    installation has none)."""
    if not {"ctapipe", "hybrid"} & set(kinds):
        return []
    root = _results_root(results_dir)
    found = {d: pd.read_csv(root / d / "cases.csv") for d in GROUPED_KEPT if (root / d / "cases.csv").is_file()}
    if not found:
        return []
    kept, off, escaped = [], [], False
    for d in found.values():
        g = d[d["variant"].isin(GROUPED_PRODUCERS)]
        escaped |= bool((g["ratio_max"] >= GROUPED_ESCAPE).any())
        prof, flat = (g.loc[g["predictor"] == p, "mean_err_pct"] for p in ("profile", "flat"))
        kept.append(f"{g['ratio_min'].min():.2f}-{g['ratio_max'].max():.2f} at H = {g['h'].min()}-{g['h'].max()}")
        off.append((f"{prof.min():+.1f} to {prof.max():+.1f}%", f"{prof.abs().mean():.1f}%",
                    f"{flat.abs().mean():.1f}%"))
    plans = [d.removeprefix("validation-registered") for d in found]
    two = len(plans) > 1

    def listed(items) -> str:
        items = list(items)
        return ", ".join(items[:-1]) + " and " * (len(items) > 1) + items[-1]

    def both(i: int) -> str:
        return listed(o[i] for o in off)

    adopted = root / GROUPED_ADOPTED / "claims.csv"
    since = ""
    if adopted.is_file():
        a = pd.read_csv(adopted).set_index("claim")
        if a.loc["adopt", "value"] == "yes":
            since = ("; since registered plan 87's adoption the profile charges the exposed HBM share at the H200's "
                     f"rate, which at its lockstep level priced them at M = 32768 on another H100 "
                     f"{a.loc['a', 'value'].split(' against ')[0]} off (mean |error|)")
    return [f"registered plan{'s' * two} {listed(plans)} ran the grouped producers (groups of 4 and 8 "
            f"row-blocks: {', '.join(GROUPED_PRODUCERS)}) alone on {_UNITS[len(plans)]} (M = 16384): "
            + ("some traced runs lost part of their weights' L2 reuse" if escaped
               else "every traced run kept its weights' L2 reuse")
            + f" (late-over-early mainloop {', '.join(kept)}), and the "
            f"mechanism profile as registered (h100-x8-mechanism) priced their mean tile time {both(0)} off the "
            f"measured (+: slower than measured; mean |error| {both(1)}, the flat predictor's, no memory hierarchy, "
            f"{both(2)}{since}; docs/validation.md)"]


ALONE_RECORD = ("validation-registered89", "validation-registered90", "validation-registered92",
                "validation-registered93", "validation-registered95")
"""Registered plans 89 (the model as plans 87 and 88 left it, the producers alone at M = 24576: its ``claims.csv``),
90 (the producer's first wave by cluster: its ``cases.csv``), 92 and 93 (the 1x1 first wave floored at the L2-to-SM
rate of the GEMM's own loads, below and in the domain where it binds: their ``cases.csv``) and 95 (K != N: what the
1x1 first wave's excess follows, and a short K's first wave: its ``excess.csv``), one H100 each."""
ALONE_CLUSTER_H = 5632
"""Plan 90's H where the first wave is not bound by HBM (at 16896 it is, and every cluster ran alike)."""
ALONE_STATES = (1.10, 1.25)
"""Row order's mean over the no-miss (lockstep) level: kept under the first, lost from the second, between them a
partial loss (registered plans 88 and 89's bounds)."""


def alone_record_lines(kinds, results_dir: Path | None = None) -> list[str]:
    """Where a CTA-pipelined strategy is priced on two or more GPUs (as :func:`producer_edge_lines`): what registered
    plan 89 found of the model as it now is on the producers alone (issue 13's targets on the grouped producers and
    pairs, the flat predictor beside it, row order's error), what plan 90 found of the 1x1-cluster kernel's first
    wave against the 1x2 and 2x1 clusters', what plan 92 found of it at the L2-to-SM rate of the GEMM's own loads, and
    what plan 95 found with K != N (from the committed tables; a table gone leaves its line out)."""
    if not {"ctapipe", "hybrid"} & set(kinds):
        return []
    root, lines = _results_root(results_dir), []
    f89, cases89 = (root / ALONE_RECORD[0] / n for n in ("claims.csv", "cases.csv"))
    if f89.is_file() and cases89.is_file():
        c = pd.read_csv(f89).set_index("claim")
        mean, worst = c.loc["a", "value"].split(", worst ")
        flat = c.loc["b", "value"].split(" against ")[1]
        row = c.loc["f", "value"].split(" against ")[0]
        r = pd.read_csv(cases89)
        r = r[(r["variant"] == EDGE_PRODUCER) & (r["predictor"] == "lockstep")].set_index("h")
        level = r["measured_us"] / r["predicted_us"]
        between = level[(level >= ALONE_STATES[0]) & (level < ALONE_STATES[1])]
        lines.append(f"registered plan 89 priced the grouped producers and pairs alone (M = 24576, H = "
                     f"{r.index.min()}-{r.index.max()}, an H100) with the model as it now is at {mean} mean |error|, "
                     f"worst {worst.split(' (')[0]} (issue 13's 3% and 6% {'met' if c.loc['a', 'met'] else 'missed'}), "
                     f"the flat predictor with no memory hierarchy at {flat}; row order at {row}"
                     + (f", its partial loss of reuse at H = {' and '.join(map(str, between.index))} ("
                        + " and ".join(f"{x:.2f}" for x in between) + "x the no-miss level) in no state the model "
                        "has" if len(between) else "") + " (docs/validation.md)")
    f90 = root / ALONE_RECORD[1] / "cases.csv"
    if f90.is_file():
        d = pd.read_csv(f90)
        d = d[d["predictor"] == "model"].set_index(["h", "variant"])["measured"]
        over = {v: (d[(ALONE_CLUSTER_H, v)] - 1) * 100 for v in ("cutlass_ctapipe_c21", "cutlass_ctapipe_c12")}
        other = d.drop(index=ALONE_CLUSTER_H, level="h")

        def by(x: float) -> str:
            return f"{abs(x):.1f}% {'over' if x >= 0 else 'under'}"

        lines.append(f"registered plan 90 (an H100): the 1x1-cluster producer of ctahw's base variant "
                     f"(cutlass_ctapipe) ran its first wave {by(over['cutlass_ctapipe_c21'])} a 2x1 cluster's "
                     f"and {by(over['cutlass_ctapipe_c12'])} a 1x2 cluster's at H = {ALONE_CLUSTER_H}, where the "
                     "model prices every cluster alike (it leaves out the L2-to-SM reads a cluster's multicast "
                     f"saves), and within {(other - 1).abs().max() * 100:.1f}% of them where the first wave is bound "
                     "by HBM: the base variant's waves are priced short where HBM does not bound them "
                     "(docs/validation.md)")
    f92 = root / ALONE_RECORD[2] / "cases.csv"
    if f92.is_file():
        d = pd.read_csv(f92)
        d = d[d["variant"] == "cutlass_ctapipe"].pivot_table(index="n", columns="predictor", values="err_pct")
        ratio = pd.read_csv(f92).drop_duplicates("n").set_index("n")["row_over"]
        bound = d.index[d["by_n"] > d["model"] + 1e-9]  # where the floor binds
        free = ratio[ratio < 1.02].index

        def both(xs) -> str:
            xs = list(xs)
            return ", ".join(xs[:-1]) + (" and " if len(xs) > 1 else "") + xs[-1]

        def pct(xs) -> str:
            return both(f"{x:+.1f}%" for x in xs)

        lines.append(f"registered plan 92 (an H100): the L2-to-SM rate of the GEMM's own loads (ctahw.l2rate's "
                     f"tensor-copy probe) priced the 1x1 producer's first wave {pct(d.loc[bound, 'by_n'])} off at "
                     f"{both(map(str, bound))} tiles a row, where it binds (the model, which has no such rate: "
                     f"{pct(d.loc[bound, 'model'])}); at {both(map(str, free))} tiles a row that wave ran as fast as "
                     "a 2x1 cluster's, and no profile sets the rate"
                     + _plan93_clause(root) + " "
                     "(docs/validation.md)")
    f95 = root / ALONE_RECORD[4] / "excess.csv"
    if f95.is_file():
        e = pd.read_csv(f95)
        small, big = e[e["w_mb"] < e["w_mb"].median()], e[e["w_mb"] >= e["w_mb"].median()]
        wide, narrow = small[small["n"] >= 24], big[big["n"] < 24]
        short = e[e["k"] <= 2048]
        lines.append(f"registered plan 95 (an H100, K != N): that 1x1 first wave ran "
                     f"{wide['row_over'].min():.2f}-{wide['row_over'].max():.2f}x the 2x1 pairs' at "
                     f"{wide['n'].min()}-{wide['n'].max()} tiles a row with W at {small['w_mb'].max():.0f} MB, "
                     f"{narrow['row_over'].max():.2f}x at {narrow['n'].max()} tiles a row with W at "
                     f"{narrow['w_mb'].max():.0f} MB: "
                     + ("its excess follows the tiles a row, not W's fit in the L2"
                        if wide["row_on"].eq(1).all() and narrow["row_on"].eq(0).all() else
                        "neither the tiles a row nor W's fit in the L2 alone says where its excess is")
                     + "; and "
                     f"a first wave of K = {short['k'].min()}-{short['k'].max()} ran "
                     f"{short['pairs_over_pct'].min():.0f}-{short['pairs_over_pct'].max():.0f}% over the model's "
                     "mainloop even in pairs (about 2 us of it a cold start the model has no place for, post-hoc; "
                     "docs/validation.md)")
    return lines


def _plan93_clause(root: Path) -> str:
    """'; registered plan 93 ...': the floor's mean |error| on the 1x1 first wave in its domain against the model's
    (from plan 93's cases.csv), or nothing where the table is gone."""
    f = root / ALONE_RECORD[3] / "cases.csv"
    if not f.is_file():
        return ""
    d = pd.read_csv(f)
    d = d[d["variant"] == "cutlass_ctapipe"]
    mae = d.groupby("predictor")["err_pct"].apply(lambda x: x.abs().mean())
    return (f"; registered plan 93 (another H100, {d['n'].min()}-{d['n'].max()} tiles a row) priced that wave "
            f"{mae['by_n']:.1f}% off at the rate against the model's {mae['model']:.1f}% (mean |error|, mainloop "
            "against mainloop; the rest its cold HBM reads)")


H100_DRIFT_PLANS = {"tile": (("validation-registered72", "datasheet"), ("validation-registered73", "model"),
                             ("validation-registered73-run2", "model")),
                    "absolute": (("validation-registered73", "absolute"), ("validation-registered73-run2", "absolute"))}
"""Registered plans 72 and 73's judged shapes on H100s (``shapes.csv``: each GEMM at its best measured order and each
profile's time there), per drift law: the folder and the column of the profile that priced by it."""


def _h100_drift_config(hw: Hardware):
    """The plain persistent GEMM's config (128 x 256, the default kernel) of an H100 profile that prices the CTAs'
    drift (``cta_drift`` > 0); None for any other profile."""
    cfg = next((c for c in hw.kernel_configs if (c.tile_m, c.tile_n, c.kernel) == (128, 256, "")), None)
    return cfg if hw.gpu == "H100" and cfg is not None and cfg.cta_drift > 0 else None


def h100_drift_lines(model: Model, hw: Hardware, results_dir: Path | None = None) -> list[str]:
    """On an H100 profile whose plain GEMM prices the CTAs' drift (:func:`_h100_drift_config`), where a layer's K is at
    least :data:`LONG_K`: registered plans 72 and 73's errors of the two drift laws on long-K GEMMs at their best
    orders (from their committed tables; nothing where this installation has none), and which law this profile prices
    by."""
    cfg = _h100_drift_config(hw)
    ks = sorted({layer.k for layer in model.workload.layers if layer.k >= LONG_K})
    if cfg is None or not ks:
        return []
    root, errs, calls = _results_root(results_dir), {}, set()
    for law, sources in H100_DRIFT_PLANS.items():
        parts = []
        for folder, column in sources:
            path = root / folder / "shapes.csv"
            if path.is_file():
                d = pd.read_csv(path)
                d = d[d["k"] >= LONG_K]
                parts.append(100 * (d[f"{column}_ms"] / d["best_ms"] - 1))
                calls.add(folder)
        if parts:
            errs[law] = pd.concat(parts)
    if set(errs) != set(H100_DRIFT_PLANS):
        return []
    mine = "absolute" if cfg.drift_k_ref > 0 else "tile"
    span = {law: f"{e.min():+.1f} to {e.max():+.1f}%" for law, e in errs.items()}
    return [f"long K on an H100: registered plans 72-73 timed GEMMs at K >= {LONG_K} at their best orders on "
            f"{len(calls)} H100s: the drift charged as tile times at every K (the tile law) {span['tile']} from the "
            f"measured, as the same time a round at every K (the absolute law) {span['absolute']}; {hw.name} prices "
            f"it by the {mine} law" + (" (h100-x1-datasheet took the absolute law by plan 73's rule)"
                                       if mine == "tile" else "")
            + (f", capped at the tile law below K = {cfg.drift_k_ref:.0f} (registered plan 98's adoption)"
               if mine == "absolute" and cfg.drift_k_law == "capped" else "") + " (docs/validation.md)"]


H100_GEMM_RECORD = Path("h100-gemm-record") / "record.csv"
"""The H100 record of GEMMs alone (``bench/h100_gemm_record.py``): the GEMM-order calls' shapes at their best measured
orders, ``h100-x1-datasheet`` as registered against the naive FLOPs line, under the results root."""


def h100_gemm_lines(hw: Hardware, results_dir: Path | None = None) -> list[str]:
    """On an H100 profile whose plain GEMM prices the CTAs' drift (:func:`_h100_drift_config`): the H100 record of
    GEMMs alone (:data:`H100_GEMM_RECORD`: the profile as registered against the naive FLOPs line over every GEMM-order
    call; nothing where this installation has none)."""
    path = _results_root(results_dir) / H100_GEMM_RECORD
    if _h100_drift_config(hw) is None or not path.is_file():
        return []
    r = pd.read_csv(path)
    calls, a = r[r["group"] == "call"], r[r["group"] == "all"].iloc[0]
    nearer = int((calls["naive_mape_pct"] < calls["model_mape_pct"]).sum())
    return [f"GEMMs alone on an H100: over {int(a.shapes)} shapes of {len(calls)} registered GEMM-order calls (each at "
            f"its best measured order) h100-x1-datasheet as registered was {a.model_mape_pct:.2f}% off (mean "
            f"{a.model_mean_pct:+.2f}%, priced slower than measured), the naive FLOPs line {a.naive_mape_pct:.2f}%, "
            f"nearer in {nearer} of {len(calls)} calls: for one GEMM's time on an H100 the memory hierarchy has not "
            f"yet earned its place (bench/results/h100-gemm-record, docs/validation.md)"]


H100_BLOCK_PLANS = ("validation-registered74", "validation-registered74-run2", "validation-registered75",
                    "validation-registered76", "validation-registered76-run2")
"""Registered plans 74's (two H100s), 75's (one) and 76's (two) judged tables (``cases.csv``: thirteen models' MLP
blocks, chains and the reference GEMM, each source's error; ``model`` is ``h100-x1-datasheet`` as registered then,
before plan 76's adoption, ``exposed`` plan 75's twin ``h100-x1-datasheet-exposed``, whose rate plan 76 adopted,
``h200-measured`` the H200s' medians)."""
H100_KEPT_ORDERS = ("sequential", "intragpu", "intragpu-g4")
"""The strategies :func:`h100_block_lines` quotes: sequential and the chain kernel's groups of 8 and 4, which keep their
reuse (pairs and row order lose more of it on an H100 than the ticket law prices: docs/validation.md, plans 75-76)."""


SMALL_K = 3584
"""A layer's K under which a block is a small model's on an H100: every block registered plans 74-76 timed had K >=
3584; registered plans 96 and 99 timed nine at K = 1024-3072."""
SMALL_PLANS = ("validation-registered96", "validation-registered98", "validation-registered99")
"""Registered plan 96 (four small models' blocks on an H100: its ``cases.csv``, the blocks' model, waves and naive
rows), plan 98 (the capped drift law on twelve short-K GEMMs: its ``claims.csv``, claim (a)'s value and the
adoption) and plan 99 (five more small models' blocks priced by the capped law: its ``cases.csv``, the blocks' model,
absolute, waves and naive rows)."""


def _block_errors(cases: Path, prefix: str, sources) -> tuple[dict, float, int] | None:
    """A small-blocks plan's judged ``cases`` (plans 96 and 99): per source of ``sources`` the errors (%) of the
    experiments named ``prefix``..., the model's worst (sign kept) and the count of blocks; None where the table is
    gone or lacks a source's rows."""
    if not cases.is_file():
        return None
    c = pd.read_csv(cases)
    c = c[c["experiment"].str.startswith(prefix)]
    e = {s: c.loc[c["source"] == s, "error_pct"].dropna() for s in sources}
    if not all(len(v) for v in e.values()):
        return None
    return e, float(e["model"].iloc[int(e["model"].abs().to_numpy().argmax())]), int(c["experiment"].nunique())


def h100_small_lines(model: Model, hw: Hardware, results_dir: Path | None = None) -> list[str]:
    """On an H100 profile, where one of the block's layers has K under :data:`SMALL_K`: what registered plan 96 found
    of the H100 datasheet profile on small models' blocks, plan 98 of the drift's K law on short-K GEMMs and plan 99 of
    the adopted law on five more blocks (from their committed tables; a table gone leaves its part out, nothing where
    all are)."""
    if "H100" not in hw.gpu or min(layer.k for layer in model.workload.layers) >= SMALL_K:
        return []
    root, parts = _results_root(results_dir), []
    got = _block_errors(root / SMALL_PLANS[0] / "cases.csv", "reg96-", ("model", "waves", "naive"))
    if got:
        e, worst, n = got
        parts.append(f"registered plan 96 timed {n} small models' MLP blocks (a layer's K "
                     f"1024-3072) on an H100: h100-x1-datasheet as registered then {e['model'].abs().mean():.2f}% "
                     f"mean |error| (worst {worst:+.2f}%), the waves predictor {e['waves'].abs().mean():.2f}%, the "
                     f"naive FLOPs line {e['naive'].abs().mean():.2f}%")
    f98 = root / SMALL_PLANS[1] / "claims.csv"
    if f98.is_file():
        a = pd.read_csv(f98).set_index("claim")
        adopted = "adopt" in a.index and a.loc["adopt", "value"] == "yes"
        capped, before = a.loc["a", "value"].split(" against ")
        cfg = hw.config(128, 256)
        law = ("no drift" if cfg.cta_drift <= 0 else "the drift by the tile law" if cfg.drift_k_ref <= 0 else
               f"the drift by the {cfg.drift_k_law} law")
        parts.append("registered plan 98 priced twelve short-K GEMMs with the drift capped at the tile law below K = "
                     f"8192 at {capped}% mean |error| against {before} under the absolute law"
                     + ("; h100-x1-datasheet took the capped law" if adopted else "; the profile kept its law")
                     + f"; {hw.name} charges {law}")
    got = _block_errors(root / SMALL_PLANS[2] / "cases.csv", "reg99-", ("model", "absolute", "waves", "naive"))
    if got:  # a table without every source's rows leaves its part out
        e, worst, n = got
        parts.append(f"registered plan 99 timed {n} more small models' blocks on an H100, "
                     "priced by the capped law before any GPU ran them: "
                     f"{e['model'].abs().mean():.2f}% mean |error| (worst {worst:+.2f}%), the "
                     f"absolute law {e['absolute'].abs().mean():.2f}%, the waves predictor "
                     f"{e['waves'].abs().mean():.2f}%, the naive FLOPs line {e['naive'].abs().mean():.2f}%")
    return [f"a small model on an H100 (K under {SMALL_K}): " + "; ".join(parts) + " (docs/validation.md)"] if parts \
        else []


def h100_block_lines(hw: Hardware, results_dir: Path | None = None) -> list[str]:
    """On an H100 profile: registered plans 74-76's errors on an H100's blocks, chains in the orders that keep their
    reuse and the reference GEMM (:data:`H100_KEPT_ORDERS`; from their committed tables, nothing where this
    installation has none): the datasheet profile's as registered then over every call, and on the cases of the plans
    that registered the twin (75, 76) its, the twin's and the H200s' measured times'; what ``hw`` charges."""
    if "H100" not in hw.gpu:
        return []
    root = _results_root(results_dir)
    found = {d: pd.read_csv(f) for d, f in ((d, root / d / "cases.csv") for d in H100_BLOCK_PLANS) if f.is_file()}
    if not found:
        return []

    def plan(d: str) -> str:
        return re.sub(r"\D*(\d+).*", r"\1", d)

    c = pd.concat(found.values(), ignore_index=True)
    c = c[c["strategy"].isin(H100_KEPT_ORDERS)]
    err = {s: c[c["source"] == s]["error_pct"] for s in ("model", "h200-measured")}
    lo, hi = err["model"].min(), err["model"].max()
    plans = sorted({plan(d) for d in found})
    slow = " every case slow," if lo > 0 else ""
    with_twin = {d: t for d, t in found.items() if (t["source"] == "exposed").any()}  # plans 75's and 76's tables
    twin = ""
    if with_twin:
        t = pd.concat(with_twin.values(), ignore_index=True)
        t = t[t["strategy"].isin(H100_KEPT_ORDERS)]
        mape = {s: t[t["source"] == s]["error_pct"].abs().mean() for s in ("model", "exposed", "h200-measured")}
        named = sorted({plan(d) for d in with_twin})
        twin = (f"; on plan{'s' * (len(named) > 1)} {' and '.join(named)}'s {int((t['source'] == 'model').sum())} of "
                f"them that profile {mape['model']:.1f}%, its twin h100-x1-datasheet-exposed (the exposed HBM share "
                f"charged at the H200's rate) {mape['exposed']:.1f}%, the H200s' measured times "
                f"{mape['h200-measured']:.1f}%")
    mine = (f"{hw.name} charges the exposed share at its own measured HBM rate, as `ctahw calibrate` fitted it"
            if hw.l2_hbm_exposed_gbps == 0 and hw.measured else
            f"{hw.name} charges the datasheet's rate there, so its GPUs' compute times may be high by as much"
            if hw.l2_hbm_exposed_gbps == 0 else f"{hw.name} charges the exposed HBM share at the H200's rate ("
            + ("since registered plan 76's adoption" if hw.name == "h100-x1-datasheet" else
               "since registered plan 87's adoption, judged on the producers alone; h100-x1-datasheet since plan 76's"
               if hw.name == "h100-x8-mechanism" else "as h100-x1-datasheet does since registered plan 76's adoption")
            + "; the chain kernel's pairs and row order further off under it: plans 75 and 76)")
    named = ", ".join(plans[:-1]) + " and " * (len(plans) > 1) + plans[-1]
    return [f"an H100's blocks: registered plan{'s' * (len(plans) > 1)} {named} timed models' MLP blocks, chains in "
            f"the chain kernel (sequential, groups of 8 and 4) and the reference GEMM in {len(found)} "
            f"call{'s' * (len(found) > 1)} on H100s: "
            f"h100-x1-datasheet as registered (before plan 76's adoption) priced{slow} {lo:+.1f} to {hi:+.1f}% from "
            f"the measured (MAPE {err['model'].abs().mean():.1f}% over {len(err['model'])} cases), the H200s' "
            f"measured times {err['h200-measured'].abs().mean():.1f}%{twin}: an H100 runs them about as fast as an "
            f"H200; {mine} (docs/validation.md)"]


OWN_PROFILE_PLANS = ("validation-registered47", "validation-registered47-run2")
"""Registered plan 47's judged tables on its two machines (``claims.csv``: eight GEMMs priced with the profile
``ctahw calibrate`` wrote on the machine ("own") and with the committed one ("interleaved"), before they were timed)."""
OWN_PROFILE_BLOCK_PLANS = ("validation-registered48", "validation-registered48-run2")
"""Registered plan 48's judged tables on its two machines (``summary.csv``: the reference GEMM, the chain kernel's
orders and a model block, "own" and "committed" as in plan 47)."""


CALIBRATED_GPUS = ("H200", "H100")
"""The GPU models ``ctahw calibrate`` has run on in a registered plan (plans 47-48 on H200s, plan 69 on an H100): the
only ones its sm_90a kernels build for. A profile of any other GPU gets no calibration figures, only that line."""
OWN_H100_PLAN = "validation-registered69"
"""Registered plan 69's judged tables on one H100 (``gemm-claims.csv``: eleven GEMMs priced with the profile ``ctahw
calibrate --base h100-x1-datasheet`` wrote on the machine ("own") and with ``h100-x1-datasheet`` ("datasheet");
``cases.csv``: 20 chain-kernel and sequential cases, the same two beside the naive line, by ``source``)."""


def own_profile_lines(results_dir: Path | None = None, gpu: str = "H200") -> list[str]:
    """A trust line on calibrating the user's own machine: on an H200 (``gpu``, ``Hardware.gpu``) registered plans 47
    and 48's errors of a machine's own profile against the committed profile's, on an H100 registered plan 69's (from
    their committed tables; nothing where this installation has none); on another GPU (a B200), that none has run
    there."""
    if gpu not in CALIBRATED_GPUS:
        return [f"your machine: no registered plan has calibrated a {gpu} (`ctahw calibrate` has run on "
                f"{' and '.join(f'{g}s' for g in CALIBRATED_GPUS)} only: ctahw's kernels are built for sm_90a): "
                f"nothing measured on a {gpu} checks this profile"]
    root = _results_root(results_dir)
    if gpu == "H100":
        return _own_h100_lines(root)
    c, machines = _pooled(root, OWN_PROFILE_PLANS, "claims.csv")
    if not machines:
        return []
    own, committed = c[c["predictor"] == "own"], c[c["predictor"] == "interleaved"]

    def worst(w: pd.Series) -> str:
        return f"{w[w.abs().idxmax()]:+.1f}%"

    def span(g: pd.DataFrame, col: str) -> str:
        return f"{g[col].min():.2f}-{g[col].max():.2f}%"

    line = (f"your machine: registered plan 47 ran `ctahw calibrate` on {machines} H200s and priced eight GEMMs with "
            f"each machine's own profile before timing them, at MAPE {span(own, 'best_mape_pct')} (worst "
            f"{worst(own['best_worst_pct'])}) where the committed profile was at {span(committed, 'best_mape_pct')} "
            f"(worst {worst(committed['best_worst_pct'])})")
    s, blocks = _pooled(root, OWN_PROFILE_BLOCK_PLANS, "summary.csv")
    if blocks:
        s = s[s["kind"] == "all"]
        b_own, b_committed = s[s["predictor"] == "own"], s[s["predictor"] == "committed"]
        line += (f"; plan 48, on {blocks} more, the reference GEMM, the chain kernel against sequential and the "
                 f"Llama-3.1-70B block at {span(b_own, 'mape_pct')} (worst {worst(b_own['worst_pct'])}) against "
                 f"{span(b_committed, 'mape_pct')} (worst {worst(b_committed['worst_pct'])})")
    return [line + ": lent H200s differ, so calibrate yours (`ctahw calibrate --base h200-x1-calibrated --name NAME "
            "--out specs/hardware/NAME.toml`, about 100 s on one GPU) and pass --hardware NAME (docs/validation.md)"]


def _own_h100_lines(root: Path) -> list[str]:
    """:func:`own_profile_lines` on an H100: registered plan 69's GEMM and chain errors, its own profile's against
    ``h100-x1-datasheet``'s, and the verdict its rule gives (claims (a), (b) and (e) all met: calibrate first)."""
    d = root / OWN_H100_PLAN
    if not all((d / f).is_file() for f in ("gemm-claims.csv", "cases.csv", "claims.csv")):
        return []
    g = pd.read_csv(d / "gemm-claims.csv").set_index("predictor")
    c = pd.read_csv(d / "cases.csv")
    met = pd.read_csv(d / "claims.csv").set_index("claim")["met"].astype(bool)
    mape = c.groupby("source")["error_pct"].apply(lambda e: e.abs().mean())

    def worst(source: str) -> pd.Series:
        e = c[c["source"] == source]
        return e.loc[e["error_pct"].abs().idxmax()]

    own, sheet = worst("own"), worst("datasheet")
    line = (f"your machine: registered plan 69 ran `ctahw calibrate --base h100-x1-datasheet` on one H100 and priced, "
            f"before timing them, {int(g.at['own', 'shapes'])} GEMMs with that machine's own profile at MAPE "
            f"{g.at['own', 'best_mape_pct']:.2f}% against h100-x1-datasheet's "
            f"{g.at['datasheet', 'best_mape_pct']:.2f}%, "
            f"and {int((c['source'] == 'own').sum())} chain-kernel and sequential cases at {mape['own']:.2f} against "
            f"{mape['datasheet']:.2f}% (worst {own['error_pct']:+.1f}%, {own['strategy']}, against "
            f"{sheet['error_pct']:+.1f}%, {sheet['strategy']})")
    if met[["a", "b", "e"]].all():
        return [line + ": on an H100, calibrate first (`ctahw calibrate --base h100-x1-datasheet --name NAME --out "
                "specs/hardware/NAME.toml`, then --hardware NAME; docs/validation.md)"]
    return [line + ": by that plan's rule h100-x1-datasheet stays the profile for one H100 (a multi-GPU H100 profile "
            "has no such test); calibrating did not beat it on the GEMMs (docs/validation.md)"]


def _registered_profile(results_root: Path, registration: str) -> tuple[str, bool]:
    """The hardware profile a registration was predicted with (its ``registration.json``, beside the results in a
    checkout's bench/predictions; '?' where that file is not there), and whether the profile's file is still the one
    it recorded (its sha256 against ``specs/hardware/NAME.toml`` today; True where either is unknown)."""
    import hashlib
    import json

    from ctasim.spec import SPECS_DIR

    try:
        reg = json.loads((results_root.parent / "predictions" / registration / "registration.json").read_text())
        name = str(reg["hardware"])
    except (OSError, ValueError, KeyError):
        return "?", True
    recorded = reg.get("spec_sha256", {}).get(f"{name}.toml")
    path = SPECS_DIR / "hardware" / f"{name}.toml"
    if recorded is None or not path.is_file():
        return name, True
    return name, hashlib.sha256(path.read_bytes()).hexdigest() == recorded


def machine_summary(points: pd.DataFrame, incomplete: set[tuple[str, str]]) -> pd.DataFrame:
    """Per machine (in first-seen order) of ``points`` (:func:`best_table` rows with ``model`` and ``hardware``
    columns): the (model, token count) points, those where a CTA-pipelined strategy is the fastest (``wins``), of
    them those in a block where every strategy ran (``complete_wins``: its (model, machine) not in ``incomplete``), the
    models with at least one such win, and the best CTA-pipelined strategy's latency over the best other's: median, least
    and most over every point."""
    rows = []
    for hw_name, g in points.groupby("hardware", sort=False):
        won = g[g["pipelined_vs_other"] < 1]
        complete = won[~won["model"].map(lambda m: (m, hw_name) in incomplete).astype(bool)]
        r = g["pipelined_vs_other"].dropna()
        rows.append({"hardware": hw_name, "points": len(g), "wins": len(won), "complete_wins": len(complete),
                     "models": g["model"].nunique(), "models_won": complete["model"].nunique(),
                     "median": float(r.median()) if len(r) else float("nan"),
                     "least": float(r.min()) if len(r) else float("nan"),
                     "most": float(r.max()) if len(r) else float("nan")})
    return pd.DataFrame(rows)


def summary_markdown(summary: pd.DataFrame) -> list[str]:
    """:func:`machine_summary` as a markdown table."""
    lines = ["| machine | (model, tokens) points | CTA-pipelined fastest | of them, every strategy ran | models it wins "
             "(every strategy ran) | best CTA-pipelined / best other: median (range) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in summary.itertuples():
        lines.append(f"| {r.hardware} | {r.points} | {r.wins} | {r.complete_wins} | {r.models_won} of {r.models} | "
                     f"{r.median:.3f}× ({r.least:.3f}-{r.most:.3f}×) |")
    return lines


def markdown(model: Model, hw: Hardware, df: pd.DataFrame, regime: str, results_dir: Path | None = None,
             gpus: int | None = None) -> str:
    """The advice for one model and machine as markdown: verdict table, every strategy, trust, coverage."""
    best = best_table(df)
    wide = df.pivot_table(index="tokens", columns="strategy", values="latency_us", aggfunc="first")
    wide = wide[[s for s in dict.fromkeys(df["strategy"])]]
    lines = [f"### {model.name} on {hw.name} ({regime} clocks)", "",
             "| tokens | fastest (GPUs) | µs | best CTA-pipelined | its latency vs the best other | on 2 GPUs: "
             "ctapipe vs micro-batching/TP2 | micro-batching | best TP |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in best.itertuples():
        vs = (f"{r.pipelined_vs_other:.3f}× {r.best_other}" if r.pipelined_vs_other == r.pipelined_vs_other else "")
        two = (f"{r.ctapipe_vs_other_2gpu:.3f}× {r.ctapipe_2gpu}" if r.ctapipe_vs_other_2gpu == r.ctapipe_vs_other_2gpu
               else "")
        lines.append(f"| {r.tokens} | {r.best} ({r.best_gpus}) | {r.best_us:,.1f} | {r.pipelined} | {vs} | {two} | "
                     f"{r.microbatch_chunks} | {r.tp_best} |")
    lines += ["", "(× < 1: CTA-pipelining is faster by that factor.)"]
    lines += ["", "Every strategy (µs):", "", "| tokens | " + " | ".join(wide.columns) + " |",
              "| --- |" + " --- |" * len(wide.columns)]
    for tokens, r in wide.iterrows():
        lines.append(f"| {tokens} | " + " | ".join(f"{v:,.1f}" for v in r) + " |")
    for label, why in dropped(model, hw, sorted(set(df["tokens"])), gpus).items():
        lines.append(f"\nNot run: {label} ({why}).")
    tried = designs_tried(model, hw, sorted(set(df["tokens"])), gpus)
    if len(tried) == 1:
        lines.append("\nctapipe is the simulator's default design only: this profile has no kernel config of ctahw's "
                     "variants (`ctasim.variants`).")
    elif tried:
        lines.append(f"\nctapipe is the fastest of {len(tried)} designs this profile models: the simulator's "
                     "default (named ctapipe above where it won)" + "".join(f", {d}" for d in tried[1:])
                     + " (ctahw's variants, `ctasim.variants`; the one that won is named in the 2-GPU column; "
                     "hybrid runs the default design only).")
    lines += ["", "How far to trust it:", ""]
    lines += [f"* {t}" for t in trust(hw, list(dict.fromkeys(df["kind"])), results_dir)]
    lines += [f"* {t}" for t in own_profile_lines(results_dir, hw.gpu)]
    lines += [f"* {t}" for t in operand_lines(model, results_dir)]
    lines += [f"* {t}" for t in long_k_lines(model, results_dir)]
    lines += [f"* {t}" for t in h100_drift_lines(model, hw, results_dir)]
    lines += [f"* {t}" for t in h100_gemm_lines(hw, results_dir)]
    lines += [f"* {t}" for t in h100_block_lines(hw, results_dir)]
    lines += [f"* {t}" for t in h100_small_lines(model, hw, results_dir)]
    pipelined = list(dict.fromkeys(df.loc[df["gpus"] >= 2, "kind"]))
    lines += [f"* {t}" for t in producer_edge_lines(pipelined, results_dir)]
    lines += [f"* {t}" for t in grouped_kept_lines(pipelined, results_dir)]
    lines += [f"* {t}" for t in alone_record_lines(pipelined, results_dir)]
    lines += [f"* {t}" for t in kept_lines(df, results_dir)]
    if any(l.gated and l.epilogue_fused for l in model.workload.layers):
        lines.append("* SwiGLU is modelled fused into the gate-and-up GEMM's epilogue; ctahw runs it as a kernel of its "
                     "own after the plain GEMM (no fused gated epilogue is built; its measured cost: docs/hardware.md, "
                     "SwiGLU)")
    lines += [f"* covers one MLP block ({model.source}); leaves out {model.leaves_out}", ""]
    return "\n".join(lines)


def plot(df: pd.DataFrame, path: Path, title: str) -> Path:
    """Latency per strategy against token count (log-log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for strategy, g in df.groupby("strategy", sort=False):
        ax.plot(g["tokens"], g["latency_us"], marker="o", ms=3, label=strategy)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("tokens (M)")
    ax.set_ylabel("latency (µs)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

