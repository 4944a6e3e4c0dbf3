"""bench/plan66_h100_tickets.py: registered plan 66's registration (the H100 datasheet profile and its tickets twin
beside the naive line and the H200s' measured medians), the twin's derivation, its claims on made-up runs, and its
judge on calls it must refuse (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import h200_calls_as, load_bench


@pytest.fixture(scope="module")
def p66():
    return load_bench("plan66_h100_tickets")


@pytest.fixture(scope="module")
def registered(p66):
    return pd.read_csv(p66.REGISTERED / "predicted.csv")


def test_the_registration_is_what_its_sources_give(p66, registered):
    pd.testing.assert_frame_equal(p66.register().reset_index(drop=True), registered, check_exact=False, rtol=0,
                                  atol=5e-5, check_dtype=False)
    counts = registered.groupby("source").size()
    assert set(counts.index) == set(p66.SOURCES) and counts.nunique() == 1 and counts.iloc[0] == 25
    # the twin differs from the model only in its tickets' spread: sequential alike, row order slower
    w = registered.pivot_table(index=["experiment", "case", "strategy"], columns="source", values="predicted_ms")
    seq = w.xs("sequential", level="strategy")
    assert (seq["tickets"] - seq["model"]).abs().max() < 1e-9
    row = w.xs("intragpu-row", level="strategy")
    assert (row["tickets"] > row["model"]).all()


def test_the_twin_is_the_datasheet_profile_with_the_h100s_ticket_spread():
    from ctasim import profiles
    from ctasim.spec import load_hardware

    # the datasheet profile as the twin was registered beside it (before plans 73's and 76's adoptions, 2026-12-06)
    base = profiles.before_h100_adoptions("h100-x1-datasheet")
    twin = load_hardware("h100-x1-datasheet-tickets")
    h200 = load_hardware("h200-x1-calibrated").config(128, 256)
    c = twin.config(128, 256)
    assert c.ticket_gap_cv == profiles.H100_TICKET_GAP_CV
    assert c.ticket_spread == pytest.approx(profiles.H100_REACH_FACTOR * h200.ticket_spread)
    assert twin.with_tickets(ticket_gap_cv=base.config(128, 256).ticket_gap_cv,
                             ticket_spread=h200.ticket_spread).kernel_configs == base.kernel_configs
    assert dataclasses_equal_but(twin, base, {"name", "source", "kernel_configs"})


def dataclasses_equal_but(a, b, skip) -> bool:
    import dataclasses

    return all(getattr(a, f.name) == getattr(b, f.name) for f in dataclasses.fields(a) if f.name not in skip)


def test_a_ticket_field_no_kernel_config_writes_is_refused():
    import dataclasses

    from ctasim import profiles

    d = dataclasses.replace(profiles.DERIVED["h100-x1-datasheet-tickets"], tickets={"ticket_nonesuch": ("1", "")})
    with pytest.raises(ValueError, match="no ticket-scheduled kernel config of h200-x1-calibrated writes "
                                         "ticket_nonesuch"):
        profiles.derive("x", d)
    d = dataclasses.replace(d, tickets={"l2_sm_tflops": ("9.0", "")})
    with pytest.raises(ValueError, match="tickets sets ticket fields only, not l2_sm_tflops"):
        profiles.derive("x", d)


def test_ticket_fields_go_to_the_ticket_scheduled_configs_only(tmp_path):
    """A config that writes ticket_spread = 0 (not ticket-scheduled) keeps its ticket fields; the scheduled one takes
    them."""
    import dataclasses

    from ctasim import profiles
    from ctasim.spec import SPECS_DIR

    (tmp_path / "hardware").mkdir()
    text = (SPECS_DIR / "hardware" / "h200-x1-calibrated.toml").read_text()
    second = text.index("[[hardware.kernel_config]]", text.index("[[hardware.kernel_config]]") + 1)
    text = text[:second] + text[second:].replace("[[hardware.kernel_config]]\n",
                                                 "[[hardware.kernel_config]]\nticket_spread = 0.0\n", 1)
    (tmp_path / "hardware" / "h200-x1-calibrated.toml").write_text(text)
    d = dataclasses.replace(profiles.DERIVED["h100-x1-datasheet-tickets"],
                            tickets={"ticket_spread": ("0.5", "why")})
    out = profiles.derive("x", d, tmp_path)
    assert out.count("ticket_spread = 0.5  # why") == 1 and out.count("ticket_spread = 0.0\n") == 1


def _timed(registered, source):
    m = registered[registered["source"] == source][["experiment", "case", "strategy", "predicted_ms"]]
    return m.rename(columns={"predicted_ms": "measured_ms"})


def test_an_h100_as_the_twin_priced_it_meets_the_twin_claims_and_misses_d_only_where_the_model_is_off(p66, registered):
    cl = p66.claims(p66.cases(registered, _timed(registered, "tickets")), "test").set_index("claim")
    assert cl.loc[list("abcef"), "met"].all(), cl
    assert not cl.loc["d", "met"]  # the model prices row order at H = 7168, M = 8192 18% fast of the twin


def test_an_h100_as_the_model_priced_it_meets_d_and_not_a(p66, registered):
    cl = p66.claims(p66.cases(registered, _timed(registered, "model")), "test").set_index("claim")
    assert cl.loc["d", "met"] and not cl.loc["a", "met"] and not cl.loc["b", "met"]


def test_a_case_without_its_timing_is_refused(p66, registered):
    meas = _timed(registered, "model")
    drop = (meas["experiment"] == "reg49-chain-order-h7168") & (meas["case"] == "m=4096") & \
        (meas["strategy"] == "intragpu-row")
    with pytest.raises(p66.JudgeError, match="reg49-chain-order-h7168: no timed run of m=4096 intragpu-row"):
        p66.cases(registered, meas[~drop])


H200_CALLS = {"reg10-chain-order-h6144": "2026-12-02-registered10-1gpu",
              "reg49-chain-order-h7168": "2026-12-04-registered49-1gpu"}


def _call(p66, tmp_path, gpu):
    """Both experiments as H200 calls timed them, under an env.txt naming ``gpu``."""
    return h200_calls_as(H200_CALLS, tmp_path / gpu.replace(" ", "-"), gpu)


def test_the_judge_refuses_a_call_on_an_h200(p66, tmp_path, capsys):
    run = _call(p66, tmp_path, "NVIDIA H200")
    assert p66.main(["--judge", str(run), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not an H100 (plan 66 predicts an H100)" in err[0] and not (tmp_path / "out").exists()


def test_the_judge_on_an_h100_call_writes_its_tables(p66, tmp_path):
    run = _call(p66, tmp_path, "NVIDIA H100 80GB HBM3")
    assert p66.main(["--judge", str(run), "--out", str(tmp_path / "out")]) == 0
    cl = pd.read_csv(tmp_path / "out" / "claims.csv")
    assert list(cl["claim"]) == list("abcdef") and cl["provenance"].str.startswith("post-hoc").all()


@pytest.mark.parametrize("run", ["validation-registered66", "validation-registered66-run2"])
def test_the_committed_claims_give_the_models_worst_error_with_its_sign(p66, run):
    """(d)'s value names the model's worst case as cases.csv has it, sign and all (a miss fast is not one slow)."""
    d = p66.ROOT / "bench/results" / run
    c = pd.read_csv(d / "cases.csv")
    m = c[c["source"] == "model"]
    worst = m.loc[m["error_pct"].abs().idxmax(), "error_pct"]
    value = pd.read_csv(d / "claims.csv").set_index("claim").at["d", "value"]
    assert worst < 0 and value.endswith(f"worst {worst:.2f}%")
