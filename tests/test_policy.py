"""Saved policies (nnxrl.agent.policy), without training: a policy acts by its head (an
actor-critic samples, a Q-network is epsilon-greedy), and saving then loading gives
the same actions, also from a policy.yaml written before heads were recorded."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from flax import nnx

from nnxrl import config as config_lib
from nnxrl.agent.policy import load_policy, policy_of, save_policy
from nnxrl.envs import env_spec
from nnxrl.networks import build_network

SMALL = ["network.width=8", "num_seeds=2"]


def fresh_policy(algo: str):
    config = config_lib.from_dict({"algo": algo}, SMALL)
    head = "q" if algo == "pqn" else "actor_critic"
    keys = jax.random.split(jax.random.key(0), config.num_seeds)
    spec = env_spec(config.env)

    def params(key):
        return nnx.split(build_network(config.network, spec, 1, key, head))[1]

    return policy_of(config, jax.vmap(params)(keys))


@pytest.mark.parametrize("algo, head", [("ppo", "actor_critic"), ("pqn", "q")])
def test_a_saved_policy_acts_as_before(tmp_path, algo, head):
    policy = fresh_policy(algo)
    assert (policy.algo, policy.head) == (algo, head)
    obs = jax.random.normal(jax.random.key(1), (16, 4))
    before, _ = policy.act(obs, jax.random.key(2), seed=1, greedy=True)
    loaded = load_policy(save_policy(tmp_path / "policy", policy))
    assert (loaded.head, loaded.num_seeds) == (head, 2)
    after, _ = loaded.act(obs, jax.random.key(2), seed=1, greedy=True)
    np.testing.assert_array_equal(before, after)


def test_a_q_policy_explores_with_its_epsilon():
    policy = fresh_policy("pqn")
    obs = jnp.zeros((2000, 4))
    greedy, _ = policy.act(obs, jax.random.key(0))
    assert len(np.unique(greedy)) == 1  # epsilon 0: always the argmax
    explore, _ = dataclasses.replace(policy, epsilon=0.5).act(obs, jax.random.key(0))
    assert 0.15 < np.mean(explore != greedy) < 0.35  # half random, half of those differ


def test_a_policy_saved_before_heads_were_recorded_acts_by_its_algorithm(tmp_path):
    directory = save_policy(tmp_path / "policy", fresh_policy("pqn"))
    spec = yaml.safe_load((directory / "policy.yaml").read_text())
    del spec["head"]
    (directory / "policy.yaml").write_text(yaml.safe_dump(spec))
    assert load_policy(directory).head == "q"
