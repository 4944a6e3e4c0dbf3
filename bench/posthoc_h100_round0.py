"""Post-hoc: what goes with the slow round-0 tiles of the chain kernel's row order, on an H100 and an H200 (no GPU)

    python bench/posthoc_h100_round0.py [--out bench/results/posthoc-h100-round0]

On the H100s row order's median mainloop is already 1.12 times groups of 8's in round 0 (each CTA's first tile; the
H200s 1.025; ``bench/posthoc_h100_rounds.py``). This reads, for every traced (run, case, order) of the chain-kernel
experiments traced on both GPUs (``posthoc_h100_rounds.bundles``: ``bench/results/hw-h100`` and
``bench/results/hw``), the tiles of rounds 0 to 3 (a round: a tile's rank among its CTA's tiles by ``t_acquire``,
``ctasim.calibration.tile_rounds``), each tile's **ratio**: its mainloop (``t_mainloop_end - t_acquire``) over the
median mainloop of groups of 8's round-0 tiles in the same run and case (the **tile time** T), and per tile
(:func:`tile_features`):

* where it ran: ``small_set`` (1 if its SM is in its machine's **small set**: the fast side of row order's clear
  late splits, ``posthoc_sm_groups.split`` of the SMs' mainloop over the second half of a run's tiles by
  ``t_acquire``, which holds no tile of rounds 0-3; the most frequent such set over every committed chain-kernel
  bundle of the machine, :func:`machine_sets`; 24 SMs, 12 on one H100; ``docs/validation.md`` reads them as the
  two small GPCs; NaN on a machine with none), ``half`` (``sm // 66``: an SM-id proxy, the physical halves are not
  known), ``tpc_same_a``/``tpc_same_w`` (the tile on the other SM of its TPC, ``sm ^ 1``, in the same round reads
  the same A / W panel); ``groupings.csv`` also groups by TPC (``sm // 2``) and ``sm // 16``;
* when: ``acq_tiles`` (its ``t_acquire`` after its round's first, in T) and ``rank`` (its ticket's rank among its
  round's tickets, ``ctasim.plan.chain_order``);
* its A panel (layer, ``tile_m``) and W panel (layer, ``tile_n``) among the **concurrent** tiles (those whose mainloop
  overlaps the tile's first :data:`WINDOW` T, any round's; in round 0 that is the whole round): ``*_first`` (1 if
  no sharer started before it, ties by ticket), ``*_sharers`` (sharers besides itself), ``*_lag_ns`` and
  ``*_lag_tiles`` (its start after the first sharer's), ``*_other_half`` and ``*_other_set`` (sharers on SMs of the
  other ``half`` / ``small_set`` side);
* ``fp_start_mib``: the distinct A and W panels read by the tiles running at its start (an A panel 128 x K x 2
  bytes, a W panel 256 x K x 2; K the experiment's, ``specs/experiments``), ``fp_window_mib`` the same over the
  concurrent tiles; ``layer`` (every tile of rounds 0-3 here is layer 0's).

A tile is **slow** where its ratio is :data:`SLOW` or more. What the committed traces show (all seen before this was
written: post-hoc): on the H100s the small set separates row order's slow round-0 tiles from the fast ones (its
tiles 1.04, the other 108 SMs' 1.13; eta^2 0.71 against 0.008 for a random split); within the rest nothing does
(|Spearman| <= 0.24, the largest the W panel's first sharer being a little slower, as in every order on both GPUs).
On the H200s the small set does not matter in round 0 and row order's 1.025 is spread over all SMs. Round 0 is not
unusual in groups of 8 (0.99 of the same SM's round 1, the same in row order), and a row-order round reads 1.12-1.45
times groups of 8's distinct panel bytes (not the same count).

Writes ``cases.csv`` (per GPU, run, machine, experiment, case, order and span "0" / "1-3": tiles, median ratio,
share slow, the medians on the small set and the rest, a round's distinct panels and MiB; for span "0" the median
over SMs of the round-0 mainloop over the same SM's round-1, and the Spearman over SMs of the two),
``separation.csv`` (per GPU, order, span, SMs, all or "rest" outside the small set, and feature: the median
within-case Spearman with the ratio and its cases, the median within-case AUC, slow against fast tiles, and its
cases, the pooled medians of the feature in slow and fast tiles), ``bins.csv`` (per GPU, order, span, feature and
level, categorical or within-case quartile: tiles, median ratio, share slow), ``groupings.csv`` (per GPU, order,
span, SMs and grouping: the median over the rounds of the cases of eta^2, the share of the ratio's variance between
the groups, beside a random grouping's (G - 1) / (N - 1)), ``rounds.csv`` (per GPU and order: those round-0 figures
over the cases) and ``by-experiment.csv`` (per GPU, order and experiment: the round-0 ratio, on the small set and
the rest, a round's MiB and its ratio over groups of 8's), and ``by-shape.csv`` (:func:`by_shape`: per GPU,
experiment and order, over every committed chain-kernel bundle, not only those traced on both GPUs: the round-0 ratio
beside the layer's weights and the first round's distinct bytes over the L2). Prints the row-order round-0
separation and row order's ``by-shape.csv`` rows. ~20 s.

Left out: the GPC of an SM (``%smid`` does not say; the small set is read from late timings), the L2 partition that
holds a panel, the k-loop inside a tile (one stamp at its end: which sharer leads a panel's reads step by step is
not seen), HBM and L2 counters, the one-layer microbenchmarks, the GeLU chains and the rings, and any fitting of the
simulator.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import posthoc_h100_rounds as phr  # noqa: E402
import posthoc_order_mainloop as pom  # noqa: E402
import posthoc_sm_groups as psg  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402

OUT = ROOT / "bench/results/posthoc-h100-round0"
REFERENCE = pom.REFERENCE
ROW = "intragpu-row"
GROUPS = pom.ORDERS
"""The chain kernel's orders: strategy -> the row-block group of its tickets (``ctasim.plan.chain_order``)."""
ROUNDS = 4
"""Rounds 0 to ROUNDS - 1 are read: span "0" alone, span "1-3" the others pooled."""
SLOW = 1.05
"""A slow tile: a mainloop at least this many times groups of 8's round-0 median of the same run and case."""
WINDOW = 0.5
"""Concurrent tiles: those whose mainloop overlaps a tile's first WINDOW tile times."""
HALF = 66
"""``half``: ``sm // HALF`` (an SM-id proxy for the GPU's two halves)."""
MIN_CLASS = 5
"""A case enters the AUC where it has at least this many slow and this many fast tiles."""
A_ROWS, W_ROWS, ELEM = 128, 256, 2
"""A panel: 128 rows x K; W panel: K x 256; bf16."""


def panels_mib(a, w, k: int):
    """The MiB of ``a`` A panels and ``w`` W panels at K = ``k`` (numbers or arrays)."""
    return (a * A_ROWS + w * W_ROWS) * k * ELEM / 2**20
CATEGORICAL = ("small_set", "half", "a_first", "w_first", "tpc_same_a", "tpc_same_w", "layer")
"""Features binned by their levels; the others by within-case quartile."""
FEATURES = ("small_set", "half", "tpc_same_a", "tpc_same_w", "acq_tiles", "rank", "a_first", "a_sharers", "a_lag_ns",
            "a_lag_tiles", "a_other_half", "a_other_set", "w_first", "w_sharers", "w_lag_ns", "w_lag_tiles",
            "w_other_half", "w_other_set", "fp_start_mib", "fp_window_mib", "layer")
GROUPINGS = {"tpc (sm // 2)": lambda sm: sm // 2, "sm // 16": lambda sm: sm // 16,
             "half (sm // 66)": lambda sm: sm // HALF}
"""Groupings of the SMs whose eta^2 ``groupings.csv`` gives (and ``small set``, the machine's, where it has one)."""


def order_rank(tiles: pd.DataFrame, group: int) -> np.ndarray:
    """Each tile's position in the chain kernel's ticket order over groups of ``group`` row-blocks (1: row order), the
    grid's layers, row-blocks and column panels read off the trace (every tile is traced)."""
    from ctasim.plan import chain_order  # noqa: PLC0415

    layers, tm, tn = (int(tiles[c].max()) + 1 for c in ("layer", "tile_m", "tile_n"))
    order = chain_order(layers, tm, tn, group)
    pos = np.empty(len(order), dtype=np.int64)
    pos[order] = np.arange(len(order))
    ids = (tiles["layer"].to_numpy() * tm * tn + tiles["tile_m"].to_numpy() * tn + tiles["tile_n"].to_numpy())
    return pos[ids.astype(np.int64)]


def sharers(acq: np.ndarray, key: np.ndarray, tie: np.ndarray, side: np.ndarray, conc: np.ndarray) -> dict:
    """Per tile i (a row of ``conc``, tiles x all tiles: j runs concurrently with i, i with itself), over its sharers
    (concurrent tiles j with ``key[j] == key[i]``, i included; ``acq``, ``key``, ``tie``, ``side`` over all tiles,
    the first rows being the tiles): whether i started first (earliest ``acq``, ties by ``tie``), the sharers besides
    i, i's start after the first sharer's, and the sharers whose ``side`` differs from i's (``side`` NaN: NaN)."""
    n = conc.shape[0]
    share = conc & (key[None, :] == key[:n, None])
    a_i, t_i = acq[:n, None], tie[:n, None]
    before = share & ((acq[None, :] < a_i) | ((acq[None, :] == a_i) & (tie[None, :] < t_i)))
    first_acq = np.where(share, acq[None, :], np.inf).min(axis=1)
    other = share & (side[None, :] != side[:n, None])
    known = ~np.isnan(side[:n])
    return dict(first=(~before.any(axis=1)).astype(int), sharers=share.sum(axis=1) - 1,
                lag_ns=acq[:n] - first_acq, other=np.where(known, other.sum(axis=1), np.nan))


def distinct(mask: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Per row of ``mask`` (tiles x all tiles), the number of distinct ``key`` values (integers >= 0) it selects."""
    codes = np.unique(key, return_inverse=True)[1]
    hit = np.zeros((mask.shape[0], codes.max() + 1), dtype=bool)
    rows, cols = np.nonzero(mask)
    hit[rows, codes[cols]] = True
    return hit.sum(axis=1)


def tile_features(tiles: pd.DataFrame, group: int, k: int, tile_ns: float, small: frozenset | None = None,
                  rounds: int = ROUNDS, window: float = WINDOW) -> pd.DataFrame:
    """The tiles of rounds 0 to ``rounds`` - 1 of one traced run (``tiles``: columns layer, sm, tile_m, tile_n,
    t_acquire, t_mainloop_end; one order, over groups of ``group`` row-blocks; every tile of the run) with ``round``,
    ``mainloop_ns``, ``ratio`` (over ``tile_ns``, the tile time T) and the features of the module docstring; K ``k``;
    ``small``: the machine's small set of SMs (None: unknown, ``small_set`` and ``*_other_set`` NaN)."""
    from ctasim.calibration import tile_rounds  # noqa: PLC0415

    t = tile_rounds(tiles.reset_index(drop=True))
    t["rank_all"] = order_rank(t, group)
    mine = (t["round"] < rounds).to_numpy()
    lo, hi = t.loc[mine, "t_acquire"].min(), t.loc[mine, "t_acquire"].max() + window * tile_ns
    near = ~mine & (t["t_acquire"] < hi).to_numpy() & (t["t_mainloop_end"] > lo).to_numpy()
    t = pd.concat([t[mine], t[near]], ignore_index=True)  # the read tiles first, then the others that may overlap
    n = int(mine.sum())
    acq = t["t_acquire"].to_numpy(dtype=float)
    end = t["t_mainloop_end"].to_numpy(dtype=float)
    sm = t["sm"].to_numpy()
    tie = t["rank_all"].to_numpy()
    layer = t["layer"].to_numpy().astype(np.int64)
    a_key = layer * 1_000_000 + t["tile_m"].to_numpy()
    w_key = layer * 1_000_000 + t["tile_n"].to_numpy()
    half = (sm // HALF).astype(float)
    side = np.array([float(s in small) for s in sm]) if small else np.full(len(t), np.nan)
    conc = (acq[None, :] < acq[:n, None] + window * tile_ns) & (end[None, :] > acq[:n, None])
    running = (acq[None, :] <= acq[:n, None]) & (end[None, :] > acq[:n, None])
    f = t.iloc[:n][["layer", "sm", "tile_m", "tile_n", "round", "t_acquire"]].copy()
    f["mainloop_ns"] = end[:n] - acq[:n]
    f["ratio"] = f["mainloop_ns"] / tile_ns
    f["small_set"] = side[:n]
    f["half"] = half[:n]
    partner = {(r, s): (a, w) for r, s, a, w in zip(f["round"], f["sm"], a_key[:n], w_key[:n])}
    mate = [partner.get((r, s ^ 1)) for r, s in zip(f["round"], f["sm"])]
    f["tpc_same_a"] = [np.nan if m is None else float(m[0] == a) for m, a in zip(mate, a_key[:n])]
    f["tpc_same_w"] = [np.nan if m is None else float(m[1] == w) for m, w in zip(mate, w_key[:n])]
    first = f.groupby("round")["t_acquire"].transform("min").to_numpy()
    f["acq_tiles"] = (acq[:n] - first) / tile_ns
    f["rank"] = pd.Series(tie[:n]).groupby(f["round"].to_numpy()).rank(method="first").to_numpy() - 1
    for p, key in (("a", a_key), ("w", w_key)):
        s_half = sharers(acq, key, tie, half, conc)
        s_set = sharers(acq, key, tie, side, conc)
        f[f"{p}_first"] = s_half["first"]
        f[f"{p}_sharers"] = s_half["sharers"]
        f[f"{p}_lag_ns"] = s_half["lag_ns"]
        f[f"{p}_lag_tiles"] = s_half["lag_ns"] / tile_ns
        f[f"{p}_other_half"] = s_half["other"]
        f[f"{p}_other_set"] = s_set["other"]
    for name, mask in (("fp_start", running), ("fp_window", conc)):
        f[f"{name}_mib"] = panels_mib(distinct(mask, a_key), distinct(mask, w_key), k)
    return f.drop(columns="t_acquire").reset_index(drop=True)


def machine_sets(runs_of: dict[Path, dict]) -> dict[str, frozenset]:
    """Machine -> its small set of SMs: the most frequent fast side of row order's clear late splits
    (``posthoc_sm_groups.bundle_splits``) over the bundles of ``runs_of`` (bundle -> its first runs) on that
    machine; machines without a clear fast split are left out."""
    parts = [psg.bundle_splits(b, runs) for b, runs in runs_of.items()]
    s = pd.concat(parts, ignore_index=True)
    s = s[(s["order"] == ROW) & s["clear"] & s["state"].str.endswith("fast")]
    out = {}
    for mach, g in s.groupby("machine"):
        counts = g["fast_sms"].value_counts()
        best = sorted(counts.index, key=lambda x: (-counts[x], x))[0]
        out[mach] = frozenset(int(x) for x in best.split())
    return out


def experiment_k(experiment: str) -> int:
    """K of the experiment's layers (``specs/experiments/<experiment>.toml``)."""
    from ctasim.cases import load_experiment  # noqa: PLC0415

    ks = {layer.k for layer in load_experiment(experiment).workload.layers}
    if len(ks) != 1:
        raise ValueError(f"{experiment}: layers of several K {sorted(ks)}")
    return ks.pop()


def round_ns(tiles: pd.DataFrame, rnd: int = 0, end: str = "t_mainloop_end") -> float:
    """The median mainloop (ns; to ``end``) of a run's tiles of round ``rnd``."""
    from ctasim.calibration import tile_rounds  # noqa: PLC0415

    t = tile_rounds(tiles)
    t = t[t["round"] == rnd]
    return float((t[end] - t["t_acquire"]).median())


def reference_ns(runs: dict, end: str = "t_mainloop_end") -> dict[str, float]:
    """Case -> groups of 8's round-0 median mainloop (:func:`round_ns`, to ``end``) of one bundle's first runs
    (``runs``: (case, order) -> trace), for the cases that have groups of 8."""
    return {case: round_ns(tr.tiles, end=end) for (case, order), tr in runs.items() if order == REFERENCE}


def runs_tiles(runs: dict, k: int, small: frozenset | None) -> pd.DataFrame:
    """:func:`tile_features` of every (case, order) of one bundle's first runs (``runs``: (case, order) -> trace) with
    groups of 8 in the same case, T its round-0 median mainloop."""
    parts = []
    tile_ns = reference_ns(runs)
    for (case, order), tr in runs.items():
        if case not in tile_ns or order not in GROUPS:
            continue
        f = tile_features(tr.tiles, GROUPS[order], k, tile_ns[case], small)
        parts.append(f.assign(case=case, order=order))
    return pd.concat(parts, ignore_index=True)


def all_tiles() -> pd.DataFrame:
    """:func:`runs_tiles` of every bundle of both GPUs (``posthoc_h100_rounds.bundles``), with the GPU, run folder,
    machine and experiment; each machine's small set (:func:`machine_sets`) from every committed chain-kernel bundle
    of that machine (``posthoc_sm_groups.EXPERIMENTS``)."""
    parts = []
    for gpu, paths in phr.bundles().items():
        machines = {pom.machine(p) for p in paths}
        read = {p: dict(pom.first_runs(p)) for p in pom.bundles(phr.GPUS[gpu], psg.EXPERIMENTS)
                if pom.machine(p) in machines}
        sets = machine_sets(read)
        for p in paths:
            runs = read[p]
            mach = pom.machine(p)
            f = runs_tiles(runs, experiment_k(p.parent.name), sets.get(mach))
            parts.append(f.assign(gpu=gpu, run=str(p.parent.parent.relative_to(phr.GPUS[gpu])), machine=mach,
                                  experiment=p.parent.name))
    t = pd.concat(parts, ignore_index=True)
    first = ["gpu", "run", "machine", "experiment", "case", "order"]
    return t[first + [c for c in t.columns if c not in first]]


KEYS = ["gpu", "run", "machine", "experiment", "case", "order"]
"""A traced run of one case and order."""


def with_span(t: pd.DataFrame) -> pd.DataFrame:
    """``t`` with ``span`` ("0" for round 0, "1-3" for rounds 1 to 3), ``slow`` (ratio >= :data:`SLOW`) and ``cid``
    (a number per run, case and order of :data:`KEYS`: grouping by it is quicker than by the strings)."""
    return t.assign(span=np.where(t["round"] == 0, "0", "1-3"), slow=t["ratio"] >= SLOW,
                    cid=t.groupby(KEYS, sort=True).ngroup())


def r0_over_r1(t: pd.DataFrame) -> tuple[float, float]:
    """Over the SMs with a tile in rounds 0 and 1 of one run, case and order: the median of the SM's round-0 mainloop
    over its round-1 mainloop, and the Spearman of the SMs' round-0 ratio with their round-1 ratio."""
    per = t[t["round"].isin([0, 1])].pivot_table(index="sm", columns="round", values="mainloop_ns", aggfunc="median")
    per = per.dropna()
    if len(per) < 3:
        return np.nan, np.nan
    return float((per[0] / per[1]).median()), spearman(per[0], per[1])


def cases(t: pd.DataFrame, k_of: dict[str, int] | None = None) -> pd.DataFrame:
    """Per run, case, order and span: tiles, median ratio, share slow, the medians on the small set and the rest, a
    round's distinct A and W panels (median over the span's rounds) and their MiB (``k_of``: experiment -> K; default
    from the specs), and (span "0") :func:`r0_over_r1`."""
    k_of = k_of if k_of is not None else {e: experiment_k(e) for e in t["experiment"].unique()}
    t = with_span(t)
    by = ["cid", "span"]
    panels = {}
    for p, col in (("a", "tile_m"), ("w", "tile_n")):
        d = t.drop_duplicates(["cid", "round", "layer", col])
        panels[p] = d.groupby(by + ["round"]).size().groupby(by).median()
    g = t.groupby(by)
    c = pd.DataFrame({"tiles": g.size(), "ratio": g["ratio"].median(), "slow_share": g["slow"].mean(),
                      "ratio_small": t[t["small_set"] == 1].groupby(by)["ratio"].median(),
                      "ratio_rest": t[t["small_set"] == 0].groupby(by)["ratio"].median(),
                      "a_panels": panels["a"], "w_panels": panels["w"]}).reset_index()
    names = t.drop_duplicates("cid").set_index("cid")[KEYS]
    c = names.reindex(c["cid"]).reset_index(drop=True).join(c)
    k = c["experiment"].map(k_of)
    c["round_mib"] = panels_mib(c["a_panels"], c["w_panels"], k)
    r01 = {cid: r0_over_r1(run) for cid, run in t.groupby("cid")}
    first = (c["span"] == "0").to_numpy()
    c["r0_over_r1"] = [r01[i][0] if f else np.nan for i, f in zip(c["cid"], first)]
    c["sm_rho_r0_r1"] = [r01[i][1] if f else np.nan for i, f in zip(c["cid"], first)]
    return c.drop(columns="cid")


def auc(x: np.ndarray, slow: np.ndarray) -> float:
    """The probability that a slow tile's ``x`` exceeds a fast tile's (ties half; Mann-Whitney): 0.5 = no
    separation. NaN where either class is empty or ``x`` is constant (NaN values left out)."""
    x, slow = np.asarray(x, dtype=float), np.asarray(slow, dtype=bool)
    ok = ~np.isnan(x)
    x, slow = x[ok], slow[ok]
    n1, n0 = int(slow.sum()), int((~slow).sum())
    if n1 == 0 or n0 == 0 or np.unique(x).size < 2:
        return np.nan
    r = pd.Series(x).rank(method="average").to_numpy()
    return float((r[slow].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def spearman(x: pd.Series, y: pd.Series) -> float:
    """Spearman's rho (Pearson of the average ranks) over the pairs with both; NaN where either is constant."""
    x, y = pd.Series(np.asarray(x, dtype=float)), pd.Series(np.asarray(y, dtype=float))
    ok = x.notna() & y.notna()
    rx, ry = x[ok].rank(), y[ok].rank()
    if ok.sum() < 3 or rx.nunique() < 2 or ry.nunique() < 2:
        return np.nan
    return float(np.corrcoef(rx, ry)[0, 1])


def case_stats(c: pd.DataFrame, feats: list[str]) -> tuple[pd.Series, pd.Series]:
    """:func:`spearman` of each of ``feats`` with ``ratio``, and :func:`auc` of each, slow against fast, over one
    case's tiles (NaN where a feature is constant; the AUCs NaN unless :data:`MIN_CLASS` tiles or more are slow and
    as many fast). Features without NaN at once, as ranks; the others one by one."""
    x = c[feats].to_numpy(dtype=float)
    full = ~np.isnan(x).any(axis=0)
    r = pd.DataFrame(x[:, full]).rank().to_numpy()
    y = c["ratio"].rank().to_numpy()
    rc, yc = r - r.mean(axis=0), y - y.mean()
    den = np.sqrt((rc ** 2).sum(axis=0) * (yc ** 2).sum())
    slow = c["slow"].to_numpy(dtype=bool)
    n1, n0 = int(slow.sum()), int((~slow).sum())
    classes = n1 >= MIN_CLASS and n0 >= MIN_CLASS
    rho, aucs = np.full(len(feats), np.nan), np.full(len(feats), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho[full] = np.where(den > 0, (rc * yc[:, None]).sum(axis=0) / den, np.nan)
        if classes:
            aucs[full] = np.where(r.max(axis=0) > r.min(axis=0),
                                  (r[slow].sum(axis=0) - n1 * (n1 + 1) / 2) / (n1 * n0), np.nan)
    for i in np.flatnonzero(~full):
        rho[i] = spearman(x[:, i], y)
        aucs[i] = auc(x[:, i], slow) if classes else np.nan
    return pd.Series(rho, index=feats), pd.Series(aucs, index=feats)


def separation(t: pd.DataFrame, features=FEATURES) -> pd.DataFrame:
    """Per GPU, order, span, SMs ("all", or "rest": outside the small set) and feature: the cases where it varies and
    their median within-case Spearman of it with the ratio (and the share positive), the cases with :data:`MIN_CLASS`
    slow and fast tiles or more and their median AUC, and the pooled medians of the feature in the slow and the fast
    tiles. A case of span "1-3" is its rounds 1 to 3 together."""
    t = with_span(t)
    feats = list(features)
    rows = []
    for sms, sub in (("all", t), ("rest", t[t["small_set"] == 0])):
        for (gpu, order, span), g in sub.groupby(["gpu", "order", "span"], sort=True):
            got = [case_stats(c, feats) for _, c in g.groupby("cid", sort=False)]
            rho = pd.DataFrame([r for r, _ in got], columns=feats)
            aucs = pd.DataFrame([a for _, a in got], columns=feats)
            slow, fast = g[g["slow"]], g[~g["slow"]]
            for f in feats:
                rows.append(dict(gpu=gpu, order=order, span=span, sms=sms, feature=f,
                                 rho_cases=int(rho[f].notna().sum()), rho_median=rho[f].median(),
                                 rho_positive=(rho[f].dropna() > 0).mean() if rho[f].notna().any() else np.nan,
                                 auc_cases=int(aucs[f].notna().sum()), auc_median=aucs[f].median(),
                                 slow_tiles=len(slow), fast_tiles=len(fast), slow_median=slow[f].median(),
                                 fast_median=fast[f].median()))
    return pd.DataFrame(rows)


def levels(t: pd.DataFrame, feat: str, by: list[str]) -> pd.Series:
    """A feature's bin within each group of ``by`` (a case and span): its value (:data:`CATEGORICAL`) or its quartile
    ("q1".."q4", by average rank within the group); "nan" where it has none."""
    x = t[feat]
    if feat in CATEGORICAL:
        v = x.to_numpy(dtype=float)
        return pd.Series(np.where(np.isnan(v), "nan", np.nan_to_num(v).astype(int).astype(str)), index=t.index)
    q = np.ceil(x.groupby([t[k] for k in by]).rank(pct=True, method="average") * 4).clip(1, 4).to_numpy()
    return pd.Series(np.where(np.isnan(q), "nan", "q" + np.nan_to_num(q).astype(int).astype(str)), index=t.index)


def bins(t: pd.DataFrame, features=FEATURES) -> pd.DataFrame:
    """Per GPU, order, span, feature and level (:func:`levels`, within each case and span): tiles, median ratio,
    share slow."""
    t = with_span(t)
    parts = []
    for feat in features:
        g = t.assign(level=levels(t, feat, ["cid", "span"])).groupby(["gpu", "order", "span", "level"], sort=True)
        parts.append(g.agg(tiles=("ratio", "size"), ratio=("ratio", "median"), slow_share=("slow", "mean"))
                     .reset_index().assign(feature=feat))
    b = pd.concat(parts, ignore_index=True)
    return b[["gpu", "order", "span", "feature", "level", "tiles", "ratio", "slow_share"]]


def eta2(y: np.ndarray, groups: np.ndarray) -> float:
    """The share of ``y``'s variance between the ``groups``' means (0 to 1; NaN where ``y`` is constant)."""
    y = np.asarray(y, dtype=float)
    total = ((y - y.mean()) ** 2).sum()
    if total == 0:
        return np.nan
    s = pd.Series(y).groupby(np.asarray(groups))
    return float((s.size() * (s.mean() - y.mean()) ** 2).sum() / total)


def groupings(t: pd.DataFrame) -> pd.DataFrame:
    """Per GPU, order, span, SMs ("all", or "rest": outside the small set) and grouping of the SMs
    (:data:`GROUPINGS`, and "small set" over all SMs of a machine that has one): the cases (one round of one run,
    case and order) and the median over them of :func:`eta2` of the ratio, beside the median of a random grouping's
    expectation (G - 1) / (N - 1)."""
    rows = []
    t = with_span(t)
    case = ["gpu", "order", "span", "cid", "round"]
    for sms, sub in (("all", t), ("rest", t[t["small_set"] == 0])):
        named = dict(GROUPINGS, **({"small set": None} if sms == "all" else {}))
        for name, fn in named.items():
            x = sub[sub["small_set"].notna()] if fn is None else sub
            grp = x["small_set"].to_numpy() if fn is None else fn(x["sm"].to_numpy())
            x = x.assign(grp=grp, mean=x.groupby(case)["ratio"].transform("mean"))
            x = x.assign(dev=(x["ratio"] - x["mean"]) ** 2)
            gm = x.groupby(case + ["grp"]).agg(n=("ratio", "size"), m=("ratio", "mean"), mu=("mean", "first"))
            between = (gm["n"] * (gm["m"] - gm["mu"]) ** 2).groupby(case).sum()
            per = pd.DataFrame({"between": between, "total": x.groupby(case)["dev"].sum(),
                                "g": gm.groupby(case).size(), "n": x.groupby(case).size()})
            per = per[(per["g"] > 1) & (per["total"] > 0)].reset_index()
            per["eta2"] = per["between"] / per["total"]
            per["random"] = (per["g"] - 1) / (per["n"] - 1)
            for (gpu, order, span), g in per.groupby(["gpu", "order", "span"], sort=True):
                rows.append(dict(gpu=gpu, order=order, span=span, sms=sms, grouping=name, cases=len(g),
                                 eta2=g["eta2"].median(), random=g["random"].median()))
    return pd.DataFrame(rows).sort_values(["gpu", "order", "span", "sms", "grouping"], ignore_index=True)


def rounds_table(c: pd.DataFrame) -> pd.DataFrame:
    """Per GPU and order (:func:`cases`' span "0" rows): the cases; the median, low and high of round 0 over round 1
    on the same SMs; the median of the SMs' round-0 / round-1 Spearman; the medians of the round-0 ratio, share slow,
    ratio on the small set and the rest, and round MiB."""
    g = c[c["span"] == "0"].groupby(["gpu", "order"], sort=True)
    return pd.DataFrame({"cases": g.size(), "r0_over_r1_median": g["r0_over_r1"].median(),
                         "r0_over_r1_low": g["r0_over_r1"].min(), "r0_over_r1_high": g["r0_over_r1"].max(),
                         "sm_rho_r0_r1": g["sm_rho_r0_r1"].median(), "round0_ratio": g["ratio"].median(),
                         "round0_slow_share": g["slow_share"].median(), "round0_ratio_small": g["ratio_small"].median(),
                         "round0_ratio_rest": g["ratio_rest"].median(),
                         "round0_mib": g["round_mib"].median()}).reset_index()


def by_experiment(c: pd.DataFrame) -> pd.DataFrame:
    """Per GPU, order and experiment (:func:`cases`' span "0" rows): the cases, the medians of the round-0 ratio, of it
    on the small set and the rest, and of the round's MiB and its ratio over groups of 8's round in the same run and
    case."""
    z = c[c["span"] == "0"].copy()
    ref = z[z["order"] == REFERENCE].set_index(["gpu", "run", "experiment", "case"])["round_mib"]
    z["mib_over_reference"] = z["round_mib"].to_numpy() / ref.reindex(
        pd.MultiIndex.from_frame(z[["gpu", "run", "experiment", "case"]])).to_numpy()
    g = z.groupby(["gpu", "order", "experiment"], sort=True)
    return pd.DataFrame({"cases": g.size(), "round0_ratio": g["ratio"].median(),
                         "round0_ratio_small": g["ratio_small"].median(), "round0_ratio_rest": g["ratio_rest"].median(),
                         "round0_mib": g["round_mib"].median(),
                         "mib_over_reference": g["mib_over_reference"].median()}).reset_index()


L2_PROFILES = {"H100": "h100-x1-datasheet", "H200": "h200-x1-calibrated"}
"""GPU -> the profile whose ``l2_bytes`` (50 and 60 MiB, read from the devices) ``by-shape.csv`` divides by."""
SLOTS = 132
"""A round: the first SLOTS tickets of the order (one tile per SM of an H100 or H200)."""


def round_panels(tiles_m: int, tiles_n: int, group: int, slots: int = SLOTS) -> tuple[int, int]:
    """The distinct A and W panels of the first ``slots`` tickets of the chain kernel's order over groups of ``group``
    row-blocks (``ctasim.plan.chain_order``) on a grid of ``tiles_m`` x ``tiles_n`` tiles (its first layer)."""
    from ctasim.plan import chain_order  # noqa: PLC0415

    first = chain_order(1, tiles_m, tiles_n, group)[:slots]
    return int(np.unique(first // tiles_n).size), int(np.unique(first % tiles_n).size)


def round_mib(tiles_m: int, tiles_n: int, group: int, k: int, slots: int = SLOTS) -> float:
    """The MiB of :func:`round_panels` at K = ``k``."""
    return panels_mib(*round_panels(tiles_m, tiles_n, group, slots), k)


def round0_ratios(runs: dict, end: str = "t_mainloop_end") -> pd.DataFrame:
    """Per (case, order) of one bundle's first runs (``runs``: (case, order) -> trace) with groups of 8 in the same
    case: the median round-0 mainloop (to ``end``: the simulator's traces have ``t_compute_end``) over groups of 8's,
    and the grid's row-blocks and column panels."""
    rows = []
    tile_ns = reference_ns(runs, end)
    for (case, order), tr in runs.items():
        if case not in tile_ns or order not in GROUPS:
            continue
        rows.append(dict(case=case, order=order, ratio=round_ns(tr.tiles, end=end) / tile_ns[case],
                         tiles_m=int(tr.tiles["tile_m"].max()) + 1, tiles_n=int(tr.tiles["tile_n"].max()) + 1))
    return pd.DataFrame(rows)


def shape_cases(experiments: tuple[str, ...] = psg.EXPERIMENTS,
                gpus: tuple[str, ...] = tuple(phr.GPUS)) -> pd.DataFrame:
    """:func:`round0_ratios` of every committed chain-kernel bundle of ``experiments`` (patterns; every chain-kernel
    experiment, ``posthoc_sm_groups.EXPERIMENTS``) of ``gpus`` (:data:`posthoc_h100_rounds.GPUS`' folders), with the
    GPU, run folder and experiment."""
    parts = []
    for gpu in gpus:
        root = phr.GPUS[gpu]
        for p in pom.bundles(root, experiments):
            r = round0_ratios(dict(pom.first_runs(p)))
            if len(r):
                parts.append(r.assign(gpu=gpu, run=str(p.parent.parent.relative_to(root)), experiment=p.parent.name))
    return pd.concat(parts, ignore_index=True)


def by_shape(c: pd.DataFrame, l2_mib: dict[str, float] | None = None,
             shape_of: dict[str, tuple[int, int]] | None = None) -> pd.DataFrame:
    """Per GPU, experiment and order of :func:`shape_cases`' rows ``c``: the traced cases, the median, low and high of
    the round-0 ratio, the layer's N and K (``shape_of``: experiment -> (N, K); default from the specs), its weights
    in MiB and over the GPU's L2 (``l2_mib``: GPU -> MiB; default :data:`L2_PROFILES`' ``l2_bytes``), and the median
    over the cases of the first round's distinct panel MiB (:func:`round_panels`), of it over the L2 and over groups
    of 8's first round on the same grid."""
    from ctasim.cases import load_experiment  # noqa: PLC0415
    from ctasim.spec import load_hardware  # noqa: PLC0415

    if l2_mib is None:
        l2_mib = {g: load_hardware(n).l2_bytes / 2**20 for g, n in L2_PROFILES.items()}
    if shape_of is None:
        shape_of = {}
        for e in c["experiment"].unique():
            layer = load_experiment(e).workload.layers[0]
            shape_of[e] = (layer.n, layer.k)
    c = c.copy()
    n = c["experiment"].map(lambda e: shape_of[e][0])
    k = c["experiment"].map(lambda e: shape_of[e][1])
    grids = list(zip(c["tiles_m"], c["tiles_n"], c["order"], k))
    c["round_mib"] = [round_mib(tm, tn, GROUPS[o], kk) for tm, tn, o, kk in grids]
    ref = [round_mib(tm, tn, GROUPS[REFERENCE], kk) for tm, tn, _, kk in grids]
    c["round_over_reference"] = c["round_mib"] / np.asarray(ref)
    c["n"], c["k"] = n, k
    g = c.groupby(["gpu", "experiment", "order"], sort=True)
    out = pd.DataFrame({"cases": g.size(), "n": g["n"].first(), "k": g["k"].first(),
                        "round0_ratio": g["ratio"].median(), "low": g["ratio"].min(), "high": g["ratio"].max(),
                        "round_mib": g["round_mib"].median(),
                        "round_over_reference": g["round_over_reference"].median()}).reset_index()
    l2 = out["gpu"].map(l2_mib)
    out["weights_mib"] = out["n"] * out["k"] * ELEM / 2**20
    out["weights_over_l2"] = out["weights_mib"] / l2
    out["round_over_l2"] = out["round_mib"] / l2
    return out.sort_values(["gpu", "order", "weights_mib", "experiment"], ignore_index=True)


def tables(t: pd.DataFrame, k_of: dict[str, int] | None = None) -> dict[str, pd.DataFrame]:
    """The committed tables of the per-tile table ``t`` (:func:`all_tiles`), by file name."""
    c = cases(t, k_of)
    return {"cases.csv": c, "separation.csv": separation(t), "bins.csv": bins(t), "groupings.csv": groupings(t),
            "rounds.csv": rounds_table(c), "by-experiment.csv": by_experiment(c)}


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python bench/posthoc_h100_round0.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = parse_outputs(ap, argv, folders=("--out",))
    out = tables(all_tiles())
    out["by-shape.csv"] = by_shape(shape_cases())
    args.out.mkdir(parents=True, exist_ok=True)
    for name, d in out.items():
        d.to_csv(args.out / name, index=False, float_format="%.4f")
    s = out["separation.csv"]
    s = s[(s["order"] == ROW) & (s["span"] == "0")]
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(s.pivot_table(index=["feature"], columns=["gpu", "sms"], values=["rho_median", "auc_median"]).round(2))
        print(out["rounds.csv"].round(3).to_string(index=False))
        b = out["by-shape.csv"]
        print(b[b["order"] == ROW].round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
