"""Registered plan 20's blocks taken apart (post-hoc, no GPU): their GEMMs alone against both drift forms.

    python bench/block_gemm_orders.py [--out bench/results/block-gemm-orders] [--probe TABLE]

Reads ``bench/results/hw/2026-12-02-block-gemm-orders/gemm_shapes.csv`` (the eight GEMM shapes of plan 20's blocks at
M = 32768, every CUTLASS tile order, measured after plan 20) and writes:

* ``orders.csv``: each CUTLASS run beside ``ctasim.costs.order_waves`` in its order under h200-x1-calibrated (drift
  form "interleaved", chosen after these runs), h200-x1-calibrated-carried (plan 20's "carried") and
  h200-x1-calibrated-wave (plan 8's "wave"), error in %;
* ``blocks.csv``: per block at M = 32768, its two GEMMs at the best measured order and plan 20's measured block
  (``bench/results/hw/2026-12-02-registered20-1gpu``), beside each profile's tuned GEMMs (``ctasim.costs.tuned_gemm``,
  fused epilogue included) and registered block prediction (none for "interleaved"); ``rest`` = block minus its two GEMMs (the SwiGLU and
  norm passes, the residual epilogue, the gaps);
* ``summary.csv``: mean |error| per profile over the runs whose CUTLASS grid is padded and over the others;
* ``picks.csv``: per shape and profile, the order the model finds fastest, its time, what that order measured, and
  the measured best.

``--probe TABLE`` reads another ``gemm_shape_probe.py`` table instead (orders and picks only), e.g. the six long-K
shapes of ``bench/results/hw/2026-12-02-pass-rates`` into ``bench/results/long-k-orders``. ``--predict MxNxK,...``
measures nothing: it writes ``predicted.csv`` (every CUTLASS order of each shape, each profile's time, ``padded``,
the order each profile picks, and the naive FLOPs line of ``ctasim.predict.Naive``, order-blind) into ``--out``, for a
registration before the probe runs; ``--probe TABLE --registered DIR`` then judges that registration
(``DIR/predicted.csv``, registered plan 23's rules in its README): ``shapes.csv`` (per shape: best measured order
and time, each profile's pick, its registered time and what it measured, the naive line) and ``claims.csv`` (per
predictor: MAPE over the unpadded runs, MAPE of the pick time against the best measured, the worst pick's
measured distance from the best); refused (one line, exit 2) if the profiles no longer give the registered times.
Where the probe's folder holds the blocks' runs too (``<folder>/regNN-*/results.csv``, ``--blocks regNN``),
``rest.csv``: per block at its largest M whose GEMMs the probe ran, the measured block minus its GEMMs alone at the
orders the block's run tuned to (``results.csv``'s ``schedules``), beside the model's block (its registration) minus its
plain GEMMs (``tuned_gemm``): what the passes, fused epilogues, gaps and a ReLU'd input take, measured and modelled
(``off_rest_ms``: the registration's ``relu-input-off`` predictor, where it has one). With ``--registered``,
``padded.csv``: each run on a padded grid, its padding share and error beside the mean error of its shape's unpadded
runs. ``--reference MxNxK`` (with ``--registered``; registered plan 29): ``normalised.csv``, each shape's error at its
best measured order less the reference shape's, with its class (wide N, long K), and ``normalised_classes.csv``, the
classes' means. Prints them. The GEMMs ran on another machine than the blocks (both burst, rested); every figure is post-hoc.
"interleaved" is h200-x1-calibrated as it is, or, with ``--before-reuse-adoption``, with the reuse law it had before
registered plan 67's adoption on an H200 (2026-12-06), an LRU of the whole L2, as every registration and record this
script wrote before then (plans 20, 23-25, 29, 46 and 47; ``bench/results/block-gemm-orders`` and ``long-k-orders``
among them) was priced. ``--predict`` writes which beside ``predicted.csv`` (``reuse_pricing.PRICING_FILE``) and
``--registered`` prices the folder as it says (a folder without the file: the LRU).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402
from plan_judge import BLOCKS, WAVE  # noqa: E402
import reuse_pricing  # noqa: E402

from ctasim import costs, l2  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.predict import Naive  # noqa: E402
from hw.gemm_shape_probe import parse_shapes  # noqa: E402
from ctasim.cases import load_experiment  # noqa: E402
from ctasim.spec import Layer, load_hardware  # noqa: E402

PROBE = ROOT / "bench/results/hw/2026-12-02-block-gemm-orders/gemm_shapes.csv"
MEASURED = ROOT / "bench/results/hw/2026-12-02-registered20-1gpu"
PROFILES = {"interleaved": "h200-x1-calibrated", "carried": "h200-x1-calibrated-carried",
            "wave": "h200-x1-calibrated-wave"}
REGISTERED = {"carried": "", "wave": WAVE}
"""The forms plan 20 registered block predictions with (the suffix of their registration); "interleaved" came after."""
M = 32768
NAIVE_FROM = ROOT / "bench/results/hw/2026-11-29-run2/baselines.csv"
"""The CUTLASS GEMM rows every registration's naive FLOPs line is fitted on."""


def orders(runs: pd.DataFrame, hws: dict) -> pd.DataFrame:
    """Each run beside each profile's time of its order; ``padded``: CUTLASS's grid for the order has padding slots
    (a swizzle that does not divide the tile grid), which the model prices far too fast (docs/model.md)."""
    rows = []
    for r in runs.itertuples():
        raster, swizzle = r.order.split("/swizzle")
        lay = Layer(m=r.m, n=r.n, k=r.k)
        row = {"m": r.m, "n": r.n, "k": r.k, "order": r.order, "measured_ms": r.median_ms}
        for name, hw in hws.items():
            order, _, waves = costs.cutlass_waves(lay, hw, 2, raster, int(swizzle))
            row["padded"] = bool((order < 0).any())
            row["padding_pct"] = 100 * float((order < 0).mean())
            row[f"{name}_pct"] = (waves.sum() / 1e6 / r.median_ms - 1) * 100
        rows.append(row)
    return pd.DataFrame(rows)


def blocks(runs: pd.DataFrame, hws: dict) -> pd.DataFrame:
    best = runs.groupby(["m", "n", "k"]).median_ms.min()
    rows = []
    for exp in BLOCKS:
        layers = [dataclasses.replace(layer, m=M) for layer in load_experiment(exp).workload.layers]
        measured = pd.read_csv(MEASURED / exp / "results.csv")
        block = float(measured[(measured.m == M) & (measured.status == "ok")].makespan_ms.iloc[0])
        gemms = [float(best[(M, layer.n, layer.k)]) for layer in layers]
        rows.append({"block": exp, "source": "measured", "gemm1_ms": gemms[0], "gemm2_ms": gemms[1],
                     "rest_ms": block - sum(gemms), "block_ms": block})
        for name, hw in hws.items():
            tuned = [costs.tuned_gemm(layer, hw, 2).total_ns / 1e6 for layer in layers]
            pb = float("nan")
            if name in REGISTERED:
                p = pd.read_csv(ROOT / "bench/predictions" / (exp + REGISTERED[name]) / "predictions.csv")
                pb = float(p[(p.m == M) & (p.source == "model")].makespan_ms.iloc[0])
            rows.append({"block": exp, "source": name, "gemm1_ms": tuned[0], "gemm2_ms": tuned[1],
                         "rest_ms": pb - sum(tuned), "block_ms": pb})
    return pd.DataFrame(rows)


def picks(runs: pd.DataFrame, hws: dict) -> pd.DataFrame:
    """Per shape and profile: the order the model finds fastest (``tuned_gemm``), its modelled time, what that
    order measured, and the measured best order and time."""
    rows = []
    for (m, n, k), g in runs.groupby(["m", "n", "k"]):
        best = g.loc[g.median_ms.idxmin()]
        for name, hw in hws.items():
            t = costs.tuned_gemm(Layer(m=m, n=n, k=k), hw, 2)
            there = g[g.order == t.schedule].median_ms
            rows.append({"m": m, "n": n, "k": k, "profile": name, "model_order": t.schedule,
                         "model_ms": t.total_ns / 1e6, "measured_there_ms": float(there.iloc[0]) if len(there) else None,
                         "best_order": best.order, "best_ms": best.median_ms,
                         "model_vs_best_pct": (t.total_ns / 1e6 / best.median_ms - 1) * 100})
    return pd.DataFrame(rows)


def predicted(shapes: list[tuple[int, int, int]], hws: dict, naive, naive_own=None) -> pd.DataFrame:
    """Per shape (M x N x K) and CUTLASS order (``ctahw.gemm.SCHEDULES``' raster along M or N, swizzle 1-8): each
    profile's :func:`ctasim.costs.cutlass_waves` time, ``padded``, whether it is the profile's pick
    (:func:`ctasim.costs.tuned_gemm`), and the naive FLOPs line's time (the same for every order; ``naive_own_ms``
    beside it where a second line, fitted on the machine's own timings, is given)."""
    rows = []
    for m, n, k in shapes:
        lay = Layer(m=m, n=n, k=k)
        pick = {name: costs.tuned_gemm(lay, hw, 2).schedule for name, hw in hws.items()}
        cfg = next(iter(hws.values())).config(lay.tile_m, lay.tile_n)
        for raster in ("along_m", "along_n"):
            for swizzle in (1, 2, 4, 8):
                name_here = f"{raster}/swizzle{swizzle}"
                # a swizzle the grid clamps is the clamped order: only the row that names it can be the pick
                unclamped = l2.cutlass_sm90_swizzle(lay.tiles_m, lay.tiles_n, swizzle, (cfg.cluster_m, cfg.cluster_n)) == swizzle
                row = {"m": m, "n": n, "k": k, "order": name_here}
                for name, hw in hws.items():
                    order, _, waves = costs.cutlass_waves(lay, hw, 2, raster, swizzle)
                    row["padded"] = bool((order < 0).any())
                    row[f"{name}_ms"] = waves.sum() / 1e6
                    row[f"{name}_pick"] = unclamped and pick[name] == name_here
                row["naive_ms"] = naive.gemm_ms(m, k, n)
                if naive_own is not None:
                    row["naive_own_ms"] = naive_own.gemm_ms(m, k, n)
                rows.append(row)
    return pd.DataFrame(rows)


def judge(runs: pd.DataFrame, o: pd.DataFrame, reg: pd.DataFrame, hws: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Registered plan 23's tables from the probe's CUTLASS ``runs``, their :func:`orders` errors ``o`` and the
    registration ``reg`` (:func:`predicted`'s rows). ValueError if the profiles' times of a registered order moved."""
    key = ["m", "n", "k", "order"]
    naives = [c for c in ("naive_ms", "naive_own_ms") if c in reg.columns]
    now = o.merge(reg, on=key, how="inner")
    for name in hws:
        again = (1 + now[f"{name}_pct"] / 100) * now.measured_ms
        if not ((again - now[f"{name}_ms"]).abs() <= 2e-4 + 1e-5 * now[f"{name}_ms"]).all():
            raise ValueError(f"block_gemm_orders: profile {name} no longer gives the registered times")
    shapes, claims = [], {}
    for (m, n, k), g in runs.groupby(["m", "n", "k"]):
        r = reg[(reg.m == m) & (reg.n == n) & (reg.k == k)]
        if r.empty:
            continue
        best = g.loc[g.median_ms.idxmin()]
        row = {"m": m, "n": n, "k": k, "best_order": best.order, "best_ms": best.median_ms,
               **{c: float(r[c].iloc[0]) for c in naives}}
        for name in hws:
            pick = r[r[f"{name}_pick"]].iloc[0]
            there = g[g.order == pick.order].median_ms
            row |= {f"{name}_pick": pick.order, f"{name}_ms": pick[f"{name}_ms"],
                    f"{name}_pick_measured_ms": float(there.iloc[0]) if len(there) else float("nan")}
        shapes.append(row)
    shapes = pd.DataFrame(shapes)
    unpadded = o[~o.padded]
    for name in hws:
        err = 100 * (shapes[f"{name}_ms"] / shapes.best_ms - 1)
        lost = 100 * (shapes[f"{name}_pick_measured_ms"] / shapes.best_ms - 1)
        claims[name] = {"unpadded_runs": len(unpadded), "unpadded_mape_pct": unpadded[f"{name}_pct"].abs().mean(),
                        "shapes": len(shapes), "best_mape_pct": err.abs().mean(), "best_worst_pct": err.iloc[err.abs().argmax()],
                        "pick_lost_max_pct": lost.max()}
    for c in naives:
        err = 100 * (shapes[c] / shapes.best_ms - 1)
        claims[c[:-3]] = {"unpadded_runs": len(unpadded), "shapes": len(shapes), "best_mape_pct": err.abs().mean(),
                          "best_worst_pct": err.iloc[err.abs().argmax()]}
    return shapes, pd.DataFrame(claims).T.rename_axis("predictor").reset_index()


WIDE_N, LONG_K = 27648, 20480
"""Registered plan 29's shape classes: wide N (N >= WIDE_N with K <= 16384, gate-and-up GEMMs) and long K
(K >= LONG_K, down GEMMs)."""


def normalised(shapes: pd.DataFrame, reference: tuple[int, int, int], hws: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Registered plan 29's rules 4-5: per shape (:func:`judge`'s ``shapes``), each profile's error at the measured
    best order minus the ``reference`` shape's (the same call's; what the machine's speed adds to every shape
    cancels), with its class; and per class the mean and the mean |.| (registered plan 46's rule). ValueError if the
    reference was not judged."""
    key = shapes.set_index(["m", "n", "k"])
    if reference not in key.index:
        raise ValueError(f"block_gemm_orders: the reference {'x'.join(map(str, reference))} is not among the judged shapes")
    rows = []
    for (m, n, k), r in key.iterrows():
        cls = "reference" if (m, n, k) == reference else "wide-N" if n >= WIDE_N and k <= 16384 else \
            "long-K" if k >= LONG_K else "other"
        row = {"m": m, "n": n, "k": k, "class": cls}
        for name in hws:
            err = 100 * (r[f"{name}_ms"] / r.best_ms - 1)
            ref = 100 * (key.loc[reference, f"{name}_ms"] / key.loc[reference, "best_ms"] - 1)
            row |= {f"{name}_err_pct": err, f"{name}_normalised_pct": err - ref}
        rows.append(row)
    out = pd.DataFrame(rows)
    cols = [f"{name}_normalised_pct" for name in hws]
    def absmean(x):
        return x.abs().mean()

    by_class = out[out["class"] != "reference"].groupby("class")[cols].agg(["mean", absmean, "count"])
    by_class.columns = [f"{a}_{b}" for a, b in by_class.columns]
    return out, by_class.reset_index()


def padded(o: pd.DataFrame, hws: dict) -> pd.DataFrame:
    """:func:`orders`'s runs on a padded grid, each beside the mean error of its shape's unpadded runs per profile."""
    unpadded = o[~o.padded].groupby(["m", "n", "k"])[[f"{n}_pct" for n in hws]].mean()
    out = o[o.padded][["m", "n", "k", "order", "measured_ms", "padding_pct"] + [f"{n}_pct" for n in hws]]
    return out.join(unpadded.add_suffix("_unpadded_mean"), on=["m", "n", "k"])


def rest(runs: pd.DataFrame, folder: Path, prefix: str, hw) -> pd.DataFrame:
    """Per block run ``folder/<prefix>-*`` (not the reference) at its largest M whose GEMMs the probe ran (``runs``, at
    the orders the block's run tuned to): measured block, its GEMMs alone, and the same for the model (the block's
    registration, ``source = model``; its plain GEMMs by ``tuned_gemm`` on ``hw``). ``off_rest_ms``: the same for the
    registration's ``relu-input-off`` predictor where it has one (a block that reads a ReLU's output), else empty."""
    from ctahw.gemm import schedule_name

    rows = []
    for exp_dir in sorted(p for p in folder.glob(f"{prefix}-*") if p.is_dir() and not p.name.endswith("reference")):
        res = pd.read_csv(exp_dir / "results.csv")
        res = res[res.status == "ok"].sort_values("m", ascending=False)
        for _, r in res.iterrows():
            gemms = []
            for item in str(r.schedules).split(";"):
                shape, code = item.split(":")
                m, n, k = map(int, shape.split("x"))
                order = schedule_name(tuple(int(x) for x in code.split("/")))
                there = runs[(runs.m == m) & (runs.n == n) & (runs.k == k) & (runs.order == order)].median_ms
                gemms.append((m, n, k, float(there.iloc[0]) if len(there) else None))
            if any(g[3] is None for g in gemms):
                if not runs[runs.m == r.m].empty:
                    raise ValueError(f"block_gemm_orders: the probe has M = {r.m} but not every GEMM of {exp_dir.name} "
                                     "at its tuned order")
                continue
            pred = pd.read_csv(ROOT / "bench/predictions" / exp_dir.name / "predictions.csv")
            pred = pred[pred.m == r.m].set_index("source").makespan_ms
            model_gemms = sum(costs.tuned_gemm(Layer(m=m, n=n, k=k), hw, 2).total_ns / 1e6 for m, n, k, _ in gemms)
            alone = sum(g[3] for g in gemms)
            rows.append({"block": exp_dir.name, "m": int(r.m), "measured_ms": r.makespan_ms, "gemms_alone_ms": alone,
                         "rest_ms": r.makespan_ms - alone, "model_ms": float(pred["model"]),
                         "model_gemms_ms": model_gemms, "model_rest_ms": float(pred["model"]) - model_gemms,
                         "off_rest_ms": float(pred.get("relu-input-off", float("nan"))) - model_gemms})
            break
    return pd.DataFrame(rows)


def parse_profiles(items: list[str]) -> dict[str, str]:
    """``["own=out/h200-x1-own.toml"]`` -> {"own": "out/h200-x1-own.toml"}; ValueError (one line) on an item that is
    not NAME=PATH, a name taken by :data:`PROFILES` or given twice, or a path that is not a file."""
    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not (sep and name.isidentifier() and path):
            raise ValueError(f"--profile {item!r} is not NAME=PATH")
        if name in PROFILES or name in out or name.startswith("naive"):
            raise ValueError(f"--profile name {name!r} is taken")
        if not Path(path).is_file():
            raise ValueError(f"--profile {name}: no file {path}")
        out[name] = path
    return out


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/block_gemm_orders.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/block-gemm-orders")
    ap.add_argument("--probe", type=Path, default=PROBE,
                    help="another gemm_shape_probe.py table: orders.csv and picks.csv only (no blocks)")
    ap.add_argument("--predict", metavar="MxNxK,...", help="write predicted.csv for these shapes; measure nothing")
    ap.add_argument("--registered", type=Path, help="a --predict folder: judge it against --probe (shapes.csv, claims.csv)")
    ap.add_argument("--blocks", metavar="PREFIX", help="with --registered: the blocks' runs beside the probe (e.g. reg22)")
    ap.add_argument("--reference", metavar="MxNxK", help="with --registered: errors less this shape's (normalised.csv)")
    ap.add_argument("--profile", action="append", default=[], metavar="NAME=PATH",
                    help="a further profile (a machine's own ctahw calibrate output), predicted and judged beside "
                         f"{', '.join(PROFILES)}; repeatable")
    ap.add_argument("--naive-probe", type=Path, metavar="TABLE",
                    help="with --predict: a second naive line (naive_own) fitted on this tile-order table's best orders")
    ap.add_argument("--before-reuse-adoption", action="store_true",
                    help=f"with --predict or alone: {reuse_pricing.FLAG_HELP} (with --registered the folder says)")
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        if args.registered and args.before_reuse_adoption:
            raise ValueError(f"{reuse_pricing.BEFORE_ADOPTION_FLAG} goes with --predict or a record: with --registered "
                             f"the registration's {reuse_pricing.PRICING_FILE} says how it was priced")
        pricing = (reuse_pricing.read(args.registered) if args.registered
                   else reuse_pricing.chosen(args.before_reuse_adoption))
        hws = {name: load_hardware(p) for name, p in {**PROFILES, **parse_profiles(args.profile)}.items()}
        hws["interleaved"] = reuse_pricing.priced(hws["interleaved"], pricing)
        naive_own = Naive.fit_shapes(args.naive_probe) if args.naive_probe else None
    except (ValueError, OSError) as e:
        print(f"block_gemm_orders: {e}", file=sys.stderr)
        return 2
    if args.predict:
        try:
            shapes = parse_shapes(args.predict)
        except ValueError as e:
            print(f"block_gemm_orders: {str(e).replace('--shapes', '--predict')}", file=sys.stderr)
            return 2
        naive = Naive.fit(NAIVE_FROM)
        out = predicted(shapes, hws, naive, naive_own)
        args.out.mkdir(parents=True, exist_ok=True)
        out.round(4).to_csv(args.out / "predicted.csv", index=False)
        reuse_pricing.write(args.out, pricing)
        pd.set_option("display.width", 200)
        print(out.round(3).to_string(index=False))
        return 0
    if not args.probe.is_file():
        print(f"block_gemm_orders: no probe table {args.probe}", file=sys.stderr)
        return 2
    runs = pd.read_csv(args.probe)
    runs = runs[runs.backend == "cutlass"]
    o, p = orders(runs, hws), picks(runs, hws)
    if args.registered:
        if not (args.registered / "predicted.csv").is_file():
            print(f"block_gemm_orders: no {args.registered / 'predicted.csv'}", file=sys.stderr)
            return 2
        try:
            sh, cl = judge(runs, o, pd.read_csv(args.registered / "predicted.csv"), hws)
            rs = rest(runs, args.probe.parent, args.blocks, hws["interleaved"]) if args.blocks else pd.DataFrame()
            nm = normalised(sh, parse_shapes(args.reference)[0], hws) if args.reference else None
        except ValueError as e:
            print(e, file=sys.stderr)
            return 2
    b = blocks(runs, hws) if args.probe.resolve() == PROBE.resolve() else pd.DataFrame()
    args.out.mkdir(parents=True, exist_ok=True)
    o.round(4).to_csv(args.out / "orders.csv", index=False)
    if not b.empty:
        b.round(4).to_csv(args.out / "blocks.csv", index=False)
    p.round(4).to_csv(args.out / "picks.csv", index=False)
    if args.registered:
        sh.round(4).to_csv(args.out / "shapes.csv", index=False)
        cl.round(4).to_csv(args.out / "claims.csv", index=False)
        if not rs.empty:
            rs.round(4).to_csv(args.out / "rest.csv", index=False)
        padded(o, hws).round(4).to_csv(args.out / "padded.csv", index=False)
        if nm is not None:
            nm[0].round(4).to_csv(args.out / "normalised.csv", index=False)
            nm[1].round(4).to_csv(args.out / "normalised_classes.csv", index=False)
    summary = pd.DataFrame([{"runs": f"{'padded' if pad else 'unpadded'} grids", "count": len(g),
                             **{f"{n}_mape_pct": g[f"{n}_pct"].abs().mean() for n in hws}}
                            for pad, g in o.groupby("padded")])
    summary.round(2).to_csv(args.out / "summary.csv", index=False)
    pd.set_option("display.width", 200)
    best = o.loc[o.groupby(["m", "n", "k"]).measured_ms.idxmin()]
    print("best measured order per shape:")
    print(best.round(2).to_string(index=False))
    print("mean |error| over the 12 orders:")
    print(o.groupby(["m", "n", "k"])[[f"{n}_pct" for n in hws]].agg(lambda x: x.abs().mean()).round(2).to_string())
    if not b.empty:
        print(b.round(3).to_string(index=False))
    print(p.round(3).to_string(index=False))
    print(summary.round(2).to_string(index=False))
    if args.registered:
        print(sh.round(3).to_string(index=False))
        print(cl.round(2).to_string(index=False))
        if not rs.empty:
            print(rs.round(3).to_string(index=False))
        if nm is not None:
            print(nm[0].round(3).to_string(index=False))
            print(nm[1].round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
