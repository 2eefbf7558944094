"""Checkpoints, exact resume, the non-finite guard, evaluation, rendering, saved policies."""

import json
import logging
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from cli_runs import TINY_CRAFTAX
from flax import struct
from PIL import Image

from nnxrl import config as config_lib
from nnxrl.agent.policy import load_policy, policy_from_checkpoint
from nnxrl.cli import main
from nnxrl.config import schedule, setting
from nnxrl.intrinsic import register
from nnxrl.intrinsic.base import Addon
from nnxrl.run.training import run_training
from nnxrl.store import checkpoint

ROOT = Path(__file__).parents[1]
SMALL = [
    "fast_compile=true",
    "total_env_steps=5120",
    "ppo.num_steps=32",
    "ppo.num_minibatches=2",
    "logging.backends=[]",
    "logging.updates_per_chunk=2",
    "checkpoint.every_updates=4",
]
VARIANTS = {
    "feedforward": ("configs/ppo-cartpole.yaml", []),
    # each seed's 4 envs split over the 2 devices (mesh.envs=2) in gru, e3b and pqn
    "gru": (
        "configs/ppo-cartpole.yaml",
        ["network.kind=gru", "network.width=32", "mesh.envs=2"],
    ),
    "e3b": (
        "configs/e3b-craftax-classic-symbolic.yaml",
        [
            "env.id=CartPole-v1",
            "env.num_envs=4",
            "env.reset_ratio=1",
            "network.width=32",
            "intrinsic.options={latent_size: 8, width: 32}",
            "mesh.envs=2",
        ],
    ),
    "pqn": ("configs/pqn-cartpole.yaml", ["env.num_envs=4", "network.width=32", "mesh.envs=2"]),
    # PQN's recurrent path with the GRU: pqn-min_gru; the transformer's window sharded
    # over the mesh with the envs, and the previous action and reward observed
    "pqn-transformer_xl": (
        "configs/pqn-cartpole.yaml",
        [
            "env.num_envs=4",
            "env.previous_action_reward=true",
            "network.kind=transformer_xl",
            "network.width=16",
            "network.options={layers: 1, heads: 2, memory: 4}",
            "mesh.envs=2",
        ],
    ),
    "lstm": ("configs/ppo-cartpole.yaml", ["network.kind=lstm", "network.width=16", "mesh.envs=2"]),
    "pqn-min_gru": (
        "configs/pqn-cartpole.yaml",
        ["env.num_envs=4", "network.kind=min_gru", "network.width=16"],
    ),
    # the replay buffer, its write position, the target network and the gradient-step
    # count come back from the checkpoint (n-step targets, Polyak moves every step)
    "dqn": (
        "configs/dqn-cartpole.yaml",
        [
            "env.num_envs=4",
            "network.width=16",
            "dqn.num_steps=32",
            "dqn.buffer_size=512",
            "dqn.learning_starts=64",
            "dqn.batch_size=16",
            "dqn.gradient_steps=2",
            "dqn.n_step=3",
            "network.dueling=true",
        ],
    ),
    # SAC's buffer, target critics and the temperature; the loss's own samples
    "sac": (
        "configs/sac-pendulum.yaml",
        [
            "env.num_envs=4",
            "network.width=16",
            "sac.num_steps=32",
            "sac.buffer_size=512",
            "sac.learning_starts=64",
            "sac.batch_size=16",
            "sac.gradient_steps=2",
        ],
    ),
}


def load(name, *extra):
    path, overrides = VARIANTS[name]
    algo = name.split("-")[0] if name.startswith(("pqn", "dqn", "sac")) else "ppo"
    small = [s.replace("ppo.", f"{algo}.") for s in SMALL]
    if algo in ("dqn", "sac"):  # their own rollout and batch settings
        small = [s for s in small if not s.startswith(f"{algo}.")]
    return config_lib.load(ROOT / path, [*small, *overrides, *extra])


def same_params(a: Path, b: Path) -> bool:
    pa, pb = load_policy(a / "policy"), load_policy(b / "policy")
    return all(
        np.array_equal(x, y)
        for x, y in zip(jax.tree.leaves(pa.params), jax.tree.leaves(pb.params), strict=True)
    )


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_resume_is_bit_exact(tmp_path, variant):
    config = load(variant, "checkpoint.every_updates=8")  # 10 saves, not 20 (0.2-0.5 s each)
    run_training(config, tmp_path / "whole", quiet=True)
    with pytest.raises(KeyboardInterrupt):
        run_training(config, tmp_path / "split", quiet=True, stop_after=8)
    assert checkpoint.latest(tmp_path / "split") == 8
    assert not (tmp_path / "split" / "policy").exists()
    run_training(config, tmp_path / "split", quiet=True, resume=True)
    for name in ("metrics.jsonl", "metrics_aggregate.jsonl"):
        whole = (tmp_path / "whole" / name).read_bytes()
        assert whole == (tmp_path / "split" / name).read_bytes(), name
    assert same_params(tmp_path / "whole", tmp_path / "split")
    if variant == "e3b":  # the add-on's state evolved and came back exactly
        meta = checkpoint.load_meta(tmp_path / "split")
        assert any("inverse_covariance" in p for p in meta["paths"])


def test_a_checkpoint_without_the_replay_buffer_resumes_from_empty_and_says_so(tmp_path, capsys):
    """checkpoint.replay: false leaves the buffer's transitions and write position out;
    the resumed run refills it from empty (its gradient steps pause until it holds
    learning_starts again), says in one line that it is not exact, and finishes."""
    config = load(
        "dqn", "checkpoint.every_updates=8", "checkpoint.replay=false", "dqn.learning_starts=256"
    )
    with pytest.raises(KeyboardInterrupt):
        run_training(config, tmp_path / "run", quiet=True, stop_after=8)
    meta = checkpoint.load_meta(tmp_path / "run")
    left_out = [meta["paths"][i] for i in meta["left_out"]]
    assert left_out and all(".memory.buffer." in p for p in left_out), left_out
    assert any("experience" in p for p in left_out) and any("current_index" in p for p in left_out)
    capsys.readouterr()
    run_training(config, tmp_path / "run", resume=True)
    err = capsys.readouterr().err
    assert "not an exact resume: checkpoint 8 holds no replay buffer" in err, err
    records = [
        json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().split("\n") if x
    ]
    steps = {r["update"]: r["stats/gradient_steps"] for r in records if r["seed"] == 0}
    assert steps[9] == steps[8] and steps[max(steps)] > steps[8], steps  # paused, then on


# (config, signal, overrides): runs of 320 updates, so that each is still training
# when stopped, with 8 periodic saves; SIGINT checkpoints where it stops, SIGKILL
# leaves the last periodic checkpoint and records past it, which resume replaces
STOPPED = {
    "ppo-ctrl-c": ("configs/ppo-cartpole.yaml", signal.SIGINT, [*SMALL, "total_env_steps=40960"]),
    "dqn-kill": (
        "configs/dqn-cartpole.yaml",
        signal.SIGKILL,
        [*VARIANTS["dqn"][1], "dqn.num_steps=8", "total_env_steps=10240"],
    ),
    "sac-ctrl-c": (
        "configs/sac-pendulum.yaml",
        signal.SIGINT,
        [*VARIANTS["sac"][1], "sac.num_steps=8", "total_env_steps=10240"],
    ),
}


@pytest.mark.parametrize("case", list(STOPPED))
def test_a_run_stopped_in_a_subprocess_resumes_exactly(tmp_path, alone, case):
    """Ctrl-C (PPO, SAC) or SIGKILL (DQN: its buffer, target and optimiser from the
    last periodic checkpoint) part-way; the resumed run's records and parameters are
    byte-identical to an uninterrupted run's."""
    path, sig, overrides = STOPPED[case]
    overrides = [o for o in overrides if not o.startswith(("logging.", "checkpoint."))]
    overrides += ["logging.backends=[console]", "logging.updates_per_chunk=2"]
    overrides += ["fast_compile=true", "checkpoint.every_updates=40"]
    run_training(config_lib.load(ROOT / path, overrides), tmp_path / "whole", quiet=True)
    out = tmp_path / "split"
    args = [sys.executable, "-m", "nnxrl", "train", str(ROOT / path), "--out", str(out)]
    args += sum((["--set", o] for o in overrides), [])
    metrics = out / "metrics.jsonl"
    with alone() as pause_others:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while time.time() < deadline and not metrics.exists():  # compiled, now training
            time.sleep(0.05)
        pause_others()
        while time.time() < deadline:  # wait until training is past its first save
            if len(metrics.read_text().splitlines()) >= 48:
                break
            time.sleep(0.05)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL), err
    stopped_at = checkpoint.latest(out)
    assert 0 < stopped_at < 320, stopped_at
    lines = (out / "metrics.jsonl").read_text().splitlines()
    if sig == signal.SIGINT:  # checkpointed where it stopped
        assert json.loads(lines[-1])["update"] == stopped_at
    assert main(["train", "--resume", str(out), "--set", "logging.backends=[]"]) == 0
    assert (tmp_path / "whole" / "metrics.jsonl").read_bytes() == (
        out / "metrics.jsonl"
    ).read_bytes()
    assert same_params(tmp_path / "whole", out)


KILL_SCRIPT = """
import sys, numpy as np
from nnxrl.store import checkpoint
run = sys.argv[1]
checkpoint.save(run, 1, {"w": np.arange(10, dtype=np.float32)}, {"config": {}})
print("saved", flush=True)
big = np.random.default_rng(0).normal(size=(256, 1024, 1024)).astype(np.float32)  # 1 GiB
checkpoint.save(run, 2, {"w": big}, {"config": {}})
"""


def test_a_process_killed_mid_save_leaves_the_previous_checkpoint_loadable(tmp_path, alone):
    with alone() as pause_others:
        proc = subprocess.Popen(
            [sys.executable, "-c", KILL_SCRIPT, str(tmp_path)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout.readline().strip() == "saved"
        deadline = time.time() + 60
        while time.time() < deadline:  # kill while step 2 is being written
            partial = [p for p in (tmp_path / "checkpoints").iterdir() if p.name.startswith("2")]
            if partial:
                break
            time.sleep(0.01)
        pause_others()  # the 1 GiB is made, its writing begun
        time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert checkpoint.available(tmp_path) == [1]
    state, meta = checkpoint.restore(tmp_path, {"w": jnp.zeros(10)})
    np.testing.assert_array_equal(state["w"], np.arange(10))
    assert meta["update"] == 1


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "cartpole"
    run_training(load("feedforward", "num_seeds=2"), out, quiet=True)
    return out


def test_resume_refuses_a_different_config_naming_the_keys(small_run, capsys):
    code = main(
        ["train", "--resume", str(small_run), "--set", "network.width=32", "--set", "num_seeds=3"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "network.width: 64 -> 32" in err and "num_seeds: 2 -> 3" in err
    # a finished run is not extended: resuming it trains nothing and leaves its records
    written = (small_run / "metrics.jsonl").read_bytes()
    assert main(["train", "--resume", str(small_run)]) == 0
    assert "already complete (" in capsys.readouterr().err
    assert (small_run / "metrics.jsonl").read_bytes() == written
    # and a fresh run refuses to write over it
    assert main(["train", str(ROOT / "configs/ppo-cartpole.yaml"), "--out", str(small_run)]) == 2
    assert "already holds a run" in capsys.readouterr().err


def test_missing_and_damaged_checkpoints_are_clear_errors(small_run, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "config.yaml").write_text((small_run / "config.yaml").read_text())
    assert main(["eval", str(empty)]) == 2
    assert "no checkpoint in" in capsys.readouterr().err
    assert main(["train", "--resume", str(empty), "--step", "4"]) == 2
    assert "--step: no checkpoint for update 4" in capsys.readouterr().err
    damaged = tmp_path / "damaged"
    subprocess.run(["cp", "-r", str(small_run), str(damaged)], check=True)
    latest = checkpoint.latest(damaged)
    for f in (damaged / "checkpoints" / str(latest) / "state").rglob("*"):
        if f.is_file() and f.stat().st_size > 0:
            f.write_bytes(b"garbage")
    with pytest.raises(checkpoint.CheckpointError, match=f"checkpoints/{latest} is damaged"):
        policy_from_checkpoint(damaged)


@dataclass(frozen=True)
class PoisonOptions:
    from_rollout: int = setting(2, "Rollouts after which the bonus is NaN.")


@struct.dataclass
class PoisonState:
    rollouts: jax.Array


def make_poison(options, context) -> Addon:
    """A test hook: an add-on whose bonus turns NaN from the given rollout on."""

    def reward(state, experience):
        bad = state.rollouts >= options.from_rollout
        bonus = jnp.where(bad, jnp.nan, 0.0) * jnp.ones(experience.action.shape)
        return state.replace(rollouts=state.rollouts + 1), bonus, {}

    return Addon(
        init=lambda key: PoisonState(rollouts=jnp.int32(0)),
        reward=reward,
        update=lambda state, experience, key: (state, {}),
    )


def test_a_nan_stops_the_run_naming_seed_update_metric_with_a_good_checkpoint(tmp_path, capsys):
    register("poison", PoisonOptions, make_poison)
    out = tmp_path / "nan"
    args = ["train", str(ROOT / "configs/ppo-cartpole.yaml"), "--out", str(out)]
    overrides = [
        *SMALL,
        "num_seeds=2",
        "mesh.seeds=1",
        "mesh.envs=2",  # the guard on a run whose envs are split over the devices
        "intrinsic.addon=poison",
        "intrinsic.options={from_rollout: 5}",
    ]
    assert main(args + sum((["--set", o] for o in overrides), [])) == 3
    err = capsys.readouterr().err
    assert "non-finite values at update 6, seed(s) [0, 1]" in err and "loss/total" in err
    assert "checkpointed at update 5" in err
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert max(r["update"] for r in records) == 5 and len(records) == 10
    policy = policy_from_checkpoint(out)  # the last good state loads, and is finite
    assert all(np.all(np.isfinite(x)) for x in jax.tree.leaves(policy.params))


def test_a_nan_in_dqn_leaves_the_checkpoint_of_the_last_good_update_as_a_clean_run_has_it(
    tmp_path,
):
    """The guard holds back all but the buffer's stored transitions (they are never
    copied): the halted run's checkpoint at update 5 equals a clean run's at update 5
    in every leaf, but for the buffer rows past the write position, which the failed
    update wrote (NaN rewards) and the next update overwrites before sampling."""
    register("poison", PoisonOptions, make_poison)
    runs = {}
    # the clean run ends at update 5; the other halts at 6 and saves 5 from the guard
    for name, start, steps in (("clean", 10**6, 640), ("nan", 5, 1280)):
        out = tmp_path / name
        args = ["train", str(ROOT / "configs/dqn-cartpole.yaml"), "--out", str(out)]
        overrides = [*VARIANTS["dqn"][1], f"total_env_steps={steps}", "dqn.buffer_size=4096"]
        overrides += ["logging.backends=[]", "logging.updates_per_chunk=5"]
        overrides += ["checkpoint.every_updates=10", "dqn.anneal_lr=false"]
        overrides += ["dqn.epsilon_decay_fraction=0"]  # no schedule over the run's length
        overrides += ["intrinsic.addon=poison", f"intrinsic.options={{from_rollout: {start}}}"]
        overrides += ["fast_compile=true"]
        assert main(args + sum((["--set", o] for o in overrides), [])) == (0 if start > 5 else 3)
        items, meta = checkpoint.read_items(out, 5, with_state=True)
        runs[name] = {p: items.get(f"leaf_{i:05d}") for i, p in enumerate(meta["paths"])}
    index = [p for p in runs["clean"] if p.endswith("memory.buffer.current_index")][0]
    written = int(np.ravel(runs["clean"][index])[0])  # each env's row: steps [0, written)
    assert written == 5 * 32
    for path, clean in runs["clean"].items():
        got = runs["nan"][path]
        if ".memory.buffer.experience" in path:
            clean, got = clean[:, :, :written], got[:, :, :written]  # [seed, env, step]
        np.testing.assert_array_equal(clean, got, err_msg=path)
    rewards = [p for p in runs["nan"] if p.endswith("experience.reward")][0]
    assert np.isnan(runs["nan"][rewards][:, :, written : written + 32]).all()


def test_eval_render_and_export_on_cartpole(small_run, tmp_path, capsys):
    report = tmp_path / "eval.json"
    args = ["eval", str(small_run), "--episodes", "4", "--greedy", "--json", str(report)]
    assert main(args) == 0
    data = json.loads(report.read_text())
    assert [s["seed"] for s in data["seeds"]] == [0, 1]
    assert all(s["episodes"] == 4 and s["return_mean"] >= 1 for s in data["seeds"])
    for s in data["seeds"]:  # every episode's return and length, as the means say
        assert len(s["returns"]) == len(s["lengths"]) == 4
        assert np.mean(s["returns"]) == pytest.approx(s["return_mean"])
    over = data["across_seeds"]  # the unit of the interval is the seed
    assert over["seeds"] == 2 and over["return_low"] <= over["return_mean"] <= over["return_high"]
    means = [s["return_mean"] for s in data["seeds"]]
    assert over["return_mean"] == pytest.approx(np.mean(means))
    assert over["return_low"] >= min(means) and over["return_high"] <= max(means)
    said = capsys.readouterr()
    assert (
        "| seed | episodes | return | length |" in said.out and "over 2 seeds: return" in said.out
    )
    assert "compiling and playing" in said.err and "eval: done in" in said.err  # no silent wait
    assert main(["eval", str(small_run), "--episodes", "4", "--greedy"]) == 0
    table = capsys.readouterr().out  # a person's: the table alone, no JSON dump
    assert "over 2 seeds: return" in table and "{" not in table, table
    assert main(["eval", str(small_run), "--episodes", "4", "--greedy", "--json", "-"]) == 0
    piped = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert piped["seeds"] == data["seeds"]  # the same episodes: greedy, the same key
    gif = tmp_path / "episode.gif"
    assert main(["render", str(small_run), "--seed", "1", "--out", str(gif)]) == 0
    frames = int(capsys.readouterr().out.split(": ")[1].split(" frames")[0])
    with Image.open(gif) as image:
        assert image.n_frames == frames > 1
    # an exported policy evaluates the same as the checkpoint it came from
    exported = tmp_path / "exported"
    assert main(["export", str(small_run), "--out", str(exported)]) == 0
    assert (
        main(
            [
                "eval",
                str(exported),
                "--episodes",
                "4",
                "--greedy",
                "--json",
                str(tmp_path / "e2.json"),
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "e2.json").read_text())["seeds"] == data["seeds"]
    # both policies say where they come from: the run, its update, code and version
    last = checkpoint.latest(small_run)
    started = json.loads((small_run / "run.json").read_text())
    for folder in (small_run / "policy", exported):
        source = yaml.safe_load((folder / "policy.yaml").read_text())["source"]
        assert source["run"] == str(small_run.resolve()) and source["update"] == last
        assert source["git_commit"] == started["git_commit"] and source["nnxrl"]
    assert started["git_commit"] is None or len(started["git_commit"]) == 40
    # an env without a renderer says so
    assert main(["render", str(small_run), "--seed", "5"]) == 2
    assert "not one of the run's seeds" in capsys.readouterr().err


def test_eval_and_render_on_craftax(tmp_path, capsys, caplog):
    out = tmp_path / "craftax"
    overrides = [*TINY_CRAFTAX, "total_env_steps=64", "ppo.num_steps=8"]
    args = ["train", str(ROOT / "configs/ppo-craftax-classic-symbolic.yaml"), "--out", str(out)]
    assert main(args + sum((["--set", o] for o in overrides), [])) == 0
    fast = "--fast-compile"
    json_file = str(tmp_path / "e.json")
    assert main(["eval", str(out), "--episodes", "2", "--json", json_file, fast]) == 0
    seeds = json.loads((tmp_path / "e.json").read_text())["seeds"]
    assert seeds[0]["episodes"] == 2 and "collect_wood" in seeds[0]["achievements"]
    gif = tmp_path / "craftax.gif"
    with caplog.at_level(logging.WARNING, "jax"), jax.log_compiles(True):
        assert main(["render", str(out), "--out", str(gif), "--scale", "2", fast]) == 0
    # the step traced (and compiled) once: reset's state has step's types
    assert sum("tracing act_and_step" in r.getMessage() for r in caplog.records) == 1
    said = capsys.readouterr()
    frames = int(said.out.split("craftax.gif: ")[1].split(" frames")[0])
    with Image.open(gif) as image:
        assert image.n_frames == frames > 1
        assert image.size == (2 * 144, 2 * 144 + 4)  # 16-pixel blocks, twice; the timeline
    assert "Craftax-Classic textures" not in said.out + said.err  # prepared quietly
    from nnxrl.envs.craftax_textures import cache_dir

    assert (cache_dir() / "texture_cache_classic.pbz2").is_file()  # kept for the next time


def test_an_env_without_a_renderer_gets_a_clear_message(tmp_path, capsys):
    out = tmp_path / "memorychain"
    overrides = [*SMALL, "env.num_envs=4", "total_env_steps=256", "checkpoint.every_updates=2"]
    args = ["train", str(ROOT / "configs/ppo-rnn-memorychain.yaml"), "--out", str(out)]
    assert main(args + sum((["--set", o] for o in overrides), [])) == 0
    assert main(["render", str(out)]) == 2
    err = capsys.readouterr().err
    assert "'MemoryChain-bsuite' has no renderer here" in err and "MinAtar" in err


def test_checkpoint_every_must_fit_the_chunks():
    with pytest.raises(config_lib.ConfigError, match="checkpoint.every_updates"):
        load("feedforward", "checkpoint.every_updates=3")


def test_resume_continues_the_same_mlflow_run_without_duplicates(tmp_path):
    from mlflow import MlflowClient

    from nnxrl.logging.mlflow_tracker import local_store_uri

    config = load("feedforward", "logging.backends=[mlflow]")
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run_training(config, out, quiet=True, stop_after=8)
    # as if killed after the checkpoint: the JSONL and MLflow ran ahead of it by a chunk
    checkpoint_dir = checkpoint.checkpoint_dir(out)
    subprocess.run(["rm", "-rf", str(checkpoint_dir / "8")], check=True)
    assert checkpoint.latest(out) == 4
    run_training(config, out, quiet=True, resume=True)
    client = MlflowClient(tracking_uri=local_store_uri(out))
    runs = client.search_runs(client.get_experiment_by_name("nnxrl-CartPole-v1").experiment_id)
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    history = client.get_metric_history(runs[0].info.run_id, "episode_count")
    steps = sorted(m.step for m in history)
    assert steps == [
        u * schedule.batch_size(config) for u in range(1, schedule.num_updates(config) + 1)
    ]
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in records] == list(range(1, schedule.num_updates(config) + 1))
    # as if killed in the end's flush, after the last checkpoint: the policy not yet
    # exported and MLflow without its last points; resuming the complete run finishes both
    written = (out / "metrics.jsonl").read_bytes()
    shutil.rmtree(out / "policy")
    run_id = runs[0].info.run_id
    last_steps = schedule.batch_size(config) * (schedule.num_updates(config) - 3)
    with sqlite3.connect(out.parent / "mlflow.db") as db:
        db.execute("DELETE FROM metrics WHERE run_uuid = ? AND step > ?", (run_id, last_steps))
    assert max(m.step for m in client.get_metric_history(run_id, "episode_count")) == last_steps
    client.update_run(run_id, status="RUNNING")
    run_training(config, out, quiet=True, resume=True)
    history = client.get_metric_history(run_id, "episode_count")
    assert sorted(m.step for m in history) == steps
    assert client.get_run(run_id).info.status == "FINISHED"
    assert (out / "metrics.jsonl").read_bytes() == written
    assert load_policy(out / "policy").num_seeds == config.num_seeds


def test_a_run_saved_before_a_config_key_existed_still_resumes(small_run, tmp_path, capsys):
    """A key added to nnxrl since (here network.options) counts as its default, and
    the sections of the algorithms not chosen that older runs saved (at their
    defaults) are passed over."""
    import yaml

    from nnxrl.algos.settings import PQNSettings

    def as_older(config: dict) -> dict:
        del config["network"]["options"]
        config["pqn"] = config_lib.to_dict(PQNSettings())
        return config

    old = tmp_path / "old"
    shutil.copytree(small_run, old)
    for saved in (old / "checkpoints").glob("*/meta/metadata"):
        meta = json.loads(saved.read_text())
        meta["config"] = as_older(meta["config"])
        saved.write_text(json.dumps(meta))
    (old / "config.yaml").write_text(
        yaml.safe_dump(as_older(yaml.safe_load((old / "config.yaml").read_text())))
    )
    started = json.loads((old / "run.json").read_text())
    started["config"] = as_older(started["config"])
    (old / "run.json").write_text(json.dumps(started))
    assert main(["train", "--resume", str(old)]) == 0, capsys.readouterr().err
    assert "pqn" not in yaml.safe_load((old / "config.yaml").read_text())
    assert main(["train", "--resume", str(old), "--set", "network.options={x: 1}"]) == 2
    assert "network.options" in capsys.readouterr().err
