"""bench/posthoc_h100_reference_units.py: GEMMs alone on two H100 units, each call scaled by its own calibration GEMM
(post-hoc): the committed tables are what the script writes from the judged calls, and docs/validation.md quotes them
(no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench


@pytest.fixture(scope="module")
def ru():
    return load_bench("posthoc_h100_reference_units")


def test_the_committed_tables_are_what_the_script_writes_and_the_docs_quote(ru, tmp_path):
    from tests.test_plan85_grouped_kept import _doc_section

    assert ru.main(["--out", str(tmp_path)]) == 0
    for name in ("shapes.csv", "calls.csv"):
        assert (tmp_path / name).read_text() == (ru.OUT / name).read_text(), name
    c = pd.read_csv(ru.OUT / "calls.csv").set_index("call")
    s = pd.read_csv(ru.OUT / "shapes.csv")
    assert set(c.unit) == {"GPU-d182769f", "GPU-21f0e6a0"} and len(s) == c.shapes.sum() == 26
    # a scaled error is the registered one over the call's reference ratio: on the reference itself it would be 0
    r = s.iloc[0]
    assert (1 + r.model_pct / 100) / (1 + r.model_ref_pct / 100) == pytest.approx(1 + r.model_scaled_pct / 100,
                                                                                   abs=1e-4)
    doc = " ".join(_doc_section(ru, 107).split())
    names = {"registered106": "plan 106", "registered106-run2": "plan 106, repeat",
             "registered106-run3": "plan 106, another unit", "registered107": "plan 107",
             "registered107-run2": "plan 107, repeat"}
    for call, name in names.items():
        x = c.loc[call]
        row = (f"| {name} | {x.unit} | {x.model_ref_pct:+.2f} / {x.naive_ref_pct:+.2f}% | {x.model_mape_pct:.2f} → "
               f"{x.model_scaled_mape_pct:.2f}% | {x.naive_mape_pct:.2f} → {x.naive_scaled_mape_pct:.2f}% |")
        assert row.replace("-", "−").replace("GPU−", "GPU-") in doc, row
    m = [s[col].abs().mean() for col in ("model_pct", "model_scaled_pct", "naive_pct", "naive_scaled_pct")]
    assert (f"the reference takes the profile from {m[0]:.2f} to {m[1]:.2f}% and the naive line from {m[2]:.2f} to "
            f"{m[3]:.2f}%") in doc


def test_a_call_without_the_calibration_gemm_is_refused(ru, monkeypatch):
    monkeypatch.setattr(ru, "CALLS", (("registered105", "hw-h100/2026-12-07-registered105-1gpu"),))
    with pytest.raises(ValueError, match="validation-registered105 timed no calibration GEMM"):
        ru.shapes()
