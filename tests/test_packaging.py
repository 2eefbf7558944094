"""The built wheel is a working nnxrl on its own: its shipped configs run by name from
any folder, and it carries py.typed."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from nnxrl import config as C
from nnxrl.cli import main
from nnxrl.config import schedule
from nnxrl.config.shipped import find_config, shipped_configs
from nnxrl.envs.suites import SUITES

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_installs_and_trains_a_shipped_config_by_name(tmp_path):
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH (the README's set-up installs it)")
    dist = tmp_path / "dist"
    subprocess.run([uv, "build", "--wheel", "-q", "-o", str(dist), str(ROOT)], check=True)
    (wheel,) = dist.glob("nnxrl-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "nnxrl/py.typed" in names and "nnxrl/configs/ppo-cartpole.yaml" in names
    venv = tmp_path / "venv"
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    subprocess.run([uv, "venv", "-q", "--python", python, str(venv)], check=True)
    python_bin = venv / "bin" / "python"
    subprocess.run(
        [uv, "pip", "install", "-q", "--python", str(python_bin), str(wheel)], check=True
    )
    elsewhere = tmp_path / "elsewhere"  # no configs/ folder here
    elsewhere.mkdir()
    nnxrl = [str(venv / "bin" / "nnxrl")]
    listed = subprocess.run(
        [*nnxrl, "configs"], cwd=elsewhere, capture_output=True, text=True, check=True
    )
    assert "ppo-cartpole " in listed.stdout and "site-packages" in listed.stdout
    args = ["train", "ppo-cartpole", "--set", "total_env_steps=20000", "--out", "run"]
    done = subprocess.run([*nnxrl, *args], cwd=elsewhere, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (elsewhere / "run" / "policy" / "policy.yaml").is_file()
    lines = (elsewhere / "run" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == schedule.num_updates(C.load(ROOT / "configs/ppo-cartpole.yaml", args[3:4]))


def test_configs_are_found_by_name_and_a_wrong_name_lists_them(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert find_config("ppo-cartpole") == shipped_configs()["ppo-cartpole"]
    assert find_config("configs/pqn-cartpole.yaml") == shipped_configs()["pqn-cartpole"]
    (tmp_path / "ppo-cartpole.yaml").write_text("seed: 3\n")  # a local file wins
    assert find_config("ppo-cartpole.yaml") == Path("ppo-cartpole.yaml")
    with pytest.raises(C.ConfigError, match=r"ppo-cartpol.*does not exist.*ppo-cartpole, "):
        C.load("ppo-cartpol")
    assert main(["configs"]) == 0
    configs, suites = capsys.readouterr().out.split("\n\n")
    assert len(configs.splitlines()) == len(shipped_configs()) + 1  # a title, then one each
    assert "ppo-cartpole" in configs and "PPO on CartPole-v1" in configs
    assert len(suites.splitlines()) == len(SUITES) + 1  # each suite, with an id and a config
    assert "pgx:2048" in suites and "ppo-pgx-2048" in suites
