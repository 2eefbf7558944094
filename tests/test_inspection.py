"""Looking before training: ``nnxrl --version``, ``train --print-config`` (the
resolved config) and ``--dry-run`` (everything built and compiled, nothing trained
or written), and a refused ``--out`` said before anything else."""

from __future__ import annotations

import re

import pytest
import yaml
from cli_runs import CARTPOLE, SHORT_CARTPOLE, sets

from nnxrl import config as config_lib
from nnxrl.cli import main
from nnxrl.version import version


def test_version_names_the_installed_version_and_the_checkout(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert re.fullmatch(rf"nnxrl {re.escape(version())}( \(git [0-9a-f]{{12}}\))?\n", out), out


def test_print_config_is_the_resolved_config_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default --out would be under runs/ here
    overrides = ["num_seeds=3", "ppo.learning_rate=1e-3"]
    assert main(["train", CARTPOLE, "--print-config", *sets(overrides)]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert config_lib.from_dict(printed) == config_lib.load(CARTPOLE, overrides)
    assert printed["num_seeds"] == 3 and printed["logging"]["return_window"] == 100  # defaults
    assert list(tmp_path.iterdir()) == []


def test_a_dry_run_compiles_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "never"
    assert main(["train", CARTPOLE, "--dry-run", "--out", str(out), *sets(SHORT_CARTPOLE)]) == 0
    said = capsys.readouterr().out
    assert "dry run: CartPole-v1, 40 updates of 128 transitions x 1 member(s) compiled" in said
    assert not out.exists()
    bad = ["ppo.num_minibatches=3"]  # the checks a real start makes, a dry run makes
    assert main(["train", CARTPOLE, "--dry-run", *sets([*SHORT_CARTPOLE, *bad])]) == 2
    assert "ppo.num_minibatches: 3 does not divide" in capsys.readouterr().err


def test_an_out_that_holds_a_run_is_refused_before_the_training_line(tmp_path, capsys):
    (tmp_path / "metrics.jsonl").write_text('{"update": 1}\n')
    assert main(["train", CARTPOLE, "--out", str(tmp_path), *sets(SHORT_CARTPOLE)]) == 2
    said = capsys.readouterr()
    assert "already holds a run" in said.err and "training" not in said.out
