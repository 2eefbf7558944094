"""parallel/devices.py: starting JAX as the config says (CPU devices, the process
group from the config or the environment), and the single-process answers."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nnxrl.config.mesh import DistributedConfig
from nnxrl.parallel import devices
from nnxrl.schema import ConfigError

GROUP_VARIABLES = (
    "JAX_COORDINATOR_ADDRESS",
    "NNXRL_NUM_PROCESSES",
    "NNXRL_PROCESS_ID",
    "SLURM_NTASKS",
    "SLURM_JOB_ID",
)


@pytest.fixture
def no_cluster(monkeypatch):
    for name in GROUP_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_one_process_by_default(no_cluster):
    assert devices.process_group(DistributedConfig()) is None


def test_the_group_from_the_config(no_cluster):
    settings = DistributedConfig(coordinator_address="10.0.0.1:1234", num_processes=4, process_id=3)
    assert devices.process_group(settings) == {
        "coordinator_address": "10.0.0.1:1234",
        "num_processes": 4,
        "process_id": 3,
    }


def test_the_group_from_the_environment_and_the_config_wins(no_cluster):
    no_cluster.setenv("JAX_COORDINATOR_ADDRESS", "host:99")
    no_cluster.setenv("NNXRL_NUM_PROCESSES", "2")
    no_cluster.setenv("NNXRL_PROCESS_ID", "1")
    assert devices.process_group(DistributedConfig()) == {
        "coordinator_address": "host:99",
        "num_processes": 2,
        "process_id": 1,
    }
    assert devices.process_group(DistributedConfig(process_id=0))["process_id"] == 0
    assert devices.process_group(DistributedConfig(enabled=False)) is None


def test_a_slurm_job_with_several_tasks_is_a_group(no_cluster):
    no_cluster.setenv("SLURM_NTASKS", "4")
    no_cluster.setenv("SLURM_JOB_ID", "77")
    assert devices.process_group(DistributedConfig()) == {
        "coordinator_address": None,  # jax.distributed detects SLURM's
        "num_processes": None,
        "process_id": None,
    }


@pytest.mark.parametrize("value", ["-1", "two"])
def test_a_bad_process_id_names_the_variable(no_cluster, value):
    no_cluster.setenv("JAX_COORDINATOR_ADDRESS", "host:99")
    no_cluster.setenv("NNXRL_PROCESS_ID", value)
    with pytest.raises(ConfigError, match=f"NNXRL_PROCESS_ID='{value}': expected an integer >= 0"):
        devices.process_group(DistributedConfig())


def test_one_process_answers_for_itself():
    assert devices.is_main_process()
    assert devices.any_process(True, False, True) == (True, False, True)


def test_start_jax_sets_the_cpu_devices_the_config_asks_for():
    """In a fresh process (JAX's device count is fixed once it starts): mesh.cpu_devices,
    then nothing changes once JAX has started."""
    code = (
        "import jax\n"
        "from nnxrl.parallel import devices\n"
        "from nnxrl.config.mesh import DistributedConfig, MeshConfig\n"
        "assert not devices.jax_started()\n"
        "devices.start_jax(MeshConfig(cpu_devices=3), DistributedConfig(enabled=False))\n"
        "print(jax.device_count(), devices.jax_started())\n"
        "devices.start_jax(MeshConfig(cpu_devices=5), DistributedConfig(enabled=False))\n"
        "print(jax.device_count())\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "JAX_NUM_CPU_DEVICES"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "True", "3"]
