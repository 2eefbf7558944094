"""The rolling return over the last N finished episodes: exact on the device, reported
by the host, kept across a resume."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nnxrl import config as C
from nnxrl.algos.return_window import empty_window, record_episodes, window_metrics
from nnxrl.cli import main
from nnxrl.hints import command
from nnxrl.logging.console import ConsoleBackend
from nnxrl.logging.records import LogBatch, aggregate, chunk_to_records


class Rollout(NamedTuple):
    terminated: jax.Array
    truncated: jax.Array
    episode: dict


def rollout(returns, ended):
    ended = jnp.asarray(ended)
    return Rollout(
        terminated=ended,
        truncated=jnp.zeros_like(ended),
        episode={"return": jnp.asarray(returns, jnp.float32)},
    )


def test_the_window_holds_exactly_the_last_n_episodes_in_order():
    rng = np.random.default_rng(0)
    size, seen = 7, []
    window = empty_window(size)
    push = jax.jit(record_episodes)
    for _ in range(12):  # [T=5, B=3] rollouts ending 0..15 episodes each
        ended = rng.random((5, 3)) < rng.choice([0.0, 0.2, 0.9])
        returns = rng.normal(size=(5, 3)).astype(np.float32)
        window = push(window, rollout(returns, ended))
        seen += list(returns[ended])  # step order, then env order
        held = int(window.count)
        assert held == min(len(seen), size)
        np.testing.assert_array_equal(np.asarray(window.returns)[size - held :], seen[-held:])
        metrics = window_metrics(window)
        expected = np.mean(seen[-size:]) if seen else 0.0
        assert float(metrics["episode_return_window"]) == pytest.approx(expected, abs=1e-5)
        assert float(metrics["episodes_in_window"]) == held


def test_the_host_reports_the_window_as_null_until_an_episode_has_ended():
    metrics = {
        "episode_count": np.array([[0, 0, 2], [0, 1, 0]]),
        "episode_return": np.array([[0.0, 0.0, 9.0], [0.0, 4.0, 0.0]]),
        "episode_return_window": np.array([[0.0, 0.0, 9.0], [0.0, 4.0, 4.0]]),
        "episodes_in_window": np.array([[0, 0, 2], [0, 1, 1]]),
    }
    records = chunk_to_records(metrics, first_update=1, batch_size=8)
    by = {(r["update"], r["seed"]): r for r in records}
    assert by[(2, 0)]["episode_return_window"] is None
    assert by[(3, 1)]["episode_return"] is None  # no episode ended in update 3 ...
    assert by[(3, 1)]["episode_return_window"] == 4.0  # ... yet the window holds one
    assert by[(3, 1)]["episodes_in_window"] == 1

    console = ConsoleBackend(num_updates=3, print_every=1, stream=_Lines(), return_window=50)
    for update in (1, 2, 3):
        rows = [r for r in records if r["update"] == update]
        console.write(LogBatch(rows, aggregate(rows), sps=None, elapsed=float(update)))
    first, second, third = console.stream.lines
    assert "return: no episode has ended yet" in first
    assert "return 4.00 (last 50 ep., mean over 1 of 2 seeds)" in second
    assert "return 6.50 (last 50 ep., mean over 2 seeds)" in third
    assert "env steps 24 per seed" in third and "steps/s all seeds" in third
    assert " 16 steps/s" in third  # 2 seeds x 8 steps per update, one update per second


def test_steps_per_second_is_measured_over_a_trailing_window():
    console = ConsoleBackend(num_updates=100, print_every=1000, stream=_Lines())
    console.live = True  # redraw the line on every chunk
    elapsed, update = 0.0, 0
    for seconds in [1.0] * 20 + [0.001] * 3:  # 1 update/s, then 3 instant chunks
        elapsed, update = elapsed + seconds, update + 1
        row = {"update": update, "env_steps": 10 * update, "seed": 0, "episode_count": 0}
        console.write(LogBatch([row], aggregate([row]), sps=None, elapsed=elapsed))
    rate = float(console.stream.lines[-1].split(" steps/s")[0].split()[-1].replace(",", ""))
    # 13 updates in the last ~10 s: a jump to millions of steps/s is smoothed out
    assert 10.0 < rate < 20.0, console.stream.lines[-1]


def test_resume_refuses_another_return_window(tmp_path, capsys):
    out = tmp_path / "run"
    overrides = ["total_env_steps=2048", "ppo.num_steps=32", "logging.backends=[console]"]
    args = ["train", "configs/ppo-cartpole.yaml", "--out", str(out), "--stop-after", "4"]
    assert main(args + sum((["--set", o] for o in overrides), [])) == 130
    said = capsys.readouterr().out.splitlines()
    assert said[-1] == f"training stopped; continue with `{command(f'train --resume {out}')}`"
    assert said[1].startswith("nnxrl: compiling the programs")  # said before the wait
    resumed = ["train", "--resume", str(out), "--set", "logging.return_window=10"]
    assert main(resumed) == 2
    assert "logging.return_window: 100 -> 10" in capsys.readouterr().err
    assert main(["train", "--resume", str(out), "--set", "logging.print_every=3"]) == 0
    said = capsys.readouterr().out
    assert "| seed | key | return (last 100 episodes of training) | episodes |" in said
    row = next(x for x in said.splitlines() if x.startswith("| 0 | fold_in(key(0), 0) |"))
    assert 8.0 < float(row.split("|")[3]) < 500.0  # CartPole returns, not a placeholder
    assert said.splitlines()[-1] == f"evaluate the policy: {command(f'eval {out}')}"


def test_the_window_size_is_checked():
    with pytest.raises(C.ConfigError, match="logging.return_window"):
        C.load("configs/ppo-cartpole.yaml", ["logging.return_window=0"])


class _Lines:
    """A stream that keeps each line printed (redraws included)."""

    def __init__(self):
        self.lines = []

    def write(self, text):
        text = text.replace("\r\033[K", "").strip("\n")
        if text:
            self.lines.append(text)

    def flush(self):
        pass


def test_a_sweeps_line_gives_the_best_and_the_median_setting():
    console = ConsoleBackend(num_updates=1, print_every=1, stream=_Lines(), num_settings=4)
    rows = [
        {"update": 1, "env_steps": 8, "seed": 0, "setting": k, "hparams": {"ppo.gamma": g}}
        | {"episode_return_window": value, "episode_count": 1}
        for k, (g, value) in enumerate([(0.9, 10.0), (0.95, 30.0), (0.99, 20.0), (0.999, 50.0)])
    ]
    aggregates = [a for k in range(4) for a in aggregate([rows[k]])]
    console.write(LogBatch(rows, aggregates, sps=None, elapsed=1.0))
    line = console.stream.lines[-1]
    assert "best return 50.00 (setting 3: ppo.gamma=0.999)" in line
    assert "median 25.00 over 4 settings" in line  # the mean of the middle two: 20 and 30
