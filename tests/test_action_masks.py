"""Action masks end to end: an env whose mask allows one action per step (drawn at
random, and not in the observation) is played legally by PPO and PQN in training, in
eval and in render, and by a saved policy; without the mask the same policy is not."""

from __future__ import annotations

import importlib.util
import sys
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import nnxrl
from nnxrl.envs import from_single, register_env

ROOT = Path(__file__).parents[1]
NUM_ACTIONS, EPISODE = 4, 8
ENV_ID = "OneLegalAction-v0"


def one_legal_action(num_envs: int):
    """Each step one of 4 actions is legal (a fresh one each step); a legal action pays
    1, an illegal one 0 and counts in the episode's ``illegal``; 8 steps an episode."""

    def draw(key):
        return {
            "legal": jax.random.randint(key, (), 0, NUM_ACTIONS),
            "obs": jax.random.uniform(key, (2, 2)),  # a grid, so that render draws it
        }

    def reset_one(key):
        state = {**draw(key), "t": jnp.int32(0), "illegal": jnp.int32(0)}
        return state["obs"], state

    def step_one(key, state, action):
        legal = action == state["legal"]
        state = {**draw(key), "t": state["t"] + 1, "illegal": state["illegal"] + ~legal}
        return state["obs"], state, legal.astype(jnp.float32), False, state["t"] >= EPISODE

    return from_single(
        ENV_ID,
        reset_one,
        step_one,
        (2, 2),
        NUM_ACTIONS,
        num_envs,
        action_mask_one=lambda state: jnp.arange(NUM_ACTIONS) == state["legal"],
        episode_info_one=lambda state: {"illegal": state["illegal"]},
    )


register_env(ENV_ID, one_legal_action)

TINY = [
    "fast_compile=true",
    f"env.id={ENV_ID}",
    "env.num_envs=8",
    "total_env_steps=1024",
    "num_seeds=2",
    "network.width=16",
    "logging.backends=[]",
]


@pytest.fixture(scope="module", params=["ppo", "pqn", "ppo-gru", "pqn-gru", "dqn"])
def trained(request, tmp_path_factory) -> tuple[str, nnxrl.RunResult]:
    """A tiny run of PPO or PQN, feed-forward or recurrent (whose rollouts and losses
    take another path: sequences, and the truncation bootstrap inside the scan), or of
    DQN, learning from its replay buffer within the run."""
    algo, _, kind = request.param.partition("-")
    overrides = [*TINY, f"network.kind={kind or 'feedforward'}", f"{algo}.num_minibatches=2"]
    if algo == "dqn":
        overrides[-1:] = ["dqn.num_steps=4", "dqn.learning_starts=64", "dqn.batch_size=16"]
    config = nnxrl.load_config(ROOT / f"configs/{algo}-cartpole.yaml", overrides)
    return request.param, nnxrl.train(config, tmp_path_factory.mktemp(request.param) / "run")


def test_training_takes_only_legal_actions(trained):
    algo, result = trained
    # a reward of 1 per step is a legal action at every step of every env
    np.testing.assert_array_equal(result.metrics["reward/extrinsic"], 1.0)
    illegal = result.metrics["episode_illegal"]
    assert np.isfinite(illegal).any(), "episodes must end for their counts to be seen"
    assert np.nanmax(illegal) == 0
    assert np.isfinite(result.metrics["loss/total"]).all()


def test_eval_and_render_take_only_legal_actions(trained, tmp_path):
    algo, result = trained
    policy = nnxrl.load_policy(result.out_dir / "policy")
    for greedy in (False, True):
        evaluation = nnxrl.evaluate(policy, episodes=6, greedy=greedy)
        for row in evaluation.seeds:
            assert row["returns"] == [float(EPISODE)] * 6, (algo, greedy, row)
    episode = nnxrl.render(policy, 1, tmp_path / "episode.gif", jax.random.key(3))
    assert episode["return"] == EPISODE and (tmp_path / "episode.gif").stat().st_size > 0


def test_a_saved_policy_acts_within_the_mask_and_not_without_it(trained):
    algo, result = trained
    policy = nnxrl.load_policy(result.out_dir / "policy")
    env = nnxrl.make_env(policy.env)
    obs, state = env.reset(jax.random.key(5))
    legal = env.action_mask(state)
    allowed = np.argmax(np.asarray(legal), axis=-1)
    key = jax.random.key(6)
    for greedy in (False, True):
        masked, _ = policy.act(obs, key, seed=0, greedy=greedy, action_mask=legal)
        np.testing.assert_array_equal(masked, allowed)
    # the mask is what makes them legal: a sampled action over all 4 often is not
    keys = jax.random.split(key, 8)
    unmasked = np.stack([policy.act(obs, k, seed=0)[0] for k in keys])
    assert (unmasked != allowed).any()


def test_a_custom_actor_critic_loss_sees_the_policy_restricted_to_legal_actions():
    """examples/custom_algorithm.py's A2C, on the env whose mask allows one action a
    step: its loss's log-probabilities are the masked distribution's (the one legal
    action has probability 1, log 0), as the rollout's were; the same loss over all
    four actions would put the policy term near log 4."""
    from nnxrl.algos.on_policy import collect_rollout

    path = ROOT / "examples/custom_algorithm.py"
    spec = importlib.util.spec_from_file_location("a2c_example", path)
    sys.modules[spec.name] = module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # registers a2c
    overrides = [f"env.id={ENV_ID}", "env.num_envs=8", "network.width=16", "a2c.num_steps=8"]
    config = nnxrl.load_config(ROOT / "examples/a2c-cartpole.yaml", overrides)
    agent = nnxrl.make_algorithm(config, nnxrl.make_env(config.env))
    s, hp = agent.update.keywords["s"], nnxrl.hyperparams_from(config)
    state = jax.jit(agent.init)(jax.random.key(0))
    _, trajectory, last_value, _ = jax.jit(partial(collect_rollout, plan=None, s=s))(state)
    batch = s.pieces.prepare(trajectory, jnp.zeros_like(trajectory.reward), last_value, hp, s)
    np.testing.assert_allclose(batch.log_prob, 0.0, atol=1e-5)  # the rollout's, masked
    dist, _ = nnxrl.policy_and_value(state.params, batch, s)
    np.testing.assert_allclose(dist.log_prob(batch.action), batch.log_prob, atol=1e-5)
    policy_only = hp._replace(vf_coef=0.0, ent_coef=0.0)
    batch = batch._replace(advantage=jnp.ones_like(batch.advantage))
    _, metrics = s.pieces.loss(state.params, batch, policy_only, s)
    assert abs(float(metrics["loss/policy"])) < 1e-5
    _, unmasked = s.pieces.loss(state.params, batch._replace(legal=None), policy_only, s)
    assert float(unmasked["loss/policy"]) > 1.0  # about log 4 at a fresh policy
