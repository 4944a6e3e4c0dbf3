"""bench/plan83_alone_edge.py: registered plan 83's registration (the producer alone's wave times under six
predictors), its judge on made-up calls whose tiles run at known times, and calls it must refuse (no GPU)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import GZ_FAST, kept_made_up_call, load_bench


@pytest.fixture(scope="module")
def p83():
    return load_bench("plan83_alone_edge")


@pytest.fixture(scope="module")
def registered(p83):
    return pd.read_csv(p83.REGISTERED / "predicted.csv")


def test_the_registration_is_what_the_model_gives(p83, registered):
    from ctasim import costs
    from ctasim.spec import Layer, load_hardware

    keys = ["gpu", "h", "variant", "predictor"]
    assert registered.groupby(keys).ngroups == (4 + 3) * 2 * 6
    preds = {gpu: p83.predictors(profile) for gpu, (profile, _) in p83.GPUS.items()}
    for (gpu, h, v, name), d in list(registered.groupby(keys))[::7]:
        hw, spread = preds[gpu][name]
        layer = Layer(p83.M, h, h, 128, 256)
        order = load_bench("percta_predict").order_of(v, layer.tiles_m, layer.tiles_n)
        t = costs.order_tile_times(layer, hw, 2, order, 132, kernel="ctapipe", drift=0.0, ticket_spread=spread)
        assert np.allclose(t[::132] / 1e3, d.sort_values("wave")["us"], atol=5e-4)
    # plan 82's twin is what survival_profile gives on the H200's mechanism profile
    twin = load_hardware("h200-x2-mechanism-survival")
    mine = p83.survival_profile(load_hardware("h200-x2-mechanism"), "h200-x2-mechanism-survival")
    assert mine.kernel_configs == twin.kernel_configs and mine.l2_survival_share == twin.l2_survival_share
    # what the plan asks: hold keeps row order's reuse at the H100's two smaller H and loses it at its two larger
    m = registered[(registered.gpu == "H100") & (registered.variant == p83.ROW) & (registered.wave >= 2)]
    ratio = m[m.predictor == "hold"].groupby("h").us.mean() / m[m.predictor == "lockstep"].groupby("h").us.mean()
    assert list(ratio.round(2) == 1.0) == [True, True, False, False]


ENV = {"H100": "0, NVIDIA H100 80GB HBM3, GPU-3fd09c21-f5fb-3529-3eda-007c5b41d78b, 1653724058941, 580.159.04, "
              "345 MHz, 1980 MHz, 79.98 W, 700.00 W, 37",
       "H200": "0, NVIDIA H200, GPU-398827a0-a295-4480-d497-b65d635fbe66, 1653724058941, 580.159.04, 345 MHz, "
              "1980 MHz, 79.98 W, 700.00 W, 37"}
"""nvidia-smi's line in a call's env.txt (bench/hw/device_env.sh's record_env), as two committed calls wrote it."""


@kept_made_up_call
def _call(p83, registered, run, gpu="H100", times=None):
    """A made-up call on ``gpu``: every tile of (H, variant) in a full wave >= 2 runs the registered per-wave time of
    ``times[(h, v)]`` (a predictor's name; default lockstep), the tiles of waves 0-1 and of the last, partial wave
    three times as long (the judge leaves them out); its CTAs start 40 ns apart, a tile each."""
    (run).mkdir(parents=True, exist_ok=True)
    (run / "env.txt").write_text("index, name, uuid, serial, driver_version, clocks.current.sm [MHz]\n"
                                 + ENV[gpu] + "\n")
    for h in p83.GPUS[gpu][1]:
        (run / f"OUT_H{h}").mkdir()
        for v in p83.VARIANTS:
            name = (times or {}).get((h, v), "lockstep")
            us = registered[(registered.gpu == gpu) & (registered.h == h) & (registered.variant == v)
                            & (registered.predictor == name)].sort_values("wave")["us"].to_numpy()
            n = (p83.M // 128) * (h // 256)
            cta = np.arange(n)
            start = cta * 40 + (cta // 132) * 300_000
            wave = cta // 132
            judged = (wave >= 2) & (wave < n // 132)
            end = start + 500 + (us[wave] * 1e3 * np.where(judged, 1, 3)).astype(np.int64)
            pd.DataFrame({"cta": cta, "sm": cta % 132, "tile_m": cta // (h // 256), "tile_n": cta % (h // 256),
                          "t_start": start, "t_acquire": start + 500, "t_mainloop_end": end - 1000,
                          "t_compute_end": end, "t_store_end": end + 200, "t_signal": end + 1500}).to_csv(
                run / f"OUT_H{h}" / f"percta-tiles-{p83.M}-{v}.csv.gz", index=False, compression=GZ_FAST)
    return run


def _judge(p83, run, tmp_path):
    out = tmp_path / "judged"
    assert p83.main(["--judge", str(run), "--out", str(out)]) == 0
    return pd.read_csv(out / "cases.csv"), pd.read_csv(out / "claims.csv").set_index("claim")


def test_a_call_that_runs_as_hold_says_meets_the_row_order_claims(p83, registered, tmp_path):
    run = _call(p83, registered, tmp_path / "run", times={(h, p83.ROW): "hold" for h in p83.GPUS["H100"][1]})
    c, cl = _judge(p83, run, tmp_path)
    hold = c[(c.variant == p83.ROW) & (c.predictor == "hold")]
    assert np.allclose(hold.mean_err_pct, 0, atol=0.01) and (hold.wave_mae_us < 0.01).all()
    assert list(hold.measured_state) == ["kept", "kept", "lost", "lost"]
    assert cl.loc[["a", "b", "c", "e", "f"], "met"].all()
    # the survival law as adopted is nearer hold's wave times than the profile's thrash is (69.5 against 71.2 us)
    assert cl.loc["d", "met"] and cl.loc["d", "value"] == "69.5 against 71.2 us"
    assert cl.loc["a", "value"] == "8192: lockstep/hold; 9216: lockstep/hold; 10240: hold; 11264: hold"
    assert cl["provenance"].str.startswith(("registered", "post-hoc")).all()


def test_a_call_that_loses_the_reuse_everywhere_misses_them(p83, registered, tmp_path):
    run = _call(p83, registered, tmp_path / "run", times={(h, v): "profile" for h in p83.GPUS["H100"][1]
                                                          for v in p83.VARIANTS})
    c, cl = _judge(p83, run, tmp_path)
    assert not cl.loc[["a", "b", "c", "f"], "met"].any()
    assert cl.loc["a", "value"].count("profile") == 4
    # the pairs ran at the profile's times, 6-10% over lockstep's: the control is missed too; and the profile is
    # nearer itself than the survival law is
    pairs = c[(c.variant == p83.PAIRS) & (c.predictor == "lockstep")]
    assert (pairs.mean_err_pct < -5).all() and not cl.loc["e", "met"]
    assert not cl.loc["d", "met"]


def test_an_h200_call_is_judged_on_the_h200_rows(p83, registered, tmp_path):
    run = _call(p83, registered, tmp_path / "run", gpu="H200")
    c, cl = _judge(p83, run, tmp_path)
    assert set(c.gpu) == {"H200"} and sorted(c.h.unique()) == list(p83.GPUS["H200"][1])
    lock = c[(c.variant == p83.ROW) & (c.predictor == "lockstep")]
    assert (lock.measured_state == "kept").all() and not cl.loc["b", "met"]  # hold loses it at 10752 and 11776


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "env.txt").unlink(), "run/env.txt (plan 83's call"),
    (lambda run: (run / "env.txt").write_text("NVIDIA H100 and NVIDIA H200\n"), "not exactly one"),
    (lambda run: (run / "OUT_H9216" / "percta-tiles-16384-cutlass_ctapipe.csv.gz").unlink(),
     "OUT_H9216/percta-tiles-16384-cutlass_ctapipe.csv.gz (plan 83's call"),
    (lambda run: (run / "OUT_H9216" / "percta-tiles-16384-cutlass_ctapipe.csv.gz").write_text("x\n1\n"),
     "not a percta tile table"),
    (lambda run: pd.read_csv(run / "OUT_H9216" / "percta-tiles-16384-cutlass_ctapipe.csv.gz").iloc[:-5].to_csv(
        run / "OUT_H9216" / "percta-tiles-16384-cutlass_ctapipe.csv.gz", index=False), "tiles, not the"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p83, registered, tmp_path, capsys, damage, message):
    run = _call(p83, registered, tmp_path / "run")
    damage(run)
    out = tmp_path / "judged"
    assert p83.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan83_alone_edge: ") and message in err and "\n" not in err
    assert not out.exists()


def test_a_state_is_kept_under_1_10_lost_from_1_25(p83):
    assert [p83.state(r) for r in (0.95, 1.0999, 1.10, 1.2499, 1.25, 2.0)] == ["kept", "kept", "partly", "partly",
                                                                                "lost", "lost"]


def test_the_means_table_keeps_a_run_whose_spread_could_not_be_read(p83):
    rows = [dict(gpu="H100", h=h, variant=v, predictor=name, measured_us=100.0 + h / 1e3, measured_state="kept",
                 measured_spread=np.nan if v == p83.ROW else 0.05, predicted_us=1.0)
            for h in (8192, 9216) for v in p83.VARIANTS for name in p83.PREDICTORS]
    w = p83.waves_table(pd.DataFrame(rows))
    assert len(w) == 4 and w.measured_spread.isna().sum() == 2
    assert np.allclose(w.over_pairs, 1.0)


def test_the_committed_h100_call_judges_as_committed(p83, tmp_path):
    """The H100 arm (bench/results/hw-h100/2026-12-06-registered83-1gpu) judged again gives the committed tables, and
    what docs/validation.md reads off them: (a), (b), (c) and (f) missed, (d) and (e) met."""
    root = p83.ROOT
    out = tmp_path / "judged"
    run = root / "bench/results/hw-h100/2026-12-06-registered83-1gpu"
    assert p83.main(["--judge", str(run), "--out", str(out)]) == 0
    for name in ("cases.csv", "means.csv"):
        assert (out / name).read_text() == (root / "bench/results/validation-registered83" / name).read_text()
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert list(cl.met) == [False, False, False, True, True, False]
    assert cl.provenance.str.startswith("registered: predictions added in 5bca8d84").all()
    committed = pd.read_csv(root / "bench/results/validation-registered83/claims.csv").set_index("claim")
    assert cl.drop(columns="provenance").equals(committed.drop(columns="provenance"))


def test_docs_quote_the_committed_h100_errors(p83):
    """docs/validation.md's plan 83 table is the committed cases.csv: each row-order error, rounded to 0.1%."""
    doc = (p83.ROOT / "docs/validation.md").read_text().split("### Registered plan 83")[1].split("\n### ")[0]
    c = pd.read_csv(p83.ROOT / "bench/results/validation-registered83/cases.csv")
    row = c[c.variant == p83.ROW].pivot(index="h", columns="predictor", values="mean_err_pct")
    for h, r in row.iterrows():
        line = next(x for x in doc.splitlines() if x.startswith(f"| {h} | "))
        quoted = [x.strip() for x in line.split("|")[3:9]]
        assert quoted == [f"{r[p]:+.1f}%".replace("-", "−") for p in p83.PREDICTORS], line
