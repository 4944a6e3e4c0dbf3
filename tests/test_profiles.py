"""Derived profiles (ctasim.profiles): the committed files are what their derivations give, a derived profile is its
base but for the fields it names, and a stale file or a field the base lacks is caught."""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from ctasim import profiles
from ctasim.spec import SPECS_DIR, load_hardware


def test_the_committed_derived_profiles_are_current():
    assert profiles.main(["--check"]) == 0


@pytest.mark.parametrize("name", sorted(profiles.DERIVED))
def test_a_derived_profile_is_its_base_but_for_the_fields_it_names(name):
    d = profiles.DERIVED[name]
    got, base = load_hardware(name), load_hardware(d.base)
    differ = {f.name for f in dataclasses.fields(got) if getattr(got, f.name) != getattr(base, f.name)}
    assert differ <= set(d.fields) | set(d.added) | {"name", "kernel_configs"} and "name" in differ
    # the kernel configs differ by the ticket fields the derivation sets, on the configs that write them, only
    for g, b in zip(got.kernel_configs, base.kernel_configs, strict=True):
        changed = {f.name for f in dataclasses.fields(g) if getattr(g, f.name) != getattr(b, f.name)}
        drift = changed & set(d.drift_added)
        assert changed - drift <= set(d.tickets) | set(d.tickets_added) and (not changed - drift or b.ticket_spread > 0)
        assert not drift or b.cta_drift > 0
    assert (got.kernel_configs != base.kernel_configs) == bool(d.tickets or d.drift_added or d.tickets_added)
    assert not got.measured
    text = (SPECS_DIR / "hardware" / f"{name}.toml").read_text()
    for field, (_, why) in {**d.fields, **d.added, **d.tickets, **d.drift_added, **d.tickets_added}.items():
        if why:
            assert f"{field} = " in text and why in text  # each estimate carries its reason


def test_the_x8_profile_is_the_whole_host_on_a_switch():
    hw = load_hardware("h200-x8-mechanism")
    assert (hw.gpus, hw.topology) == (8, "switch")
    assert hw.link_gbps == load_hardware("h200-x2-mechanism").link_gbps


def test_a_stale_file_and_a_missing_field_are_caught(tmp_path, monkeypatch, capsys):
    specs = tmp_path / "specs"
    shutil.copytree(SPECS_DIR / "hardware", specs / "hardware")
    monkeypatch.setattr(profiles, "SPECS_DIR", specs)
    assert profiles.main(["--check"]) == 0
    path = specs / "hardware" / "h200-x8-mechanism.toml"
    path.write_text(path.read_text().replace("gpus = 8", "gpus = 4"))
    assert profiles.main(["--check"]) == 1
    assert "h200-x8-mechanism" in capsys.readouterr().err
    assert profiles.main([]) == 0 and profiles.main(["--check"]) == 0  # rewritten
    bad = profiles.Derivation(base="h200-x2-mechanism", fields={"no_such_field": ("1", "x")}, header=())
    with pytest.raises(ValueError, match="no_such_field"):
        profiles.derive("x", bad, specs)


def test_ticket_fields_are_added_after_each_ticket_laws_line_and_only_where_the_base_lacks_them(tmp_path):
    """Derivation.tickets_added: after the ticket_law line of every ticket-scheduled config (the family's and the
    chain kernel's of h200-x2-mechanism), never on a config without tickets; refused where the base writes the
    field, or has no ticket-scheduled config to add it to."""
    d = profiles.DERIVED["h200-x2-mechanism-survival"]
    lines = profiles.derive("x", d).splitlines()
    laws = [i for i, line in enumerate(lines) if line.startswith("ticket_law = ")]
    assert len(laws) == 2 and all(lines[i + 1].startswith("ticket_gap_cv = 0.74") for i in laws)
    assert sum(line.startswith("ticket_touched = ") for line in lines) == 2
    hw = load_hardware("h200-x2-mechanism-survival")
    got = [(c.ticket_spread > 0, c.ticket_law, c.ticket_gap_cv, c.ticket_touched) for c in hw.kernel_configs]
    assert sorted(set(got)) == [(False, "threshold", 0.0, 1.0), (True, "survival", 0.74, 1.3)]
    again = dataclasses.replace(d, base="h200-x1-calibrated", fields={}, added={})  # writes ticket_gap_cv already
    with pytest.raises(ValueError, match="already writes ticket_gap_cv"):
        profiles.derive("x", again)
    none = dataclasses.replace(d, base="h200-x2", tickets={})  # no ticket-scheduled config
    with pytest.raises(ValueError, match="no ticket-scheduled kernel config of h200-x2 to add"):
        profiles.derive("x", none)
    # a ticket-scheduled config without a ticket_law line is refused, not left without the added fields
    specs = tmp_path / "specs"
    (specs / "hardware").mkdir(parents=True)
    text = (SPECS_DIR / "hardware" / "h200-x2-mechanism.toml").read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(text) if line.startswith("ticket_law = "))
    (specs / "hardware" / "h200-x2-mechanism.toml").write_text("".join(text[:first] + text[first + 1:]))
    with pytest.raises(ValueError, match="1 ticket-scheduled kernel config"):
        profiles.derive("x", dataclasses.replace(d, tickets={}), specs)


@pytest.mark.parametrize("name", sorted(profiles.SHARED))
def test_a_shared_profile_is_one_even_share_of_the_h200(name):
    """What ctahw gives each kernel of a ring on one device (ChainRunner: the SMs // the kernels), and the L2 and HBM
    split as the profile says."""
    n, hw, base = profiles.SHARED[name], load_hardware(name), load_hardware("h200-x1-calibrated")
    assert (hw.gpus, hw.sm_count) == (n, base.sm_count // n)
    assert hw.l2_bytes == pytest.approx(base.l2_bytes / n) and hw.hbm_gbps == pytest.approx(base.hbm_gbps / n, rel=1e-6)
    assert hw.link_latency_ns == 0.0 and hw.sm_remote_store_gbps >= 1e5  # the next kernel's buffers are local


def test_the_h100_host_is_the_h200_host_with_the_h100s_memory():
    """h100-x8-mechanism changes only what the H100 datasheet says differs: the GPU, its L2 and its HBM rate, and
    since registered plan 87's adoption the exposed HBM share's rate (the H200's measured one, as h100-x1-datasheet's);
    ``before_h100_x8_exposed`` gives it as the registrations before the adoption priced it, the twin of plan 86 is the
    adopted profile but for its name and source."""
    from ctasim.profiles import before_h100_x8_exposed

    a, b = load_hardware("h100-x8-mechanism"), load_hardware("h200-x8-mechanism")
    changed = {f.name for f in dataclasses.fields(a) if getattr(a, f.name) != getattr(b, f.name)}
    assert changed == {"name", "gpu", "hbm_gbps", "l2_bytes", "source", "l2_hbm_exposed_gbps"}
    assert a.l2_hbm_exposed_gbps == load_hardware("h100-x1-datasheet").l2_hbm_exposed_gbps == \
        load_hardware("h200-x1-calibrated").hbm_gbps
    before = before_h100_x8_exposed("h100-x8-mechanism")
    assert before.l2_hbm_exposed_gbps == 0
    assert dataclasses.replace(before, l2_hbm_exposed_gbps=a.l2_hbm_exposed_gbps) == a
    assert before_h100_x8_exposed("h200-x8-mechanism") == b
    twin = load_hardware("h100-x8-mechanism-exposed")
    assert dataclasses.replace(twin, name=a.name, source=a.source) == a
    assert a.hbm_gbps == pytest.approx(b.hbm_gbps * profiles.H100_HBM_TBPS / profiles.H200_HBM_TBPS, rel=1e-6)
    assert a.l2_bytes == load_hardware("h100-x1-datasheet").l2_bytes == profiles.H100_L2_BYTES
    assert a.l2_reuse_law == b.l2_reuse_law and a.kernel_configs == b.kernel_configs


def test_the_h100_profile_before_plan_73_is_named_and_is_the_pin():
    """``h100-x1-datasheet-tile`` is ``h100-x1-datasheet`` with the drift's tile law (no ``drift_k_ref``): what
    ``before_h100_drift`` makes of the profile, but for its name and source; the adopted profile writes 8192."""
    import dataclasses

    from ctasim.profiles import (H100_BEFORE_DRIFT, before_h100_adoptions, before_h100_capped, before_h100_drift,
                                 before_h100_exposed)

    now, tile = load_hardware("h100-x1-datasheet"), load_hardware(H100_BEFORE_DRIFT)
    assert {c.drift_k_ref for c in now.kernel_configs if c.cta_drift > 0} == {8192.0}
    assert {c.drift_k_ref for c in tile.kernel_configs} == {0.0}
    then = before_h100_exposed(before_h100_drift(before_h100_capped(now)))  # and before plans 76's and 98's
    assert dataclasses.replace(tile, name=now.name, source=now.source) == then == before_h100_adoptions(now.name)
    # a twin keeps the exposed rate it was registered with
    assert before_h100_adoptions("h100-x1-datasheet-latency").l2_hbm_exposed_gbps > 0


def test_the_h100_profile_takes_plan_98s_capped_drift_law_and_the_text_before_it_is_the_twins_base():
    """``h100-x1-datasheet`` writes ``drift_k_law = "capped"`` with plan 98's reason on its drifting configs;
    ``before_h100_capped`` undoes just that, and ``before_h100_capped_text`` is the file plans 97 and 98 derived their
    twins from (the capped twin is it with the one line added)."""
    import dataclasses

    from ctasim import profiles

    now = load_hardware("h100-x1-datasheet")
    assert {c.drift_k_law for c in now.kernel_configs if c.cta_drift > 0} == {"capped"}
    text = (profiles.SPECS_DIR / "hardware" / "h100-x1-datasheet.toml").read_text()
    assert f'drift_k_law = "capped"  # {profiles.H100_CAPPED_ADOPTED}' in text
    before = profiles.before_h100_capped_text()
    assert "drift_k_law" not in before and "drift_k_ref = 8192.0" in before
    reg = profiles.SPECS_DIR.parent / "bench/predictions/reg98-capped-drift"
    twin = load_hardware(reg / "h100-x1-datasheet-capped.toml")
    as_98 = profiles.before_h100_passes(now)  # the profile as plan 98's adoption left it (plan 103's came after)
    assert dataclasses.replace(twin, name=now.name, source=now.source) == as_98
    assert profiles.before_h100_capped(now) != as_98


def test_the_h100_profile_takes_plan_103s_pass_rates_from_its_registration_and_the_pin_gives_back_the_old_ones():
    """``h100-x1-datasheet`` writes registered plan 103's two pass rates (its constants.csv's ``own``: one source,
    held equal here) with the adoption's reason; ``before_h100_passes`` gives back the registered ``profile`` values
    and moves nothing else, nor a profile whose rates are its own; ``before_h100_capped`` undoes it too."""
    import dataclasses

    import pandas as pd

    from ctasim import profiles

    now = load_hardware("h100-x1-datasheet")
    c = pd.read_csv(profiles.SPECS_DIR.parent / "bench/predictions/reg103-pass-rates/constants.csv").set_index("field")
    assert {f: v for f, (v, _, _) in profiles.H100_PASSES.items()} == c["own"].to_dict()
    assert {f: getattr(now, f) for f in profiles.H100_PASSES} == c["own"].to_dict()
    text = (profiles.SPECS_DIR / "hardware" / "h100-x1-datasheet.toml").read_text()
    for f in profiles.H100_PASSES:
        line = next(l for l in text.splitlines() if l.startswith(f"{f} = "))
        assert line.endswith(profiles.H100_PASSES_ADOPTED) and "measured:" in line
    then = profiles.before_h100_passes(now)
    assert {f: getattr(then, f) for f in profiles.H100_PASSES} == c["profile"].to_dict()
    assert dataclasses.replace(then, **{f: getattr(now, f) for f in profiles.H100_PASSES}) == now
    own = dataclasses.replace(now, epilogue_pass_gbps=1234.0)
    assert profiles.before_h100_passes(own).epilogue_pass_gbps == 1234.0
    assert profiles.before_h100_passes(own).rowwise_gbps == c.loc["rowwise_gbps", "profile"]
    assert profiles.before_h100_capped(now).rowwise_gbps == c.loc["rowwise_gbps", "profile"]


def test_the_h100_profile_takes_plan_76s_exposed_rate_and_the_one_before_it_is_named():
    """``h100-x1-datasheet`` is registered plan 75's twin ``-exposed`` but for its name and source (plan 76's
    adoption); ``h100-x1-datasheet-hbm3`` is it with the exposed share at ``hbm_gbps``, what ``before_h100_exposed``
    makes of it; the text before plan 73 is the file as plans 72 and 73 derived their twins from."""
    import dataclasses

    from ctasim import profiles

    now, twin = load_hardware("h100-x1-datasheet"), load_hardware("h100-x1-datasheet-exposed")
    hbm3 = load_hardware(profiles.H100_BEFORE_EXPOSED)
    assert now.l2_hbm_exposed_gbps == load_hardware("h200-x1-calibrated").hbm_gbps and hbm3.l2_hbm_exposed_gbps == 0
    as_76 = profiles.before_h100_capped(now)  # the profile as plan 76's adoption left it (plan 98's came after)
    assert dataclasses.replace(twin, name=now.name, source=now.source) == as_76
    assert dataclasses.replace(hbm3, name=now.name, source=now.source) == profiles.before_h100_exposed(as_76)
    text = (profiles.SPECS_DIR / "hardware" / "h100-x1-datasheet.toml").read_text()
    assert f"l2_hbm_exposed_gbps = {now.l2_hbm_exposed_gbps}  # {profiles.H100_EXPOSED_ADOPTED}" in text
    text = profiles.before_h100_drift_text()
    assert "drift_k_ref" not in text and "l2_hbm_exposed_gbps" not in text and 'name = "h100-x1-datasheet"' in text
