"""Nothing lost: stop signals, resume edge cases, storage faults, and bad input that is
rejected before anything is written.

Disk full is a real one: a small tmpfs mounted for the test (this needs root, as in
CI; elsewhere those tests are skipped), filled at a chosen update from inside the
metrics writer so that the moment is deterministic. Where only the metrics file must
fail (the checkpoint still written), the failure is injected at the file layer.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cli_runs import CARTPOLE, SHORT_CARTPOLE, sets
from disks import fill, mount_tmpfs, unmount

from nnxrl import config as config_lib
from nnxrl.cli import main
from nnxrl.errors import Stopped, StorageError
from nnxrl.logging.jsonl import TIMING_FILE, JsonlBackend
from nnxrl.run.training import run_training
from nnxrl.store import checkpoint

ROOT = Path(__file__).parents[1]
# 160 updates of 4 envs x 32 steps, in chunks of 4, checkpointed every 20
RUN = [*SHORT_CARTPOLE, "total_env_steps=20480"]


def cli_env() -> dict:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def records(run: Path) -> bytes:
    return (run / "metrics.jsonl").read_bytes()


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """The uninterrupted run every interrupted one must reproduce byte for byte."""
    out = tmp_path_factory.mktemp("reference") / "run"
    run_training(config_lib.load(CARTPOLE, RUN), out, quiet=True)
    return out


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    mount_tmpfs(disk, "size=8m")
    yield disk
    unmount(disk)


@pytest.fixture
def readonly_dir(tmp_path):
    path = tmp_path / "readonly"
    if os.geteuid() != 0:
        path.mkdir()
        path.chmod(0o555)
        yield path
        path.chmod(0o755)
        return
    mount_tmpfs(path, "ro,size=1m")
    yield path
    unmount(path)


def fill_at_update(monkeypatch, disk: Path, update: int, free_on_retry: bool) -> list:
    """From the metrics writer's own thread: fill ``disk`` just before the records of
    ``update`` are written and, with ``free_on_retry``, free it when the writer retries
    after that write failed (so the moment depends on no timer)."""
    original = JsonlBackend._append_once
    filled: list = []
    attempts: list = []

    def append_once(self, name, data):
        if name == TIMING_FILE:  # the wall clock is no record (a failed write is left out)
            return original(self, name, data)
        if not filled and json.loads(data.split(b"\n", 1)[0])["update"] >= update:
            filled.append(fill(disk))
        elif filled and free_on_retry and not attempts:
            attempts.append(name)
            filled[0].unlink()  # the write after the fill failed; this is its retry
        return original(self, name, data)

    monkeypatch.setattr(JsonlBackend, "_append_once", append_once)
    return filled


# -- stop signals ------------------------------------------------------------------------


def test_sigint_to_the_process_group_under_uv_stops_once_and_resumes_exactly(tmp_path, alone):
    """A batch job: `uv run nnxrl train` in its own session, no terminal, SIGINT to the
    whole group. Python gets it twice (from the group and forwarded by uv); the repeat
    must not count as 'press Ctrl-C again'."""
    uv = os.environ.get("UV") or shutil.which("uv")
    assert uv, "the tests run under `uv run`, which names itself in $UV"
    out = tmp_path / "run"
    overrides = [*RUN, "total_env_steps=40960", "logging.backends=[console]"]
    cmd = [uv, "run", "--no-sync", "nnxrl", "train", CARTPOLE, "--out", str(out)]
    with alone() as pause_others:  # from training's start to the exit: the second SIGINT
        proc = subprocess.Popen(
            cmd + sets(overrides),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env=cli_env(),
        )
        deadline = time.time() + 180
        while time.time() < deadline and proc.poll() is None:
            if (out / "metrics.jsonl").exists():
                break
            time.sleep(0.05)
        pause_others()
        while time.time() < deadline and proc.poll() is None:
            if records(out).count(b"\n") >= 8:
                break
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.count("stopping after the current chunk") == 1, err
    stopped_at = checkpoint.latest(out)
    assert 8 <= stopped_at < 320
    assert main(["train", "--resume", str(out), "--set", "logging.backends=[]"]) == 0
    whole = tmp_path / "whole"
    run_training(config_lib.load(CARTPOLE, [*RUN, "total_env_steps=40960"]), whole, quiet=True)
    assert records(out) == records(whole)


SLOW_FLUSH = """
import sys, time
from nnxrl import config as config_lib
from nnxrl.errors import Stopped
from nnxrl.run.training import run_training

class Slow:
    name = "slow"
    def __init__(self, path): self.path = path
    def open(self): pass
    def write(self, batch):
        time.sleep(0.05)
        with open(self.path, "a") as f:
            f.writelines(f"{a['update']}\\n" for a in batch.aggregates)
    def close(self, status):
        with open(self.path, "a") as f: f.write(f"closed {status}\\n")

config = config_lib.load(sys.argv[1], sys.argv[3:])
try:
    run_training(config, sys.argv[2], quiet=False, extra_backends=(Slow(sys.argv[2] + ".slow"),))
except Stopped:
    sys.exit(130)
"""


def test_sigterm_during_the_final_flush_lets_it_finish_and_exits_130(tmp_path, alone):
    out = tmp_path / "run"
    overrides = [*RUN, "logging.updates_per_chunk=1", "logging.backends=[mlflow]"]
    with alone() as pause_others:
        proc = subprocess.Popen(
            [sys.executable, "-c", SLOW_FLUSH, CARTPOLE, str(out), *overrides],
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(),
        )
        for line in proc.stderr:  # the slow backend is far behind when training ends
            if "writing the last" in line:
                break
        pause_others()  # its 8 s of writes still to come
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    slow = Path(f"{out}.slow").read_text().splitlines()
    assert slow[:-1] == [str(u) for u in range(1, 161)] and slow[-1].startswith("closed")
    assert len(records(out).splitlines()) == 160
    from mlflow import MlflowClient

    from nnxrl.logging.mlflow_tracker import local_store_uri

    client = MlflowClient(tracking_uri=local_store_uri(out))
    (run,) = client.search_runs([client.get_experiment_by_name("nnxrl-CartPole-v1").experiment_id])
    assert len(client.get_metric_history(run.info.run_id, "episode_count")) == 160


def test_ctrl_c_while_a_resumed_run_compiles_exits_130_and_stays_resumable(
    reference, tmp_path, alone
):
    out = tmp_path / "run"
    with pytest.raises(Stopped):
        run_training(config_lib.load(CARTPOLE, RUN), out, quiet=True, stop_after=40)
    # the compile cache off: the compile, not a load of saved programs, outlasts the 1 s
    cmd = [sys.executable, "-m", "nnxrl", "train", "--resume", str(out)]
    cmd += ["--set", "compile_cache.enabled=false"]
    with alone() as pause_others:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env()
        )
        assert proc.stdout.readline().startswith("nnxrl: training")  # now compiling
        pause_others()
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        out_text, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "already exists" not in err and "stopped at update 40" in err
    assert checkpoint.available(out)[-1] == 40
    assert main(["train", "--resume", str(out)]) == 0
    assert records(out) == records(reference)


# -- resume ------------------------------------------------------------------------------


def test_resume_with_another_chunk_size_trains_exactly_the_remaining_updates(reference, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(Stopped):
        run_training(config_lib.load(CARTPOLE, RUN), out, quiet=True, stop_after=12)
    args = ["train", "--resume", str(out), "--set", "logging.updates_per_chunk=5"]
    assert main(args + ["--set", "checkpoint.every_updates=10"]) == 0
    lines = [json.loads(x) for x in records(out).splitlines()]
    assert [r["update"] for r in lines] == list(range(1, 161))
    assert min(r["stats/learning_rate"] for r in lines) >= 0.0
    # periodic checkpoints kept coming during the resumed part (every 10 from update 12)
    assert set(checkpoint.available(out)) == {142, 152, 160}
    assert records(out) == records(reference)


def test_resuming_a_run_stopped_by_a_nan_says_so(tmp_path, capsys):
    from test_checkpoint import PoisonOptions, make_poison

    from nnxrl.intrinsic import register

    register("poison", PoisonOptions, make_poison)
    out = tmp_path / "nan"
    overrides = [*RUN, "intrinsic.addon=poison", "intrinsic.options={from_rollout: 5}"]
    assert main(["train", CARTPOLE, "--out", str(out)] + sets(overrides)) == 3
    capsys.readouterr()
    assert main(["train", "--resume", str(out)]) == 3
    err = capsys.readouterr().err
    assert "stopped because of non-finite values at update 6, seed(s) [0]" in err
    assert "ppo.learning_rate" in err and "already exists" not in err


def test_a_damaged_newest_checkpoint_points_to_one_that_works(reference, tmp_path, capsys):
    out = tmp_path / "run"
    with pytest.raises(Stopped):
        run_training(config_lib.load(CARTPOLE, RUN), out, quiet=True, stop_after=24)
    for f in (out / "checkpoints" / "24" / "state").rglob("*"):
        if f.is_file() and f.parent.name == "d":
            f.write_bytes(b"garbage")
    assert main(["train", "--resume", str(out)]) == 2
    err = capsys.readouterr().err
    assert "checkpoints/24 is damaged" in err and "nnxrl train --resume RUN_DIR --step" in err
    assert "Event loop is closed" not in err
    assert main(["train", "--resume", str(out), "--step", "20"]) == 0
    assert records(out) == records(reference)


def test_a_damaged_checkpoint_prints_no_tracebacks_from_the_reader(reference, tmp_path):
    """The reader's late callbacks print pages of tracebacks straight to the process's
    stderr; only a subprocess sees them."""
    damaged = tmp_path / "damaged"
    shutil.copytree(reference, damaged)
    for f in (damaged / "checkpoints" / "160" / "state").rglob("*"):
        if f.is_file() and f.parent.name == "d":
            f.write_bytes(b"garbage")
    cmd = [sys.executable, "-m", "nnxrl", "eval", str(damaged), "--episodes", "1"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=cli_env(), timeout=120)
    assert done.returncode == 2
    assert "checkpoints/160 is damaged" in done.stderr
    assert "Traceback" not in done.stderr, done.stderr[:2000]


# -- storage faults ----------------------------------------------------------------------


def test_a_brief_disk_full_is_retried_and_loses_nothing(reference, small_disk, monkeypatch, capfd):
    filled = fill_at_update(monkeypatch, small_disk, update=20, free_on_retry=True)
    out = small_disk / "run"
    run_training(config_lib.load(CARTPOLE, RUN), out, quiet=True)
    assert filled, "the disk was never filled"
    assert "retrying" in capfd.readouterr().err
    assert records(out) == records(reference)


def test_a_lasting_disk_full_stops_the_run_which_then_resumes_exactly(
    reference, small_disk, monkeypatch, capsys
):
    monkeypatch.setattr(JsonlBackend, "retry_seconds", 0.5)
    filler = fill_at_update(monkeypatch, small_disk, update=44, free_on_retry=False)
    out = small_disk / "run"
    assert main(["train", CARTPOLE, "--out", str(out)] + sets(RUN)) == 4
    err = capsys.readouterr().err
    assert "could not be written after retries" in err and "No space left" in err
    assert "could not write the checkpoint" in err and "Traceback" not in err
    assert checkpoint.available(out) == [20, 40]  # the earlier ones are intact
    filler[0].unlink()
    monkeypatch.undo()
    assert main(["train", "--resume", str(out)]) == 0
    assert records(out) == records(reference)


def fail_metrics_after(monkeypatch, update: int) -> None:
    """Make every write of metrics.jsonl after ``update`` an I/O error (the checkpoint
    is still written), retried for only 0.2 s."""
    monkeypatch.setattr(JsonlBackend, "retry_seconds", 0.2)
    original = JsonlBackend._append_once

    def failing(self, name, data):
        if json.loads(data.split(b"\n", 1)[0])["update"] > update:
            raise OSError(errno.EIO, "Input/output error")
        return original(self, name, data)

    monkeypatch.setattr(JsonlBackend, "_append_once", failing)


def test_when_only_the_metrics_file_fails_the_checkpoint_keeps_its_records(
    reference, tmp_path, monkeypatch, capsys
):
    fail_metrics_after(monkeypatch, 100)
    out = tmp_path / "run"
    assert main(["train", CARTPOLE, "--out", str(out)] + sets(RUN)) == 4
    err = capsys.readouterr().err
    assert "holds updates up to 100" in err and "keeps the records" in err
    assert len(records(out).splitlines()) == 100
    monkeypatch.undo()
    assert main(["train", "--resume", str(out)]) == 0  # writes them back; nothing to train
    assert records(out) == records(reference)
    assert (out / "policy" / "policy.yaml").is_file()


def test_a_resumed_run_whose_metrics_fail_keeps_the_records_before_its_start(
    reference, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "run"
    with pytest.raises(Stopped):
        run_training(config_lib.load(CARTPOLE, RUN), out, quiet=True, stop_after=24)
    fail_metrics_after(monkeypatch, 100)
    assert main(["train", "--resume", str(out)]) == 4
    assert "holds updates up to 100" in capsys.readouterr().err
    monkeypatch.undo()
    assert main(["train", "--resume", str(out)]) == 0  # updates 1-24 are still there
    assert records(out) == records(reference)


def test_a_disk_full_at_the_start_leaves_no_empty_config_and_no_traceback(small_disk, capsys):
    fill(small_disk)
    out = small_disk / "run"
    assert main(["train", CARTPOLE, "--out", str(out)] + sets(RUN)) == 4
    err = capsys.readouterr().err
    assert "No space left on device" in err and "Traceback" not in err, err
    assert not (out / "config.yaml").exists()


def test_disk_full_while_writing_a_checkpoint_is_a_clear_error(small_disk):
    run = small_disk / "run"
    checkpoint.save(run, 1, {"w": np.arange(10, dtype=np.float32)}, {"config": {}})
    fill(small_disk)
    with pytest.raises(StorageError, match=r"could not write the checkpoint for update 2"):
        checkpoint.save(run, 2, {"w": np.ones(100_000, np.float32)}, {"config": {}})
    assert checkpoint.available(run) == [1]
    assert not [p for p in (run / "checkpoints").iterdir() if "tmp" in p.name]
    state, _ = checkpoint.restore(run, {"w": np.zeros(10, np.float32)})
    np.testing.assert_array_equal(state["w"], np.arange(10))


def test_checkpoints_too_big_for_the_disk_fail_in_one_line_each(small_disk):
    """This run's checkpoints (~6.5 MB each) overflow the 8 MB disk from the second
    on: each failure is one line (no pages of tracebacks from the writer's late
    callbacks), training goes on, the run ends with exit 4 and no partial checkpoint
    is left."""
    out = small_disk / "run"
    overrides = [
        "network.width=512",
        "total_env_steps=4096",
        "logging.updates_per_chunk=2",
        "checkpoint.every_updates=2",
        "logging.backends=[]",
    ]
    done = run_cli(["train", CARTPOLE, "--out", str(out)] + sets(overrides), 300)
    assert done.returncode == 4, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "Event loop is closed" not in done.stderr
    assert done.stderr.count("could not write the checkpoint for update 4 ") == 1
    assert [p.name for p in (out / "checkpoints").iterdir()] == ["2"]


def test_a_store_left_half_made_by_a_kill_is_repaired_on_resume(tmp_path, alone):
    """SIGKILL while MLflow creates its store (the first seconds of a run). The run is
    made long (800 updates, every one sent to MLflow) so that it is still training when
    the store appears, however loaded the machine (the store comes after MLflow's
    import, which takes seconds under load)."""
    out = tmp_path / "run"
    overrides = [
        *RUN,
        "total_env_steps=102400",
        "logging.tracker_points=1000",
        "logging.backends=[mlflow]",
    ]
    cmd = [sys.executable, "-m", "nnxrl", "train", CARTPOLE, "--out", str(out)]
    with alone() as pause_others:
        proc = subprocess.Popen(cmd + sets(overrides), stderr=subprocess.DEVNULL, env=cli_env())
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            if any(p.name.startswith("mlflow.db") for p in tmp_path.glob("*")):
                break
            time.sleep(0.005)
        pause_others()
        time.sleep(0.3)  # well inside the store's creation
        proc.kill()
        proc.wait()
    assert main(["train", "--resume", str(out)]) == 0
    from mlflow import MlflowClient

    from nnxrl.logging.mlflow_tracker import local_store_uri

    client = MlflowClient(tracking_uri=local_store_uri(out))
    runs = client.search_runs([client.get_experiment_by_name("nnxrl-CartPole-v1").experiment_id])
    finished = [r for r in runs if r.info.status == "FINISHED"]
    assert len(finished) == 1
    steps = [m.step for m in client.get_metric_history(finished[0].info.run_id, "loss/total")]
    assert sorted(steps) == [u * 128 for u in range(1, 801)]


def test_a_broken_store_is_moved_aside_and_the_records_sent_again(tmp_path, capsys):
    out = tmp_path / "run"
    overrides = [*RUN, "logging.backends=[mlflow]"]
    with pytest.raises(Stopped):
        run_training(config_lib.load(CARTPOLE, overrides), out, quiet=True, stop_after=40)
    (tmp_path / "mlflow.db").write_bytes(b"this is not a database")  # shared by tmp_path's runs
    assert main(["train", "--resume", str(out)]) == 0
    err = capsys.readouterr().err
    assert "moved it to mlflow.db.broken" in err and "failed" not in err, err
    from mlflow import MlflowClient

    from nnxrl.logging.mlflow_tracker import local_store_uri

    client = MlflowClient(tracking_uri=local_store_uri(out))
    (run,) = client.search_runs([client.get_experiment_by_name("nnxrl-CartPole-v1").experiment_id])
    steps = sorted(m.step for m in client.get_metric_history(run.info.run_id, "loss/total"))
    assert steps == [u * 128 for u in range(1, 161)] and run.info.status == "FINISHED"


def run_cli(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "nnxrl", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=cli_env(), timeout=timeout)


def test_an_unreachable_tracking_server_is_reported_once_and_the_run_ends_promptly(tmp_path):
    """MLflow's own defaults retry for about four minutes; the subprocess's limit makes
    this test fail on such a wait (a hang check, not a speed check: the run takes about
    10 s on a quiet machine, its limit leaves room for a loaded one)."""
    overrides = [
        *RUN,
        "logging.backends=[mlflow]",
        "logging.mlflow_tracking_uri=http://127.0.0.1:9",
    ]
    done = run_cli(["train", CARTPOLE, "--out", str(tmp_path / "run")] + sets(overrides), 180)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("logging backend 'mlflow'") == 1
    assert len(records(tmp_path / "run").splitlines()) == 160


def test_a_read_only_tracking_store_is_reported_once(tmp_path, readonly_dir):
    uri = f"sqlite:///{readonly_dir}/mlflow.db"
    overrides = [*RUN, "logging.backends=[mlflow]", f"logging.mlflow_tracking_uri={uri}"]
    done = run_cli(["train", CARTPOLE, "--out", str(tmp_path / "run")] + sets(overrides), 120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("logging backend 'mlflow'") == 1
    assert "Traceback" not in done.stderr


def test_export_checks_its_destination_first(reference, tmp_path, readonly_dir, capsys):
    existing = tmp_path / "a-file"
    existing.write_text("keep me")
    assert main(["export", str(reference), "--out", str(existing)]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err
    assert existing.read_text() == "keep me"
    assert main(["export", str(reference), "--out", str(readonly_dir / "policy")]) == 2
    assert "cannot write to" in capsys.readouterr().err


# -- bad input, rejected before the run directory is touched ----------------------------


def write(path: Path, content: bytes | str) -> str:
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(path)


@pytest.mark.parametrize(
    "overrides,expected",
    [
        (["env.kwargs.max_steps_in_episode=abc"], "env.kwargs.max_steps_in_episode"),
        (["env.kwargs.bogus=1"], "env.kwargs.bogus"),
        (["network.squash=tanh"], "network.squash: set, but env.id 'CartPole-v1' has discrete"),
        (["env.id=Cartpole-v1"], "did you mean CartPole-v1"),
        (["seed=18446744073709551616"], "seed"),
        (["seed=2**64"], "seed"),
        (["seed=4294967296"], "<= 4294967295"),
        (["env.num_envs=2**40"], "env.num_envs"),
        (["env.num_envs=1099511627776"], "env.num_envs"),
        (["seed=[1"], "not valid YAML"),
        (["seed=!!python/object/apply:os.system [touch /tmp/nnxrl-pwned]"], "not allowed"),
        (["ppo.learning_rate=.nan"], "ppo.learning_rate: nan is not a finite number"),
        (["ppo.gamma=nan"], "ppo.gamma: nan is not a finite number"),
        (["ppo.ent_coef=.inf"], "ppo.ent_coef: inf is not a finite number"),
        (["checkpoint.every_minutes=.nan"], "checkpoint.every_minutes"),
        (["env=0"], "env is a section"),
        (["ppo="], "ppo is a section"),
        (["network=[]"], "network is a section"),
        # huge values: refused by their bounds before anything compiles
        (["num_seeds=1.0e+30"], "num_seeds: 1000000000000000000000000000000 is out of range"),
        (["network.num_layers=10000"], "network.num_layers: 10000 is out of range"),
        (["ppo.num_epochs=1000000000000"], "ppo.num_epochs: 1000000000000 is out of range"),
        (["logging.return_window=1000000000000"], "logging.return_window"),
        (["mesh.cpu_devices=1000000000000"], "mesh.cpu_devices"),
        (["env.kwargs={max_steps_in_episode: -5}"], "max_steps_in_episode: -5 must be at least 1"),
        (["env.kwargs={max_steps_in_episode: 0}"], "max_steps_in_episode: 0 must be at least 1"),
        # YAML 1.1's surprises
        (["logging.log_video=yes"], "'yes' is read as a boolean by YAML 1.1"),
        (["logging.log_video=on"], "'on' is read as a boolean"),
        (["seed=1:30"], "'1:30' is a base-60 number"),
        (["env.kwargs={[1]: 2}"], "a mapping key must be a plain name or number, got list"),
        (["env.id=" + "x" * 5_000_000], "characters; a config holds at most 1,000,000"),
        (["env.id=" + "x" * 50_000], "a string of 50,000 characters"),
        (["env.kwargs=" + "[" * 60 + "]" * 60], ": [0][0][0][0]"),
        (["env.kwargs=" + "[" * 1000 + "]" * 1000], "nested too deeply"),
        # the key and what is allowed, named
        (["ppo.lr=1e-3"], "unknown key ppo.lr; did you mean ppo.learning_rate?"),
        (["env.id=NO"], "override 'env.id=NO': line 1: 'NO' is read as a boolean by YAML"),
        # sweeps that cannot be one population
        (["sweep.random={ppo.gamma: {uniform: [0.001, .inf]}}"], "bounds must be finite"),
        (
            ["sweep.random={ppo.gamma: {uniform: [0.9, 0.99]}}", "sweep.num_samples=100000000"],
            "sweep.num_samples: 100000000 is out of range",
        ),
        (
            [
                "sweep.grid={ppo.gamma: [" + ", ".join(["0.9"] * 1000) + "], "
                "ppo.gae_lambda: [" + ", ".join(["0.9"] * 1000) + "]}"
            ],
            "1000 (ppo.gamma) x 1000 (ppo.gae_lambda) make 1,000,000 settings",
        ),
    ],
)
def test_bad_overrides_are_named_and_touch_nothing(tmp_path, capsys, overrides, expected):
    out = tmp_path / "run"
    assert main(["train", CARTPOLE, "--out", str(out)] + sets(overrides)) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err, err
    assert len(err) < 3_000  # a value pasted whole is not echoed back whole
    assert not out.exists()
    assert not Path("/tmp/nnxrl-pwned").exists()


BILLION_LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


def test_a_yaml_merge_key_works():
    from nnxrl.schema import parse_yaml

    text = "defaults: &d {id: CartPole-v1, num_envs: 8}\nenv:\n  <<: *d\n  num_envs: 16\n"
    assert parse_yaml(text, "t")["env"] == {"id": "CartPole-v1", "num_envs": 16}


@pytest.mark.parametrize(
    "content,expected",
    [
        ("", "is empty"),
        ("42\n", "holds a number"),
        ("- 1\n- 2\n", "holds a list"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "is not a text file"),
        ("seed: 1\nseed: 2\n", "key 'seed' appears twice"),
        ("env: 0\n", "env is a section"),
        ("ppo: null\n", "ppo is a section"),
        ("network: []\n", "network is a section"),
        (BILLION_LAUGHS, "more than 100,000 values once its aliases"),
        ("env:\n  id: NO\n", "env.id: line 2: 'NO' is read as a boolean by YAML 1.1"),
    ],
)
def test_bad_config_files_are_named_and_touch_nothing(tmp_path, capsys, content, expected):
    config = write(tmp_path / "config.yaml", content)
    out = tmp_path / "run"
    assert main(["train", config, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err, err
    assert not out.exists()


def test_unwritable_out_is_refused_before_anything_runs(tmp_path, readonly_dir, capsys):
    a_file = Path(write(tmp_path / "a-file", "x"))
    assert main(["train", CARTPOLE, "--out", str(a_file)]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err
    assert main(["train", CARTPOLE, "--out", str(readonly_dir / "run")]) == 2
    assert "cannot write to" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args,expected",
    [
        (["train", CARTPOLE, "--stop-after", "0"], "--stop-after: 0 is out of range"),
        (["eval", "RUN", "--episodes", "-1"], "--episodes: -1 is out of range"),
        (["eval", "RUN", "--key", str(2**64)], "--key: 18446744073709551616 is out of range"),
        (["eval", "RUN", "--key", "2**64"], "--key: expected an integer"),
    ],
)
def test_bad_command_line_numbers_are_named(args, expected, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    assert expected in capsys.readouterr().err


def test_output_files_are_checked_first(reference, tmp_path, readonly_dir, capsys):
    args = ["eval", str(reference), "--episodes", "1", "--json", str(readonly_dir / "e.json")]
    assert main(args) == 2
    assert "--json: cannot write" in capsys.readouterr().err
    args = ["plot", str(reference), "--out", str(tmp_path / "missing" / "plot.png")]
    assert main(args) == 2
    assert f"--out: the folder {tmp_path / 'missing'} does not exist" in capsys.readouterr().err


def test_a_metrics_file_cut_mid_line_is_named_by_plot(reference, tmp_path, capsys):
    run = tmp_path / "cut"
    run.mkdir()
    lines = records(reference).splitlines(keepends=True)
    (run / "metrics.jsonl").write_bytes(b"".join(lines[:7]) + lines[7][:25])
    assert main(["plot", str(run), "--out", str(tmp_path / "p.png")]) == 2
    assert f"{run / 'metrics.jsonl'}, line 8: not a complete JSON record" in (
        capsys.readouterr().err
    )


def test_a_failed_start_leaves_a_directory_that_a_new_run_and_resume_accept(reference, tmp_path):
    from test_checkpoint import PoisonOptions

    from nnxrl.intrinsic import register
    from nnxrl.intrinsic.base import make_addon

    builds = []

    def flaky(options, context):
        """An add-on whose first build fails (as a start can fail after the directory
        is made), then gives no bonus."""
        builds.append(1)
        if len(builds) == 1:
            raise RuntimeError("this add-on cannot be built yet")
        return make_addon("none", {}, context)

    register("flaky", PoisonOptions, flaky)
    # compiled each time (a saved program's start builds no add-on)
    flaky_run = [*RUN, "intrinsic.addon=flaky", "compile_cache.save_programs=false"]
    out = tmp_path / "run"
    with pytest.raises(RuntimeError, match="cannot be built"):
        main(["train", CARTPOLE, "--out", str(out)] + sets(flaky_run))
    assert (out / "config.yaml").exists()  # the start got that far
    assert main(["train", "--resume", str(out)]) == 0  # starts again from update 0
    assert len(records(out).splitlines()) == 160
    other = tmp_path / "other"
    builds.clear()
    with pytest.raises(RuntimeError, match="cannot be built"):
        main(["train", CARTPOLE, "--out", str(other)] + sets(flaky_run))
    assert main(["train", CARTPOLE, "--out", str(other)] + sets(RUN)) == 0
    assert records(other) == records(reference)
