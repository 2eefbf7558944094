"""PQN: the epsilon schedule, Q-networks, config checks, every add-on under PQN,
evaluation, rendering and export of PQN runs."""

import json
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cli_runs import TINY_PQN_CARTPOLE, TINY_PQN_CRAFTAX, train
from flax import nnx

from nnxrl import config as config_lib
from nnxrl.agent.policy import load_policy
from nnxrl.algos.pqn import exploration_epsilon
from nnxrl.cli import main
from nnxrl.config import ConfigError, NetworkConfig, schedule
from nnxrl.envs import env_spec
from nnxrl.networks import build_network, greedy_values
from nnxrl.run.algorithms import hyperparams_from

PQN_CARTPOLE = "configs/pqn-cartpole.yaml"


def test_epsilon_hits_its_finish_exactly_at_the_configured_update_and_stays():
    config = config_lib.load(PQN_CARTPOLE, ["pqn.epsilon_decay_fraction=0.25"])
    hp = hyperparams_from(config)
    num_updates = 48  # 0.25 * 48 = update 12
    eps = jax.jit(jax.vmap(lambda u: exploration_epsilon(u, hp, num_updates)))(jnp.arange(60))
    eps = np.asarray(eps)
    assert eps[0] == np.float32(config.pqn.epsilon_start)
    assert np.all(np.diff(eps[:13]) < 0)  # strictly falling until then
    assert eps[12] == np.float32(config.pqn.epsilon_finish)  # exactly, not approximately
    assert np.all(eps[12:] == np.float32(config.pqn.epsilon_finish))
    halfway = (config.pqn.epsilon_start + config.pqn.epsilon_finish) / 2
    np.testing.assert_allclose(eps[6], halfway, rtol=1e-6)  # linear
    # a fraction of 0: the finish value from the first update
    flat = exploration_epsilon(jnp.int32(0), hp._replace(epsilon_decay_fraction=0.0), num_updates)
    assert flat == np.float32(config.pqn.epsilon_finish)


def q_network(kind="feedforward", layer_norm=None, num_values=1, obs_id="CartPole-v1"):
    spec = env_spec(config_lib.EnvConfig(id=obs_id))
    cfg = NetworkConfig(kind=kind, num_layers=2, width=16, layer_norm=layer_norm)
    return build_network(cfg, spec, num_values, jax.random.key(0), "q"), spec


def test_q_networks_have_layer_norm_unless_switched_off_and_one_row_per_stream():
    with_norm, spec = q_network()
    without, _ = q_network(layer_norm=False)
    count = lambda m: sum(x.size for x in jax.tree.leaves(nnx.state(m, nnx.Param)))  # noqa: E731
    assert count(with_norm) - count(without) == 2 * 2 * 16  # scale and bias of 2 layers
    two, _ = q_network(num_values=2)
    obs = jnp.ones((5, *spec.obs_shape))
    hidden, q = two.step(two.initial_hidden(5), obs, jnp.zeros(5, bool))
    assert q.shape == (5, 2, spec.num_actions)
    # each stream's value at the action chosen on the weighted sum of the streams
    weights = jnp.array([1.0, 0.5])
    best = jnp.argmax(q[:, 0] + 0.5 * q[:, 1], axis=-1)
    expected = jnp.take_along_axis(q, best[:, None, None].repeat(2, 1), axis=-1)[..., 0]
    np.testing.assert_allclose(greedy_values(q, weights), expected)
    # PPO keeps its plain networks unless asked
    ppo = build_network(NetworkConfig(width=16), spec, 1, jax.random.key(0), "actor_critic")
    assert not any("norms" in str(p) for p, _ in nnx.to_flat_state(nnx.state(ppo)))


def test_pqn_settings_are_checked_with_named_errors():
    with pytest.raises(ConfigError, match="algo"):
        config_lib.load(PQN_CARTPOLE, ["algo=dqn"])
    with pytest.raises(ConfigError, match="pqn.num_minibatches: 7 does not divide"):
        config_lib.load(PQN_CARTPOLE, ["pqn.num_minibatches=7"])
    with pytest.raises(ConfigError, match="pqn.optimizer"):
        config_lib.load(PQN_CARTPOLE, ["pqn.optimizer=sgd"])
    with pytest.raises(ConfigError, match="pqn.epsilon_finish"):
        config_lib.load(PQN_CARTPOLE, ["pqn.epsilon_finish=1.5"])
    with pytest.raises(ConfigError, match="pqn.q_lambda"):
        config_lib.load(PQN_CARTPOLE, ["pqn.q_lambda=-0.1"])
    # a section for the algorithm not chosen would be ignored: refused, naming its keys
    # and where they would go
    refused = r"ppo.num_steps, ppo.lr: a section for algo 'ppo', but algo is 'pqn'"
    with pytest.raises(ConfigError, match=refused + r".*pqn.\* \(pqn.num_steps, pqn.learning"):
        config_lib.load(PQN_CARTPOLE, ["ppo.num_steps=32", "ppo.lr=1e-3"])
    with pytest.raises(ConfigError, match=r"pqn.q_lambda: a section for algo 'pqn', but algo is"):
        config_lib.load("configs/ppo-cartpole.yaml", ["pqn.q_lambda=0.5"])
    with pytest.raises(ConfigError, match=r"ppo.num_steps, .*, \.\.\.: a section.*or set algo"):
        config_lib.load("configs/ppo-cartpole.yaml", ["algo=pqn"])
    config = config_lib.load(PQN_CARTPOLE)
    assert schedule.batch_size(config) == 32 * 64 and schedule.num_updates(config) == 244


METRICS = {
    "icm": "intrinsic/icm_forward_loss",
    "e3b": "intrinsic/e3b_bonus_mean",
    "rnd": "intrinsic/rnd_loss",
}


# every add-on in every mode on CartPole; on Craftax one (a minute of compiling each),
# as every add-on meets Craftax's observations under PPO (test_intrinsic.py) and sees
# the same shapes under PQN
ADDON_CASES = [("gymnax", a, m) for a in METRICS for m in ("reward", "value_head")] + [
    ("craftax", "e3b", "value_head"),
]


@pytest.mark.parametrize(("env", "addon", "mode"), ADDON_CASES)
def test_every_addon_in_every_mode_runs_under_pqn_through_the_cli(tmp_path, env, addon, mode):
    if env == "craftax":
        config, overrides = "configs/pqn-craftax-classic-symbolic.yaml", TINY_PQN_CRAFTAX
    else:
        config, overrides = PQN_CARTPOLE, TINY_PQN_CARTPOLE
    addon_settings = [f"intrinsic.addon={addon}", f"intrinsic.mode={mode}"]
    addon_settings += ["intrinsic.num_epochs=1", "intrinsic.intrinsic_adv_coef=0.5"]
    records = train(tmp_path, config, overrides + addon_settings)
    assert [r["update"] for r in records] == [1, 2]
    for r in records:
        assert np.isfinite(r[METRICS[addon]]) and np.isfinite(r["loss/td"])
        assert r["reward/intrinsic"] > 0
        assert r["stats/epsilon"] > 0
    assert ("loss/td_intrinsic" in records[-1]) == (mode == "value_head")
    if mode == "value_head":
        assert np.isfinite(records[-1]["loss/td_intrinsic"])
    policy = load_policy(tmp_path / "policy")
    assert policy.algo == "pqn" and policy.num_values == (2 if mode == "value_head" else 1)
    assert policy.stream_weights == ((1.0, 0.5) if mode == "value_head" else (1.0,))


@pytest.fixture(scope="module")
def pqn_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("pqn") / "run"
    train(out, PQN_CARTPOLE, TINY_PQN_CARTPOLE + ["num_seeds=2", "network.kind=gru"])
    return out


def test_eval_render_and_export_act_greedily_on_a_pqn_run(pqn_run, tmp_path, capsys):
    report = tmp_path / "eval.json"
    assert play("eval", pqn_run, "--episodes", "3", "--json", str(report)) == 0
    data = json.loads(report.read_text())
    assert data["algo"] == "pqn" and data["actions"] == "greedy"
    assert len(data["seeds"]) == 2 and all(s["episodes"] == 3 for s in data["seeds"])
    # greedy is the default: the same episodes with or without --greedy
    again = tmp_path / "greedy.json"
    assert play("eval", pqn_run, "--episodes", "3", "--greedy", "--json", str(again)) == 0
    assert json.loads(again.read_text())["seeds"] == data["seeds"]
    explore = tmp_path / "explore.json"
    assert play("eval", pqn_run, "--episodes", "3", "--epsilon", "1", "--json", str(explore)) == 0
    assert json.loads(explore.read_text())["actions"] == "epsilon-greedy (epsilon=1)"
    assert json.loads(explore.read_text())["greedy"] is False
    capsys.readouterr()
    both = ["--episodes", "3", "--greedy", "--epsilon", "0.05", "--json", str(explore)]
    assert play("eval", pqn_run, *both) == 0  # an option that does nothing is named
    assert "--epsilon 0.05 is ignored: --greedy acts greedily" in capsys.readouterr().err
    assert json.loads(explore.read_text())["greedy"] is True
    gif = tmp_path / "episode.gif"
    assert play("render", pqn_run, "--seed", "1", "--out", str(gif)) == 0
    assert gif.stat().st_size > 0
    exported = tmp_path / "policy"
    assert main(["export", str(pqn_run), "--out", str(exported)]) == 0
    policy = load_policy(exported)
    assert policy.algo == "pqn" and policy.network.kind == "gru"
    obs = jnp.zeros((4, 4))
    actions, hidden = policy.act(obs, jax.random.key(0), seed=1)
    greedy, _ = policy.act(obs, jax.random.key(0), seed=1, greedy=True)
    np.testing.assert_array_equal(actions, greedy)  # epsilon 0: sampling is greedy
    assert hidden.shape == (4, 32)
    uniform = replace(policy, epsilon=1.0)
    draws = np.concatenate([np.asarray(uniform.act(obs, jax.random.key(k))[0]) for k in range(50)])
    assert set(draws.tolist()) == {0, 1}  # epsilon 1: every action turns up


def play(command: str, run, *options: str) -> int:
    """``nnxrl eval`` or ``render`` of ``run``, compiled fast as the tiny run's programs were."""
    return main([command, str(run), *options, "--fast-compile"])


def test_epsilon_is_refused_for_a_ppo_policy(tmp_path, capsys):
    from cli_runs import TINY_CARTPOLE

    train(tmp_path, "configs/ppo-cartpole.yaml", TINY_CARTPOLE)
    assert main(["eval", str(tmp_path), "--epsilon", "0.1"]) == 2
    err = capsys.readouterr().err
    assert "--epsilon" in err and "ppo policy" in err
