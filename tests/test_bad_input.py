"""Bad input beyond the config keys: damaged run artifacts, plugins, environment
variables, paths, sizes that cannot fit. Each gets one clear line naming the thing
(exit 2), never a traceback, and nothing is written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runs import CARTPOLE, SHORT_CARTPOLE, sets

from nnxrl import config as config_lib
from nnxrl.cli import main
from nnxrl.run.training import run_training

SHORT = [*SHORT_CARTPOLE, "total_env_steps=2048", "checkpoint.every_updates=8"]  # 16 updates


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "run"
    run_training(config_lib.load(CARTPOLE, SHORT), out, quiet=True)
    return out


def refused(capsys, args: list[str], expected: str) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err, err
    return err


# -- damaged run artifacts ---------------------------------------------------------------


@pytest.mark.parametrize(
    "spec,expected",
    [("- 1\n- 2\n", "lacks env, network, num_seeds"), ("network: {}\nnum_seeds: 1\n", "lacks env")],
)
def test_a_damaged_policy_yaml_is_named(run, tmp_path, capsys, spec, expected):
    policy = tmp_path / "policy"
    shutil.copytree(run / "policy", policy)
    (policy / "policy.yaml").write_text(spec)
    err = refused(capsys, ["eval", str(policy), "--episodes", "1"], expected)
    assert "policy.yaml is not a saved policy's spec" in err


@pytest.mark.parametrize("manifest", [True, False], ids=["manifest", "saved-before-manifests"])
def test_a_policy_with_truncated_parameter_files_is_named_without_a_traceback(
    run, tmp_path, manifest
):
    """With its manifest, checked before Orbax opens anything; without (a policy saved
    before manifests), Orbax's failed read is named and its late tracebacks held back."""
    policy = tmp_path / "policy"
    shutil.copytree(run / "policy", policy)
    if not manifest:
        (policy / ".nnxrl-policy.json").unlink()
    cut = sorted(p for p in (policy / "params").rglob("*") if p.is_file() and p.parent.name == "d")
    for path in cut:
        path.write_bytes(path.read_bytes()[:20])
    command = [sys.executable, "-m", "nnxrl", "eval", str(policy), "--episodes", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    if manifest:
        assert f"{cut[0].relative_to(policy).as_posix()}" in done.stderr
        assert "missing or changed since nnxrl saved this policy" in done.stderr
    else:
        assert f"{policy / 'params'} is damaged or incomplete" in done.stderr
        assert "nnxrl export RUN_DIR --out NEW_DIR" in done.stderr
    assert "Traceback" not in done.stderr and "Event loop is closed" not in done.stderr


def test_a_policy_spec_of_another_width_names_network_width(run, tmp_path, capsys):
    policy = tmp_path / "policy"
    shutil.copytree(run / "policy", policy)
    spec = (policy / "policy.yaml").read_text()
    (policy / "policy.yaml").write_text(spec.replace("width: 64", "width: 128"))
    err = refused(capsys, ["eval", str(policy), "--episodes", "1"], "it was saved for another")
    assert "(network.width: 64 in the saved parameters, 128 in its spec)" in err


def test_a_checkpoint_whose_meta_is_a_list_is_named(run, tmp_path, capsys):
    damaged = tmp_path / "damaged"
    shutil.copytree(run, damaged)
    (damaged / "checkpoints" / "16" / "meta" / "metadata").write_text("[1, 2, 3]")  # JSON
    err = refused(capsys, ["export", str(damaged), "--out", str(tmp_path / "p")], "meta item")
    assert "checkpoints/16" in err and "--step" in err
    assert "the others that load: [8]" in err
    refused(capsys, ["train", "--resume", str(damaged)], "meta item")


def test_a_damaged_checkpoints_message_offers_only_the_ones_that_load(run, tmp_path, capsys):
    damaged = tmp_path / "damaged"
    shutil.copytree(run, damaged)
    (damaged / "checkpoints" / "16" / "meta" / "metadata").write_text("[1, 2, 3]")
    for data in (damaged / "checkpoints" / "8" / "state").rglob("d/*"):
        data.write_bytes(b"garbage")  # the arrays of 8 are gone, its meta is whole
    err = refused(capsys, ["train", "--resume", str(damaged)], "meta item")
    assert "the others that load: [], and [8] damaged too" in err


def test_a_garbled_nonfinite_marker_is_named(run, tmp_path, capsys):
    damaged = tmp_path / "damaged"
    shutil.copytree(run, damaged)
    (damaged / "nonfinite.json").write_text("{garbled")
    err = refused(capsys, ["train", "--resume", str(damaged)], "nonfinite.json is damaged")
    assert f"rm {damaged / 'nonfinite.json'}" in err


@pytest.mark.parametrize(
    "content,expected",
    [
        ("", "holds no records yet"),
        ("[1, 2]\n", "line 1: not an nnxrl record"),
        ('{"seed": 0}\n', "line 1: not an nnxrl record"),
        ('{"update": 1}\n', "line 1: a record without an integer 'seed'"),
        (b'{"update": 1, "seed": 0}\n\xff\xfe\x00garbage\n', "line 2: not a complete JSON record"),
    ],
)
def test_plot_names_records_it_cannot_read_and_writes_no_png(tmp_path, capsys, content, expected):
    run = tmp_path / "run"
    run.mkdir()
    data = content if isinstance(content, bytes) else content.encode()
    (run / "metrics.jsonl").write_bytes(data)
    out = tmp_path / "plot.png"
    refused(capsys, ["plot", str(run), "--out", str(out)], expected)
    assert not out.exists()


@pytest.mark.parametrize(
    "content,expected",
    [
        ("env: {id: CartPole-v1\nalgo: ppo\n", "config.yaml, line 2: not valid YAML"),
        ("[1, 2]\n", "config.yaml holds a YAML list, not the mapping of settings"),
    ],
)
def test_plot_names_a_damaged_config_yaml_and_writes_no_png(
    run, tmp_path, capsys, content, expected
):
    damaged = tmp_path / "damaged"
    shutil.copytree(run, damaged)
    (damaged / "config.yaml").write_text(content)
    out = tmp_path / "plot.png"
    err = refused(capsys, ["plot", str(damaged), "--out", str(out)], expected)
    assert "move it away to read the run's metrics alone" in err and not out.exists()


def test_checkpoints_that_are_a_file_are_refused_before_training(run, tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "checkpoints").write_text("not a folder")
    err = refused(
        capsys,
        ["train", CARTPOLE, "--out", str(out)] + sum((["--set", o] for o in SHORT), []),
        "checkpoints is a file",
    )
    assert not (out / "metrics.jsonl").exists(), err


# -- eval sizes ----------------------------------------------------------------------------


def test_eval_plays_many_episodes_in_batches_with_progress(run, tmp_path, capsys):
    report = tmp_path / "eval.json"
    assert main(["eval", str(run), "--episodes", "1100", "--json", str(report)]) == 0
    err = capsys.readouterr().err
    assert "eval: 1,024 of 1,100 episodes per seed" in err
    assert "eval: 1,100 of 1,100 episodes per seed" in err
    assert json.loads(report.read_text())["seeds"][0]["episodes"] == 1100


def test_eval_refuses_more_episodes_than_it_can_play(run, capsys):
    with pytest.raises(SystemExit):
        main(["eval", str(run), "--episodes", "100000000"])
    assert "--episodes: 100000000 is out of range" in capsys.readouterr().err


# -- plugins -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source,expected",
    [
        ("x = (\n", "failed while being imported (SyntaxError"),
        ("raise RuntimeError('boom')\n", "failed while being imported (RuntimeError: boom; at"),
        ("import sys\nsys.exit(0)\n", "called sys.exit(0) while being imported"),
    ],
)
def test_a_failing_plugin_is_named_and_nothing_trains(tmp_path, capsys, source, expected):
    plugin = tmp_path / "my_plugin.py"
    plugin.write_text(source)
    out = tmp_path / "run"
    err = refused(capsys, ["--plugin", str(plugin), "train", CARTPOLE, "--out", str(out)], expected)
    assert "my_plugin.py" in err and not out.exists()


# -- the environment -------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["abc", "0"])
def test_a_bad_jax_num_cpu_devices_is_named(value):
    env = {**os.environ, "JAX_NUM_CPU_DEVICES": value}
    done = subprocess.run(
        [sys.executable, "-m", "nnxrl", "configs"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"JAX_NUM_CPU_DEVICES='{value}': expected a count of CPU devices >= 1" in done.stderr


def test_process_group_variables_are_checked(monkeypatch):
    from nnxrl.config import DistributedConfig
    from nnxrl.parallel.devices import process_group

    monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", "127.0.0.1:1234")
    monkeypatch.setenv("NNXRL_NUM_PROCESSES", "abc")
    with pytest.raises(config_lib.ConfigError, match="NNXRL_NUM_PROCESSES='abc': expected an int"):
        process_group(DistributedConfig())
    monkeypatch.delenv("JAX_COORDINATOR_ADDRESS")
    monkeypatch.delenv("NNXRL_NUM_PROCESSES")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.setenv("SLURM_NTASKS", "2")
    with pytest.raises(config_lib.ConfigError, match="SLURM_NTASKS=2 asks for 2 processes"):
        process_group(DistributedConfig())
    assert process_group(DistributedConfig(enabled=False)) is None


@pytest.mark.parametrize("process_id", [0, 1])
def test_a_process_group_that_never_forms_is_a_bounded_wait_naming_the_address(
    tmp_path, process_id
):
    """One process of two, the other never started (process 0 waits for its peer,
    process 1 for the coordinator): the wait ends after distributed.timeout_seconds
    with one line naming the address, not JAX's abort."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    overrides = [
        f"distributed.coordinator_address=127.0.0.1:{port}",
        "distributed.num_processes=2",
        f"distributed.process_id={process_id}",
        "distributed.timeout_seconds=5",
        *SHORT,
    ]
    args = [sys.executable, "-m", "nnxrl", "train", CARTPOLE, "--out", str(tmp_path / "r")]
    done = subprocess.run(
        args + sets(overrides),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"could not join the process group at coordinator 127.0.0.1:{port} within 5 s" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr


# -- paths and sizes -------------------------------------------------------------------------


def test_an_out_name_over_the_os_limit_is_named(tmp_path, capsys):
    out = tmp_path / ("x" * 300)
    err = refused(capsys, ["train", CARTPOLE, "--out", str(out)], "File name too long")
    assert "..." in err  # the name is shortened in the message
    assert "its longest name 300 (xxx" in err and "allows 255 per name" in err


def test_a_config_that_cannot_fit_in_memory_is_refused_with_the_estimate(tmp_path, capsys):
    out = tmp_path / "run"
    overrides = [*SHORT, "network.width=65536"]
    args = ["train", CARTPOLE, "--out", str(out)] + sets(overrides)
    err = refused(capsys, args, "the run state alone needs about")  # before compiling
    assert "GiB available; lower network.width (65536), num_seeds (1)" in err
    assert not (out / "metrics.jsonl").exists()


def test_a_rollout_that_cannot_fit_is_refused_with_xlas_estimate(tmp_path, capsys):
    """A small run state with a rollout of 200 million steps a seed: the state passes
    the check before compiling, XLA's count of the compiled update does not."""
    out = tmp_path / "run"
    steps = 200_000_000
    overrides = [*SHORT, f"ppo.num_steps={steps}", f"total_env_steps={4 * steps}"]
    overrides += ["logging.updates_per_chunk=1", "checkpoint.enabled=false"]
    args = ["train", CARTPOLE, "--out", str(out)] + sets(overrides)
    err = refused(capsys, args, "this config needs about")
    assert "as XLA compiled it" in err and f"ppo.num_steps ({steps})" in err
    assert not (out / "metrics.jsonl").exists()


# -- a long wait -------------------------------------------------------------------------


def test_a_long_eval_says_how_long_and_ctrl_c_keeps_the_episodes_done(run, monkeypatch, capsys):
    """Played 4 at a time, 16 episodes are 4 batches: after the first the time left is
    said; a real SIGINT after the second ends the play with the 8 done (exit 130)."""
    import signal

    from nnxrl.agent import evaluate as evaluate_lib
    from nnxrl.cli import commands

    monkeypatch.setattr(evaluate_lib, "MAX_ENVS_AT_ONCE", 4)
    said = commands.evaluation_progress

    def interrupted_after_two(episodes: int):
        progress = said(episodes)

        def each(done: int) -> None:
            progress(done)
            if done == 8:
                os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C

        return each

    monkeypatch.setattr(commands, "evaluation_progress", interrupted_after_two)
    # Python's own Ctrl-C handler, as in a shell (a test worker's may be another)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert main(["eval", str(run), "--episodes", "16"]) == 130
    finally:
        signal.signal(signal.SIGINT, previous)
    out, err = capsys.readouterr()
    assert "eval: 4 of 16 episodes per seed (" in err and " s to go; Ctrl-C stops" in err
    assert "eval: stopped after 8 of 16 episodes per seed" in err and "Traceback" not in err
    assert "CartPole-v1: 8 episodes per seed" in out and "| 0 | 8 |" in out
