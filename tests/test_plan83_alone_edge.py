"""bench/plan83_alone_edge.py: registered plan 83's registration (the producer alone's wave times under six
predictors), its judge on made-up calls whose tiles run at known times, and calls it must refuse (no GPU)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import load_bench


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


def _call(p83, registered, run, gpu="H100", times=None):
    """A made-up call on ``gpu``: every tile of (H, variant) runs the registered per-wave time of ``times[(h, v)]``
    (a predictor's name; default lockstep) and its CTAs start 40 ns apart, a tile each."""
    (run).mkdir(parents=True, exist_ok=True)
    (run / "env.txt").write_text(f"0, NVIDIA {gpu}, GPU-0000, 580\n")
    for h in p83.GPUS[gpu][1]:
        (run / f"OUT_H{h}").mkdir()
        for v in p83.VARIANTS:
            name = (times or {}).get((h, v), "lockstep")
            us = registered[(registered.gpu == gpu) & (registered.h == h) & (registered.variant == v)
                            & (registered.predictor == name)].sort_values("wave")["us"].to_numpy()
            n = (p83.M // 128) * (h // 256)
            cta = np.arange(n)
            start = cta * 40 + (cta // 132) * 300_000
            end = start + 500 + (us[cta // 132] * 1e3).astype(np.int64)
            pd.DataFrame({"cta": cta, "sm": cta % 132, "tile_m": cta // (h // 256), "tile_n": cta % (h // 256),
                          "t_start": start, "t_acquire": start + 500, "t_mainloop_end": end - 1000,
                          "t_compute_end": end, "t_store_end": end + 200, "t_signal": end + 1500}).to_csv(
                run / f"OUT_H{h}" / f"percta-tiles-{p83.M}-{v}.csv.gz", index=False)
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
    # the survival law is nearer hold's wave times than the profile's thrash is (both lose the reuse everywhere)
    assert bool(cl.loc["d", "met"]) == (c[(c.variant == p83.ROW) & (c.predictor == "survival")].wave_mae_us.mean()
                                        < c[(c.variant == p83.ROW) & (c.predictor == "profile")].wave_mae_us.mean())
    assert cl["provenance"].str.startswith(("registered", "post-hoc")).all()


def test_a_call_that_loses_the_reuse_everywhere_misses_them(p83, registered, tmp_path):
    run = _call(p83, registered, tmp_path / "run", times={(h, v): "profile" for h in p83.GPUS["H100"][1]
                                                          for v in p83.VARIANTS})
    c, cl = _judge(p83, run, tmp_path)
    assert not cl.loc[["a", "b", "c", "f"], "met"].any()
    assert cl.loc["a", "value"].count("profile") == 4
    # the pairs' control ran at the profile's times: (e) holds where those are within 5% of lockstep's
    pairs = c[(c.variant == p83.PAIRS) & (c.predictor == "lockstep")]
    assert bool(cl.loc["e", "met"]) == bool((pairs.mean_err_pct.abs() <= 5).all())


def test_an_h200_call_is_judged_on_the_h200_rows(p83, registered, tmp_path):
    run = _call(p83, registered, tmp_path / "run", gpu="H200")
    c, cl = _judge(p83, run, tmp_path)
    assert set(c.gpu) == {"H200"} and sorted(c.h.unique()) == list(p83.GPUS["H200"][1])
    lock = c[(c.variant == p83.ROW) & (c.predictor == "lockstep")]
    assert (lock.measured_state == "kept").all() and not cl.loc["b", "met"]  # hold loses it at 10752 and 11776


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "env.txt").unlink(), "no "),
    (lambda run: (run / "env.txt").write_text("NVIDIA H100 and NVIDIA H200\n"), "not exactly one"),
    (lambda run: (run / "OUT_H9216" / "percta-tiles-16384-cutlass_ctapipe.csv.gz").unlink(), "no "),
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
