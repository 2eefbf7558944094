"""The settings each algorithm is built from: plain frozen data, read and checked
by the config layer (``nnxrl.config`` holds them as the ``ppo`` and ``pqn``
sections), and passed to ``make_ppo`` / ``make_pqn`` with the facts of the run
they need (``RunFacts``) and how an add-on's bonus enters (``RewardStreams``).
Nothing here imports JAX or the host side."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nnxrl.schema import setting


@dataclass(frozen=True)
class RunFacts:
    """What an algorithm needs to know about the run around it."""

    num_updates: int  # of the whole run: the learning-rate schedule, PQN's epsilon decay
    return_window: int = 100  # episodes in the rolling return (logging.return_window)
    shuffle_groups: int = 1  # blocks of envs shuffled apart: one per env shard of a mesh


@dataclass(frozen=True)
class RewardStreams:
    """How an intrinsic bonus b enters (``intrinsic.mode``): one stream, r + c b, or
    two, r and c b, each with its own critic output (PPO) or row of Qs (PQN), its own
    discount and (the intrinsic one, optionally) no cut at episode ends. The
    coefficients are traced (they enter through the hyperparameters)."""

    count: int = 1  # K: 1, or 2 with an intrinsic value head
    intrinsic_episodic: bool = False  # the intrinsic stream's returns cut at episode ends
    reward_coef: float = 1.0  # c
    gamma: float = 0.99  # the intrinsic stream's discount
    extrinsic_coef: float = 1.0  # weights of the streams' advantages (PQN: of their Qs)
    intrinsic_coef: float = 0.01

    @property
    def episodic(self) -> tuple[bool, ...]:
        """Per stream: whether its returns cut at episode ends."""
        return (True, self.intrinsic_episodic)[: self.count]


@dataclass(frozen=True)
class OnPolicySettings:
    """The on-policy skeleton's settings (``algos/on_policy.py``), which every on-policy
    algorithm's section holds: the rollout, the epochs of minibatch steps, the one
    optimiser (``optim.py``) and the normalisation of observations and rewards. An
    algorithm's settings subclass this and declare only what is their own, or a
    default they change (PPO's are these; A2C's: 16 steps, one epoch, one minibatch).
    The traced ``learning_rate`` and ``max_grad_norm`` enter the program as values."""

    num_steps: int = setting(128, "Rollout length per env per update.", low=1)
    num_epochs: int = setting(4, "Passes over each rollout batch.", low=1, high=1000)
    num_minibatches: int = setting(4, "Minibatches per epoch.", low=1)
    learning_rate: float = setting(
        2.5e-4,
        "Optimiser step size (start of the schedule).",
        low=0,
        low_open=True,
        traced=True,
    )
    anneal_lr: bool = setting(
        True, "Anneal the step size linearly to exactly zero on the last optimiser step."
    )
    optimizer: Literal["adam", "radam"] = setting(
        "adam", "Update direction after the gradient clip: Adam or RAdam."
    )
    adam_eps: float = setting(1e-5, "(R)Adam epsilon.", low=0, low_open=True)
    max_grad_norm: float = setting(
        0.5, "Global gradient-norm clip.", low=0, low_open=True, traced=True
    )
    normalize_obs: bool = setting(
        False,
        "Standardise observations with their running mean and variance (kept in the run "
        "state, exported with the policy).",
    )
    normalize_reward: bool = setting(
        False, "Scale rewards by the running std of each env's discounted return."
    )
    obs_clip: float = setting(
        10.0, "normalize_obs: clip standardised observations to +-this.", low=0, low_open=True
    )
    reward_clip: float = setting(
        10.0, "normalize_reward: clip scaled rewards to +-this.", low=0, low_open=True
    )


@dataclass(frozen=True)
class PPOSettings(OnPolicySettings):
    """PPO's settings (the ``ppo`` section of a config): the skeleton's, at its
    defaults, and PPO's own."""

    gamma: float = setting(0.99, "Discount factor.", low=0, high=1, traced=True)
    gae_lambda: float = setting(0.95, "GAE lambda.", low=0, high=1, traced=True)
    clip_eps: float = setting(0.2, "Policy-ratio clip epsilon.", low=0, traced=True)
    clip_value: bool = setting(True, "Clip the value loss around the rollout's values.")
    value_clip_eps: float = setting(
        0.2, "Value clip range (used when clip_value).", low=0, traced=True
    )
    ent_coef: float = setting(0.01, "Entropy bonus coefficient.", low=0, traced=True)
    vf_coef: float = setting(0.5, "Value loss coefficient.", low=0, traced=True)
    advantage_normalization: Literal["minibatch", "batch", "none"] = setting(
        "minibatch", "Where advantages are normalised to zero mean, unit std."
    )


@dataclass(frozen=True)
class PQNSettings(OnPolicySettings):
    """PQN's settings (the ``pqn`` section of a config): the skeleton's, with the
    defaults PQN changes, and PQN's own."""

    num_steps: int = setting(64, "Rollout length per env per update.", low=1)
    num_minibatches: int = setting(16, "Minibatches per epoch.", low=1)
    learning_rate: float = setting(
        1e-4,
        "Optimiser step size (start of the schedule).",
        low=0,
        low_open=True,
        traced=True,
    )
    optimizer: Literal["adam", "radam"] = setting(
        "radam", "Update direction after the gradient clip: RAdam (the paper's) or Adam."
    )
    adam_eps: float = setting(1e-8, "(R)Adam epsilon.", low=0, low_open=True)
    max_grad_norm: float = setting(
        10.0, "Global gradient-norm clip.", low=0, low_open=True, traced=True
    )
    gamma: float = setting(0.99, "Discount factor.", low=0, high=1, traced=True)
    q_lambda: float = setting(
        0.95,
        "Q(lambda) trace: 0 gives one-step TD targets, 1 Monte-Carlo returns.",
        low=0,
        high=1,
        traced=True,
    )
    epsilon_start: float = setting(
        1.0, "Exploration: epsilon at the first update.", low=0, high=1, traced=True
    )
    epsilon_finish: float = setting(
        0.05,
        "Exploration: epsilon from the end of the decay on.",
        low=0,
        high=1,
        traced=True,
    )
    epsilon_decay_fraction: float = setting(
        0.2,
        "Fraction of the updates over which epsilon decays linearly from epsilon_start "
        "to epsilon_finish (0: epsilon_finish from the start).",
        low=0,
        high=1,
        traced=True,
    )
    loss: Literal["squared", "huber"] = setting(
        "squared", "Regression loss to the Q(lambda) targets: 0.5 (Q - G)^2 or Huber."
    )
    huber_delta: float = setting(
        1.0, "huber: where the loss turns linear.", low=0, low_open=True, traced=True
    )
    reward_scale: float = setting(
        1.0,
        "Multiplier of the extrinsic reward in the targets (not in the logged returns).",
        low=0,
        traced=True,
    )


@dataclass(frozen=True)
class OffPolicySettings:
    """The off-policy skeleton's settings (``algos/off_policy.py``), which DQN's and
    SAC's sections hold: each update every env takes ``num_steps`` steps into the
    replay buffer, then ``gradient_steps`` minibatches sampled from it each take one
    optimiser step and move the target network. The update-to-data ratio is
    gradient_steps / (num_steps x env.num_envs)."""

    num_steps: int = setting(1, "Env steps per env per update (then the gradient steps).", low=1)
    gradient_steps: int = setting(
        1, "Optimiser steps per update, each on a minibatch sampled from the buffer.", low=1
    )
    buffer_size: int = setting(
        100_000, "Replay capacity in transitions per seed (shared equally by the envs).", low=1
    )
    batch_size: int = setting(128, "Transitions per sampled minibatch.", low=1)
    learning_starts: int = setting(
        10_000,
        "Transitions per seed in the buffer before the first gradient step (the updates "
        "before it only act and store).",
        low=0,
    )
    learning_rate: float = setting(
        2.5e-4, "Adam step size (start of the schedule).", low=0, low_open=True, traced=True
    )
    anneal_lr: bool = setting(
        False, "Anneal the step size linearly to exactly zero on the last optimiser step."
    )
    adam_eps: float = setting(1e-8, "Adam epsilon.", low=0, low_open=True)
    max_grad_norm: float = setting(
        10.0, "Global gradient-norm clip.", low=0, low_open=True, traced=True
    )
    gamma: float = setting(0.99, "Discount factor.", low=0, high=1, traced=True)
    n_step: int = setting(
        1, "n of the n-step return each target sums before it bootstraps.", low=1, high=100
    )
    target_period: int = setting(
        500,
        "Gradient steps between target-network updates (1 with tau < 1: Polyak averaging "
        "after every step).",
        low=1,
    )
    tau: float = setting(
        1.0,
        "Target update: theta' <- tau theta + (1 - tau) theta' (1: a copy).",
        low=0,
        high=1,
        low_open=True,
        traced=True,
    )


@dataclass(frozen=True)
class DQNSettings(OffPolicySettings):
    """DQN's settings (the ``dqn`` section of a config): the skeleton's, at its
    defaults, and DQN's own."""

    double: bool = setting(
        True, "Double Q-learning: the online network picks the bootstrap action."
    )
    epsilon_start: float = setting(
        1.0, "Exploration: epsilon at the first update.", low=0, high=1, traced=True
    )
    epsilon_finish: float = setting(
        0.05, "Exploration: epsilon from the end of the decay on.", low=0, high=1, traced=True
    )
    epsilon_decay_fraction: float = setting(
        0.5,
        "Fraction of the updates over which epsilon decays linearly from epsilon_start "
        "to epsilon_finish.",
        low=0,
        high=1,
        traced=True,
    )
    loss: Literal["huber", "squared"] = setting(
        "huber", "Regression loss to the targets: Huber or 0.5 (Q - G)^2."
    )
    huber_delta: float = setting(
        1.0, "huber: where the loss turns linear.", low=0, low_open=True, traced=True
    )


@dataclass(frozen=True)
class SACSettings(OffPolicySettings):
    """SAC's settings (the ``sac`` section of a config): the skeleton's, with the
    defaults SAC changes (the paper's: Polyak targets after every step, tau 0.005,
    3e-4, batches of 256), and SAC's own."""

    buffer_size: int = setting(
        1_000_000, "Replay capacity in transitions per seed (shared equally by the envs).", low=1
    )
    batch_size: int = setting(256, "Transitions per sampled minibatch.", low=1)
    learning_starts: int = setting(
        5_000,
        "Transitions per seed in the buffer before the first gradient step (the updates "
        "before it only act and store).",
        low=0,
    )
    learning_rate: float = setting(
        3e-4,
        "Adam step size of the actor, the critics and the temperature (start of the schedule).",
        low=0,
        low_open=True,
        traced=True,
    )
    max_grad_norm: float = setting(
        100.0,
        "Gradient-norm clip, over the actor's, critics' and temperature's gradients "
        "together (one optimiser).",
        low=0,
        low_open=True,
        traced=True,
    )
    target_period: int = setting(
        1,
        "Gradient steps between target-critic updates (1 with tau < 1: Polyak averaging "
        "after every step).",
        low=1,
    )
    tau: float = setting(
        0.005,
        "Target update: theta' <- tau theta + (1 - tau) theta' (1: a copy).",
        low=0,
        high=1,
        low_open=True,
        traced=True,
    )
    target_entropy_per_dim: float = setting(
        -1.0,
        "The temperature holds the policy's entropy at this times the action dimension "
        "(-1: the paper's -dim(A)).",
        traced=True,
    )
