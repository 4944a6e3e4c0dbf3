"""Runs many ``python -m MODULE ARGS`` commands as ``python -m`` would, each in a process of its own, paying the
imports once: the parent imports the project's command modules, then forks a child per command that changes into
its folder, points its stdout and stderr at files outside that folder, and runs the module as ``__main__``
(``runpy.run_module``). An uncaught exception prints its traceback and exits 1, as the interpreter does; SystemExit
gives its code. tests/test_bad_inputs.py sends the rows on stdin as JSON (``[{"argv": ["-m", MODULE, ...], "cwd":
FOLDER}, ...]``) and reads ``[{"returncode": N, "stderr": TEXT}, ...]`` back on stdout.

Left out: what a fresh interpreter would do differently with the project already imported (a command that only fails
on its own import order); tests/test_bench_hw_cli.py imports every module on its own.
"""

import json
import os
import runpy
import sys
import tempfile
import traceback


def _child(argv: list[str], cwd: str, out: str, err: str) -> None:
    fd_out = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    fd_err = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd_out, 1)
    os.dup2(fd_err, 2)
    sys.stdout = os.fdopen(1, "w", closefd=False)
    sys.stderr = os.fdopen(2, "w", closefd=False)
    code = 0
    try:
        os.chdir(cwd)
        sys.path.insert(0, cwd)  # as python -m puts the working folder first
        if argv[:1] != ["-m"] or len(argv) < 2:
            raise SystemExit(f"bad_input_runner: only 'python -m MODULE ...' commands, got {argv}")
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 - as the interpreter: the traceback, exit 1
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def main() -> int:
    rows = json.load(sys.stdin)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    import ctahw.cli  # noqa: F401, PLC0415 - imported once, before the forks
    import ctasim.cli  # noqa: F401, PLC0415

    results = []
    with tempfile.TemporaryDirectory(prefix="bad-input-") as tmp:
        for i, row in enumerate(rows):
            out, err = os.path.join(tmp, f"{i}.out"), os.path.join(tmp, f"{i}.err")
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(row["argv"], row["cwd"], out, err)
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            with open(err, errors="replace") as f:
                results.append({"returncode": code, "stderr": f.read()})
    json.dump(results, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
