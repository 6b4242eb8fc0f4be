"""scripts/setup.sh's MXQ_TORCH switch, with stand-ins: `dpkg` that finds every package and a
Python (PYTHON) that has the test dependencies but not torch and logs each pip install. MXQ_TORCH=1
installs torch, 0 or unset does not; a Python that has torch is not asked again. Nothing is
installed for real."""
import os
import pathlib
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[2]


def run_setup(tmp_path, has_torch, **env):
    bin_dir, log = tmp_path / "bin", tmp_path / "pip.log"
    bin_dir.mkdir(parents=True)
    (bin_dir / "dpkg").write_text("#!/bin/sh\nexit 0\n")
    # `python -c "import ..."`: fails for torch unless has_torch; `python -m pip install ...`: logged
    (bin_dir / "python").write_text(
        "#!/bin/sh\n"
        f"if [ \"$1\" = -m ] && [ \"$2\" = pip ]; then shift 2; echo \"$@\" >>'{log}'; exit 0; fi\n"
        "case \"$2\" in *torch*) exit " + ("0" if has_torch else "1") + ";; esac\n"
        "exit 0\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    e = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", PYTHON=str(bin_dir / "python"), **env)
    if "MXQ_TORCH" not in env:
        e.pop("MXQ_TORCH", None)
    r = subprocess.run(["bash", str(REPO / "scripts" / "setup.sh")], capture_output=True, text=True, env=e,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return (log.read_text() if log.exists() else ""), r.stderr


def test_mxq_torch_1_installs_torch(tmp_path):
    pip, err = run_setup(tmp_path, has_torch=False, MXQ_TORCH="1")
    assert [line.split()[-1] for line in pip.splitlines()] == ["torch"], pip
    assert "installing torch (MXQ_TORCH=1)" in err


def test_mxq_torch_0_or_unset_does_not(tmp_path):
    for env in ({"MXQ_TORCH": "0"}, {}):
        pip, err = run_setup(tmp_path / str(len(env)), has_torch=False, **env)
        assert pip == "" and "torch" not in err, (env, pip, err)


def test_torch_present_is_not_installed_again(tmp_path):
    pip, err = run_setup(tmp_path, has_torch=True, MXQ_TORCH="1")
    assert pip == "", pip
