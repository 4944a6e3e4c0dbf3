"""bench/plan69_h100_own.py: registered plan 69's judge (an H100's own calibration against the datasheet profile), on
a call made up from plan 67/68's committed H100 call: its timed GEMMs and chains, an "own" profile that is the datasheet
profile with another HBM rate, its predictions made as the call makes them (no GPU)."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from tests.helpers import BENCH, load_bench

ROOT = BENCH.parent
CALL = "bench/results/hw-h100/2026-12-05-registered67-68-1gpu"


LOG = """== 00:00:01 ctahw calibrate --base h100-x1-datasheet (this machine's own profile) (timeout 330 s)
== 00:03:00 ctahw calibrate --base h100-x1-datasheet (this machine's own profile) exit 0
== 00:03:01 predict reg68-chain-reuse-h4096 with the own profile (before any experiment runs) exit 0
== 00:03:03 predict reg68-chain-reuse-h4608 with the own profile (before any experiment runs) exit 0
== 00:03:05 predict the GEMMs (before any of them is timed): 8192x4608x3072 exit 0
== 00:03:06 gemm_shape_probe (timeout 150 s)
== 00:04:06 gemm_shape_probe exit 0
== 00:04:07 ctahw run reg68-chain-reuse-h4096 (timeout 200 s)
"""
"""A call's log.txt as bench/hw/run_own_h100.sh writes it (every prediction done before the timing)."""


def head() -> str:
    import subprocess

    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def p69():
    return load_bench("plan69_h100_own")


def make_call(p69, root, hbm=3100.0):
    """A call folder as bench/hw/run_own_h100.sh leaves it, with the own profile's HBM rate ``hbm``."""
    import block_gemm_orders as bgo

    from ctasim.cli import main as ctasim_main

    src = p69.ROOT / CALL
    root.mkdir(parents=True)
    shutil.copy(src / "gemm_shapes.csv", root / "gemm_shapes.csv")
    (root / "env.txt").write_text((src / "env.txt").read_text().replace("commit: d814e12", f"commit: {head()}"))
    (root / "log.txt").write_text(LOG)
    for e in p69.EXPERIMENTS:
        (root / e).mkdir()
        shutil.copy(src / e / "results.csv", root / e / "results.csv")
    from ctasim.profiles import before_h100_drift_text

    text = before_h100_drift_text()  # the datasheet profile as the registration's tree had it (before plans 73, 76)
    lines = ['name = "h100-x1-own"' if l.startswith("name = ") else
             f"hbm_gbps = {hbm}" if l.startswith("hbm_gbps = ") else l for l in text.splitlines()]
    (root / p69.OWN).write_text("\n".join(lines) + "\n")
    for e in p69.EXPERIMENTS:
        assert ctasim_main(["predict", e, "--hardware", str(root / p69.OWN), "--out", str(root / "reg69-own" / e),
                            "--naive-from", str(p69.ROOT / "bench/results/hw/2026-11-29-run2/baselines.csv")]) == 0
    shapes = ",".join(f"{m}x{n}x{k}" for m, n, k in p69.shapes())
    probe = p69.ROOT / "bench/results/hw/2026-12-04-registered48-1gpu/calibration-probes/tile_orders.csv"
    sheet = root / "h100-x1-datasheet.toml"
    sheet.write_text(text)
    assert bgo.main(["--predict", shapes, "--profile", f"own={root / p69.OWN}", "--profile", f"datasheet={sheet}",
                     "--naive-probe", str(probe), "--out", str(root / "predicted-own")]) == 0
    return root


@pytest.fixture(scope="module")
def call(p69, tmp_path_factory):
    return make_call(p69, tmp_path_factory.mktemp("p69") / "run")


@pytest.fixture(scope="module")
def judged(p69, call, tmp_path_factory):
    out = tmp_path_factory.mktemp("p69") / "out"
    assert p69.main(["--judge", str(call), "--out", str(out)]) == 0
    return out


def test_the_claims_are_what_the_tables_give(p69, judged):
    cl = pd.read_csv(judged / "claims.csv").set_index("claim")
    g = pd.read_csv(judged / "gemm-claims.csv").set_index("predictor")
    c = pd.read_csv(judged / "cases.csv")
    assert list(cl.index) == list("abcdef") and cl["provenance"].str.startswith("post-hoc").all()
    assert cl["provenance"].str.endswith(f"the call ran {head()}").all() and cl["judged"].all()
    own, ds = g.at["own", "best_mape_pct"], g.at["datasheet", "best_mape_pct"]
    assert g.at["own", "shapes"] == 11  # the reference GEMM (inside the calibration's probe) left out
    worst, lost = g.at["own", "best_worst_pct"], g.at["own", "pick_lost_max_pct"]
    assert cl.at["a", "met"] == (own <= 3 and abs(worst) <= 6) and cl.at["a", "value"].startswith(f"MAPE {own:.2f}%")
    assert cl.at["d", "met"] == (lost <= 2) and cl.at["d", "value"] == f"the worst pick {lost:.2f}% over the best"
    assert set(map(tuple, pd.read_csv(judged / "gemm-shapes.csv")[["m", "n", "k"]].to_numpy().tolist())) == set(
        p69.held_out_shapes()) and (16384, 8192, 8192) not in p69.held_out_shapes()
    assert cl.at["b", "met"] == (own < ds) and f"{own:.2f} against the datasheet's {ds:.2f}%" == cl.at["b", "value"]
    assert cl.at["c", "met"] == (own <= g.at["naive_own", "best_mape_pct"] / 2)
    mape = c.assign(a=c["error_pct"].abs()).groupby("source")["a"].mean()
    assert (c.groupby("source").size() == 20).all() and set(mape.index) == {"own", "datasheet", "naive"}
    assert cl.at["e", "met"] == (mape["own"] < mape["datasheet"])
    assert cl.at["e", "value"].startswith(f"{mape['own']:.2f} against the datasheet's {mape['datasheet']:.2f}%")
    worst = c[c["source"] == "own"]["error_pct"].abs().max()
    assert cl.at["f", "met"] == (mape["own"] <= 3 and worst <= 6)
    # the datasheet's chain rows are its committed registrations', as plan 68 judged them on this call
    p68 = pd.read_csv(p69.ROOT / "bench/results/validation-registered68/cases.csv")
    twin = p68[p68["source"] == "twin"].set_index(["experiment", "case", "strategy"])["predicted_ms"]
    mine = c[c["source"] == "datasheet"].set_index(["experiment", "case", "strategy"])["predicted_ms"]
    pd.testing.assert_series_equal(mine.sort_index(), twin.sort_index(), check_names=False, atol=1e-4)
    f = pd.read_csv(judged / "fields.csv").set_index("field")
    assert (f.at["hbm_gbps", "own"], f.at["hbm_gbps", "datasheet"]) == ("3100.0", "2971.2869")


def test_the_datasheet_profile_as_its_own_is_not_below_itself(p69, tmp_path):
    """A call whose own profile is the datasheet's (its HBM rate unchanged): (b) and (e) compare equal figures, so
    neither is met."""
    from ctasim.spec import load_hardware

    call = make_call(p69, tmp_path / "run", hbm=load_hardware("h100-x1-datasheet").hbm_gbps)
    assert p69.main(["--judge", str(call), "--out", str(tmp_path / "out")]) == 0
    cl = pd.read_csv(tmp_path / "out" / "claims.csv").set_index("claim")
    assert not cl.at["b", "met"] and not cl.at["e", "met"]


@pytest.mark.parametrize("breaking,words", [
    (lambda r: (r / "h100-x1-own.toml").unlink(), "h100-x1-own.toml (plan 69's call writes it"),
    (lambda r: (r / "env.txt").write_text((r / "env.txt").read_text().replace("NVIDIA H100 80GB HBM3", "NVIDIA H200")),
     "the call ran on an NVIDIA H200; plan 69 is for an H100 SXM"),
    (lambda r: (r / "h100-x1-own.toml").write_text((r / "h100-x1-own.toml").read_text().replace(
        "hbm_gbps = 3100.0", "hbm_gbps = 3500.0")), "profile own no longer gives the registered times"),
    (lambda r: pd.read_csv(r / "gemm_shapes.csv").query("m != 4096").to_csv(r / "gemm_shapes.csv", index=False),
     "no timed run of 4096x4608x4096"),
    (lambda r: (r / "env.txt").write_text((r / "env.txt").read_text().replace("H100 80GB HBM3", "H100 PCIe")),
     "the call ran on an NVIDIA H100 PCIe; plan 69 is for an H100 SXM"),
    (lambda r: (r / "env.txt").write_text((r / "env.txt").read_text().replace(head(), "d814e12")),
     "the call ran the code of d814e12, whose plan 69 registration is not"),
    (lambda r: (r / "log.txt").write_text(LOG.replace("== 00:03:06 gemm_shape_probe (timeout 150 s)\n", "").replace(
        "== 00:03:01", "== 00:03:06 gemm_shape_probe (timeout 150 s)\n== 00:03:01")),
     "not 3 predictions logged done (exit 0) before the timing began"),
    (lambda r: (r / "log.txt").write_text(LOG.replace("(before any experiment runs) exit 0\n== 00:03:05",
                                                      "(before any experiment runs) exit 124\n== 00:03:05")),
     "not 3 predictions logged done (exit 0)"),
    (lambda r: (r / "env.txt").write_text((r / "env.txt").read_text().replace(head(), "13af4151")),
     "the call ran the code of 13af4151, whose plan 69 registration is not"),
    (lambda r: pd.read_csv(r / "predicted-own" / "predicted.csv").drop(columns="naive_own_ms").to_csv(
        r / "predicted-own" / "predicted.csv", index=False), "no column naive_own_ms"),
    (lambda r: (r / "log.txt").write_text(LOG.replace("predict reg68-chain-reuse-h4608", "nothing")),
     "not 3 predictions logged done (exit 0) before the timing began"),
])
def test_a_call_that_cannot_be_judged_is_refused_in_one_line(p69, call, tmp_path, capsys, breaking, words):
    run = tmp_path / "run"
    shutil.copytree(call, run)
    breaking(run)
    assert p69.main(["--judge", str(run), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan69_h100_own: ") and words in err and "\n" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("breaking,words", [
    (lambda r: shutil.rmtree(r / "reg69-own"), "reg69-own/reg68-chain-reuse-h4096/predictions.csv"),
    (lambda r: (r / "reg68-chain-reuse-h4608" / "results.csv").unlink(), "reg68-chain-reuse-h4608/results.csv"),
    (lambda r: (lambda f: pd.read_csv(f).assign(status=lambda d: d["status"].where(
        d["strategy"] != "intragpu-row", "failed")).to_csv(f, index=False))(
            r / "reg68-chain-reuse-h4608" / "results.csv"),
     "own has 18 of 20 cases timed (no ok run of reg68-chain-reuse-h4608"),
])
def test_chains_not_judged_whole_leave_e_and_f_not_judged(p69, call, tmp_path, breaking, words):
    """A chain run missing or partly failed (row order, the expected miss, not run): the GEMM claims are judged, (e)
    and (f) are "not judged" and not met, no cases.csv."""
    run = tmp_path / "run"
    shutil.copytree(call, run)
    breaking(run)
    assert p69.main(["--judge", str(run), "--out", str(tmp_path / "out")]) == 0
    cl = pd.read_csv(tmp_path / "out" / "claims.csv").set_index("claim")
    assert cl.loc[list("abcd"), "judged"].all() and not cl.loc[["e", "f"], "judged"].any()
    assert not cl.loc[["e", "f"], "met"].any() and words in cl.at["e", "value"]
    assert not (tmp_path / "out" / "cases.csv").exists()


def test_the_call_script_checks_its_gpu_and_skips_what_its_deadline_leaves_no_time_for(tmp_path):
    """bench/hw/run_own_h100.sh with a stand-in nvidia-smi: another GPU exits 3 before anything runs; an H100 SXM
    with DEADLINE=0 reads the plan's shapes, skips every step, and still packs the log."""
    import os
    import subprocess
    import tarfile

    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for gpu, want in (("NVIDIA H100 PCIe", 3), ("NVIDIA H100 80GB HBM3", 0)):
        smi = bin_ / "nvidia-smi"
        smi.write_text(f"#!/bin/sh\necho '{gpu}'\n")
        smi.chmod(0o755)
        out = tmp_path / f"out{want}"
        env = dict(os.environ, PATH=f"{bin_}:{os.environ['PATH']}", OUT=str(out), DEADLINE="0",
                   CTAHW_WHEELS_INSTALLED="1")
        p = subprocess.run(["bash", "bench/hw/run_own_h100.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == want, p.stderr
        if want:
            assert "plan 69 is for an H100 SXM" in p.stderr and not out.exists()
            continue
        with tarfile.open(out / "run.tar.gz") as t:
            log = t.extractfile("run/log.txt").read().decode()
        skipped = [x for x in log.splitlines() if " skipped: " in x]
        assert len(skipped) == 7 and "predict the GEMMs (before any of them is timed): 8192x4608x3072," in log
        assert "ctahw run reg68-chain-reuse-h4608 skipped" in log


def test_the_log_the_call_script_writes_passes_the_judges_order_check(p69, tmp_path):
    """bench/hw/run_own_h100.sh with every step's command a stand-in that exits 0 at once (a `timeout` on PATH that
    runs nothing): the log.txt and env.txt it packs are what :func:`call_order` accepts, and with a prediction's exit
    line moved after the timing, refuses."""
    import os
    import subprocess
    import tarfile

    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, body in (("nvidia-smi", "echo 'NVIDIA H100 80GB HBM3'"), ("timeout", "exit 0")):
        (bin_ / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_ / name).chmod(0o755)
    out = tmp_path / "out"
    env = dict(os.environ, PATH=f"{bin_}:{os.environ['PATH']}", OUT=str(out), CTAHW_COMMIT=head(),
               CTAHW_WHEELS_INSTALLED="1")
    p = subprocess.run(["bash", "bench/hw/run_own_h100.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    with tarfile.open(out / "run.tar.gz") as t:
        t.extractall(tmp_path, filter="data")
    run = tmp_path / "run"
    assert p69.call_order(run) == head()
    lines = (run / "log.txt").read_text().splitlines()
    moved = [x for x in lines if "predict reg68-chain-reuse-h4096" in x and " exit " in x]
    (run / "log.txt").write_text("\n".join([x for x in lines if x not in moved] + moved) + "\n")
    with pytest.raises(p69.JudgeError, match="not 3 predictions logged done"):
        p69.call_order(run)


def test_the_shapes_are_plan_67s():
    p69 = load_bench("plan69_h100_own")
    reg = pd.read_csv(p69.GEMMS)
    assert len(p69.shapes()) == 12 and set(p69.shapes()) == set(map(tuple, reg[["m", "n", "k"]].to_numpy().tolist()))


def test_the_committed_call_is_judged_as_committed(p69, tmp_path):
    """Plan 69's committed call (GPU-85533d7f) judged again gives its committed tables: the datasheet profile priced
    as registered (its drift's tile law; registered plan 73 changed the profile after:
    ctasim.profiles.before_h100_drift)."""
    committed = ROOT / "bench/results/validation-registered69"
    out = tmp_path / "o"
    run = ROOT / "bench/results/hw-h100/2026-12-06-registered69-1gpu"
    assert p69.main(["--judge", str(run), "--out", str(out)]) == 0
    names = sorted(p.name for p in committed.glob("*.csv"))
    assert names and names == sorted(p.name for p in out.glob("*.csv"))
    for name in names:
        assert (out / name).read_bytes() == (committed / name).read_bytes(), name
