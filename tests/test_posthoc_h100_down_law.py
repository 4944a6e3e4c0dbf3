"""bench/posthoc_h100_down_law.py: the H100 blocks' GEMMs under the drift's two K laws, post-hoc over the committed
op-by-op calls: the committed tables are what the script writes, and docs/validation.md quotes them (no GPU)."""

from __future__ import annotations

import pandas as pd

from tests.helpers import load_bench


def test_the_committed_tables_are_what_the_script_writes_and_the_docs_quote(tmp_path):
    from tests.test_plan85_grouped_kept import _doc_section

    pd_ = load_bench("posthoc_h100_down_law")
    assert pd_.main(["--out", str(tmp_path)]) == 0
    for name in ("items.csv", "summary.csv"):
        assert (tmp_path / name).read_text() == (pd_.OUT / name).read_text(), name
    t = pd.read_csv(pd_.OUT / "items.csv")
    assert set(t.call) == {"registered101", "registered101-run2", "registered102", "registered103"}
    # the tile law moves only the GEMMs past drift_k_ref (K > 8192) and the blocks holding them
    short = t[(t.k <= 8192) & (t.role != "block")]
    assert len(short) == 100 and (short.registered_pct == short.tile_pct).all()
    assert (short.hbm3_pct - short.registered_pct).median() > 1  # the slower exposed rate prices them slower
    s = pd.read_csv(pd_.OUT / "summary.csv").set_index(["kind", "k_range"])
    long_k, mid = s.loc[("down", "(12288, 65536]")], s.loc[("down", "(8192, 12288]")]
    low = s.loc[("down", "(0, 8192]")]
    assert long_k["items"] == 20 and long_k.registered_mape_pct > 3 * long_k.tile_mape_pct
    doc = " ".join(_doc_section(pd_, 103).split())
    blocks = s.xs("block", level="kind").iloc[0]
    v = ("registered", "tile", "hbm3")
    assert (f"down GEMMs at K > 12288 (20 items) {long_k.registered_mape_pct:.2f}% (mean "
            f"{long_k.registered_mean_pct:+.2f}%) as registered, {long_k.tile_mape_pct:.2f}% "
            f"({long_k.tile_mean_pct:+.2f}%) with the drift's tile law") in doc
    assert f"{long_k.hbm3_mape_pct:.2f}% ({long_k.hbm3_mean_pct:+.2f}%) with the exposed HBM share" in doc
    for row, text in ((mid, "at 8192 < K <= 12288 "), (blocks, "the 40 whole blocks "),
                      (low, "the down GEMMs at K <= 8192 ")):
        assert text + ", ".join(f"{row[f'{x}_mape_pct']:.2f}" for x in v[:2]) + f" and {row.hbm3_mape_pct:.2f}%" \
            in doc, text
