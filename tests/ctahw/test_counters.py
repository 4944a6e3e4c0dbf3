"""ctahw.counters: the ncu command lines, its raw CSV page read into one row per launch, and the join to a probe's
launch log (no GPU, no ncu)."""

from __future__ import annotations

import pandas as pd
import pytest

from ctahw import counters as C

HEADER = ['"ID"', '"Process ID"', '"Process Name"', '"Host Name"', '"Kernel Name"', '"Grid Size"', '"Stream"',
          *(f'"{m}"' for m in C.METRICS)]


def page(rows, units=("byte", "byte", "sector", "sector", "nsecond"), header=HEADER,
         kernel="void cutlass::device_kernel<X<ctahw::chain::ChainTag<false>>>(T)", grid="(132, 1, 1)") -> str:
    """A made-up raw page as ncu prints it: its own ==PROF== lines, the header, the units row, the launches."""
    out = ["==PROF== Connected to process 4242 (/usr/bin/python3)", "==PROF== Disconnected from process 4242",
           ",".join(header), ",".join(['""'] * 7 + [f'"{u}"' for u in units])]
    for i, vals in rows:
        out.append(",".join([f'"{i}"', '"4242"', '"python3"', '"h"', f'"{kernel}"', f'"{grid}"', '"7"',
                             *(f'"{v}"' for v in vals)]))
    return "\n".join(out) + "\n"


def test_a_page_becomes_one_row_per_launch_in_base_units():
    d = C.parse_raw(page([(0, ("1,234,567", "10", "2000", "1500", "5,000")), (1, ("3", "4", "5", "6", "7"))]))
    assert list(d.columns) == ["id", "kernel", "grid", *C.METRICS.values()] and d["grid"].tolist() == [132, 132]
    assert d["id"].tolist() == [0, 1] and "ChainTag" in d.at[0, "kernel"]
    assert d.at[0, "dram_read_bytes"] == 1234567 and d.at[0, "duration_ns"] == 5000
    assert d.at[1, "l2_read_hit_sectors"] == 6


def test_a_prefixed_or_short_unit_is_scaled_and_an_unknown_one_refused():
    d = C.parse_raw(page([(0, ("1.5", "2", "3", "4", "5"))], units=("Gbyte", "Mbyte", "sector", "sector", "usecond")))
    assert d.at[0, "dram_read_bytes"] == 1.5e9 and d.at[0, "dram_write_bytes"] == 2e6 and d.at[0, "duration_ns"] == 5e3
    d = C.parse_raw(page([(0, ("1.5", "2", "3", "4", "5"))], units=("GB", "KB", "sector", "sector", "ms")))
    assert d.at[0, "dram_read_bytes"] == 1.5e9 and d.at[0, "dram_write_bytes"] == 2e3 and d.at[0, "duration_ns"] == 5e6
    with pytest.raises(ValueError, match="unit 'furlong'"):
        C.parse_raw(page([(0, ("1", "2", "3", "4", "5"))], units=("furlong", "byte", "sector", "sector", "nsecond")))


def test_a_page_without_the_header_or_a_metric_is_refused_naming_it():
    with pytest.raises(ValueError, match="no ncu raw page"):
        C.parse_raw("==PROF== No kernels were profiled.\n")
    short = [h for h in HEADER if "dram__bytes_write" not in h]
    with pytest.raises(ValueError, match="lacks dram__bytes_write.sum"):
        C.parse_raw(page([], units=("byte", "sector", "sector", "nsecond"), header=short))


def test_a_value_that_is_not_a_number_or_a_short_row_is_refused():
    with pytest.raises(ValueError, match="dram__bytes_write.sum as 'n/a'"):
        C.parse_raw(page([(0, ("1", "n/a", "3", "4", "5"))]))
    with pytest.raises(ValueError, match="a row of 11 fields under a header of 12"):
        C.parse_raw(page([(0, ("1", "2", "3", "4"))]))


def test_extra_metrics_are_read_where_the_page_has_them():
    header = HEADER + [f'"{m}"' for m in C.EXTRA_METRICS]
    d = C.parse_raw(page([(0, ("1", "2", "3", "4", "5", "6", "7"))], header=header,
                         units=("byte", "byte", "sector", "sector", "nsecond", "sector", "sector")))
    assert d.at[0, "l2_sectors_from_fabric"] == 7 and d.at[0, "l2_read_sectors_from_sm"] == 6
    assert "l2_sectors_from_fabric" not in C.parse_raw(page([(0, ("1", "2", "3", "4", "5"))]))


def test_the_join_refuses_a_count_a_kernel_or_a_grid_that_does_not_match_and_keeps_launch_order():
    launches = pd.DataFrame({"launch": [0, 1], "h": [4096, 6144], "grid": [132, 132]})
    got = C.parse_raw(page([(1, ("9", "0", "0", "0", "1")), (0, ("8", "0", "0", "0", "1"))]))
    j = C.matched(launches, got)
    assert j["h"].tolist() == [4096, 6144] and j["dram_read_bytes"].tolist() == [8, 9]  # by ncu's id
    with pytest.raises(ValueError, match="logged 1 launches but ncu profiled 2"):
        C.matched(launches.iloc[:1], got)
    other = C.parse_raw(page([(0, ("8", "0", "0", "0", "1")), (1, ("9", "0", "0", "0", "1"))],
                             kernel="void cutlass::device_kernel<GemmUniversal<Persistent>>(T)"))
    with pytest.raises(ValueError, match="name lacks 'ChainTag'"):
        C.matched(launches, other)
    with pytest.raises(ValueError, match="launch 0: the probe logged a grid of 66 CTAs, ncu 132"):
        C.matched(launches.assign(grid=[66, 132]), got)


def test_the_command_lines_leave_the_clocks_alone_flush_the_caches_and_filter_the_chain_kernel(tmp_path):
    argv = C.ncu_argv(tmp_path / "r", ["python3", "probe.py"])
    assert argv[0] == "ncu" and argv[-2:] == ["python3", "probe.py"]
    assert argv[argv.index("--clock-control") + 1] == "none" and argv[argv.index("--cache-control") + 1] == "all"
    assert argv[argv.index("-k") + 1] == C.CHAIN_KERNEL and argv[argv.index("--kernel-name-base") + 1] == "demangled"
    assert argv[argv.index("--metrics") + 1].split(",") == list(C.METRICS)
    with pytest.raises(ValueError, match="no program"):
        C.ncu_argv(tmp_path / "r", [])
    imp = C.import_argv(tmp_path / "r.ncu-rep")
    assert imp[:3] == ["ncu", "--import", str(tmp_path / "r.ncu-rep")] and "raw" in imp and "base" in imp


def test_the_chain_kernel_filter_names_the_tag_the_runner_instantiates():
    """The tickets design's scheduler tag, as the library's kernel type names it (the static design's tag,
    ChainStaticTag, does not match: the probe runs tickets only)."""
    src = (C.PROBE.parents[2] / "ctahw" / "kernels" / "ctapipe_sm90_bf16_chain.cu").read_text()
    tag = C.CHAIN_KERNEL.split(":", 1)[1]
    assert f"struct {tag} {{}}" in src and f"ctahw::chain::{tag}<Trace>" in src
    import re
    assert re.search(tag, "ctahw::chain::ChainTag<false>") and not re.search(tag, "ctahw::chain::ChainStaticTag<0, 1>")


def _fake_ncu(tmp_path, body: str):
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\n" + body)
    fake.chmod(0o755)
    return str(fake)


def test_profile_names_the_step_that_failed_and_leaves_no_earlier_counters(tmp_path):
    cases = tmp_path / "c.csv"
    cases.write_text("h,m,group\n2048,1024,8\n")
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "counters.csv").write_text("stale\n")
    fake = _fake_ncu(tmp_path, "echo 'ncu: no GPU' >&2\nexit 3\n")
    with pytest.raises(RuntimeError, match="ncu around the probe exited 3"):
        C.profile(tmp_path / "o", cases, ncu=fake)
    assert "no GPU" in (tmp_path / "o" / "ncu.log").read_text() and not (tmp_path / "o" / "counters.csv").exists()


def test_the_extra_metrics_are_asked_only_where_the_query_lists_them(tmp_path):
    listing = "Device NVIDIA H100\nMetric Name    Metric Description\nlts__t_sectors_srcunit_ltcfabric  x\ndram__bytes  y\n"
    fake = _fake_ncu(tmp_path, f"printf '{listing}'\n")
    assert C.available(fake) == {"lts__t_sectors_srcunit_ltcfabric.sum": "l2_sectors_from_fabric"}
    assert C.available(_fake_ncu(tmp_path, "exit 1\n")) == {}
    assert C.available(str(tmp_path / "nowhere")) == {}


@pytest.mark.parametrize("text, words", [(None, "No such file"), ("h,m\n4096,8192\n", "needs columns"),
                                         ("h,m,group\n", "no cases"), ("h,m,group\n4096.5,8192,8\n", "integers"),
                                         ("h,m,group\n4000,8192,8\n", "cannot run")])
def test_the_command_line_refuses_a_cases_file_the_probe_cannot_run_in_one_line(tmp_path, capsys, text, words):
    cases = tmp_path / "c.csv"
    if text is not None:
        cases.write_text(text)
    assert C.main([str(tmp_path / "o"), str(cases)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0] and not (tmp_path / "o").exists()


def test_the_command_line_refuses_a_machine_without_ncu_in_one_line(tmp_path, capsys, monkeypatch):
    cases = tmp_path / "c.csv"
    cases.write_text("h,m,group\n4096,8192,8\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert C.main([str(tmp_path / "o"), str(cases)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no ncu on the PATH" in err[0] and not (tmp_path / "o").exists()


def test_the_gemm_probe_reads_the_registration_and_refuses_an_order_ctahw_gemm_does_not_run(tmp_path, capsys):
    """The plain GEMM's probe: its raster names are ``ctahw.gemm.RASTER_NAMES``', plan 79's predicted.csv is a cases
    file it runs, and a bad order or shape is one line, exit 2, before ncu."""
    import importlib
    import sys

    from ctahw.gemm import RASTER_NAMES, SWIZZLES

    script, kernel = C.PROBES["gemm"]
    assert kernel == C.GEMM_KERNEL and script.is_file()
    sys.path.insert(0, str(script.parent))
    probe = importlib.import_module(script.stem)
    reg = C.PROBE.parents[2] / "bench" / "predictions" / "reg79-gemm-bytes" / "predicted.csv"
    cases = probe.read_cases(reg)
    assert len(cases) == 16 and set(cases.raster) <= set(RASTER_NAMES.values()) and probe.SWIZZLES == SWIZZLES
    for text, words in (("m,n,k,raster,swizzle\n16384,8192,8192,diagonal,8\n", "is not one of"),
                        ("m,n,k,raster,swizzle\n16384,8000,8192,along_m,8\n", "cannot run")):
        bad = tmp_path / "c.csv"
        bad.write_text(text)
        assert C.main([str(tmp_path / "o"), str(bad), "--probe", "gemm"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0] and not (tmp_path / "o").exists()
