"""nnxrl compare: the statistics against rliable's own on fixed arrays, runs grouped
into methods and envs (pooled seeds, a sweep's settings, a config key), the scores
(declared ranges, Craftax's achievement score), its outputs, and bad input refused
by name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from nnxrl.analysis import interval_estimates as ie
from nnxrl.analysis.comparison import compare, markdown
from nnxrl.analysis.runs import load_run
from nnxrl.analysis.scores import craftax_score
from nnxrl.cli import main

RNG = np.random.default_rng(7)
X = RNG.normal(0.6, 0.2, size=(10, 3))  # [runs, tasks]
Y = RNG.normal(0.5, 0.25, size=(8, 3))


@pytest.mark.filterwarnings("ignore:random_state is deprecated:FutureWarning")  # arch's
def test_the_statistics_are_rliables_on_a_fixed_array():
    from rliable import library, metrics

    want = [
        metrics.aggregate_median(X),
        metrics.aggregate_iqm(X),
        metrics.aggregate_mean(X),
        metrics.aggregate_optimality_gap(X),
    ]
    np.testing.assert_allclose(ie.aggregates(X), want, rtol=1e-12)
    poi = metrics.probability_of_improvement(X, Y)
    assert ie.probability_of_improvement(X, Y) == pytest.approx(poi, rel=1e-12)
    taus = np.linspace(0, 1, 11)
    profile, _ = library.create_performance_profile({"x": X}, taus, reps=10)
    np.testing.assert_allclose(ie.above(X, taus), profile["x"])
    # the intervals: the same stratified bootstrap, other draws (within Monte Carlo error)
    _, theirs = library.get_interval_estimates(
        {"x": X}, lambda s: np.array(want_of(s)), reps=1000, random_state=np.random.RandomState(0)
    )
    _, ours = ie.interval(ie.aggregates, (X,), 20_000, np.random.default_rng(0))
    width = theirs["x"][1] - theirs["x"][0]
    assert np.all(np.abs(ours - theirs["x"]) < 0.15 * width), (ours, theirs["x"])
    _, theirs = library.get_interval_estimates(
        {"xy": (X, Y)},
        metrics.probability_of_improvement,
        reps=1000,
        random_state=np.random.RandomState(0),
    )
    _, ours = ie.interval(ie.probability_of_improvement, (X, Y), 20_000, np.random.default_rng(0))
    assert np.all(np.abs(ours - np.ravel(theirs["xy"])) < 0.15 * np.ptp(theirs["xy"]))


def want_of(s: np.ndarray) -> list[float]:
    from rliable import metrics

    return [
        metrics.aggregate_median(s),
        metrics.aggregate_iqm(s),
        metrics.aggregate_mean(s),
        metrics.aggregate_optimality_gap(s),
    ]


def write_run(
    path: Path, algo: str, env: str, finals, *, updates: int = 10, extra: dict | None = None
) -> Path:
    """A run directory as training writes it: config.yaml and metrics.jsonl whose
    rolling return rises linearly to ``finals`` (one per seed)."""
    path.mkdir(parents=True)
    config = {"algo": algo, "env": {"id": env}, **(extra or {})}
    path.joinpath("config.yaml").write_text(yaml.safe_dump(config))
    with path.joinpath("metrics.jsonl").open("w") as f:
        for u in range(1, updates + 1):
            for seed, final in enumerate(finals):
                value = final * u / updates
                row = {"update": u, "env_steps": 512 * u, "seed": seed}
                f.write(json.dumps({**row, "episode_return_window": value}) + "\n")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """PPO above PQN on CartPole (8 seeds in two runs against 4), and on MemoryChain."""
    root = tmp_path_factory.mktemp("runs")
    write_run(root / "ppo-cartpole-a", "ppo", "CartPole-v1", [500, 480, 490, 470])
    write_run(root / "ppo-cartpole-b", "ppo", "CartPole-v1", [450, 500, 495, 460])
    write_run(root / "pqn-cartpole", "pqn", "CartPole-v1", [200, 150, 300, 100])
    write_run(root / "ppo-memory", "ppo", "MemoryChain-bsuite", [1.0, 0.9, 0.8, 1.0])
    write_run(root / "pqn-memory", "pqn", "MemoryChain-bsuite", [-1.0, -0.5, 0.0, -0.8])
    return root


def test_runs_are_grouped_into_methods_and_envs_and_scored_by_their_ranges(runs, tmp_path):
    c = compare([runs], out=tmp_path / "out", reps=500)
    assert c.methods == ["ppo", "pqn"] and c.envs == ["CartPole-v1", "MemoryChain-bsuite"]
    # ppo's CartPole seeds are its two runs pooled (8), cut to the 4 of its MemoryChain
    np.testing.assert_allclose(c.scores["ppo"]["CartPole-v1"], [1.0, 0.96, 0.98, 0.94])
    np.testing.assert_allclose(c.scores["pqn"]["MemoryChain-bsuite"], [0.0, 0.25, 0.5, 0.1])
    assert any("CartPole-v1: 8" in note for note in c.notes)
    mean, low, high = c.aggregate["ppo"]["mean"]
    want = np.mean([np.mean([1.0, 0.96, 0.98, 0.94]), np.mean([1.0, 0.95, 0.9, 1.0])])
    assert mean == pytest.approx(want) and low <= mean <= high
    assert c.improvement["ppo,pqn"] == [1.0, 1.0, 1.0]  # every ppo run above every pqn run
    assert c.improvement["pqn,ppo"] == [0.0, 0.0, 0.0]
    saved = json.loads((tmp_path / "out" / "compare.json").read_text())
    assert saved["aggregate"]["envs"] == c.envs and saved["seeds"]["ppo"]["CartPole-v1"] == 4
    assert saved["score"]["MemoryChain-bsuite"] == "episode_return_window in [-1, 1]"
    for name in ("intervals", "profiles", "sample_efficiency", "improvement"):
        assert (tmp_path / "out" / f"{name}.png").stat().st_size > 10_000, name
    curve = c.curves["points"]["ppo"]  # the IQM along training rises to the end
    assert np.all(np.diff(curve) > 0) and curve[-1] == pytest.approx(c.aggregate["ppo"]["iqm"][0])
    again = compare([runs], reps=500)  # reproducible: one seeded generator
    assert again.aggregate == c.aggregate and again.improvement == c.improvement


def test_the_command_prints_the_tables_and_writes_svg(runs, tmp_path, capsys):
    out = tmp_path / "svg"
    assert main(["compare", str(runs / "p*"), "--out", str(out), "--format", "svg"]) == 0
    text = capsys.readouterr().out
    assert "**over CartPole-v1, MemoryChain-bsuite**" in text and "| ppo | pqn | 1.00" in text
    assert (out / "intervals.svg").read_text().lstrip().startswith("<?xml")
    assert (out / "compare.md").read_text() in text


def test_a_sweeps_settings_and_a_config_key_make_methods(tmp_path):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    sweep.joinpath("config.yaml").write_text(yaml.safe_dump({"env": {"id": "CartPole-v1"}}))
    with sweep.joinpath("metrics.jsonl").open("w") as f:
        for setting, rate in enumerate([1e-4, 1e-3]):
            for seed in range(3):
                row = {"update": 1, "env_steps": 512, "seed": seed, "setting": setting}
                row |= {"hparams": {"ppo.learning_rate": rate}}
                f.write(json.dumps(row | {"episode_return_window": 100.0 * (setting + 1)}) + "\n")
    c = compare([sweep], reps=200)
    assert c.methods == ["ppo (ppo.learning_rate=0.0001)", "ppo (ppo.learning_rate=0.001)"]
    by_rate = compare([sweep], by="ppo.learning_rate", reps=200)
    assert by_rate.methods == ["ppo.learning_rate=0.0001", "ppo.learning_rate=0.001"]
    assert by_rate.per_env["CartPole-v1"]["ppo.learning_rate=0.001"]["mean"][0] == pytest.approx(
        0.4
    )
    kinds = [("gru", 0.2), ("lstm", 0.3)]
    for kind, final in kinds:
        extra = {"network": {"kind": kind}}
        write_run(tmp_path / kind, "ppo", "MemoryChain-bsuite", [final] * 3, extra=extra)
    c = compare([tmp_path / "gru", tmp_path / "lstm"], by="network.kind", reps=200)
    assert c.methods == ["network.kind=gru", "network.kind=lstm"]


def test_craftax_is_scored_by_its_achievements(tmp_path):
    run = tmp_path / "craftax"
    write_run(run, "ppo", "Craftax-Classic-Symbolic-v1", [0.0])
    rates = {"achievements/collect_wood": 0.9, "achievements/place_table": 0.5}
    rates |= {"achievements/eat_cow": 0.0}
    lines = run.joinpath("metrics.jsonl").read_text().splitlines()
    run.joinpath("metrics.jsonl").write_text(
        "\n".join(json.dumps(json.loads(x) | rates) for x in lines) + "\n"
    )
    want = np.exp(np.mean(np.log1p([90.0, 50.0, 0.0]))) - 1  # Crafter's score, in %
    assert craftax_score(load_run(run))[0, -1] == pytest.approx(want)
    c = compare([run], reps=200)
    assert c.scores["ppo"]["Craftax-Classic-Symbolic-v1"][0] == pytest.approx(want / 100)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{root}/nothing-*"], "matches no file or directory"),
        (["{root}"], "no score range is declared for Asterix-MinAtar"),
        (["{root}", "--range", "Asterix-MinAtar=10"], "expected ENV=LOW:HIGH"),
        (["{root}/ppo", "--by", "ppo.gamma"], "no key 'ppo.gamma' to group by"),
    ],
)
def test_bad_input_is_refused_by_name(tmp_path, capsys, args, message):
    write_run(tmp_path / "ppo", "ppo", "CartPole-v1", [100.0, 200.0])
    write_run(tmp_path / "minatar", "ppo", "Asterix-MinAtar", [5.0, 9.0])
    args = [a.format(root=tmp_path) for a in args]
    assert main(["compare", *args, "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_declared_range_makes_an_env_comparable(tmp_path):
    write_run(tmp_path / "ppo", "ppo", "CartPole-v1", [100.0, 200.0])
    write_run(tmp_path / "minatar", "ppo", "Asterix-MinAtar", [5.0, 9.0])
    c = compare([tmp_path], ranges={"Asterix-MinAtar": (0.0, 10.0)}, reps=200)
    np.testing.assert_allclose(c.scores["ppo"]["Asterix-MinAtar"], [0.5, 0.9])
    alone = compare([tmp_path / "minatar"], reps=200)  # one env: raw returns, no gap
    assert alone.per_env["Asterix-MinAtar"]["ppo"]["optimality_gap"] is None
    assert "raw" in alone.sources["Asterix-MinAtar"] and "n/a" in markdown(alone)


def test_runs_of_unlike_budgets_seed_counts_or_versions_are_not_pooled_silently(tmp_path, capsys):
    """Two PPO runs on CartPole, one 10 updates of 4 seeds, one 20 of 2: refused,
    naming both and how they differ; --pool-unlike pools them and notes it. A
    method of one seed gets no interval."""
    write_run(tmp_path / "a", "ppo", "CartPole-v1", [500, 480, 490, 470])
    write_run(tmp_path / "b", "ppo", "CartPole-v1", [450, 500], updates=20)
    (tmp_path / "b" / "run.json").write_text(json.dumps({"nnxrl": "0.2.0", "git_commit": None}))
    write_run(tmp_path / "c", "pqn", "CartPole-v1", [200])
    with pytest.raises(ValueError) as e:
        compare([tmp_path], reps=200)
    said = str(e.value)
    assert "ppo on CartPole-v1 pools runs of unlike env steps per seed: a 5,120, b 10,240" in said
    assert "unlike seeds: a 4, b 2" in said and "unlike nnxrl: a unrecorded, b 0.2.0" in said
    assert said.endswith("or pass --pool-unlike to pool them anyway")
    assert main(["compare", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "--pool-unlike" in capsys.readouterr().err
    c = compare([tmp_path / "a", tmp_path / "b", tmp_path / "c"], reps=200, pool_unlike=True)
    assert len(c.scores["ppo"]["CartPole-v1"]) == 6 and len(c.notes) == 3
    row = next(x for x in markdown(c).splitlines() if x.startswith("| pqn | 1 |"))
    assert "(1 seed: none)" in row and "[" not in row


def test_a_run_still_being_written_is_compared_up_to_its_last_whole_update(runs, tmp_path):
    """While `nnxrl train` holds a run's lock, its metrics.jsonl may end in an update
    whose members are not all written yet, the last line cut mid-write: compare reads
    the run up to its last whole update. (A run killed mid-line, whose lock is free, is
    named instead: test_robustness.py.)"""
    from nnxrl.store import lock

    live = tmp_path / "ppo-live"
    shutil.copytree(runs / "ppo-cartpole-a", live)
    whole = compare([live, runs / "pqn-cartpole"], reps=50)
    record = {"update": 11, "env_steps": 512 * 11, "episode_return_window": 9999.0}
    with lock.hold(live), (live / "metrics.jsonl").open("a") as f:
        f.write(json.dumps({**record, "seed": 0}) + "\n" + json.dumps({**record, "seed": 1})[:30])
        f.flush()
        c = compare([live, runs / "pqn-cartpole"], reps=50)
    np.testing.assert_array_equal(
        c.scores["ppo"]["CartPole-v1"], whole.scores["ppo"]["CartPole-v1"]
    )
    assert c.aggregate == whole.aggregate
    with pytest.raises(ValueError, match="line 42: not a complete JSON record"):
        compare([live, runs / "pqn-cartpole"], reps=50)  # the writer is gone
