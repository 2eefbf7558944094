"""The device mesh: layouts, device-count invariance, sharded arrays, checkpoints moved
between device counts, and two processes on loopback (``jax.distributed``).

Runs with another device count or process group start a fresh Python
(``mesh_worker.py``): JAX fixes both when it starts. This process has two CPU devices.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nnxrl import config as config_lib
from nnxrl.config import schedule
from nnxrl.parallel.devices import process_group
from nnxrl.parallel.mesh import make_layout, mesh_shape, split_envs
from nnxrl.run.programs import compile_programs
from nnxrl.schema import ConfigError
from nnxrl.store import checkpoint

WORKER = Path(__file__).with_name("mesh_worker.py")
REPORTS = itertools.count()  # a fresh report file per worker
# 8 updates of 2 seeds x 8 envs x 16 steps, checkpointed every 4
TINY = [
    "fast_compile=true",
    "total_env_steps=1024",
    "env.num_envs=8",
    "ppo.num_steps=16",
    "ppo.num_minibatches=2",
    "num_seeds=2",
    "network.width=32",
    "logging.backends=[]",
    "logging.updates_per_chunk=2",
    "checkpoint.every_updates=4",
]
INVARIANT = [*TINY, "mesh.invariant=true"]


def config(*overrides: str) -> config_lib.Config:
    return config_lib.load("ppo-cartpole", [*TINY, *overrides])


def run_worker(
    out: Path,
    devices: int,
    overrides: list[str],
    resume: int | None = None,
    env: dict | None = None,
    wait: bool = True,
):
    """Train (or resume) in a fresh process with ``devices`` CPU devices; returns the
    report (layout + arrays), or the Popen when ``wait`` is False."""
    report = out.parent / f"report_{next(REPORTS)}.npz"
    args = [sys.executable, str(WORKER), str(out), str(report)]
    args += ["--resume", str(resume)] if resume is not None else []
    args += [*overrides, f"mesh.cpu_devices={devices}"]
    proc = subprocess.Popen(
        args,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if not wait:
        return proc, report
    output, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, output[-3000:]
    return read_report(report)


def read_report(path: Path) -> dict:
    with np.load(path) as z:
        out = {k: z[k] for k in z.files}
    out["layout"] = json.loads(str(out["layout"]))
    return out


def params_of(report: dict) -> list[np.ndarray]:
    return [report[f"param_{i}"] for i in range(sum(k.startswith("param_") for k in report))]


def assert_close_params(a: dict, b: dict) -> None:
    for x, y in zip(params_of(a), params_of(b), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------------------
# Layouts and bad input (this process)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "devices", "shape"),
    [
        (["num_seeds=2"], 4, (2, 2)),  # seeds first, envs take the rest
        (["num_seeds=1"], 4, (1, 4)),
        (["num_seeds=3"], 4, (1, 4)),
        (["num_seeds=4"], 2, (2, 1)),
        (["num_seeds=1", "env.num_envs=6"], 4, (1, 2)),  # 4 does not divide 6 envs
        (["num_seeds=1", "ppo.num_minibatches=8", "ppo.num_steps=4"], 8, (1, 4)),
        (
            ["num_seeds=1", "ppo.num_minibatches=8", "ppo.num_steps=4", "mesh.invariant=true"],
            8,
            (1, 8),
        ),  # invariant: minibatches need not split per device
        (["num_seeds=2", "mesh.seeds=1"], 4, (1, 4)),
        (["num_seeds=2", "mesh.envs=2"], 8, (2, 2)),
    ],
)
def test_unset_axes_take_as_many_devices_as_divide_seeds_and_envs(overrides, devices, shape):
    assert mesh_shape(config(*overrides), devices) == shape


def test_on_cpu_envs_are_split_only_when_asked():
    assert not split_envs("cpu") and split_envs("gpu") and split_envs("tpu")
    assert mesh_shape(config("num_seeds=1"), 4, envs_too=False) == (1, 1)
    assert mesh_shape(config("num_seeds=2"), 4, envs_too=False) == (2, 1)
    assert mesh_shape(config("num_seeds=1", "mesh.envs=4"), 4, envs_too=False) == (1, 4)
    layout = make_layout(config("num_seeds=1"))  # this process: 2 CPU devices
    assert (layout.seed_shards, layout.env_shards) == (1, 1)


@pytest.mark.parametrize(
    ("overrides", "names"),
    [
        (["mesh.seeds=3"], ["mesh.seeds", "num_seeds=2"]),
        (["mesh.envs=3"], ["mesh.envs", "env.num_envs=8"]),
        (
            ["mesh.envs=8", "ppo.num_minibatches=32", "intrinsic.num_minibatches=2"],
            ["mesh.envs", "ppo.num_minibatches=32"],
        ),
        (["network.kind=gru", "mesh.envs=8"], ["mesh.envs", "whole sequences"]),
    ],
)
def test_impossible_mesh_settings_are_refused_by_name(overrides, names):
    with pytest.raises(ConfigError) as e:
        config(*overrides)
    for name in names:
        assert name in str(e.value)


def test_a_mesh_larger_than_the_devices_and_a_cpu_count_jax_did_not_get_are_refused():
    with pytest.raises(ConfigError, match=r"mesh.seeds x mesh.envs = 2 x 4 needs 8 devices"):
        make_layout(config("mesh.seeds=2", "mesh.envs=4"))
    with pytest.raises(ConfigError, match="JAX_NUM_CPU_DEVICES=3"):  # this process has 2
        make_layout(config("mesh.cpu_devices=3"))


def test_the_run_config_keeps_the_mesh_but_not_the_launch(tmp_path):
    c = config("distributed.num_processes=4", "distributed.process_id=1", "mesh.envs=2")
    (tmp_path / "config.yaml").write_text(config_lib.saved_yaml(c))
    saved = (tmp_path / "config.yaml").read_text()
    assert "distributed" not in saved and "envs: 2" in saved
    differences = checkpoint.config_differences(
        config_lib.saved_dict(config()), config_lib.to_dict(c)
    )
    assert differences == []  # mesh and launch may change on resume


# --------------------------------------------------------------------------------------
# One and four devices (fresh processes)
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def invariant_runs(tmp_path_factory):
    """The same invariant run on 1 and on 4 CPU devices."""
    root = tmp_path_factory.mktemp("mesh")
    one = run_worker(root / "one", 1, INVARIANT)
    four = run_worker(root / "four", 4, [*INVARIANT, "mesh.envs=2"])
    return root, one, four


def test_one_and_four_devices_train_the_same_parameters_when_invariant(invariant_runs):
    _, one, four = invariant_runs
    assert one["layout"]["mesh"] == {"seeds": 1, "envs": 1}
    assert four["layout"]["mesh"] == {"seeds": 2, "envs": 2}
    assert_close_params(one, four)
    np.testing.assert_allclose(
        one["layout"]["final_returns"], four["layout"]["final_returns"], rtol=1e-5
    )


def test_env_state_is_split_over_devices_and_parameters_copied_per_seed(invariant_runs):
    layout = invariant_runs[2]["layout"]
    assert layout["obs_shape"] == [2, 8, 4]  # seeds, envs, CartPole's observation
    assert layout["obs_spec"][:2] == ["seeds", "envs"]
    assert layout["obs_shard_count"] == 4
    assert layout["obs_shards"] == [[1, 4, 4]]  # a seed's half of its envs per device
    assert layout["param_spec"][0] == "seeds" and set(layout["param_spec"][1:]) <= {"None"}
    assert layout["param_shards"] == [[1, *layout["param_shape"][1:]]]  # whole, per seed


@pytest.mark.parametrize(
    ("source", "devices", "mesh"),
    [("four", 1, []), ("four", 2, []), ("one", 4, ["mesh.envs=2"])],
)
def test_a_checkpoint_resumes_on_another_device_count(
    invariant_runs, tmp_path, source, devices, mesh
):
    root, one, four = invariant_runs
    run = tmp_path / "run"
    shutil.copytree(root / source, run)
    saved, _ = checkpoint.read_items(run, 4, with_state=True)  # as NumPy, on this process
    resumed = run_worker(run, devices, [*INVARIANT, *mesh], resume=4)
    for name, array in saved.items():  # leaf_<i>: the state's i-th leaf, bit for bit
        np.testing.assert_array_equal(resumed[f"restored_{int(name[5:])}"], array)
    assert resumed["layout"]["devices"] == devices
    # updates 5-8 on another device count: the same result
    assert_close_params(resumed, four if source == "four" else one)


@pytest.mark.learning
def test_default_variant_learns_cartpole_with_each_seeds_envs_on_four_devices(
    tmp_path, seed_offset
):
    """Two seeds, each one's 4 envs on 4 devices: their mean final rolling return holds
    475 of 500, and each is over 400."""
    overrides = ["num_seeds=2", "mesh.envs=4", "logging.backends=[]", f"seed={seed_offset}"]
    report = run_worker(tmp_path / "run", 4, overrides)
    layout = report["layout"]
    assert layout["mesh"] == {"seeds": 1, "envs": 4}  # every seed's 4 envs on 4 devices
    finals = layout["final_returns"]
    assert np.mean(finals) >= 475 and min(finals) > 400, finals


# --------------------------------------------------------------------------------------
# Two processes on loopback
# --------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_train_one_run_and_one_process_resumes_it(tmp_path):
    run = tmp_path / "runs" / "two"
    overrides = [
        *INVARIANT,
        "logging.backends=[mlflow]",
        "mesh.envs=2",
        f"distributed.coordinator_address=127.0.0.1:{free_port()}",
        "distributed.num_processes=2",
    ]
    procs = [
        run_worker(run, 2, [*overrides, f"distributed.process_id={i}"], wait=False)
        for i in range(2)
    ]
    outputs = [p.communicate(timeout=600)[0] for p, _ in procs]
    for (p, _), output in zip(procs, outputs, strict=True):
        assert p.returncode == 0, output[-3000:]
    two = read_report(procs[0][1])
    assert not procs[1][1].exists()  # only process 0 writes the report
    assert two["layout"]["processes"] == 2 and two["layout"]["mesh"] == {"seeds": 2, "envs": 2}

    # process 0 alone wrote the records: one per update and seed, none twice
    records = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert sorted((r["update"], r["seed"]) for r in records) == [
        (u, s) for u in range(1, 9) for s in range(2)
    ]
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("nnxrl-CartPole-v1").experiment_id
    (mlflow_run,) = client.search_runs([experiment])
    steps = [m.step for m in client.get_metric_history(mlflow_run.info.run_id, "loss/total")]
    assert sorted(steps) == [128 * u for u in range(1, 9)]  # env steps per seed, once each
    # both processes wrote their shards of every checkpoint
    for update in (4, 8):
        state = run / "checkpoints" / str(update) / "state"
        assert (state / "ocdbt.process_0").is_dir() and (state / "ocdbt.process_1").is_dir()

    one = run_worker(run, 2, [*INVARIANT, "logging.backends=[]"], resume=4)
    assert one["layout"]["processes"] == 1
    assert_close_params(one, two)


# --------------------------------------------------------------------------------------
# What crosses devices (the compiled program, this process's 2 devices)
# --------------------------------------------------------------------------------------


def gathered_sizes(hlo: str) -> dict[str, list[int]]:
    """Elements in the result of every all-gather and all-to-all of a compiled program."""
    sizes: dict[str, list[int]] = {"all-gather": [], "all-to-all": []}
    for line in hlo.splitlines():
        for op in sizes:
            if f" {op}(" in line or f" {op}-start(" in line:
                result = line.split(f" {op}")[0]
                shapes = re.findall(r"[a-z]+\d*\[([\d,]*)\]", result)
                sizes[op].append(max(math.prod(int(d) for d in s.split(",") if d) for s in shapes))
    return sizes


@pytest.mark.parametrize("invariant", [False, True])
def test_training_data_crosses_devices_only_in_the_invariant_variant(invariant):
    c = config("num_seeds=1", "mesh.envs=2", f"mesh.invariant={str(invariant).lower()}")
    programs = compile_programs(c)
    sizes = gathered_sizes(programs.chunk(schedule.updates_per_chunk(c)).as_text())
    rollout = c.ppo.num_steps * c.env.num_envs  # T x B: one number per step of every env
    assert sizes["all-to-all"] == []
    if invariant:  # the batch (observations: 4 numbers per step) is gathered every epoch
        assert max(sizes["all-gather"]) >= 4 * rollout
    else:  # only per-step episode results (for the rolling return), never the batch
        assert max(sizes["all-gather"], default=0) <= rollout


def test_the_process_group_comes_from_config_then_environment_then_slurm(monkeypatch):
    for name in ("JAX_COORDINATOR_ADDRESS", "NNXRL_NUM_PROCESSES", "NNXRL_PROCESS_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("SLURM_NTASKS", raising=False)
    assert process_group(config().distributed) is None  # one process: nothing to join
    monkeypatch.setenv("SLURM_NTASKS", "1")
    assert process_group(config().distributed) is None
    monkeypatch.setenv("SLURM_NTASKS", "4")  # in a SLURM job JAX reads the rest from SLURM
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    assert process_group(config().distributed) == {
        "coordinator_address": None,
        "num_processes": None,
        "process_id": None,
    }
    assert process_group(config("distributed.enabled=false").distributed) is None
    monkeypatch.delenv("SLURM_NTASKS")
    monkeypatch.delenv("SLURM_JOB_ID")
    monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", "10.0.0.1:1234")
    monkeypatch.setenv("NNXRL_NUM_PROCESSES", "2")
    monkeypatch.setenv("NNXRL_PROCESS_ID", "1")
    assert process_group(config().distributed) == {
        "coordinator_address": "10.0.0.1:1234",
        "num_processes": 2,
        "process_id": 1,
    }
    given = config("distributed.process_id=0", "distributed.coordinator_address=h:1")
    assert process_group(given.distributed) == {
        "coordinator_address": "h:1",
        "num_processes": 2,
        "process_id": 0,
    }
