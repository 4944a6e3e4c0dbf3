"""Simulate the paper's figures and the 2xH200 experiments; write tables, plots and provenance.

    python bench/figures.py [--out bench/results/sim]

Writes, per experiment, ``<name>.csv`` (the summary table), ``<name>-*.png`` plots, and one
``provenance.json`` for the whole run.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's ctasim, not an installed one

from provenance import provenance  # noqa: E402

from ctasim.cli import write_figures  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.run import run_experiment  # noqa: E402
from ctasim.cases import load_experiment  # noqa: E402

EXPERIMENTS = ("default", "fig4", "fig5", "fig7", "h200x2-sweep", "raster", "mlp-block")


PAPER = {  # arXiv 2607.07862, abstract: 8xH200/B200, 2-layer 16384x8192x8192 bf16 GEMMs
    "vs micro-batching": 31.8,
    "vs tensor parallelism": 29.6,
}


def markdown(df) -> str:
    """A pandas table as a Markdown table (no extra dependency)."""
    def cell(v):
        return f"{v:,.1f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(map(str, df.columns)) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def _reduction(df, case_col, a, b):
    """Per case: latency reduction of strategy ``a`` vs ``b`` in percent (positive: ``a`` is faster)."""
    piv = df.pivot_table(index=case_col, columns="strategy", values="latency_us", sort=False)
    return (1.0 - piv[a] / piv[b]) * 100.0


def _best_ctapipe(df, case_col, b):
    """Per case: the latency reduction of the fastest CTA-pipelining strategy (every strategy of kind ctapipe: the
    paper's design and the chain kernel's ring) against strategy ``b`` in percent, and which strategy it is."""
    c = df[df["kind"] == "ctapipe"].sort_values("latency_us").drop_duplicates(case_col).set_index(case_col)
    ref = df[df["strategy"] == b].set_index(case_col)["latency_us"]
    red = (1.0 - c["latency_us"] / ref.reindex(c.index)) * 100.0
    return red, c["strategy"]


def _max_at(red, which):
    """(the largest reduction, 'case (strategy)' where it is)."""
    at = red.idxmax()
    return red.max(), f"{at} ({which[at]})"


def headline_table(out: Path):
    """The paper's headline claims next to what the model predicts for the same comparisons."""
    import pandas as pd

    fig4 = pd.read_csv(out / "fig4.csv")
    fig5 = pd.read_csv(out / "fig5.csv")
    fig7 = pd.read_csv(out / "fig7.csv")
    r4 = _max_at(*_best_ctapipe(fig4, "case", "microbatch"))
    r5m = _max_at(*_best_ctapipe(fig5, "case", "microbatch"))
    r5t = _max_at(*_best_ctapipe(fig5, "case", "tp"))
    r7 = _reduction(fig7, "case", "hybrid-tp4x2", "tp8")
    r7b = _reduction(fig7, "case", "hybrid-tp4x2", "tp4")
    rows = [
        ("Fig. 4 CTA-pipelining vs best micro-batching (max over L = 2..8)", PAPER["vs micro-batching"], *r4),
        ("Fig. 5 CTA-pipelining vs best micro-batching (max over M)", PAPER["vs micro-batching"], *r5m),
        ("Fig. 5 CTA-pipelining vs TP on 2 GPUs (max over M)", PAPER["vs tensor parallelism"], *r5t),
        ("Fig. 7 hybrid TP4 x 2 stages vs TP8 (8 GPUs)", None, r7.iloc[0], r7.index[0]),
        ("Fig. 7 hybrid TP4 x 2 stages vs TP4 (reduced world size)", None, r7b.iloc[0], r7b.index[0]),
    ]
    return pd.DataFrame(rows, columns=["comparison", "paper_reduction_pct", "model_reduction_pct", "at"]).round(1)


def write_results_doc(out: Path, headline) -> None:
    """Refresh the generated block of docs/results.md with the headline table and the figure tables."""
    import pandas as pd

    doc = Path(__file__).resolve().parent.parent / "docs" / "results.md"
    if not doc.exists():
        return
    parts = ["### Headline comparison (latency reduction, %; positive = faster)", "",
             markdown(headline.astype(object).fillna("—")), ""]
    for name in ("fig4", "fig5", "fig7", "mlp-block", "h200x2-sweep"):
        df = pd.read_csv(out / f"{name}.csv")
        cols = [c for c in ("case", "strategy", "gpus", "variant", "latency_us", "compute_us", "comm_us", "idle_us")
                if c in df.columns]
        parts += [f"### {name}", "", markdown(df[cols].round(1).astype(object).fillna("")), ""]
    text = doc.read_text()
    head, rest = text.split("<!-- BEGIN GENERATED -->\n", 1)
    _, tail = rest.split("<!-- END GENERATED -->", 1)
    doc.write_text(head + "<!-- BEGIN GENERATED -->\n" + "\n".join(parts) + "<!-- END GENERATED -->" + tail)


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/figures.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "sim"))
    args = parse_outputs(ap, argv, folders=("--out",))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    timings = {}
    for name in EXPERIMENTS:
        exp = load_experiment(name)
        t0 = time.perf_counter()
        df, results = run_experiment(exp, progress=False)
        timings[name] = round(time.perf_counter() - t0, 2)
        df.round(4).to_csv(out / f"{name}.csv", index=False)
        write_figures(exp, df, results, out)
        print(f"{name}: {len(df)} runs, {int(df['ctas_simulated'].sum()):,} CTAs, {timings[name]} s")
    headline = headline_table(out)
    headline.to_csv(out / "headline.csv", index=False)
    write_results_doc(out, headline)
    prov = provenance("python bench/figures.py")
    prov["wall_s"] = timings
    (out / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
