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
from nnxrl.algos.replay import Stored, bootstrap_steps, n_step_targets

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
    steps = bootstrap_steps(sample, (True, False))  # [N, K]: where each stream stops
    np.testing.assert_array_equal(steps, [[2, 2], [1, 2], [1, 2]])
    values = jnp.asarray([[5.0, 50.0], [6.0, 60.0], [7.0, 70.0]])  # [n, K] at every step
    next_values = values[steps, jnp.arange(2)]  # [N, K]: each stream's at its own step
    targets = np.asarray(
        n_step_targets(sample, steps, next_values, jnp.asarray([G, G]), (True, False))
    )
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


def test_the_networks_value_only_each_streams_bootstrap_observation():
    """A run of 3 steps ended at its second: the target is bootstrapped from that
    step's next observation, and the networks see [N, K] observations, not [N, n]."""
    no, yes = False, True
    sample = runs([[no, no, no], [no, no, yes]], [[no, no, no], [no, no, no]], [[[0.0]] * 3] * 2)
    sample = sample._replace(next_obs=jnp.asarray([[[1.0], [2.0], [3.0]], [[4.0], [5.0], [6.0]]]))
    seen = []

    def network(obs):  # Q of either action: 10 x the observation
        seen.append(obs.shape)
        return jnp.broadcast_to(10 * obs[..., None, :], (*obs.shape[:-1], 1, 2))

    hp = SimpleNamespace(extrinsic_coef=1.0, intrinsic_coef=0.0, gamma=G, intrinsic_gamma=G)
    s = SimpleNamespace(settings=SimpleNamespace(double=True), num_streams=1, episodic=(False,))
    got = bootstrapped_targets(network, network, sample, hp, s)
    np.testing.assert_allclose(got[:, 0], [G**3 * 30, G**3 * 60], rtol=1e-6)  # not episodic
    s.episodic = (True,)
    got = bootstrapped_targets(network, network, sample, hp, s)
    np.testing.assert_allclose(got[:, 0], [G**3 * 30, 0.0], rtol=1e-6)  # terminated: none
    assert set(seen) == {(2, 1, 1)}, seen


def test_dqn_takes_discrete_actions_and_feed_forward_networks_by_name():
    cartpole = config_lib.load("configs/dqn-cartpole.yaml")
    assert cartpole.dqn.double and cartpole.dqn.num_steps == 1
    with pytest.raises(config_lib.ConfigError, match="network.kind: 'gru' is recurrent, and dqn"):
        config_lib.load("configs/dqn-cartpole.yaml", ["network.kind=gru"])
    pendulum = config_lib.load("configs/dqn-cartpole.yaml", ["env.id=Pendulum-v1"])
    with pytest.raises(config_lib.ConfigError, match="algo: dqn picks actions by argmax"):
        config_lib.check_parts(pendulum)


def test_learning_that_waits_for_more_than_the_buffer_holds_is_refused_by_name():
    with pytest.raises(config_lib.ConfigError) as e:
        config_lib.load("configs/dqn-cartpole.yaml", ["dqn.learning_starts=60000"])
    assert str(e.value).startswith("dqn.learning_starts: 60,000 transitions cannot wait in a")
    assert "lower dqn.learning_starts to at most 50,000 or raise dqn.buffer_size" in str(e.value)


def test_a_replay_buffer_that_cannot_fit_is_refused_by_name_before_compiling(tmp_path, capsys):
    """Two billion CartPole transitions (about 80 GB) are refused from the run state's
    shapes alone, naming the buffer's size and the key that sets it; nothing is
    written but the folder's files of a start (no checkpoint, no record)."""
    from nnxrl.cli import main

    out = tmp_path / "run"
    args = ["train", "dqn-cartpole", "--out", str(out), "--set", "dqn.buffer_size=2000000000"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "before anything is compiled (the run state's replay buffer" in err, err
    assert "lower dqn.buffer_size (2,000,000,000)" in err, err
    assert not (out / "checkpoints").exists() and not (out / "metrics.jsonl").exists()


def test_dqn_runs_an_addon_a_sweep_and_pbt_in_one_program(tmp_path):
    """RND's bonus reaches DQN's stored rewards unchanged, and two learning rates x two
    seeds train as one PBT population whose copies take the donor's buffer and target."""
    import json

    from nnxrl.cli import main

    out = tmp_path / "run"
    overrides = [
        "num_seeds=2",
        "total_env_steps=2560",
        "env.num_envs=4",
        "network.width=16",
        "dqn.num_steps=8",
        "dqn.learning_starts=64",
        "dqn.batch_size=16",
        "logging.backends=[]",
        "logging.updates_per_chunk=8",
        "intrinsic.addon=rnd",
        "intrinsic.options={output_size: 8, width: 16}",
        "sweep.grid={dqn.learning_rate: [1.0e-3, 1.0e-4]}",
        "sweep.pbt={interval: 40, fraction: 0.5}",
    ]
    args = ["train", "dqn-cartpole", "--out", str(out), "--set", "fast_compile=true"]
    assert main(args + sum((["--set", s] for s in overrides), [])) == 0
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert {(r["setting"], r["seed"]) for r in records} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert all(r["intrinsic/rnd_error"] > 0 for r in records)
    assert max(r["stats/gradient_steps"] for r in records) > 0  # it learned from replay
    assert any(r["pbt/donor"] >= 0 for r in records)  # a member copied another


def test_a_dueling_q_network_splits_its_head_into_a_value_and_centred_advantages():
    """Q = V + A - mean_a A per stream, from one more output per stream; PPO, whose
    network has no Q head, refuses the option by name."""
    import jax
    from flax import nnx

    from nnxrl.networks.q_network import QNetwork

    net = QNetwork((4,), 3, 1, 8, "relu", (), nnx.Rngs(0), num_values=2, dueling=True)
    obs = jax.random.normal(jax.random.key(0), (5, 4))
    out = net.mlp(net.encoder(obs)).reshape(5, 2, 4)  # [B, K, 1 + A]
    value, advantage = out[..., :1], out[..., 1:]
    expected = value + advantage - advantage.mean(-1, keepdims=True)
    np.testing.assert_allclose(net(obs), expected, rtol=1e-6)
    np.testing.assert_allclose(net(obs).mean(-1), value[..., 0], rtol=1e-5, atol=1e-6)
    with pytest.raises(config_lib.ConfigError, match="network.dueling: true, but ppo's"):
        config_lib.load("configs/ppo-cartpole.yaml", ["network.dueling=true"])
    assert config_lib.load("configs/dqn-cartpole.yaml", ["network.dueling=true"]).network.dueling


def test_seeds_on_two_devices_write_an_image_buffer_in_place():
    """Each device writes its own seeds' buffer where it lies: no copy of the stored
    observations in the chunk's program (XLA's partitioner made two per update when
    the seeds were split by sharding propagation, 25x slower: parallel/mesh.py)."""

    from nnxrl.run.programs import compile_programs

    overrides = ["num_seeds=2", "network.width=16", "dqn.buffer_size=2000"]
    overrides += ["dqn.learning_starts=100", "logging.backends=[]", "logging.updates_per_chunk=4"]
    config = config_lib.load("dqn-asterix-minatar", overrides)
    programs = compile_programs(config)
    assert programs.layout.seed_shards == 2
    stored = programs.template.memory.buffer.experience.obs  # [seeds, rows, time, 10, 10, 4]
    per_device = ",".join(str(d) for d in (1, *stored.shape[1:]))
    text = programs.chunk(4).as_text()
    copies = [line for line in text.splitlines() if f"[{per_device}]" in line and " copy(" in line]
    assert stored.shape[0] == 2 and f"[{per_device}]" in text
    assert copies == [], copies[:2]


@pytest.mark.parametrize(
    ("name", "tiny"),
    [
        ("dqn-cartpole", ["dqn.num_steps=4", "dqn.learning_starts=32", "dqn.batch_size=16"]),
        ("sac-pendulum", ["sac.num_steps=4", "sac.learning_starts=32", "sac.batch_size=16"]),
    ],
)
def test_a_seeds_envs_and_buffer_rows_on_two_devices_train_as_on_one(tmp_path, name, tiny):
    """mesh.envs=2: each device steps half of the seed's envs and holds their rows of
    the buffer; a batch sampled across both trains the same parameters as one device, up
    to rounding (init, compiled with XLA's quick options, rounds a few weights' last bits
    differently on one device and two; SAC's end 1.5e-5 apart at most)."""
    import jax

    import nnxrl
    from nnxrl.parallel.mesh import host_copy

    base = [*tiny, "num_seeds=1", "env.num_envs=4", "network.width=16", "total_env_steps=1024"]
    base += ["logging.backends=[]", "checkpoint.enabled=false"]
    finals = {}
    for envs in (1, 2):
        config = config_lib.load(name, [*base, f"mesh.envs={envs}"])
        finals[envs] = nnxrl.train(config, tmp_path / str(envs)).final_state
    stored = jax.tree.leaves(finals[2].memory.buffer.experience)[0]
    assert stored.sharding.spec[:2] == ("seeds", "envs") and len(stored.sharding.device_set) == 2
    for a, b in zip(*(jax.tree.leaves(host_copy(finals[e].params)) for e in (1, 2)), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=5e-5)
