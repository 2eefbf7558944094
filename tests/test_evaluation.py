"""Evaluation during training (the ``evaluation`` section): records carry the greedy
policy's returns on envs of its own at every ``every_updates``, null elsewhere;
training is unchanged by it, and a stopped run resumes to the same records."""

from __future__ import annotations

import json

import pytest
from cli_runs import CARTPOLE, SHORT_CARTPOLE

from nnxrl import config as config_lib
from nnxrl.run.training import run_training

EVALUATED = [*SHORT_CARTPOLE, "num_seeds=2", "evaluation.every_updates=8", "evaluation.episodes=4"]


def records(run) -> list[dict]:
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


def test_evaluations_are_recorded_change_no_training_and_resume_exactly(tmp_path):
    config = config_lib.load(CARTPOLE, EVALUATED)
    run_training(config, tmp_path / "whole", quiet=True)
    with pytest.raises(KeyboardInterrupt):
        run_training(config, tmp_path / "split", quiet=True, stop_after=12)
    run_training(config, tmp_path / "split", quiet=True, resume=True)
    whole = (tmp_path / "whole" / "metrics.jsonl").read_bytes()
    assert whole == (tmp_path / "split" / "metrics.jsonl").read_bytes()
    rows = records(tmp_path / "whole")
    evaluated = [r for r in rows if r["eval/return"] is not None]
    assert sorted({r["update"] for r in evaluated}) == [8, 16, 24, 32, 40]
    assert all(r["eval/return"] == r["eval/length"] > 0 for r in evaluated)  # CartPole: 1 a step
    assert all(r["eval/length"] is None for r in rows if r["update"] % 8)

    plain = config_lib.load(CARTPOLE, [*SHORT_CARTPOLE, "num_seeds=2"])
    run_training(plain, tmp_path / "plain", quiet=True)
    for r, q in zip(rows, records(tmp_path / "plain"), strict=True):  # training untouched
        assert {k: v for k, v in r.items() if not k.startswith("eval/")} == q


def test_an_evaluation_between_chunks_only_is_checked():
    with pytest.raises(config_lib.ConfigError, match="evaluation.every_updates: 6 is not a"):
        config_lib.load(CARTPOLE, [*SHORT_CARTPOLE, "evaluation.every_updates=6"])
