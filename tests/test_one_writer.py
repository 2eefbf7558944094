"""One writer per run directory, through real processes: a second ``train`` or
``--resume`` of a directory being written is refused at once naming the holder, a
lock left by a killed run is taken over, and runs sharing a folder's MLflow store at
once each get their own run with every point."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cli_runs import CARTPOLE, SHORT_CARTPOLE

SHORT = [o for o in SHORT_CARTPOLE if not o.startswith("logging.backends")]
# the same run made long (40,000 updates): it still writes when a second writer comes
# (however slowly that one starts), and is then stopped with SIGINT
LONG = [*SHORT, "total_env_steps=5120000"]


def nnxrl(*args: str, overrides: list[str] = (), backends: str = "[]") -> subprocess.Popen:
    sets = sum((["--set", o] for o in [*overrides, f"logging.backends={backends}"]), [])
    command = [sys.executable, "-m", "nnxrl", *args]
    if args[0] == "train" and "--resume" not in args:
        command += sets
    return subprocess.Popen(
        command,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until(proc: subprocess.Popen, ready, what: str, timeout: float) -> None:
    """Poll ``ready()`` until it is true while ``proc`` runs; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"{what} never happened")


def wait_for_lock(run: Path, proc: subprocess.Popen, timeout: float = 120) -> str:
    """The lock file's text once ``proc`` holds the lock of ``run``."""
    lock = run / ".nnxrl.lock"
    wait_until(proc, lambda: lock.is_file() and lock.read_text().strip(), f"{run} locked", timeout)
    return lock.read_text()


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def updates_written(run: Path) -> list[int]:
    return [json.loads(x)["update"] for x in (run / "metrics.jsonl").read_text().splitlines()]


def wait_for_records(run: Path, proc: subprocess.Popen, past: int = 0, timeout: float = 300):
    """Until ``proc`` has recorded an update after ``past`` in ``run``'s metrics.jsonl:
    a run that is still compiling when it is stopped writes no record (on a loaded
    machine its compile can outlast a second process's whole refusal)."""

    def recorded() -> bool:
        try:
            return max(updates_written(run), default=0) > past
        except (OSError, ValueError):  # not yet written, or a line being appended
            return False

    wait_until(proc, recorded, f"{run} recording an update after {past}", timeout)


def stop(proc: subprocess.Popen) -> tuple[int, str, str]:
    proc.send_signal(signal.SIGINT)
    return finish(proc)


def test_a_second_train_into_a_run_being_written_is_refused_naming_the_holder(tmp_path):
    run = tmp_path / "run"
    first = nnxrl("train", CARTPOLE, "--out", str(run), overrides=LONG)
    holder = wait_for_lock(run, first)
    assert f"pid {first.pid} " in holder
    wait_for_records(run, first)
    second = finish(nnxrl("train", CARTPOLE, "--out", str(run), overrides=LONG))
    assert second[0] == 2, second
    assert f"being written by another nnxrl process (pid {first.pid}" in second[2]
    assert stop(first)[0] == 130
    updates = updates_written(run)
    assert updates == list(range(1, len(updates) + 1))  # each once, in order


def test_a_second_resume_while_one_runs_is_refused(tmp_path):
    run = tmp_path / "run"
    stopped = finish(
        nnxrl("train", CARTPOLE, "--out", str(run), "--stop-after", "8", overrides=LONG)
    )
    assert stopped[0] == 130, stopped
    first = nnxrl("train", "--resume", str(run))
    wait_for_lock(run, first)
    wait_for_records(run, first, past=8)
    second = finish(nnxrl("train", "--resume", str(run)))
    assert second[0] == 2 and f"(pid {first.pid} " in second[2], second
    assert stop(first)[0] == 130
    updates = updates_written(run)
    assert len(updates) > 8 and updates == list(range(1, len(updates) + 1))
    assert (run / ".nnxrl.lock").read_text() == ""  # let go cleanly


def test_the_lock_of_a_killed_run_is_taken_over_with_a_message(tmp_path):
    run = tmp_path / "run"
    first = nnxrl("train", CARTPOLE, "--out", str(run), overrides=SHORT)
    wait_for_lock(run, first)
    first.send_signal(signal.SIGKILL)  # no chance to let go
    first.communicate()
    again = finish(nnxrl("train", CARTPOLE, "--out", str(run), overrides=SHORT))
    assert again[0] == 0, again[2][-2000:]
    assert f"left by pid {first.pid} " in again[2] and "taking it over" in again[2]


def test_runs_sharing_a_folders_mlflow_store_at_once_each_get_every_point(tmp_path):
    count = 4  # four at once show what two would, and more contention
    from mlflow import MlflowClient

    from nnxrl.logging.mlflow_tracker import local_store_uri

    runs = [tmp_path / "runs" / f"run{i}" for i in range(count)]
    procs = [
        nnxrl(
            "train", CARTPOLE, "--out", str(r), overrides=[*SHORT, f"seed={i}"], backends="[mlflow]"
        )
        for i, r in enumerate(runs)
    ]
    for proc in procs:
        code, _, err = finish(proc, timeout=600)
        assert code == 0, err[-2000:]
    client = MlflowClient(tracking_uri=local_store_uri(runs[0]))
    ids = [(r / "mlflow_run_id").read_text().strip() for r in runs]
    assert len(set(ids)) == count
    for run, run_id in zip(runs, ids, strict=True):
        assert client.get_run(run_id).info.status == "FINISHED"
        history = client.get_metric_history(run_id, "episode_return_window")
        # at every update's env steps (4 envs x 32 steps each)
        assert sorted(m.step for m in history) == [128 * u for u in range(1, 41)], run


def delete_store_after_update(monkeypatch, store: Path, update: int) -> None:
    """Delete the folder's MLflow store in the MLflow backend's own thread, right after
    it has written the batch holding ``update``: so the deletion always comes before
    that backend's later writes and its close, however the threads are scheduled (a
    separate backend deleting it raced the end of the run)."""
    from nnxrl.logging.mlflow_tracker import MlflowBackend

    write, deleted = MlflowBackend.write, []

    def write_then_delete(self, batch) -> None:
        write(self, batch)
        if batch.aggregates[-1]["update"] >= update and not deleted:
            store.unlink()
            deleted.append(update)

    monkeypatch.setattr(MlflowBackend, "write", write_then_delete)


def test_a_store_deleted_mid_run_gets_the_whole_run_at_the_end(tmp_path, capfd, monkeypatch):
    from mlflow import MlflowClient

    from nnxrl import config as config_lib
    from nnxrl.logging.mlflow_tracker import local_store_path, local_store_uri
    from nnxrl.run.training import run_training

    run = tmp_path / "runs" / "run"
    store = local_store_path(run)
    config = config_lib.load(CARTPOLE, [*SHORT, "logging.backends=[mlflow]"])
    delete_store_after_update(monkeypatch, store, 8)
    run_training(config, run, quiet=True)
    assert "was deleted or replaced during the run" in capfd.readouterr().err
    client = MlflowClient(tracking_uri=local_store_uri(run))
    run_id = (run / "mlflow_run_id").read_text().strip()
    assert client.get_run(run_id).info.status == "FINISHED"
    history = client.get_metric_history(run_id, "episode_return_window")
    assert sorted(m.step for m in history) == [128 * u for u in range(1, 41)]
