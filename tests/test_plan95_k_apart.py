"""bench/plan95_k_apart.py: registered plan 95's registration (the producers' first-wave mainloops at K != N), its
judge on made-up calls whose excesses follow one reading or another, and calls it must refuse (no GPU)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import GZ_FAST, load_bench
from tests.test_plan83_alone_edge import ENV
from tests.test_plan85_grouped_kept import _judge


@pytest.fixture(scope="module")
def p95():
    return load_bench("plan95_k_apart")


@pytest.fixture(scope="module")
def predicted(p95):
    return p95.register()


def test_the_cases_set_each_reading_its_own_pattern_and_the_kernel_runs_each_k(p95):
    """W, n and K name different sets of the six (n, K); each case's producer reads its K and writes M x H."""
    from ctahw.percta import producer_case

    says = {name: tuple(rule(h // 256, k, h * k * 2 / 1e6) for h, k in p95.HK) for name, rule in p95.PATTERNS.items()}
    assert len(set(says.values())) == 3 and all(0 < sum(s) < 6 for s in says.values())
    assert says["W"] == (False, False, False, True, True, True)
    assert says["n"] == (False, True, True, False, True, True)
    for h, k in p95.HK:
        c = producer_case(p95.M, h, p95.ROW, k)
        assert c.k_dim == k and c.kernel.tiles == (p95.M // 128) * (h // 256)


def test_the_registration_floors_only_the_1x1_and_by_n_alone(p95, predicted):
    committed = pd.read_csv(p95.REGISTERED / "predicted.csv")
    assert np.allclose(committed.wave0_us, predicted.wave0_us, atol=1e-4)
    assert committed.k.tolist() == predicted.k.tolist()
    t = predicted.set_index(["h", "k", "variant", "predictor"])["wave0_us"]
    assert set(predicted.predictor) == set(p95.PREDICTORS) and len(predicted) == len(p95.HK) * 2 * 3
    for h, k in p95.HK:
        assert t[(h, k, p95.W21, "by_n")] == t[(h, k, p95.W21, "model")]  # the pairs' floor never binds
        over = t[(h, k, p95.ROW, "by_n")] / t[(h, k, p95.W21, "model")]
        assert (over >= p95.ROW_ON) == (h // 256 >= 24), (h, k, over)  # by_n's excess is n's


def made_up_call(p95, run, times, ks=None):
    """A made-up call on an H100: producer v's wave 0 at (H, K) runs ``times[(h, k, v)]`` us, its later waves 150 us;
    each folder's runs at ``ks[(h, k)]`` (default K)."""
    from plan83_alone_edge import tiles

    run.mkdir(parents=True)
    (run / "env.txt").write_text("index, name, uuid, serial, driver_version, clocks.current.sm [MHz]\n"
                                 + ENV["H100"] + "\n")
    for h, k in p95.HK:
        out = run / f"OUT_H{h}_K{k}"
        out.mkdir()
        n = tiles(h, p95.M)
        cta = np.arange(n)
        runs = []
        for v in p95.VARIANTS:
            main = np.where(cta < 132, times[(h, k, v)] * 1e3, 150_000).astype(np.int64)
            start = (cta // 132) * 400_000 + cta % 132
            acquire = start + 100
            pd.DataFrame({"cta": cta, "sm": cta % 132, "t_start": start, "t_acquire": acquire,
                          "t_mainloop_end": acquire + main, "t_compute_end": acquire + 1500 + main}).to_csv(
                out / f"percta-tiles-{p95.M}-{v}.csv.gz", index=False, compression=GZ_FAST)
            runs.append(pd.DataFrame({"m": p95.M, "k": (ks or {}).get((h, k), k), "variant": v,
                                      "run": np.arange(p95.RUNS), "mainloop_early_ns": times[(h, k, v)] * 1e3}))
        pd.concat(runs).to_csv(out / "percta-runs.csv", index=False)
        pd.DataFrame({"m": p95.M, "variant": list(p95.VARIANTS), "slots": 132,
                      "cluster": [p95.CLUSTER[v] for v in p95.VARIANTS]}).to_csv(out / "percta.csv", index=False)
    return run


def times_by(p95, predicted, pairs_on, row_on, pairs_x=1.04, row_x=1.08):
    """The pairs at the model's mainloop times ``pairs_x`` where ``pairs_on(n, k, w_mb)``, the 1x1 at the pairs' times
    ``row_x`` where ``row_on(n, k, w_mb)``."""
    t = predicted.set_index(["h", "k", "variant", "predictor"])["wave0_us"]
    out = {}
    for h, k in p95.HK:
        case = (h // 256, k, h * k * 2 / 1e6)
        pairs = t[(h, k, p95.W21, "model")] * (pairs_x if pairs_on(*case) else 1.0)
        out[(h, k, p95.W21)] = pairs
        out[(h, k, p95.ROW)] = pairs * (row_x if row_on(*case) else 1.0)
    return out


def test_a_call_where_the_pairs_follow_w_and_the_1x1_follows_n_meets_every_claim(p95, predicted, tmp_path):
    times = times_by(p95, predicted, p95.PATTERNS["W"], p95.PATTERNS["n"])
    c, cl = _judge(p95, made_up_call(p95, tmp_path / "run", times), tmp_path)
    assert cl.met.all(), cl
    assert cl.loc["a", "value"].startswith("6 of 6 (others: n 3, K 5)")  # K's pattern differs at (40, 4864) only
    assert cl.loc["b", "value"].startswith("6 of 6 (others: W 3, K 2)")
    pt = pd.read_csv(tmp_path / "judged" / "patterns.csv").set_index(["excess", "reading"])["matched"]
    assert pt[("pairs", "W")] == 6 and pt[("row", "n")] == 6
    m = c[(c.predictor == "model") & (c.variant == p95.W21)]
    assert np.allclose(m.err_pct[m.w_mb < 70], 0, atol=0.01)  # whole ns


def test_a_call_where_the_readings_are_swapped_misses_a_and_b(p95, predicted, tmp_path):
    times = times_by(p95, predicted, p95.PATTERNS["n"], p95.PATTERNS["W"])
    _, cl = _judge(p95, made_up_call(p95, tmp_path / "run", times), tmp_path)
    assert not cl.loc["a", "met"] and not cl.loc["b", "met"]
    assert not cl.loc["d", "met"]  # the pairs 4% over the model at n = 32, 40 and 25 MB
    pt = pd.read_csv(tmp_path / "judged" / "patterns.csv").set_index(["excess", "reading"])["matched"]
    assert pt[("pairs", "n")] == 6 and pt[("row", "W")] == 6


@pytest.mark.parametrize("pairs_x, row_x, a, b", [(1.02, 1.08, False, True), (1.026, 1.08, True, True),
                                                  (1.04, 1.03, True, False), (1.04, 1.04, True, True)])
def test_a_and_b_turn_where_an_excess_is_read_on(p95, predicted, tmp_path, pairs_x, row_x, a, b):
    """An excess between off and on matches no reading: the pairs at 2% over the model, the 1x1 at 1.03."""
    times = times_by(p95, predicted, p95.PATTERNS["W"], p95.PATTERNS["n"], pairs_x, row_x)
    _, cl = _judge(p95, made_up_call(p95, tmp_path / "run", times), tmp_path)
    assert (bool(cl.loc["a", "met"]), bool(cl.loc["b", "met"])) == (a, b)


def test_d_turns_at_two_percent(p95, predicted, tmp_path):
    times = times_by(p95, predicted, p95.PATTERNS["W"], p95.PATTERNS["n"])
    for key in [(8192, 1536, p95.W21)]:
        times[key] /= 1.021  # the model 2.1% over the pairs at 25 MB
        times[(8192, 1536, p95.ROW)] /= 1.021
    _, cl = _judge(p95, made_up_call(p95, tmp_path / "run", times), tmp_path)
    assert not cl.loc["d", "met"] and "32/1536: +2.10" in cl.loc["d", "value"]


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "OUT_H8192_K6144" / "percta-runs.csv").unlink(), "OUT_H8192_K6144/percta-runs.csv"),
    (lambda run: __import__("shutil").rmtree(run / "OUT_H3072_K4096"), "OUT_H3072_K4096"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p95, predicted, tmp_path, capsys, damage, message):
    run = made_up_call(p95, tmp_path / "run", times_by(p95, predicted, p95.PATTERNS["W"], p95.PATTERNS["n"]))
    damage(run)
    out = tmp_path / "judged"
    assert p95.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan95_k_apart: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_runs_at_another_k_than_the_folder_names_are_refused(p95, predicted, tmp_path, capsys):
    times = times_by(p95, predicted, p95.PATTERNS["W"], p95.PATTERNS["n"])
    run = made_up_call(p95, tmp_path / "run", times, ks={(8192, 6144): 8192})
    assert p95.main(["--judge", str(run), "--out", str(tmp_path / "judged")]) == 2
    err = capsys.readouterr().err.strip()
    assert "OUT_H8192_K6144/percta-runs.csv: cutlass_ctapipe's runs were not at K = 6144" in err


def test_the_committed_h100_call_judges_as_committed_and_the_docs_quote_it(p95, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered95-1gpu, GPU-96bcd22c) judged again gives the committed
    tables: (b) and (c) met, (a) and (d) missed, registered; docs/validation.md's plan 95 tables are what it gives."""
    from tests.test_plan85_grouped_kept import _doc_section, _rejudged

    c, cl = _rejudged(p95, "2026-12-07-registered95-1gpu", "validation-registered95", tmp_path)
    for name in ("excess.csv", "patterns.csv"):
        assert (tmp_path / "judged" / name).read_text() == (p95.ROOT / "bench/results/validation-registered95" /
                                                            name).read_text()
    assert cl.met.tolist() == [False, True, True, False]
    assert cl.provenance.str.startswith("registered: predictions added in 7f3ecda824").all()
    doc = " ".join(_doc_section(p95, 95).split())
    for claim in "abcd":
        assert cl.loc[claim, "value"].replace("|", "\\|") in doc, claim
    t = c.set_index(["h", "k", "variant", "predictor"])
    for h, k in p95.HK:
        r, w = t.loc[(h, k, p95.ROW, "model")], t.loc[(h, k, p95.W21, "model")]
        row = (f"| {h // 256}, {k} ({r.w_mb:.0f} MB) | {r.measured_us:.1f} | {w.measured_us:.1f} | {r.row_over:.3f} | "
               f"{w.err_pct:+.1f} | {r.err_pct:+.1f} | {t.loc[(h, k, p95.ROW, 'by_n'), 'err_pct']:+.1f} | "
               f"{t.loc[(h, k, p95.ROW, 'flat'), 'err_pct']:+.1f} |")
        assert row in doc, row


def test_the_post_hoc_wave_table_is_what_the_script_writes_and_the_docs_quote(tmp_path):
    """bench/posthoc_k_apart.py: the committed table byte for byte, and plan 95's section's post-hoc figures."""
    from tests.test_plan85_grouped_kept import _doc_section

    pk = load_bench("posthoc_k_apart")
    assert pk.main(["--out", str(tmp_path)]) == 0
    assert (tmp_path / "cases.csv").read_text() == (pk.OUT / "cases.csv").read_text()
    c = pd.read_csv(pk.OUT / "cases.csv")
    pairs = c[c.variant == "cutlass_ctapipe_w21"].set_index("k")
    short, big = pairs.loc[[1536, 1280]], pairs[pairs.w_mb > 70]
    span = lambda s, f="": f"{s.min():{f}}-{s.max():{f}}"  # noqa: E731
    doc = " ".join(_doc_section(pk, 95).split())
    assert f"the pairs' wave 1 at short K ran {span(short.excess1_us, '.1f')} us over `model` against wave 0's " \
           f"{short.excess0_us.mean():.1f} us" in doc
    assert f"the call's own exposed epilogue is {span(c.epilogue_us, '.1f')} us" in doc
    assert f"the model is {span(-big.tile0_err_pct, '.1f')}% short of the pairs' first wave at 100 MB" in doc
    assert f"{-short.tile0_err_pct.max():.0f}-{-short.tile0_err_pct.min():.0f}% short at the short K" in doc
    assert f"and {span(-short.tile1_err_pct, '.1f')}% short of their wave 1 there" in doc


def test_the_repeat_on_a_second_h100_judges_as_committed_and_the_docs_quote_it(p95, tmp_path):
    """The repeat (bench/results/hw-h100/2026-12-07-registered95-1gpu-run2, GPU-16470bc4): the committed tables, the
    same claims met and missed as the registered call, and plan 95's section quotes its (b), (c) and (d)."""
    from tests.test_plan85_grouped_kept import _doc_section, _rejudged

    _, cl = _rejudged(p95, "2026-12-07-registered95-1gpu-run2", "validation-registered95-run2", tmp_path)
    assert cl.met.tolist() == [False, True, True, False]
    doc = " ".join(_doc_section(p95, 95).split())
    ratio = dict(x.split(": ") for x in cl.loc["b", "value"].split("; ", 1)[1].split(", "))
    assert (f"the 1x1's excess {ratio['32/1536']} and {ratio['40/1280']} at 32 and 40 tiles a row with W at 25 MB, "
            f"{ratio['32/6144']} and {ratio['40/4864']} at 100 MB, none at 12 ({ratio['12/4096']}, "
            f"{ratio['12/16384']})") in doc
    assert cl.loc["c", "value"].split(" (flat")[0] in doc
    assert f"(the model's error {cl.loc['d', 'value']})" in doc
