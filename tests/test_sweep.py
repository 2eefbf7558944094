"""Sweeps: settings x seeds trained as one program (``sweep:``), their records and
trackers, the report and best.yaml, resume, eval/export of one setting, random
draws, untraceable keys and allow_recompile groups."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec

import nnxrl
from nnxrl import config as config_lib
from nnxrl.agent.policy import load_policy
from nnxrl.analysis.plots import plot_runs
from nnxrl.cli import main
from nnxrl.config import population
from nnxrl.logging.jsonl import read_records
from nnxrl.logging.records import records_to_arrays
from nnxrl.run.algorithms import hyperparams_from as hyperparams_for
from nnxrl.store import checkpoint
from nnxrl.sweeps import space as sweep

ROOT = Path(__file__).parents[1]
CARTPOLE = str(ROOT / "configs/ppo-cartpole.yaml")
PQN_CARTPOLE = str(ROOT / "configs/pqn-cartpole.yaml")
SMALL = [  # 4 updates of 4 envs x 128 steps, a chunk and a checkpoint every 2
    "fast_compile=true",
    "total_env_steps=2048",
    "logging.updates_per_chunk=2",
    "checkpoint.every_updates=2",
    "num_seeds=2",
]
RATES = [1e-4, 1e-3, 1e-2]
DIVERGING = 1e30  # a step size that makes the parameters non-finite at once
GRID = [f"sweep.grid={{ppo.learning_rate: {[*RATES, DIVERGING]}}}"]


def train_cli(out: Path, overrides: list[str], *more: str) -> int:
    args = ["train", CARTPOLE, "--out", str(out), *more]
    return main(args + sum((["--set", o] for o in overrides), []))


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory) -> Path:
    """Three learning rates and a diverging one x 2 seeds, one program, with MLflow,
    TensorBoard and W&B (offline)."""
    out = tmp_path_factory.mktemp("sweep") / "run"
    overrides = [*SMALL, *GRID, "logging.backends=[mlflow,tensorboard,wandb]"]
    assert train_cli(out, overrides) == 0
    return out


def setting_records(run: Path, index: int) -> list[dict]:
    return [r for r in read_records(run / "metrics.jsonl") if r.get("setting") == index]


def assert_close_records(got: dict, want: dict) -> None:
    """Equal up to float summation order (a population of another size compiles to
    another program): counts exactly, floats within 1e-4 relative."""
    for name, value in want.items():
        if isinstance(value, float) and name in got:
            assert got[name] == pytest.approx(value, rel=1e-4, abs=1e-6), name
        elif name not in ("setting", "hparams"):
            assert got.get(name) == value, name


def test_a_grid_of_rates_in_one_program_equals_separate_runs(sweep_run):
    for index, rate in enumerate(RATES):
        config = nnxrl.load_config(CARTPOLE, [*SMALL, f"ppo.learning_rate={rate}"])
        alone = nnxrl.train(config)
        got = records_to_arrays(setting_records(sweep_run, index), 2)
        for name in ("episode_return_window", "episode_count", "loss/total", "stats/grad_norm"):
            np.testing.assert_allclose(got[name], alone.metrics[name], rtol=1e-4, atol=1e-6)
    # the rates really differ inside the program
    losses = [records_to_arrays(setting_records(sweep_run, i), 2)["loss/total"] for i in (0, 1)]
    assert not np.allclose(*losses)


def test_every_record_names_its_setting_and_aggregates_are_per_setting(sweep_run):
    records = read_records(sweep_run / "metrics.jsonl")
    assert len(records) == 4 * 4 * 2  # updates x settings x seeds
    for r in records:
        assert r["hparams"] == {"ppo.learning_rate": [*RATES, DIVERGING][r["setting"]]}
    aggregates = read_records(sweep_run / "metrics_aggregate.jsonl")
    assert {(a["update"], a["setting"]) for a in aggregates} == {
        (u, s) for u in range(1, 5) for s in range(4)
    }
    first = next(a for a in aggregates if a["setting"] == 1 and a["update"] == 4)
    seeds = [r["episode_return_window"] for r in setting_records(sweep_run, 1) if r["update"] == 4]
    assert first["num_seeds"] == 2
    assert first["episode_return_window/mean"] == pytest.approx(np.mean(seeds))


def test_a_diverging_setting_is_frozen_while_the_others_train_on(sweep_run):
    bad = setting_records(sweep_run, 3)
    assert len(bad) == 8 and all(r.get("diverged") for r in bad)
    assert all("loss/total" not in r for r in bad)
    good = [r for s in range(3) for r in setting_records(sweep_run, s)]
    assert all(math.isfinite(r["loss/total"]) and not r.get("diverged") for r in good)
    # the run finished: the best setting's policy is exported, the report ranks 3 last
    report = json.loads((sweep_run / "sweep.json").read_text())["settings"]
    assert report[-1]["setting"] == 3 and report[-1]["diverged"] == [0, 1]
    assert [r["mean"] for r in report[:3]] == sorted((r["mean"] for r in report[:3]), reverse=True)
    assert load_policy(sweep_run / "policy").setting == report[0]["setting"]


def test_mlflow_has_a_child_run_per_setting_and_tensorboard_a_folder(sweep_run):
    from mlflow import MlflowClient

    from nnxrl.logging.mlflow_tracker import local_store_uri

    client = MlflowClient(tracking_uri=local_store_uri(sweep_run))
    parent = (sweep_run / "mlflow_run_id").read_text().strip()
    experiment = client.get_experiment_by_name("nnxrl-CartPole-v1")
    children = client.search_runs(
        [experiment.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent}'"
    )
    by_setting = {int(c.data.tags["nnxrl.setting"]): c for c in children}
    assert sorted(by_setting) == [0, 1, 2, 3]
    for index, child in by_setting.items():
        assert float(child.data.params["ppo.learning_rate"]) == [*RATES, DIVERGING][index]
        assert child.info.status == "FINISHED"
    history = client.get_metric_history(by_setting[1].info.run_id, "episode_return_window")
    want = [a for a in read_records(sweep_run / "metrics_aggregate.jsonl") if a["setting"] == 1]
    assert [m.value for m in history] == pytest.approx(
        [a["episode_return_window/mean"] for a in want]
    )
    assert "seed_1/loss/total" in by_setting[0].data.metrics
    assert "perf/sps" in client.get_run(parent).data.metrics
    folders = {p.name for p in (sweep_run / "tensorboard").iterdir() if p.is_dir()}
    assert folders == {f"setting_{i}" for i in range(4)}
    assert any((sweep_run / "tensorboard" / "setting_2" / "seed_1").glob("events.*"))
    # W&B's offline run file holds each series' name as plain text in its records
    (history,) = (sweep_run / "wandb").glob("offline-run-*/*.wandb")
    data = history.read_bytes()
    for name in ("setting_1/episode_return_window/mean", "setting_1/seed_0/loss/total"):
        assert data.count(name.encode()) >= 4, name  # in each update's record
    assert b"setting_3/diverged/mean" in data and b"perf/sps" in data


def test_best_yaml_trained_alone_reproduces_its_setting(sweep_run, tmp_path, capsys):
    best = json.loads((sweep_run / "sweep.json").read_text())["settings"][0]["setting"]
    config = config_lib.load(sweep_run / "best.yaml")
    assert not config.is_sweep and config.ppo.learning_rate == RATES[best]
    out = tmp_path / "best"
    assert main(["train", str(sweep_run / "best.yaml"), "--out", str(out)]) == 0
    alone = read_records(out / "metrics.jsonl")
    swept = setting_records(sweep_run, best)
    assert len(alone) == len(swept) == 8
    for got, want in zip(swept, alone, strict=True):
        assert_close_records(got, want)


def test_sweep_report_never_writes_through_a_linked_best_yaml(sweep_run, tmp_path, capsys):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(sweep_run, copy)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    (copy / "best.yaml").unlink()
    (copy / "best.yaml").symlink_to(notes)
    assert main(["sweep-report", str(copy)]) == 2
    assert "best.yaml is a symbolic link" in capsys.readouterr().err
    assert notes.read_text() == "my notes\n"


def test_a_stopped_sweep_resumes_bit_exactly(sweep_run, tmp_path):
    out = tmp_path / "resumed"
    overrides = [*SMALL, *GRID, "logging.backends=[]"]
    assert train_cli(out, overrides, "--stop-after", "2") == 130
    assert checkpoint.available(out) == [2]
    assert main(["train", "--resume", str(out)]) == 0
    assert read_records(out / "metrics.jsonl") == read_records(sweep_run / "metrics.jsonl")
    got, _ = checkpoint.read_items(out, 4, with_state=True)
    want, _ = checkpoint.read_items(sweep_run, 4, with_state=True)
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want[name]))


def test_eval_and_export_take_a_setting(sweep_run, tmp_path, capsys):
    assert main(["eval", str(sweep_run), "--episodes", "1"]) == 2
    err = capsys.readouterr().err
    assert "one must be chosen" in err and f"nnxrl sweep-report {sweep_run}` ranks them" in err
    report = tmp_path / "eval.json"
    args = ["eval", str(sweep_run), "--setting", "1", "--episodes", "1", "--json", str(report)]
    assert main(args) == 0
    assert json.loads(report.read_text())["setting"] == 1
    assert main(["eval", str(sweep_run), "--setting", "7"]) == 2
    assert "7 is not one of them" in capsys.readouterr().err
    out = tmp_path / "policy2"
    assert main(["export", str(sweep_run), "--setting", "2", "--out", str(out)]) == 0
    policy = load_policy(out)
    assert policy.setting == 2 and policy.num_seeds == 2
    items, meta = checkpoint.read_items(sweep_run, 4, with_state=True)
    saved = [
        np.asarray(items[f"leaf_{i:05d}"])
        for i, path in enumerate(meta["paths"])
        if path.startswith(".params")
    ]
    for leaf in jax.tree.leaves(policy.params):  # setting 2's seeds: members 4 and 5
        assert any(a.shape == (8, *leaf.shape[1:]) and np.array_equal(a[4:6], leaf) for a in saved)


def test_the_population_is_split_over_the_mesh():
    from nnxrl.run.programs import compile_programs

    config = nnxrl.load_config(
        CARTPOLE, [*SMALL, *GRID, "logging.backends=[]", "checkpoint.enabled=false"]
    )
    programs = compile_programs(config)
    assert programs.layout.seed_shards == 2 and population.num_members(config) == 8
    assert programs.hp.learning_rate.shape == (8,)
    assert programs.hp.learning_rate.sharding.spec == PartitionSpec("seeds")
    np.testing.assert_allclose(
        np.asarray(programs.hp.learning_rate), np.repeat([*RATES, DIVERGING], 2).astype(np.float32)
    )


def test_a_random_sweep_is_reproducible_from_its_seed_and_in_bounds():
    spec = (
        "sweep.random={ppo.learning_rate: {log_uniform: [1e-5, 1e-2]}, "
        "ppo.clip_eps: {uniform: [0.1, 0.3]}, ppo.gamma: {choice: [0.9, 0.99, 0.999]}}"
    )
    make = lambda *more: config_lib.load(CARTPOLE, [spec, "sweep.num_samples=64", *more])  # noqa: E731
    first, again, other = make(), make(), make("sweep.seed=1")
    assert population.settings(first) == population.settings(again) and population.settings(
        first
    ) != population.settings(other)
    values = [v for _, v in population.settings(first)]
    assert len(values) == 64
    rates = np.asarray([v["ppo.learning_rate"] for v in values])
    assert np.all((rates >= 1e-5) & (rates <= 1e-2))
    # log-uniform: about as many draws in each decade
    decades = np.histogram(np.log10(rates), bins=[-5, -4, -3, -2])[0]
    assert decades.min() >= 10
    assert all(0.1 <= v["ppo.clip_eps"] <= 0.3 for v in values)
    assert {v["ppo.gamma"] for v in values} == {0.9, 0.99, 0.999}
    # a grid with random draws: every grid point with every draw
    both = config_lib.load(
        CARTPOLE, [spec, "sweep.num_samples=3", "sweep.grid={ppo.ent_coef: [0.0, 0.01]}"]
    )
    assert [v["ppo.ent_coef"] for _, v in population.settings(both)] == [0.0] * 3 + [0.01] * 3
    assert [v["ppo.gamma"] for _, v in population.settings(both)][:3] == [
        v["ppo.gamma"] for _, v in population.settings(both)
    ][3:]


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["sweep.grid={network.width: [32, 64]}"], "network.width cannot be traced"),
        (
            ["sweep.grid={env.num_envs: [4, 8]}"],
            "Keys ppo sweeps in one program: ppo.learning_rate",
        ),
        (["sweep.grid={ppo.learnin_rate: [1]}"], "did you mean ppo.learning_rate"),
        (["sweep.grid={num_seeds: [1, 2]}"], "sweep.grid.num_seeds: num_seeds describes the run"),
        (["sweep.grid={ppo.gamma: [0.9, 1.5]}"], "setting 1 (ppo.gamma=1.5) is not a valid"),
        (["sweep.grid={ppo.gamma: []}"], "sweep.grid.ppo.gamma: expected a non-empty list"),
        (
            ["sweep.random={ppo.ent_coef: {log_uniform: [0, 1]}}"],
            "log_uniform: bounds must be > 0",
        ),
        (["sweep.random={ppo.ent_coef: {normal: [0, 1]}}"], "expected one distribution"),
        (
            ["sweep.grid={ppo.gamma: [0.9]}", "sweep.only={ppo.gamma: 0.5}"],
            "matches none of the sweep's settings",
        ),
        (
            ["sweep.grid={pqn.learning_rate: [1e-3]}"],
            "pqn.learning_rate is not a config key; did you mean ppo.learning_rate?",
        ),
        (
            ["sweep.grid={ppo.num_steps: [16, 32]}"],
            "Keys ppo sweeps in one program: ppo.learning_rate, ppo.max_grad_norm, ppo.gamma",
        ),
    ],
)
def test_bad_sweeps_are_refused_by_name(overrides, message):
    with pytest.raises(config_lib.ConfigError) as raised:
        config_lib.load(CARTPOLE, overrides)
    assert message in str(raised.value)


@pytest.mark.parametrize("config", [CARTPOLE, PQN_CARTPOLE])
def test_every_traced_key_reaches_its_own_coefficient(config):
    """The traced keys (declared once, in the settings) cannot drift from the
    algorithms: changing one changes exactly one coefficient of the program's
    Hyperparams, and every coefficient has its key."""
    base = config_lib.load(config)
    reference = hyperparams_for(base)
    touched = set()
    for key in config_lib.traced_keys(base):
        section, name = key.split(".")
        value = config_lib.to_dict(base)[section][name]
        changed = config_lib.load(config, [f"{key}={value * 0.5 + 0.01}"])
        diff = [
            f
            for f in reference._fields
            if getattr(reference, f) != getattr(hyperparams_for(changed), f)
        ]
        assert len(diff) == 1, (key, diff)
        touched.add(diff[0])
    assert touched == set(reference._fields)  # and every coefficient has its key


def test_allow_recompile_trains_each_program_in_turn(tmp_path, capsys):
    overrides = [
        "total_env_steps=1024",
        "logging.backends=[console]",
        "sweep.grid={network.width: [8, 16], ppo.learning_rate: [1e-3]}",
    ]
    with pytest.raises(config_lib.ConfigError, match="network.width cannot be traced"):
        config_lib.load(CARTPOLE, overrides)
    config = config_lib.load(CARTPOLE, [*overrides, "sweep.allow_recompile=true"])
    out = tmp_path / "groups"
    with pytest.raises(config_lib.ConfigError, match=r"nnxrl.train_groups\(config, out_dir\)"):
        nnxrl.train(config, out)  # several programs: train refuses, naming train_groups
    results = nnxrl.train_groups(config, out, progress=True)
    said = capsys.readouterr().out
    assert "network.width change the compiled program" in said and "2 programs" in said
    assert isinstance(results, list) and len(results) == 2
    for result, width in zip(results, (8, 16), strict=True):
        sizes = {x.shape[-1] for x in jax.tree.leaves(result.params)}
        assert width in sizes and ({8, 16} - {width}).isdisjoint(sizes)
    assert [r.settings for r in results] == [
        ((0, {"network.width": 8, "ppo.learning_rate": 1e-3}),),
        ((1, {"network.width": 16, "ppo.learning_rate": 1e-3}),),
    ]
    assert main(["sweep-report", str(out)]) == 0
    table = capsys.readouterr().out
    assert "| network.width | ppo.learning_rate |" in table
    assert config_lib.load(out / "best.yaml").network.width in (8, 16)
    report = tmp_path / "eval.json"
    assert main(["eval", str(out), "--setting", "1", "--episodes", "1", "--json", str(report)]) == 0
    assert json.loads(report.read_text())["setting"] == 1


def test_a_pqn_sweep_trains_its_own_coefficients():
    overrides = [
        "env.num_envs=4",
        "network.width=64",
        "total_env_steps=1024",
        "pqn.num_steps=32",
        "pqn.num_minibatches=4",
        "logging.backends=[]",
        "sweep.grid={pqn.epsilon_finish: [0.05, 0.5], pqn.q_lambda: [0.9]}",
    ]
    swept = nnxrl.train(config_lib.load(PQN_CARTPOLE, overrides))
    alone = nnxrl.train(
        config_lib.load(
            PQN_CARTPOLE, [*overrides[:-1], "pqn.epsilon_finish=0.5", "pqn.q_lambda=0.9"]
        )
    )
    np.testing.assert_allclose(
        swept.setting_metrics(1)["loss/total"], alone.metrics["loss/total"], rtol=1e-4
    )
    assert not np.allclose(swept.setting_metrics(0)["loss/total"], alone.metrics["loss/total"])


def test_the_shipped_sweep_config_is_one_program_of_32_members():
    config = config_lib.load("sweep-ppo-cartpole")
    assert len(population.settings(config)) == 8 and population.num_members(config) == 32
    assert population.settings(config)[1][1] == {"ppo.learning_rate": 1e-4, "ppo.ent_coef": 0.01}
    assert not sweep.untraced_keys(config.sweep, config_lib.traced_keys(config))


def test_plot_draws_one_curve_per_setting(sweep_run, tmp_path):
    from nnxrl.analysis.runs import load_runs

    runs = load_runs(sweep_run)
    assert [r.name for r in runs] == [f"run/setting_{k}" for k in range(4)]
    assert all(r.metrics["episode_count"].shape == (2, 4) for r in runs[:3])
    assert np.isnan(runs[3].metrics["loss/total"]).all()  # diverged from the first update
    out = tmp_path / "curves.png"
    assert main(["plot", str(sweep_run), "--out", str(out)]) == 0 and out.stat().st_size > 0
    labels = plot_runs([sweep_run], out=out)["labels"]  # the legend names each setting's values
    assert labels == [f"ppo.learning_rate={rate} (2 seeds)" for rate in [*RATES, DIVERGING]]


def test_a_sweep_of_one_seed_per_setting_draws_and_names_no_interval(tmp_path):
    """The sweep figure's bars are 95 % intervals across seeds only where a setting
    has two or more, and the title says so."""
    from nnxrl.analysis.sweep_report import SettingResult, SweepReport, plot_sweep

    config = config_lib.load(CARTPOLE, ["sweep.grid={ppo.learning_rate: [0.001, 0.002]}"])

    def result(setting: int, seeds: int) -> SettingResult:
        lr = [0.001, 0.002][setting]
        return SettingResult(
            setting, {"ppo.learning_rate": lr}, 100.0, 90.0, 110.0, seeds, 9, 50.0, []
        )

    titles = {
        seeds: plot_sweep(SweepReport(config, [result(0, a), result(1, b)]), tmp_path / "s.png")
        for seeds, (a, b) in {"one": (1, 1), "mixed": (1, 3), "two": (2, 2)}.items()
    }
    assert titles["one"].endswith("2 settings, 1 seed per setting: no interval")
    assert titles["mixed"].endswith("(none for a setting of 1 seed)")
    assert titles["two"].endswith("2 settings, 95% CI across seeds")
    assert (tmp_path / "s.png").stat().st_size > 0
