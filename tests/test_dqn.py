"""DQN's own parts, checked by hand-worked numbers: the n-step targets across episode
ends (a termination stops the sum and the bootstrap, a time limit only the sum, a
stream that is not episodic runs through), and the bootstrap's argmax, which never
picks an action that is illegal at the next observation. Training, masks in the
rollout, eval and exact resume are in test_action_masks.py and test_checkpoint.py."""

from __future__ import annotations

from types import SimpleNamespace

import jax.numpy as jnp
import numpy as np
import pytest

from nnxrl import config as config_lib
from nnxrl.algos.dqn import bootstrapped_targets
from nnxrl.algos.replay import Stored, n_step_targets

G = 0.9


def runs(terminated, truncated, rewards, next_legal=()) -> Stored:
    """Sampled runs [N, n] of one env's steps (observations unused)."""
    n = len(terminated[0])
    zeros = jnp.zeros((len(terminated), n, 1))
    return Stored(
        obs=zeros,
        action=jnp.zeros((len(terminated), n), jnp.int32),
        reward=jnp.asarray(rewards, jnp.float32),
        terminated=jnp.asarray(terminated),
        truncated=jnp.asarray(truncated),
        next_obs=zeros,
        next_legal=next_legal,
    )


def test_n_step_targets_stop_at_an_episodes_end_and_bootstrap_only_past_a_time_limit():
    no, yes = False, True
    sample = runs(
        terminated=[[no, no, no], [no, yes, no], [no, no, no]],
        truncated=[[no, no, no], [no, no, no], [no, yes, no]],
        rewards=[[[1, 10]] * 3] * 3,  # [N, n, K]: two streams
    )
    values = jnp.broadcast_to(jnp.asarray([[[5.0, 50.0], [6.0, 60.0], [7.0, 70.0]]]), (3, 3, 2))
    targets = np.asarray(n_step_targets(sample, values, jnp.asarray([G, G]), (True, False)))
    np.testing.assert_allclose(
        targets[:, 0],
        [1 + G + G**2 + G**3 * 7, 1 + G, 1 + G + G**2 * 6],  # full; terminated; truncated
        rtol=1e-6,
    )
    # the stream that is not episodic sums all three steps and bootstraps from the last
    np.testing.assert_allclose(targets[:, 1], 10 * (1 + G + G**2) + G**3 * 70, rtol=1e-6)


def test_the_bootstrap_never_picks_an_action_illegal_at_the_next_observation():
    q_online = jnp.asarray([[[[1.0, 9.0, 5.0, 2.0]]]])  # [N=1, n=1, K=1, A=4]
    q_target = jnp.asarray([[[[3.0, 100.0, 4.0, 8.0]]]])
    legal = jnp.asarray([[[True, False, True, True]]])  # action 1, best for both, is not
    sample = runs([[False]], [[False]], [[[0.0]]], next_legal=legal)
    hp = SimpleNamespace(extrinsic_coef=1.0, intrinsic_coef=0.0, gamma=G, intrinsic_gamma=G)
    # double: the online network picks 2 among the legal actions, the target values it
    # (4); without: the target picks and values its best legal action, 3 (8)
    for double, value in ((True, 4.0), (False, 8.0)):
        s = SimpleNamespace(settings=SimpleNamespace(double=double), num_streams=1)
        s.episodic = (True,)
        got = bootstrapped_targets(lambda obs: q_online, lambda obs: q_target, sample, hp, s)
        assert float(got[0, 0]) == pytest.approx(G * value), double


def test_dqn_takes_discrete_actions_and_feed_forward_networks_by_name():
    cartpole = config_lib.load("configs/dqn-cartpole.yaml")
    assert cartpole.dqn.double and cartpole.dqn.num_steps == 1
    with pytest.raises(config_lib.ConfigError, match="network.kind: 'gru' is recurrent, and dqn"):
        config_lib.load("configs/dqn-cartpole.yaml", ["network.kind=gru"])
    pendulum = config_lib.load("configs/dqn-cartpole.yaml", ["env.id=Pendulum-v1"])
    with pytest.raises(config_lib.ConfigError, match="algo: dqn picks actions by argmax"):
        config_lib.check_parts(pendulum)
