"""The examples in examples/ run, and what each shows holds: a user-written env is
trained by id (from Python and through the CLI's --plugin), a user-written add-on's
bonus reaches PPO, a vmapped learning-rate sweep gives one result per setting, and a
hand-written loop around init/update learns."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import nnxrl
from nnxrl.cli import main as cli

ROOT = Path(__file__).parents[1]


def example(name: str):
    path = ROOT / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_custom_env_learns_from_python_and_runs_from_the_cli(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert example("custom_env").main(total_env_steps=30_000) > 0.8
    out = tmp_path / "corridor"
    args = ["--plugin", "examples/custom_env.py", "train", "configs/ppo-cartpole.yaml"]
    args += ["--out", str(out), "--set", "env.id=Corridor-v0", "--set", "env.kwargs={length: 4}"]
    assert cli(args + ["--set", "total_env_steps=2048", "--set", "logging.backends=[]"]) == 0
    record = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    assert record["update"] == 4
    # eval needs the plugin too, and finds the env by id
    assert cli(["--plugin", "examples/custom_env.py", "eval", str(out), "--episodes", "2"]) == 0


def test_a_missing_plugin_is_a_clear_error(capsys):
    assert cli(["--plugin", "no_such_module_xyz", "train", "configs/ppo-cartpole.yaml"]) == 2
    assert "--plugin: cannot import 'no_such_module_xyz'" in capsys.readouterr().err


def test_custom_addon_gives_ppo_a_bonus(monkeypatch):
    monkeypatch.chdir(ROOT)
    metrics = example("custom_addon").main(total_env_steps=4096)
    assert np.all(metrics["reward/intrinsic"] > 0)
    assert "intrinsic/distance_bonus" in metrics


def test_lr_sweep_gives_one_result_per_setting(monkeypatch):
    monkeypatch.chdir(ROOT)
    final = example("lr_sweep").main(total_env_steps=8192, rates=(1e-4, 3e-3))
    assert final.shape == (2,) and np.all(np.isfinite(final)) and final[0] != final[1]


def test_a_hand_written_loop_learns(monkeypatch):
    monkeypatch.chdir(ROOT)
    returns = example("own_loop").main(total_env_steps=51_200)
    assert returns.shape == (100,)
    assert np.nanmean(returns[-20:]) > 2 * np.nanmean(returns[:20])


@pytest.mark.parametrize("config", ["ppo-cartpole", "pqn-cartpole"])
def test_a_registered_network_kind_is_trained_by_ppo_and_pqn_from_yaml(tmp_path, config):
    """examples/custom_network.py needs nothing from the core but registration."""
    from nnxrl.agent.policy import load_policy, param_paths

    out = tmp_path / config
    args = ["--plugin", "examples/custom_network.py", "train", f"configs/{config}.yaml"]
    args += ["--out", str(out), "--set", "network.kind=resmlp"]
    args += ["--set", "network.options={num_blocks: 3}", "--set", "network.width=32"]
    args += ["--set", "fast_compile=true"]
    assert cli(args + ["--set", "total_env_steps=4096", "--set", "logging.backends=[]"]) == 0
    paths = [path for path, _ in param_paths(load_policy(out / "policy").params)]
    assert sum(p.startswith("torso.blocks.") and p.endswith(".kernel.value") for p in paths) == 3
    # eval rebuilds the network from the saved policy, through the registration
    assert cli(["--plugin", "examples/custom_network.py", "eval", str(out), "--episodes", "2"]) == 0


def test_a_network_kinds_options_are_checked_by_name(capsys):
    base = ["--plugin", "examples/custom_network.py", "train", "configs/ppo-cartpole.yaml"]
    assert cli(base + ["--set", "network.kind=resmpl"]) == 2
    assert "did you mean resmlp?" in capsys.readouterr().err
    assert cli(base + ["--set", "network.kind=resmlp", "--set", "network.options={blocks: 2}"]) == 2
    assert "network.options.blocks" in capsys.readouterr().err
    assert cli(base + ["--set", "network.options={num_blocks: 2}"]) == 2
    assert "network.kind 'feedforward' has no options of its own" in capsys.readouterr().err


A2C = ["--plugin", "examples/custom_algorithm.py"]


def test_a_third_algorithm_trains_from_yaml_with_an_addon_unchanged(tmp_path):
    """examples/custom_algorithm.py (A2C) needs nothing from the core but registration:
    trained from its YAML through the CLI with RND's bonus, a sweep over one of its
    traced settings in one program, then evaluated from the saved policy."""
    out = tmp_path / "a2c"
    overrides = [
        "num_seeds=2",
        "total_env_steps=1024",
        "logging.backends=[]",
        "intrinsic.addon=rnd",
        "sweep.grid={a2c.ent_coef: [0.0, 0.05]}",
        "fast_compile=true",
    ]
    args = A2C + ["train", "examples/a2c-cartpole.yaml", "--out", str(out)]
    assert cli(args + sum((["--set", s] for s in overrides), [])) == 0
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert {r["setting"] for r in records} == {0, 1}
    assert {r["seed"] for r in records} == {0, 1}
    assert all(
        np.isfinite(r["intrinsic/rnd_error"]) and r["intrinsic/rnd_error"] > 0 for r in records
    )
    assert all(np.isfinite(r["loss/policy"]) for r in records)
    assert "stats/approx_kl" not in records[0]  # A2C's own loss, not PPO's
    entropy = {
        s: np.mean([r["loss/entropy"] for r in records if r["setting"] == s]) for s in (0, 1)
    }
    assert entropy[1] > entropy[0]  # the entropy bonus of setting 1 reached its loss
    report = tmp_path / "eval.json"
    eval_args = ["eval", str(out), "--setting", "1", "--episodes", "2", "--json", str(report)]
    assert cli(A2C + eval_args) == 0
    assert json.loads(report.read_text())["algo"] == "a2c"


def test_an_algorithm_not_registered_is_named_with_the_way_to_register_it(
    tmp_path, capsys, monkeypatch
):
    from nnxrl.algos import registry

    monkeypatch.delitem(registry._ALGORITHMS, "a2c", raising=False)  # a plugin run before
    assert cli(["train", "examples/a2c-cartpole.yaml", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "algo: 'a2c' is not registered" in err and "--plugin" in err
    typo = ["train", "examples/a2c-cartpole.yaml", "--set", "a2c.num_stepz=8"]
    assert cli(A2C + typo + ["--out", str(tmp_path / "b")]) == 2
    assert "did you mean a2c.num_steps?" in capsys.readouterr().err


def test_the_skeletons_settings_are_the_skeletons_and_other_shapes_need_none(monkeypatch):
    """On-policy pieces need settings that subclass ``nnxrl.OnPolicySettings`` (the
    skeleton's rollout, epochs, minibatches, optimiser, declared once); an algorithm
    of its own shape declares only what it reads and ``num_steps``, and a config of it
    is read without the skeleton's minibatch checks."""
    from dataclasses import dataclass

    from nnxrl.algos import registry

    @dataclass(frozen=True)
    class Plain:
        num_steps: int = nnxrl.setting(1, "Env steps per env of an update.", low=1)
        tau: float = nnxrl.setting(0.005, "Polyak step.", low=0, high=1, traced=True)

    with pytest.raises(TypeError, match="Plain must subclass nnxrl.OnPolicySettings"):
        nnxrl.register_algorithm("plain", Plain, nnxrl.actor_critic(lambda *a: None))

    @dataclass(frozen=True)
    class NoSteps:
        tau: float = nnxrl.setting(0.005, "Polyak step.")

    with pytest.raises(TypeError, match="NoSteps lacks num_steps"):
        nnxrl.register_algorithm("nosteps", NoSteps, lambda *a, **k: None)
    monkeypatch.setattr(registry, "_ALGORITHMS", dict(registry._ALGORITHMS))
    nnxrl.register_algorithm("plain", Plain, lambda *a, **k: None, head="q")
    config = nnxrl.config_from_dict(
        {"algo": "plain", "env": {"id": "CartPole-v1", "num_envs": 3}, "plain": {"tau": 0.01}}
    )
    assert config.plain == Plain(tau=0.01)
    assert [k for k in nnxrl.config.traced_keys(config) if k.startswith("plain.")] == ["plain.tau"]


HEAD = ["--plugin", "examples/custom_head.py"]


def test_a_head_of_ones_own_is_trained_and_evaluated_without_editing_the_core(tmp_path):
    """examples/custom_head.py registers a head (Boltzmann exploration on a Q-network)
    and PQN acting through it; trained from YAML, a GRU network included (the head
    builds what ``q`` builds), then evaluated: eval acts through the head, sampled
    and greedy, and refuses --epsilon, which the head does not take."""
    out = tmp_path / "boltzmann"
    overrides = ["total_env_steps=2048", "logging.backends=[]", "network.kind=gru"]
    overrides += ["pqn_boltzmann.num_minibatches=4", "fast_compile=true"]
    args = HEAD + ["train", "examples/boltzmann-cartpole.yaml", "--out", str(out)]
    assert cli(args + sum((["--set", s] for s in overrides), [])) == 0
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert records and "stats/epsilon" not in records[0]  # its own metrics, not PQN's
    assert all(np.isfinite(r["loss/total"]) for r in records)
    for how in ([], ["--greedy"]):
        report = tmp_path / f"eval{len(how)}.json"
        assert cli(HEAD + ["eval", str(out), "--episodes", "2", "--json", str(report), *how]) == 0
        assert json.loads(report.read_text())["actions"] == (
            "greedy" if how else "Boltzmann (T=0.5)"
        )
    assert cli(HEAD + ["eval", str(out), "--episodes", "2", "--epsilon", "0.1"]) == 2


def test_an_algorithms_hyperparams_type_is_made_once_at_registration_and_found_by_name():
    """The registry makes each algorithm's Hyperparams type when it registers it; a
    saved program's pickled structure finds that type by name (a plugin's too)."""
    import pickle

    from nnxrl.algos import hyperparams
    from nnxrl.algos.registry import algorithm

    example("custom_algorithm")  # registers a2c, a second time is the newest
    example("custom_algorithm")
    for name, type_name in (("ppo", "PPOHyperparams"), ("a2c", "A2CHyperparams")):
        made = algorithm(name).hyperparams
        assert getattr(hyperparams, type_name) is made and made.__name__ == type_name
        value = made(*range(len(made._fields)))
        assert type(pickle.loads(pickle.dumps(value))) is made
