"""ctahw.power's CPU-side logic (the counter's steps, the duty-window fit, the power over a round's steps) and
ctahw.calibrate.kernel_operands on numpy; the NVML readings themselves run on the device (bench/hw/power_probe.py)."""

import math

import numpy as np
import pytest

from ctahw import power as pw
from ctahw.calibrate import INPUT_OPS, kernel_operands
from ctahw.device import DeviceError, bf16_bits_to_f32, random_bf16


def test_bus_key_reads_cuda_and_nvml_spellings_alike():
    assert pw.bus_key("0000:1B:00.0") == pw.bus_key(b"00000000:1b:00.0") == (0, 0x1B, 0, 0)
    assert pw.bus_key("0000:1B:00.0") != pw.bus_key("0000:1C:00.0")
    with pytest.raises(ValueError, match="not a PCI bus id"):
        pw.bus_key("GPU-2eea0403")


class _Counter:
    """A counter that steps by ``step`` every ``every`` reads, on a fake clock that advances 1 ms per read."""

    def __init__(self, every: int, step: int = 7):
        self.reads, self.every, self.step, self.now = 0, every, step, 0.0

    def read(self) -> int:
        self.reads += 1
        self.now += 0.001
        return (self.reads // self.every) * self.step

    def clock(self) -> float:
        return self.now


def test_next_step_returns_the_first_read_that_differs_and_times_out_on_a_counter_that_never_moves():
    c = _Counter(every=10)
    t, v = pw.next_step(c.read, clock=c.clock, sleep=lambda s: None)
    assert (v, c.reads) == (7, 10) and t == pytest.approx(0.010)
    t2, v2 = pw.next_step(c.read, clock=c.clock, sleep=lambda s: None)
    assert v2 == 14 and t2 - t == pytest.approx(0.010)
    frozen = _Counter(every=10**9)
    with pytest.raises(DeviceError, match="did not change in 0.05 s"):
        pw.next_step(frozen.read, clock=frozen.clock, sleep=lambda s: None, timeout_s=0.05)


def test_energy_fit_recovers_a_launchs_energy_and_the_draw_between_launches():
    between, energy, launch_ms = 160.0, 2.5, 2.8  # W, J, ms -> 893 W above the between-launch draw
    windows = [{"launches": n, "window_s": 1.5, "energy_j": (between + energy * n / 1.5) * 1.5, "launch_ms": launch_ms}
               for n in (178, 119, 89)]
    fit = pw.energy_fit(windows)
    assert fit["energy_j"] == pytest.approx(energy) and fit["between_w"] == pytest.approx(between)
    assert fit["dynamic_w"] == pytest.approx(energy / 2.8e-3) and fit["max_residual_pct"] == pytest.approx(0, abs=1e-9)
    windows[1]["energy_j"] += 30.0  # 20 W off the line in the middle window
    bent = pw.energy_fit(windows)
    assert bent["max_residual_pct"] > 2.0
    with pytest.raises(ValueError, match="different launch rates"):
        pw.energy_fit([windows[0], dict(windows[0])])
    with pytest.raises(ValueError, match="does not rise"):
        pw.energy_fit([{**w, "energy_j": 300.0} for w in windows])


def test_step_power_takes_the_energy_between_the_counter_steps_after_the_given_time():
    # the counter steps every 20 ms: 100 J/s for the first 0.2 s, then 700 J/s; samples every 5 ms
    samples, e = [], 0.0
    for i in range(1, 121):
        t = i * 0.005
        if i % 4 == 0:
            e += (100.0 if t <= 0.2 else 700.0) * 0.020 * 1e3
        samples.append((t, int(round(e))))
    assert pw.step_power(samples, 0.3) == pytest.approx(700.0, rel=1e-6)
    assert pw.step_power(samples, 0.0) < 700.0
    with pytest.raises(ValueError, match="need two"):
        pw.step_power(samples, 0.59)


class _Data:
    def rand(self, device, shape, scale=1.0, salt=0):
        return random_bf16(shape, np, np.random.default_rng(salt), scale)


@pytest.mark.parametrize("ops", [(), ("relu_input",), ("relu_both",), ("zero_input",), ("relu_input", "gelu"),
                                 ("gelu_input",), ("silu_input",), ("swiglu_input",)])
def test_kernel_operands_change_the_operands_each_input_op_names_and_keep_the_epilogue(ops):
    a, w, ep = kernel_operands(np, _Data(), 64, 32, 128, ops)
    fa, fw = bf16_bits_to_f32(a, np), bf16_bits_to_f32(w, np)
    assert a.shape == (64, 128) and w.shape == (32, 128) and ep == tuple(o for o in ops if o not in INPUT_OPS)
    zero_a = (fa == 0).mean()
    x = bf16_bits_to_f32(_Data().rand(0, (64, 128), salt=1), np)  # the A every op starts from
    if "gelu_input" in ops or "silu_input" in ops:
        act = {"gelu_input": lambda v: 0.5 * v * (1 + np.vectorize(math.erf)(v / math.sqrt(2))),
               "silu_input": lambda v: v / (1 + np.exp(-v))}[ops[0]]
        np.testing.assert_allclose(fa, act(x), rtol=1e-2, atol=1e-6)  # bf16 rounding of the activation
        assert fa.min() > -0.3 and (fa < 0).mean() > 0.3  # small negatives, not zeros
    elif "swiglu_input" in ops:
        up = bf16_bits_to_f32(_Data().rand(0, (64, 128), salt=3), np)
        np.testing.assert_allclose(fa, x / (1 + np.exp(-x)) * up, rtol=2e-2, atol=1e-6)
    elif "zero_input" in ops:
        assert zero_a == 1.0
    elif "relu_input" in ops or "relu_both" in ops:
        assert 0.4 < zero_a < 0.6 and (fa >= 0).all()
    else:
        assert zero_a < 0.01 and (fa < 0).mean() > 0.4 and np.array_equal(fa, x)
    if "relu_both" in ops:
        assert 0.4 < (fw == 0).mean() < 0.6 and (fw >= 0).all()
    else:
        assert (fw < 0).mean() > 0.4
    assert np.abs(fw).max() < 6 / np.sqrt(128)  # W is scaled by 1/sqrt(K)


def test_kernel_operands_refuse_an_op_they_do_not_know():
    with pytest.raises(ValueError, match="relu_output"):
        kernel_operands(np, _Data(), 8, 8, 8, ("relu_output",))


def test_the_power_probe_refuses_bad_input_in_one_line_and_writes_nothing(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bench/hw/power_probe.py"
    (tmp_path / "taken").mkdir()
    for args, words in ((["o", "--kernels", "a=1x2"], "is not MxNxK"),
                        (["o", "--kernels", "a=1x2x3+bogus"], "at most one of"),
                        (["o", "--kernels", "a=1x2x3", "--periods", "3,3"], "two or more distinct"),
                        (["o", "--kernels", "a=1x2x3", "--periods", "1,2"], "each >= 1.5"),
                        (["o", "--kernels", "a=1x2x3", "--periods", "3,x"], "not numbers"),
                        (["o", "--kernels", "a=1x2x3", "--rounds", "0"], "--rounds must be >= 1"),
                        (["taken", "--kernels", "a=1x2x3"], "exists; give a new folder"),
                        (["no/such/o", "--kernels", "a=1x2x3"], "is not a folder")):
        r = subprocess.run([sys.executable, str(path), str(tmp_path / args[0]), *args[1:]], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


class _FakeNvml:
    """A card drawing ``watts`` steadily, its energy counter stepping every 20 ms (as NVML's does, more often)."""

    def __init__(self, watts: float):
        import time

        self.watts, self.t0, self.time = watts, time.perf_counter(), time

    def energy_mj(self) -> int:
        steps = (self.time.perf_counter() - self.t0) // 0.020
        return int(steps * 0.020 * self.watts * 1e3)

    def sm_mhz(self) -> int:
        return 1980


class _Event:
    def __init__(self, done_at: float):
        import time

        self.done_at, self.time = done_at, time

    @property
    def done(self) -> bool:
        return self.time.perf_counter() >= self.done_at


def test_a_duty_window_counts_its_launches_and_the_energy_between_two_counter_steps():
    import time

    launches = []

    def launch(runs_s=0.002):
        now = time.perf_counter()
        launches.append(now)
        return _Event(now), _Event(now + runs_s)

    row = pw._window(_FakeNvml(300.0), launch, period_s=0.010, window_s=0.3, elapsed=lambda a, b: 2.0)
    assert row["energy_j"] / row["window_s"] == pytest.approx(300.0, rel=0.1)  # whole counter steps over their time
    assert row["launches"] == len(launches) and 24 <= row["launches"] <= 31  # one every 10 ms for 0.3 s
    assert 0.3 <= row["window_s"] < 0.45 and row["launch_ms"] == 2.0 and row["sm_mhz"] == 1980
    # paced on a schedule from the window's start (a late launch is caught up, never launched early): on average one
    # period apart, not back to back
    assert (launches[-1] - launches[0]) / (len(launches) - 1) >= 0.0095
    with pytest.raises(DeviceError, match="did not finish within 0.05 s"):
        pw._window(_FakeNvml(300.0), lambda: launch(runs_s=10.0), 0.010, 0.3, lambda a, b: 2.0,
                   launch_timeout_s=0.05)


def test_a_round_is_counted_from_the_median_of_three_warm_launches_and_keeps_eight_after_the_first():
    from types import SimpleNamespace

    from ctahw.calibrate import round_count, warm_launch_ms

    times = iter([50.0, 3.0, 2.0, 2.5])  # the untimed first launch (kernel load, clock rising), then three warm ones
    events = []

    class Ev:
        def __init__(self, ms):
            self.ms = ms

        def synchronize(self):
            events.append(self.ms)

    def launch():
        ms = next(times)
        return Ev(0.0), Ev(ms)

    cp = SimpleNamespace(cuda=SimpleNamespace(get_elapsed_time=lambda a, b: b.ms - a.ms))
    assert warm_launch_ms(cp, launch) == 2.5 and len(events) == 4
    assert round_count(400.0, 2.5) == 160 and round_count(400.0, 100.0) == 9
