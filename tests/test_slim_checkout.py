"""bench/hw/slim_checkout.sh: the committed results leave the working tree for a device call and come back, and
nothing uncommitted is lost (a throwaway git repository; CPU only)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "hw" / "slim_checkout.sh"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def _slim(repo: Path, what: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), what], cwd=repo, capture_output=True, text=True)


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "r"
    for f, text in {"bench/results/a.csv": "1\n", "bench/predictions/p/registration.json": "{}\n",
                    "docs/x.md": "doc\n", "ctahw/k.py": "code\n"}.items():
        (r / f).parent.mkdir(parents=True, exist_ok=True)
        (r / f).write_text(text)
    _git(r.parent, "init", "-q", str(r))
    _git(r, "add", "-A")
    _git(r, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
    return r


def test_slim_removes_the_committed_data_and_restore_brings_back_exactly_it(repo):
    (repo / "bench/results/new.csv").write_text("untracked\n")
    (repo / "ctahw/k.py").write_text("edited\n")  # an uncommitted edit outside the slim paths
    assert _slim(repo, "slim").returncode == 0
    assert not (repo / "bench/results/a.csv").exists() and not (repo / "docs/x.md").exists()
    assert not (repo / "bench/predictions/p/registration.json").exists()
    assert (repo / "bench/results/new.csv").exists() and (repo / "ctahw/k.py").read_text() == "edited\n"
    r = _slim(repo, "restore")
    assert r.returncode == 0 and "restored 3" in r.stdout
    assert (repo / "bench/results/a.csv").read_text() == "1\n" and (repo / "docs/x.md").read_text() == "doc\n"
    assert (repo / "ctahw/k.py").read_text() == "edited\n"  # restore touched only what slim deleted
    assert _git(repo, "status", "--porcelain", "--untracked-files=no") == " M ctahw/k.py\n"


def test_restore_leaves_a_file_deleted_outside_the_slim_paths_deleted(repo):
    (repo / "ctahw/k.py").unlink()
    assert _slim(repo, "slim").returncode == 0
    r = _slim(repo, "restore")
    assert "restored 3" in r.stdout and not (repo / "ctahw/k.py").exists() and (repo / "docs/x.md").exists()


def test_slim_refuses_while_a_slim_path_has_uncommitted_changes(repo):
    (repo / "docs/x.md").write_text("edited doc\n")
    r = _slim(repo, "slim")
    assert r.returncode == 1 and "uncommitted changes" in r.stderr and "docs/x.md" in r.stderr
    assert (repo / "bench/results/a.csv").exists() and (repo / "docs/x.md").read_text() == "edited doc\n"
    assert _slim(repo, "neither").returncode == 2


def test_slim_refuses_a_staged_change_even_when_the_working_tree_matches_head(repo):
    (repo / "docs/x.md").write_text("staged\n")
    _git(repo, "add", "docs/x.md")
    (repo / "docs/x.md").write_text("doc\n")  # the working tree back to HEAD's text, the index not
    r = _slim(repo, "slim")
    assert r.returncode == 1 and "docs/x.md" in r.stderr and (repo / "bench/results/a.csv").exists()
