"""scripts/ab_base.sh refuses bad arguments before it builds anything: no REF / NAME, a REF that
is not a commit, a NAME that could not travel back from the GPU machine. (Its build of a real
revision takes minutes and is exercised by hand: bench/NOTES.md v17.)"""
import pathlib
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "ab_base.sh"


def run(*args):
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60, cwd=REPO)


def test_usage_without_arguments():
    r = run()
    assert r.returncode == 2
    assert "usage: scripts/ab_base.sh REF NAME" in r.stderr


def test_ref_that_is_not_a_commit():
    r = run("no-such-revision-of-mxq", "base")
    assert r.returncode == 2
    assert "REF 'no-such-revision-of-mxq' is not a commit" in r.stderr


def test_name_with_characters_that_do_not_travel():
    r = run("HEAD", "a/b")
    assert r.returncode == 2
    assert "NAME 'a/b'" in r.stderr
    assert not (REPO / "ab" / "a").exists()
