"""The protocol stress's seeded-bug builds (ctahw.stress), checked without a GPU: every edit applies exactly once to
the shipped kernels, each build is the protocol model's mutant where the model has it (the same ordering operations,
read by ctasim.protocol.kernelops), every mutant fails the source check, and a kernel that changed shape is refused."""

from __future__ import annotations

import pytest

from ctahw import stress
from ctasim.protocol.kernelops import chain_compare, chain_program_ops, chain_source_ops


def _source_ops(texts):
    return chain_source_ops(texts[stress.CHAIN_FILE], texts[stress.HEADER_FILE],
                            scheduler_text=texts[stress.SCHEDULER_FILE])


@pytest.fixture(scope="module")
def correct():
    return chain_program_ops()


# Builds the check reads differently from the model mutant while still failing the source check:
# signal-before-storers -- branches flattened, so the signalling warp's bar.arrive and the others' bar.sync are both
# read (the model: release before the wait); static-no-syncwarp -- with no barrier the model's lanes are not merged
# into one sequence (two proxy fences, the source's one call).
FLATTENED = {"chain-tickets-signal-before-storers", "chain-static-no-syncwarp"}


# None, a counting bug, or a condition that skips the wait: the same operations in the same order, so the source check
# (operations, not conditions: docs/protocol.md section 7) passes them -- what the GPU's controls are for.
PASSES_SOURCE_CHECK = {"clean", "static-clean", "short-wait", "no-wait", "queue-clean", "queue-push-first",
                       "push-off-by-one"}


@pytest.mark.parametrize("name", sorted(stress.MUTATIONS))
def test_build_is_the_model_mutant_it_names(name, correct):
    from ctasim.protocol.kernelops import compare, header_ops, program_ops

    texts = stress.mutant_texts(name)
    m = stress.MUTATIONS[name]
    if m.library == "queue":
        problems = compare(program_ops(), header_ops(texts[stress.HEADER_FILE]))
        assert (problems == []) == (name in PASSES_SOURCE_CHECK), (name, problems)
        return
    src = _source_ops(texts)
    if name in PASSES_SOURCE_CHECK:
        assert chain_compare(correct, src) == []
        return
    assert chain_compare(correct, src), f"{name}: the edited kernel still passes the source check"
    variants = stress.model_variants(name)
    if variants is not None and name not in FLATTENED:
        assert chain_compare(chain_program_ops(variants), src) == [], name


def test_every_named_model_mutant_exists_and_is_caught_by_the_model():
    from ctasim.protocol.chain import CHAIN_MUTANTS, CHAIN_PASSING

    from ctasim.protocol.programs import KERNEL, MUTANTS

    for name, m in stress.MUTATIONS.items():
        known = CHAIN_MUTANTS | CHAIN_PASSING if m.library == "chain" else MUTANTS | {KERNEL.name: KERNEL}
        for v in m.model:
            assert v in known, (name, v)
        if m.model and not m.control:  # the stress row names the model's mutant
            assert m.model[0] == name and name in (CHAIN_MUTANTS if m.library == "chain" else MUTANTS)
        if m.control == "clean":
            assert all(v in CHAIN_PASSING or v == KERNEL.name for v in m.model)
        assert stress.model_variants(name) == (tuple(known[v] for v in m.model) if m.model else None)


def test_builds_differ_from_each_other_and_only_where_edited():
    base = stress._kernel_texts()
    seen = {}
    for name in stress.MUTATIONS:
        texts = stress.mutant_texts(name)
        assert texts.keys() == base.keys()
        changed = {f for f in texts if texts[f] != base[f]}
        m = stress.MUTATIONS[name]
        assert {e.file for e in stress.JITTERS[m.library]} <= changed  # the delay is in every build
        assert changed <= {e.file for e in stress.JITTERS[m.library] + m.edits}
        key = (m.design, tuple(texts[f] for f in sorted(texts)))  # one build may run in two designs
        assert key not in seen, f"{name} builds and runs the same as {seen.get(key)}"
        seen[key] = name


def test_the_delay_reaches_take_and_pop_and_its_setter_is_exported():
    t = stress.mutant_texts("clean")[stress.CHAIN_FILE]
    take = t[t.index("__device__ __forceinline__ int take("):]
    assert take.index("stress_delay(p.epoch);") < take.index("atomicAdd(p.ticket, 1u)")
    assert 'extern "C" int ctahw_stress_set_delay(unsigned ns, int device)' in t
    q = stress.mutant_texts("queue-clean")
    pop = q[stress.HEADER_FILE][q[stress.HEADER_FILE].index("__device__ __forceinline__ bool pop_n("):]
    assert pop.index("stress_delay(p.epoch);") < pop.index("atomicAdd(p.in_head")
    assert "cudaMemcpyToSymbol(ctapipe::stress_delay_ns" in q[stress.QUEUE_FILE]
    sched = q[stress.SCHEDULER_FILE]  # the producer's static tile, then its delay
    assert sched.index("pipe_.order[cta] : -1;") < sched.index("ctapipe::stress_delay_static(pipe_.epoch);")


def test_an_edit_that_no_longer_matches_is_refused():
    texts = {"a.cu": "x = 1;\nx = 1;\n"}
    with pytest.raises(stress.EditError, match="occurs 2 times in a.cu"):
        stress.apply_edits(texts, (stress.Edit("a.cu", "x = 1;", "x = 2;"),), "demo")
    with pytest.raises(stress.EditError, match="occurs 0 times"):
        stress.apply_edits(texts, (stress.Edit("a.cu", "y = 1;", "y = 2;"),), "demo")
    with pytest.raises(stress.EditError, match="no kernel file b.cu"):
        stress.apply_edits(texts, (stress.Edit("b.cu", "x", "y"),), "demo")
    assert stress.apply_edits(texts, (stress.Edit("a.cu", "", "z;\n"),), "demo")["a.cu"].endswith("z;\n")


def test_a_changed_kernel_breaks_the_builds_loudly(tmp_path):
    from ctahw.build import KERNELS_DIR

    for p in KERNELS_DIR.iterdir():
        if p.suffix in (".cu", ".cuh"):
            text = p.read_text()
            if p.name == stress.HEADER_FILE:
                text = text.replace("ld.acquire.gpu.global.u32", "ld.acquire.gpu.global.b32")
            (tmp_path / p.name).write_text(text)
    with pytest.raises(stress.EditError, match="chain-tickets-relaxed-poll"):
        stress.mutant_texts("chain-tickets-relaxed-poll", tmp_path)
    assert stress.mutant_texts("clean", tmp_path)  # builds that do not edit the changed line still apply


def test_unknown_build_is_refused():
    with pytest.raises(KeyError, match="no stress build 'nope'"):
        stress.mutant_texts("nope")


def test_mutant_library_is_the_chain_library_with_the_edited_sources(tmp_path):
    from ctahw.build import LIBRARIES

    lib = stress.mutant_library("no-bulk-wait", tmp_path)
    base = LIBRARIES["ctapipe_sm90_bf16_chain"]
    assert lib.source == tmp_path / "no-bulk-wait" / stress.CHAIN_FILE and lib.source.is_file()
    q = stress.mutant_library("relaxed-poll", tmp_path)
    assert q.name == "ctapipe_sm90_bf16" and q.source == tmp_path / "relaxed-poll" / stress.QUEUE_FILE
    assert q.source_sha256() != LIBRARIES["ctapipe_sm90_bf16"].source_sha256()
    assert all(h.is_file() and h.parent == lib.source.parent for h in lib.headers)
    assert lib.name == base.name and lib.flags == base.flags
    assert lib.source_sha256() != base.source_sha256()
    assert "ctahw_stress_set_delay" in lib.signatures
    again = stress.mutant_library("no-bulk-wait", tmp_path / "elsewhere")
    assert again.source_sha256() == lib.source_sha256()  # found in the cache wherever the sources are written


def _script():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bench" / "hw" / "protocol_stress.py"
    spec = importlib.util.spec_from_file_location("protocol_stress", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("argv, message", [
    (["--builds", "nope", "--out", "x"], "unknown build(s) ['nope']"),
    (["--runs", "-1", "--out", "x"], "--runs must be >= 0"),
    (["--delays", "5,a", "--out", "x"], "--delays takes comma-separated integers"),
    ([], "--out is required"),
])
def test_the_script_refuses_bad_input_with_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        _script().main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and message in err and err.count("\n") == 1


def test_the_script_refuses_to_overwrite_a_result(tmp_path, capsys):
    (tmp_path / "stress.csv").write_text("build\n")
    with pytest.raises(SystemExit) as e:
        _script().main(["--out", str(tmp_path)])
    assert e.value.code == 2 and "exists; choose a new --out" in capsys.readouterr().err
    assert (tmp_path / "stress.csv").read_text() == "build\n"


def test_a_build_that_hangs_keeps_its_finished_rows_and_the_rest_are_hung(tmp_path, monkeypatch):
    import argparse
    import json
    import subprocess

    mod = _script()
    cases = [stress.StressCase(256, 256, 2, delays_ns=(0, 100), runs=3)]
    a = argparse.Namespace(out=tmp_path, runs=0, delays="", build_limit=5.0)
    finished = stress.result_row("clean", cases[0], 0)  # what a child writes for a finished cell

    def hangs(cmd, timeout, **kw):
        assert "--child" in cmd and "clean" in cmd and timeout == 5.0
        (tmp_path / "clean.jsonl").write_text(json.dumps(finished) + "\n")  # one cell done, then no answer
        raise subprocess.TimeoutExpired(cmd, timeout)

    monkeypatch.setattr(subprocess, "run", hangs)
    rows = mod.run_child("clean", cases, a)
    assert [(r["delay_ns"], r["hung"]) for r in rows] == [(0, 0), (100, 1)]
    assert "killed after 5 s" in rows[1]["first_error"] and rows[1]["runs"] == 0
    assert not (tmp_path / "clean.jsonl").exists()

    def fails(cmd, timeout, **kw):
        return subprocess.CompletedProcess(cmd, 1, "", "Traceback ...\nRuntimeError: launch failed\n")

    monkeypatch.setattr(subprocess, "run", fails)
    rows = mod.run_child("short-wait", cases, a)
    assert [r["hung"] for r in rows] == [1, 1]
    assert rows[0]["first_error"] == "exit 1: RuntimeError: launch failed"
    assert rows[1]["first_error"] == "after the cell before it stopped"


def test_handoffs_counts_the_consumers_that_spun_on_their_counter():
    import pandas as pd

    # layer 0: row-block 0 signals at 10 and 30, row-block 1 at 20; layer 1: (0, 0) took its ticket at 25 (before 30:
    # contended, inputs visible at 31), (1, 0) at 40 (after 20: not contended)
    tiles = pd.DataFrame({"layer": [0, 0, 0, 1, 1], "tile_m": [0, 0, 1, 0, 1], "t_start": [0, 0, 0, 25, 40],
                          "t_ready": [0, 0, 0, 31, 41], "t_signal": [10, 30, 20, 50, 60]})
    h = stress.handoffs(tiles)
    assert h == dict(handoffs=2, contended=1, react_ns_min=1.0, react_ns_p50=1.0)
    tiles.loc[3, "t_start"] = 35
    assert stress.handoffs(tiles)["contended"] == 0


def test_leads_counts_the_consumers_that_started_before_their_inputs_were_stored():
    import pandas as pd

    # row-block 0's producers store until 30, row-block 1's until 20; consumer (0, .) acquired at 25 (5 early), (1, .)
    # at 40 (in time)
    tiles = pd.DataFrame({"layer": [0, 0, 0, 1, 1], "tile_m": [0, 0, 1, 0, 1], "t_acquire": [0, 0, 0, 25, 40],
                          "t_store_end": [10, 30, 20, 50, 60]})
    assert stress.leads(tiles) == dict(early_tiles=1, lead_ns_max=5.0)
    tiles.loc[3, "t_acquire"] = 31
    assert stress.leads(tiles) == dict(early_tiles=0, lead_ns_max=0.0)


def test_fill_cell_counts_stale_runs_and_errors_and_resets_after_each_error():
    from ctahw.runner import ProtocolError

    results = iter([(0, False), (3, True), ProtocolError("k", 8, 0, 1, 0, 1, 1), (2, False), RuntimeError("x\ny")])
    resets = []

    def attempt():
        r = next(results)
        if isinstance(r, Exception):
            raise r
        return r

    row = stress.fill_cell(dict(runs=5, runs_stale=0, cells_stale=0, nan_runs=0, errors=0, first_error=""), attempt,
                           lambda: resets.append(1))
    assert (row["runs_stale"], row["cells_stale"], row["nan_runs"], row["errors"]) == (2, 5, 1, 2)
    assert len(resets) == 2 and row["first_error"].startswith("k: ") and row["seconds"] >= 0


def test_result_row_and_the_poison_check():
    import numpy as np

    chain = stress.result_row("no-wait", stress.StressCase(512, 2048, 16), 2000, design="static")
    queue = stress.result_row("queue-clean", stress.QUEUE_CASES[0], 0, runs=0, hung=1)
    assert (chain["layers"], chain["runs"], chain["hung"], chain["control"], chain["design"]) == (16, 300, 0, "stale", "static")
    assert (queue["layers"], queue["runs"], queue["hung"], queue["model"], queue["case"]) == (2, 0, 1, "kernel", "1024x1024x2-queue")
    assert not stress._poison_read(np.array([0x3F80, 0x0000, 0x7F7F], dtype=np.uint16))
    assert stress._poison_read(np.array([0x3F80, 0x7FC1], dtype=np.uint16))  # the poison (BF16_NAN_BITS)
    assert stress._poison_read(np.array([0xFF80], dtype=np.uint16))  # -inf
