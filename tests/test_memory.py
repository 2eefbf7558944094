"""The memory kinds (gru, lstm, min_gru, transformer_xl) for both heads: ``unroll`` over a sequence
equals ``step`` one step at a time, an episode start forgets what came before, the
parallel scan equals a sequential one, the Transformer-XL sees exactly layers x M
steps back, and each kind trains, resumes, exports,
evaluates and renders through the CLI (resume exactness: test_checkpoint)."""

from __future__ import annotations

import json
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cli_runs import CARTPOLE, SHORT_CARTPOLE, train
from flax import nnx

from nnxrl.agent.policy import load_policy
from nnxrl.cli import main
from nnxrl.envs.base import EnvSpec
from nnxrl.networks.factory import build_network
from nnxrl.networks.gru import GRU, gru_scan, gru_step
from nnxrl.networks.lstm import LSTM, lstm_scan, lstm_step
from nnxrl.networks.min_gru import MinGRU, linear_recurrence
from nnxrl.networks.settings import NetworkSettings
from nnxrl.networks.transformer_xl import TransformerXL

KINDS = ["gru", "lstm", "min_gru", "transformer_xl"]
# a window shorter than the test sequences, so that slots leave it during an unroll
OPTIONS = {"transformer_xl": {"memory": 4}}
# each kind, and min_gru with its convolution (a window of 3 inputs, carried across steps)
CORES = {kind: (kind, OPTIONS.get(kind, {})) for kind in KINDS} | {
    "min_gru+conv": ("min_gru", {"conv": 3})
}
HEADS = ["actor_critic", "q"]
SPEC = EnvSpec(id="test", obs_shape=(5,), num_actions=3)
T, B = 9, 3


def network(core: str, head: str):
    kind, options = CORES[core]
    settings = NetworkSettings(
        kind=kind, width=16, num_layers=1, activation="relu", options=options
    )
    return build_network(settings, SPEC, 2, jax.random.key(0), head)


def outputs(head: str, results) -> list[jax.Array]:
    """The arrays a head gives (logits and values, or Qs), for comparing."""
    if head == "actor_critic":
        dist, value = results
        return [dist.logits, value]
    return [results]


def sequence(seed: int):
    rng = np.random.default_rng(seed)
    obs = jnp.asarray(rng.normal(size=(T, B, 5)), jnp.float32)
    start = jnp.asarray(rng.random((T, B)) < 0.25)
    return rng, obs, start


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("kind", CORES)
def test_unrolling_a_sequence_equals_stepping_through_it(kind, head):
    """The rollout acts with step(); the update re-runs unroll() from the stored
    hidden state: the same outputs, and the same state at the end."""
    net = network(kind, head)
    rng, obs, start = sequence(1)
    h0 = jnp.asarray(rng.normal(size=net.initial_hidden(B).shape), jnp.float32)

    def step(h, inputs):
        h_next, *out = net.step(h, *inputs)
        return h_next, outputs(head, out if len(out) > 1 else out[0])

    last, stepped = jax.jit(lambda h0: jax.lax.scan(step, h0, (obs, start)))(h0)
    unrolled = jax.jit(lambda h0: outputs(head, net.unroll(h0, obs, start)))(h0)
    for a, b in zip(unrolled, stepped, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    if hasattr(net.core, "acting_state"):  # stepping with the cached keys and values too
        acting = jax.jit(lambda h0: jax.lax.scan(step, net.acting_state(h0), (obs, start)))
        cached_last, cached = acting(h0)
        for a, b in zip(unrolled, cached, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(net.carried_state(cached_last), last, rtol=1e-5, atol=1e-5)
    embedded = jnp.zeros((T, B, 16)) + obs.sum(-1, keepdims=True)
    core = jax.jit(lambda h, x, s: net.core(h, x, s))  # compiled: eager ops are slow here
    core_last, _ = core(h0, embedded, start)
    h = h0
    for t in range(T):
        h, _ = core(h, embedded[t : t + 1], start[t : t + 1])
    np.testing.assert_allclose(core_last, h, rtol=1e-5, atol=1e-5)
    assert last.shape == h0.shape == (B, net.core.state_size)


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("kind", CORES)
def test_after_an_episode_start_nothing_before_it_matters(kind, head):
    net = network(kind, head)
    rng, obs, _ = sequence(2)
    k = 4
    start = jnp.zeros((T, B), bool).at[k].set(True)
    hidden = jnp.asarray(rng.normal(size=net.initial_hidden(B).shape), jnp.float32)
    unroll = jax.jit(lambda h, o: outputs(head, net.unroll(h, o, start)))
    before = unroll(hidden, obs)
    perturbed = obs.at[:k].add(jnp.asarray(rng.normal(size=(k, B, 5)), jnp.float32))
    after = unroll(hidden * 3.0, perturbed)
    for a, b in zip(before, after, strict=True):
        np.testing.assert_allclose(a[k:], b[k:], rtol=1e-5, atol=1e-5)
        assert not np.allclose(a[:k], b[:k])  # ...and before the start it did matter


def test_the_parallel_scan_equals_a_sequential_one():
    rng = np.random.default_rng(3)
    a = jnp.asarray(rng.uniform(0, 1, size=(37, 4, 8)), jnp.float32)
    b = jnp.asarray(rng.normal(size=(37, 4, 8)), jnp.float32)
    a = a.at[11].set(0.0)  # an episode start
    h0 = jnp.asarray(rng.normal(size=(4, 8)), jnp.float32)

    def step(h, inputs):
        a_t, b_t = inputs
        h = a_t * h + b_t
        return h, h

    _, sequential = jax.lax.scan(step, h0, (a, b))
    np.testing.assert_allclose(linear_recurrence(a, b, h0), sequential, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("scan", "step", "gates", "states"), [(gru_scan, gru_step, 3, 1), (lstm_scan, lstm_step, 4, 2)]
)
def test_the_hand_written_backprop_through_time_equals_jaxs(scan, step, gates, states):
    """The GRU's and the LSTM's gradients (gru.py, lstm.py) equal JAX's own through a
    scan of the same step, for U, the initial state and W x, with resets at the first
    step, mid-sequence, and at consecutive steps."""
    rng = np.random.default_rng(5)
    t, b, h = 7, 3, 4
    u = jnp.asarray(rng.normal(size=(h, gates * h)) / 2, jnp.float32)
    state = jnp.asarray(rng.normal(size=(b, states * h)), jnp.float32)
    wx = jnp.asarray(rng.normal(size=(t, b, gates * h)), jnp.float32)
    start = jnp.asarray(rng.random((t, b)) < 0.3).at[0].set([True, False, False])
    start = start.at[3:5, 1].set(True)
    weights = jnp.asarray(rng.normal(size=(t, b, h)), jnp.float32)

    def by_jax(u, state, wx, start):
        def one(s, inputs):
            s, _ = step(u, s, *inputs)
            return s, s[:, -h:]

        return jax.lax.scan(one, state, (wx, start))

    def loss(core, u, state, wx):
        last, outputs = core(u, state, wx, start)
        return jnp.sum(weights * outputs) + jnp.sum(jnp.sin(last))

    ours = jax.jit(jax.value_and_grad(partial(loss, scan), argnums=(0, 1, 2)))(u, state, wx)
    jaxs = jax.jit(jax.value_and_grad(partial(loss, by_jax), argnums=(0, 1, 2)))(u, state, wx)
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(jaxs), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    d_state = np.abs(ours[1][1]).max(axis=1)
    assert d_state[0] == 0 and d_state[1:].min() > 0  # where no reset comes first


@pytest.mark.parametrize("make", [GRU, LSTM, MinGRU, TransformerXL])
def test_a_reset_at_the_first_step_ignores_the_initial_state(make):
    core = make(6, 8, nnx.Rngs(0))
    rng = np.random.default_rng(4)
    x = jnp.asarray(rng.normal(size=(5, 2, 6)), jnp.float32)
    start = jnp.zeros((5, 2), bool).at[0].set(True)
    h0 = jnp.asarray(rng.normal(size=(2, core.state_size)), jnp.float32)
    run = jax.jit(lambda h: core(h, x, start))
    _, fresh = run(jnp.zeros_like(h0))
    _, reset = run(h0)
    np.testing.assert_allclose(fresh, reset, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("layers", [1, 2])
def test_the_transformer_sees_exactly_layers_times_its_memory_back(layers):
    """Each layer attends to the M steps before the current one, so the last output of
    a sequence depends on the input layers * M steps earlier and on none before it
    (the gradient is exactly zero), whether those steps are in the sequence or were
    carried in the window from an earlier call."""
    memory, t_len = 3, 12
    core = TransformerXL(8, 8, nnx.Rngs(0), layers=layers, heads=2, memory=memory)
    x = jnp.asarray(np.random.default_rng(5).normal(size=(t_len, 1, 8)), jnp.float32)
    start = jnp.zeros((t_len, 1), bool)
    state = jnp.zeros((1, core.state_size)).at[:, -memory:].set(1.0)  # a window in-episode

    def last_output(x):
        return core(state, x, start)[1][-1].sum()

    reach = np.abs(np.asarray(jax.jit(jax.grad(last_output))(x))).sum(axis=(1, 2))  # [T]
    first_seen = t_len - 1 - layers * memory
    assert reach[first_seen] > 0 and np.all(reach[:first_seen] == 0), reach
    # split in two calls, the window carries what the first one saw: the same outputs
    run = jax.jit(lambda h, x, s: core(h, x, s))
    carried, early = run(state, x[:5], start[:5])
    _, late = run(carried, x[5:], start[5:])
    whole = run(state, x, start)[1]
    np.testing.assert_allclose(jnp.concatenate([early, late]), whole, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("make", [GRU, LSTM, partial(MinGRU, layers=2)])
def test_chrono_initialisation_lets_the_gradient_reach_back_where_the_default_vanishes(make):
    """The gradient of the last output with respect to the input 16 steps earlier,
    relative to the current input's (benchmarks/gradient_reach.py at width 128: GRU
    4e-4 at default init, 0.18 with chrono 32): with chrono 32 each cell keeps more
    than 1/50 of it, and the GRU and min_gru, whose gates start at 1/2, far more than
    by default (under 1/100). The LSTM's forget bias of 1 already keeps a few
    percent."""
    x = jnp.asarray(np.random.default_rng(6).normal(size=(17, 4, 32)), jnp.float32)
    start = jnp.zeros((17, 4), bool).at[0].set(True)

    def reach(chrono):
        core = make(32, 32, nnx.Rngs(0), chrono=chrono)
        last = lambda x: core(jnp.zeros((4, core.state_size)), x, start)[1][-1].sum()  # noqa: E731
        norms = np.sqrt((np.asarray(jax.jit(jax.grad(last))(x)) ** 2).sum(axis=(1, 2)))  # [T]
        return norms[0] / norms[-1]

    assert reach(32) > 0.02
    if make is not LSTM:
        assert reach(0) < 0.01 and reach(32) > 10 * reach(0)


def test_chrono_needs_a_horizon_of_three_steps_or_more(tmp_path, capsys):
    bad = ["network.kind=gru", "network.options={chrono: 2}"]
    args = ["train", CARTPOLE, "--out", str(tmp_path / "r")] + sum((["--set", s] for s in bad), [])
    assert main(args) == 2
    assert not (tmp_path / "r").exists()
    assert "network.options.chrono: 2 is too short a horizon" in capsys.readouterr().err


def test_the_transformers_heads_must_divide_the_width(tmp_path, capsys):
    bad = ["network.kind=transformer_xl", "network.width=30", "network.options={heads: 4}"]
    args = ["train", CARTPOLE, "--out", str(tmp_path / "r")] + sum((["--set", s] for s in bad), [])
    assert main(args) == 2
    assert not (tmp_path / "r").exists()
    err = capsys.readouterr().err
    assert "network.options.heads: 4 heads do not divide network.width 30" in err


def test_min_gru_layers_are_a_setting(tmp_path, capsys):
    one = build_network(
        NetworkSettings(kind="min_gru", width=8, options={"layers": 3}), SPEC, 1, jax.random.key(0)
    )
    assert one.initial_hidden(2).shape == (2, 24)
    bad = ["network.kind=min_gru", "network.options={layers: 0}"]
    assert (
        main(
            ["train", CARTPOLE, "--out", str(tmp_path / "r")] + sum((["--set", s] for s in bad), [])
        )
        == 2
    )
    assert "network.options.layers" in capsys.readouterr().err
    bad = ["network.kind=min_gru", "network.options={conv: 1}"]
    args = ["train", CARTPOLE, "--out", str(tmp_path / "r")] + sum((["--set", s] for s in bad), [])
    assert main(args) == 2
    assert not (tmp_path / "r").exists()
    assert (
        "network.options.conv: 1 is a window of the current input alone" in capsys.readouterr().err
    )


# the other two pairs (lstm with PPO, min_gru with PQN) train and resume in
# test_checkpoint.py::test_resume_is_bit_exact
# the transformer also observes the previous action and reward (4 + 2 + 1 inputs)
@pytest.mark.parametrize(
    ("kind", "algo", "extra"),
    [
        ("min_gru", "ppo", []),
        ("lstm", "pqn", []),
        ("transformer_xl", "ppo", ["env.previous_action_reward=true"]),
    ],
)
def test_each_kind_trains_exports_evaluates_and_renders(kind, algo, extra, tmp_path):
    config = CARTPOLE if algo == "ppo" else CARTPOLE.replace("ppo-cartpole", "pqn-cartpole")
    short = [s.replace("ppo.", f"{algo}.") for s in SHORT_CARTPOLE]
    overrides = [*short, "env.num_envs=4", "total_env_steps=1024", f"network.kind={kind}"]
    overrides += ["network.width=16", *extra]
    records = train(tmp_path / "run", config, overrides)
    assert len(records) == 8 and all(np.isfinite(r["loss/total"]) for r in records)
    report = tmp_path / "eval.json"
    args = ["eval", str(tmp_path / "run"), "--episodes", "2", "--json", str(report)]
    assert main([*args, "--fast-compile"]) == 0
    assert all(s["episodes"] == 2 for s in json.loads(report.read_text())["seeds"])
    gif = tmp_path / "episode.gif"
    assert main(["render", str(tmp_path / "run"), "--out", str(gif), "--fast-compile"]) == 0
    assert gif.stat().st_size > 0
    assert main(["export", str(tmp_path / "run"), "--out", str(tmp_path / "policy")]) == 0
    policy = load_policy(tmp_path / "policy")
    assert policy.network.kind == kind
    actions, hidden = policy.act(jnp.zeros((3, 7 if extra else 4)), jax.random.key(0))
    assert actions.shape == (3,) and hidden.shape[0] == 3


@pytest.mark.parametrize("kind", KINDS)
def test_the_update_re_runs_exactly_what_the_rollout_acted_on(kind):
    """Through the PPO skeleton: a rollout that starts mid-episode with a carried
    hidden state, and whose 5-step episodes end inside its 8-step sequences, is cut
    into sequence minibatches; re-running each from its stored starting state gives
    the log-probabilities and values the rollout acted with, though the parameters
    changed since the state was carried in. A sequence started from another state (the
    one after the rollout, or zeros), a reset one step late, or keys and values cached
    under the old parameters would not."""
    import nnxrl
    from nnxrl.algos.on_policy import collect_rollout
    from nnxrl.ops.minibatch import shuffle_env_sequences

    overrides = ["env.num_envs=4", "env.kwargs={delay: 2, symbols: 3, length: 5}"]
    overrides += ["ppo.num_steps=8", "ppo.num_minibatches=2", f"network.kind={kind}"]
    overrides += ["network.width=16"] + (["network.options={memory: 4}"] if kind in OPTIONS else [])
    config = nnxrl.load_config("configs/ppo-rnn-repeat-previous.yaml", overrides)
    agent = nnxrl.make_algorithm(config, nnxrl.make_env(config.env))
    s, hp = agent.update.keywords["s"], nnxrl.hyperparams_from(config)
    state = jax.jit(agent.init)(jax.random.key(0))
    collect = jax.jit(partial(collect_rollout, plan=None, s=s))
    state = collect(state)[0]  # the next rollout starts 3 steps into an episode
    # as after an update: what the rollout acts from must follow the parameters
    state = state.replace(params=jax.tree.map(lambda p: p * 1.25, state.params))
    assert not np.asarray(state.start).any() and np.abs(np.asarray(state.hidden)).max() > 0
    _, trajectory, last_value, _ = collect(state)
    batch = s.pieces.prepare(trajectory, jnp.zeros_like(trajectory.reward), last_value, hp, s)
    minibatches = shuffle_env_sequences(jax.random.key(1), batch, 2)
    re_run = jax.jit(partial(nnxrl.policy_and_value, s=s))
    for m in range(2):
        minibatch = jax.tree.map(lambda x, m=m: x[m], minibatches)
        dist, value = re_run(state.params, minibatch)
        np.testing.assert_allclose(dist.log_prob(minibatch.action), minibatch.log_prob, atol=1e-5)
        np.testing.assert_allclose(value, minibatch.value, atol=1e-5)
