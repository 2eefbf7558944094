"""SAC's own parts: each of its three losses reaches only its own parameters, the
temperature moves toward the entropy target, actions stay within the env's bounds,
and what SAC cannot take is refused by name. Exact resume is in test_checkpoint.py,
learning in test_learning.py; the run below covers an add-on, a sweep, PBT, eval and
export in one go."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nnxrl import config as config_lib
from nnxrl.algos.replay import Stored
from nnxrl.algos.sac import sac_loss
from nnxrl.cli import main
from nnxrl.envs import make_env
from nnxrl.run.algorithms import hyperparams_from, make_algorithm

PENDULUM = "configs/sac-pendulum.yaml"
TINY = ["network.width=16", "sac.batch_size=8"]


@pytest.fixture(scope="module")
def sac():
    """SAC's static parts, a fresh run state and its hyperparameters on Pendulum, and
    a batch of made-up transitions of the stored shapes."""
    config = config_lib.load(PENDULUM, TINY)
    algo = make_algorithm(config, make_env(config.env))
    s = algo.update.keywords["s"]
    state = algo.init(jax.random.key(0))
    key = jax.random.key(1)
    obs = jax.random.normal(key, (8, 1, 3))
    sample = Stored(
        obs=obs,
        action=jnp.clip(jax.random.normal(key, (8, 1, 1)), -2, 2),
        reward=-jnp.ones((8, 1, 1)),
        terminated=jnp.zeros((8, 1), bool),
        truncated=jnp.zeros((8, 1), bool),
        next_obs=obs[::-1],
        next_legal=(),
    )
    return s, state, hyperparams_from(config), sample


def parts(grads: nnx.State) -> dict[str, float]:
    """The gradient's size in each part of SAC's network."""
    flat = dict(nnx.to_flat_state(grads))
    sizes = {"actor": 0.0, "critics": 0.0, "log_alpha": 0.0}
    for path, leaf in flat.items():
        part = "actor" if path[0] in ("actor", "actor_encoder", "policy") else path[0]
        sizes[part] += float(jnp.abs(leaf[...]).sum())
    return sizes


def test_each_of_sacs_three_losses_moves_only_its_own_parameters(sac):
    """The critics' regression reaches only the critics (the actor's next actions and
    alpha are constants in it), the actor's objective only the actor (the critics it
    climbs are frozen), and the temperature's only log alpha."""
    s, state, hp, sample = sac
    owner = {"loss/critic": "critics", "loss/actor": "actor", "loss/alpha": "log_alpha"}

    def terms(params):
        _, metrics = sac_loss(params, state.memory.target, sample, jax.random.key(2), hp, s)
        return {term: metrics[term] for term in owner}

    gradients = jax.jacrev(terms)(state.params)  # each term's gradient, one compile
    for term, own in owner.items():
        sizes = parts(gradients[term])
        assert sizes[own] > 0, (term, sizes)
        assert all(v == 0 for part, v in sizes.items() if part != own), (term, sizes)


def test_the_temperature_falls_when_the_policy_is_more_random_than_its_target(sac):
    """d loss / d log alpha = -alpha (log pi + H): positive (alpha falls) when the
    policy's entropy exceeds the target H, negative when it falls short."""
    s, state, hp, sample = sac

    def alpha_gradient(per_dim: float) -> float:
        h = hp._replace(target_entropy_per_dim=jnp.float32(per_dim))
        loss = lambda p: sac_loss(p, state.memory.target, sample, jax.random.key(2), h, s)[0]  # noqa: E731
        return float(jax.grad(loss)(state.params)["log_alpha"][...])

    assert alpha_gradient(-10.0) > 0 > alpha_gradient(10.0)


def test_actions_stay_within_the_envs_bounds_and_reach_its_edges(sac):
    s, state, _, _ = sac
    model = nnx.merge(s.graphdef, state.params)
    obs = jax.random.normal(jax.random.key(3), (4096, 3))
    wide = model.distribution(obs)._replace(log_std=jnp.full((4096, 1), 2.0))
    action, log_prob = wide.sample_and_log_prob(jax.random.key(4))
    assert float(action.min()) >= -2.0 and float(action.max()) <= 2.0
    assert float(action.min()) < -1.9 and float(action.max()) > 1.9
    # the log-probability from u agrees with that from atanh(a) where a is not
    # saturated; at the edges atanh of the rounded action loses it (hence from u)
    inside = np.abs(np.asarray(action[:, 0])) < 0.99 * 2.0
    np.testing.assert_allclose(
        log_prob[inside], wide.log_prob(action)[inside], rtol=1e-3, atol=1e-3
    )
    assert np.abs(np.asarray(log_prob - wide.log_prob(action)))[~inside].max() > 1.0


def test_sac_refuses_discrete_actions_recurrent_networks_and_a_gaussian_of_ppos_shape():
    with pytest.raises(config_lib.ConfigError, match="algo: sac needs continuous actions"):
        config_lib.check_parts(config_lib.load(PENDULUM, ["env.id=CartPole-v1"]))
    with pytest.raises(config_lib.ConfigError, match="network.kind: 'gru' is recurrent, and sac"):
        config_lib.load(PENDULUM, ["network.kind=gru"])
    with pytest.raises(config_lib.ConfigError, match="network.squash: set, but algo: sac"):
        config_lib.check_parts(config_lib.load(PENDULUM, ["network.squash=tanh"]))


def test_sac_runs_an_addon_a_sweep_and_pbt_in_one_program_then_evaluates_and_exports(
    tmp_path, capsys
):
    """The shipped PBT config of SAC's learning rate and entropy target, at a tiny
    size, with RND's bonus in a second reward stream: every member trains from replay,
    members copy donors, and the result evaluates and exports as a policy."""
    out = tmp_path / "run"
    overrides = [
        *TINY,
        "total_env_steps=1200",
        "env.num_envs=2",
        "sac.num_steps=4",
        "sac.learning_starts=32",
        "logging.backends=[]",
        "logging.updates_per_chunk=10",
        "sweep.pbt={interval: 50, fraction: 0.5}",
        "intrinsic.addon=rnd",
        "intrinsic.mode=value_head",
        "intrinsic.options={output_size: 8, width: 16}",
        "fast_compile=true",
    ]
    args = ["train", "configs/pbt-sac-pendulum.yaml", "--out", str(out)]
    assert main(args + sum((["--set", s] for s in overrides), [])) == 0
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    members = {(r["setting"], r["seed"]) for r in records}
    assert len(members) == 9 * 2, members  # the 3 x 3 grid, 2 seeds
    assert all(r["intrinsic/rnd_error"] > 0 for r in records)
    last = [r for r in records if r["update"] == max(x["update"] for x in records)]
    assert all(r["stats/gradient_steps"] > 0 and np.isfinite(r["loss/total"]) for r in last)
    assert any(r["pbt/donor"] >= 0 for r in records)
    capsys.readouterr()
    assert main(["eval", str(out), "--setting", "4", "--episodes", "2", "--greedy"]) == 0
    assert "(sweep setting 4): 2 episodes per seed, greedy actions" in capsys.readouterr().out
    assert main(["export", str(out), "--setting", "4", "--out", str(tmp_path / "policy")]) == 0
    from nnxrl.agent.policy import load_policy

    policy = load_policy(tmp_path / "policy")
    action, _ = policy.act(jnp.zeros((5, 3)), jax.random.key(0))
    assert action.shape == (5, 1) and float(jnp.abs(action).max()) <= 2.0
