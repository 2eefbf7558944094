"""nnxrl plot: smoothing, statistics and confidence intervals across seeds, several
metrics, runs with different batch sizes on one env-step axis."""

import json

import numpy as np
import yaml

from nnxrl.analysis.plots import across_seeds, plot_runs
from nnxrl.analysis.runs import smooth_trailing
from nnxrl.cli import main


def fake_run(path, returns, batch_size, env="CartPole-v1", algo="ppo", with_window=True):
    """A run directory whose metrics.jsonl holds ``returns`` [S, U] (None: undefined)."""
    path.mkdir(parents=True)
    config = {"env": {"id": env}, "algo": algo, "logging": {"return_window": 100}}
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    lines = []
    for j in range(len(returns[0])):
        for s, seed_returns in enumerate(returns):
            r = seed_returns[j]
            record = {"update": j + 1, "env_steps": (j + 1) * batch_size, "seed": s}
            record["episode_return"] = None if r is None else float(r)
            record["loss/total"] = 1.0 / (j + 1)
            if with_window:
                record["episode_return_window"] = None if r is None else float(r) + 1.0
            lines.append(json.dumps(record))
    (path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return path


def test_smoothing_is_a_trailing_mean_that_skips_undefined_updates():
    values = np.array([[1.0, np.nan, 3.0, 5.0, np.nan, np.nan, np.nan]])
    smoothed = smooth_trailing(values, 3)
    expected = [1.0, 1.0, 2.0, 4.0, 4.0, 5.0, np.nan]
    np.testing.assert_allclose(smoothed[0], expected)
    assert smooth_trailing(values, 1) is values


def test_mean_iqm_and_the_bootstrap_interval_across_seeds():
    rng = np.random.default_rng(1)
    values = rng.normal(10.0, 2.0, size=(16, 5))
    center, low, high = across_seeds(values)
    np.testing.assert_allclose(center, values.mean(axis=0))
    assert np.all(low < center) and np.all(center < high)
    # a 95 % interval of the mean of 16 draws with sd 2 is about +-1
    assert np.all((high - low > 1.0) & (high - low < 3.0)), high - low
    outlier = np.array([[1.0], [2.0], [3.0], [100.0]])
    iqm, _, _ = across_seeds(outlier, "iqm")
    assert iqm[0] == 2.5  # the middle two of four
    same = np.full((4, 3), 7.0)
    assert np.all(np.concatenate(across_seeds(same)) == 7.0)  # no spread: no band
    partial = np.array([[1.0, np.nan], [3.0, np.nan], [np.nan, np.nan]])
    center, low, high = across_seeds(partial)
    assert center[0] == 2.0 and np.isnan(center[1])  # seeds without a value are left out


def test_plot_draws_panels_title_and_aligns_runs_on_env_steps(tmp_path, capsys):
    small = fake_run(tmp_path / "small", [[1, 2, None, 4], [3, 2, 5, 6]], batch_size=100)
    large = fake_run(tmp_path / "large", [[2, 4], [4, 8]], batch_size=200)
    out = tmp_path / "plot.png"
    drawn = plot_runs([small, large], ["episode_return", "loss/total"], out, smooth=2)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert drawn["title"].startswith("CartPole-v1 · PPO · 2 seeds · mean across seeds, 95 %")
    assert "smoothed over 2 updates" in drawn["title"]
    assert drawn["labels"] == ["small (2 seeds)", "large (2 seeds)"]
    assert drawn["ylabels"] == ["return (update's episodes)", "total loss"]
    (small_steps, small_mean, _, _), (large_steps, large_mean, _, _) = drawn["curves"][0]
    assert list(small_steps) == [100, 200, 300, 400] and list(large_steps) == [200, 400]
    # smoothed: seed 0 1, 1.5, 2 (update 3 undefined), 4; seed 1 3, 2.5, 3.5, 5.5
    np.testing.assert_allclose(small_mean, [2.0, 2.0, 2.75, 4.75])
    np.testing.assert_allclose(large_mean, [3.0, 4.5])

    other = fake_run(tmp_path / "pqn", [[1, 2]], batch_size=100, algo="pqn", with_window=False)
    assert main(["plot", str(small), str(other), "--out", str(out), "--statistic", "iqm"]) == 0
    said = capsys.readouterr().out
    assert "small (ppo, CartPole-v1, 2 seeds)" in said and "pqn (pqn, CartPole-v1, 1 seed)" in said
    assert main(["plot", str(small), "--metric", "nope", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "'nope' is not in metrics.jsonl" in err and "episode_return" in err


def test_plot_of_a_trained_run(tmp_path):
    """On a real run: the default metric is the rolling return, one band per run."""
    out = tmp_path / "run"
    args = ["train", "ppo-cartpole", "--out", str(out), "--set", "total_env_steps=4096"]
    args += ["--set", "num_seeds=2", "--set", "logging.backends=[]"]
    assert main(args) == 0
    drawn = plot_runs([out], out=tmp_path / "p.png")
    assert drawn["ylabels"] == ["return (last 100 episodes)"]
    ((steps, mean, low, high),) = drawn["curves"][0]
    assert len(steps) > 0 and np.all(low <= mean) and np.all(mean <= high)


def test_labels_title_formats_and_the_few_seeds_caveat(tmp_path, capsys):
    a = fake_run(tmp_path / "a", [[1, 2], [3, 4]], batch_size=100)
    b = fake_run(tmp_path / "b", [[2, 3]] * 6, batch_size=100)
    out = tmp_path / "paper.svg"
    drawn = plot_runs([a, b], out=out, labels=["PPO, lr 3e-4", "PPO, lr 1e-3"], title="CartPole")
    assert drawn["labels"] == ["PPO, lr 3e-4", "PPO, lr 1e-3"] and drawn["title"] == "CartPole"
    assert "bands from 2 seeds" in drawn["caveat"]  # a has 2 seeds; b's 6 need no caveat
    assert out.read_text().lstrip().startswith("<?xml")
    six = plot_runs([b], out=tmp_path / "six.pdf")
    assert six["caveat"] == "" and (tmp_path / "six.pdf").read_bytes()[:5] == b"%PDF-"
    long = "a title far longer than the figure is wide, " * 4
    plot_runs([a], out=tmp_path / "long.png", title=long)  # wrapped, not clipped
    assert main(["plot", str(a), "--out", str(tmp_path / "p.jpg")]) == 2
    assert "give a .png, .svg, .pdf file" in capsys.readouterr().err
    assert not (tmp_path / "p.jpg").exists()
    assert main(["plot", str(a), str(b), "--label", "only one", "--out", str(out)]) == 2
    assert "--label: 1 given for 2 curves" in capsys.readouterr().err
