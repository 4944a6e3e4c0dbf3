"""ctahw.counters: the ncu command lines, its raw CSV page read into one row per launch, and the join to a probe's
launch log (no GPU, no ncu)."""

from __future__ import annotations

import pandas as pd
import pytest

from ctahw import counters as C

HEADER = ['"ID"', '"Process ID"', '"Process Name"', '"Host Name"', '"Kernel Name"', '"Context"', '"Stream"',
          *(f'"{m}"' for m in C.METRICS)]


def page(rows, units=("byte", "byte", "sector", "sector", "nsecond"), header=HEADER) -> str:
    """A made-up raw page as ncu prints it: its own ==PROF== lines, the header, the units row, the launches."""
    out = ["==PROF== Connected to process 4242 (/usr/bin/python3)", "==PROF== Disconnected from process 4242",
           ",".join(header), ",".join(['""'] * 7 + [f'"{u}"' for u in units])]
    for i, vals in rows:
        out.append(",".join([f'"{i}"', '"4242"', '"python3"', '"h"', '"void cutlass::device_kernel<X<ChainTag<0>>>(T)"',
                             '"1"', '"7"', *(f'"{v}"' for v in vals)]))
    return "\n".join(out) + "\n"


def test_a_page_becomes_one_row_per_launch_in_base_units():
    d = C.parse_raw(page([(0, ("1,234,567", "10", "2000", "1500", "5,000")), (1, ("3", "4", "5", "6", "7"))]))
    assert list(d.columns) == ["id", "kernel", *C.METRICS.values()]
    assert d["id"].tolist() == [0, 1] and "ChainTag" in d.at[0, "kernel"]
    assert d.at[0, "dram_read_bytes"] == 1234567 and d.at[0, "duration_ns"] == 5000
    assert d.at[1, "l2_read_hit_sectors"] == 6


def test_a_prefixed_unit_is_scaled_and_an_unknown_one_refused():
    d = C.parse_raw(page([(0, ("1.5", "2", "3", "4", "5"))], units=("Gbyte", "Mbyte", "sector", "sector", "usecond")))
    assert d.at[0, "dram_read_bytes"] == 1.5e9 and d.at[0, "dram_write_bytes"] == 2e6 and d.at[0, "duration_ns"] == 5e3
    with pytest.raises(ValueError, match="unit 'furlong'"):
        C.parse_raw(page([(0, ("1", "2", "3", "4", "5"))], units=("furlong", "byte", "sector", "sector", "nsecond")))


def test_a_page_without_the_header_or_a_metric_is_refused_naming_it():
    with pytest.raises(ValueError, match="no ncu raw page"):
        C.parse_raw("==PROF== No kernels were profiled.\n")
    short = [h for h in HEADER if "dram__bytes_write" not in h]
    with pytest.raises(ValueError, match="lacks dram__bytes_write.sum"):
        C.parse_raw(page([], units=("byte", "sector", "sector", "nsecond"), header=short))


def test_the_join_refuses_a_count_that_does_not_match_and_keeps_launch_order():
    launches = pd.DataFrame({"launch": [0, 1], "h": [4096, 6144]})
    got = C.parse_raw(page([(1, ("9", "0", "0", "0", "1")), (0, ("8", "0", "0", "0", "1"))]))
    j = C.matched(launches, got)
    assert j["h"].tolist() == [4096, 6144] and j["dram_read_bytes"].tolist() == [8, 9]  # by ncu's id
    with pytest.raises(ValueError, match="logged 1 launches but ncu profiled 2"):
        C.matched(launches.iloc[:1], got)


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


def test_the_chain_kernel_filter_names_the_tag_in_the_kernel_source():
    src = (C.PROBE.parents[2] / "ctahw" / "kernels" / "ctapipe_sm90_bf16_chain.cu").read_text()
    tag = C.CHAIN_KERNEL.split(":", 1)[1]
    assert f"struct {tag}" in src


def test_profile_names_the_step_that_failed(tmp_path):
    cases = tmp_path / "c.csv"
    cases.write_text("h,m,group\n2048,1024,8\n")
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\necho 'ncu: no GPU' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(RuntimeError, match="ncu around the probe exited 3"):
        C.profile(tmp_path / "o", cases, ncu=str(fake))
    assert "no GPU" in (tmp_path / "o" / "ncu.log").read_text()


def test_the_command_line_refuses_a_missing_cases_file_in_one_line(tmp_path, capsys):
    assert C.main([str(tmp_path / "o"), str(tmp_path / "none.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no cases file" in err[0]
