"""nnxrl writes only its own files: no write or deletion through a symbolic link out of
a run directory, no saved policy over a user's folder, records checked on resume,
config.yaml never left empty, and a resume checked against the config the run
started with. Each user file is checked untouched afterwards."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_runs import CARTPOLE, SHORT_CARTPOLE, sets

from nnxrl import config as config_lib
from nnxrl.cli import main
from nnxrl.errors import Stopped
from nnxrl.run.training import run_training

SHORT = [*SHORT_CARTPOLE, "checkpoint.every_updates=8"]  # its tests pick checkpoints


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A whole run, the one every repaired resume must reproduce byte for byte."""
    out = tmp_path_factory.mktemp("finished") / "run"
    run_training(config_lib.load(CARTPOLE, SHORT), out, quiet=True)
    return out


@pytest.fixture
def stopped(tmp_path) -> Path:
    """The same run stopped after 24 updates (checkpoints at 8, 16, 24)."""
    out = tmp_path / "stopped"
    with pytest.raises(Stopped):
        run_training(config_lib.load(CARTPOLE, SHORT), out, quiet=True, stop_after=24)
    return out


def user_file(folder: Path, name: str = "notes.txt", text: str = "my notes\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


# -- export ------------------------------------------------------------------------------


def test_export_never_replaces_a_folder_holding_a_users_files(finished, tmp_path, capsys):
    out = tmp_path / "mine"
    thesis = user_file(out / "params", "thesis.tex", "\\section{Results}\n")
    spec = user_file(out, "policy.yaml", "my own policy notes\n")
    other = user_file(out, "draft.txt")
    assert main(["export", str(finished), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        "not part of a policy nnxrl saved there (draft.txt, params/thesis.tex, policy.yaml)" in err
    )
    assert thesis.read_text() == "\\section{Results}\n"
    assert spec.read_text() == "my own policy notes\n" and other.read_text() == "my notes\n"


def test_export_refuses_a_users_files_under_the_names_a_policy_uses(finished, tmp_path, capsys):
    """Only names a policy has (a policy.yaml of one's own, a thesis under params/):
    nnxrl's manifest, not the names, tells its own files."""
    out = tmp_path / "mine"
    thesis = user_file(out / "params", "thesis.tex", "\\section{Results}\n")
    spec = user_file(out, "policy.yaml", "my own policy notes\n")
    assert main(["export", str(finished), "--out", str(out)]) == 2
    assert "(params/thesis.tex, policy.yaml)" in capsys.readouterr().err
    assert thesis.read_text() == "\\section{Results}\n"
    assert spec.read_text() == "my own policy notes\n"


def test_export_refuses_a_policy_it_saved_once_a_user_has_changed_it(finished, tmp_path, capsys):
    out = tmp_path / "policy"
    assert main(["export", str(finished), "--out", str(out), "--step", "24"]) == 0
    edited = (out / "policy.yaml").read_text() + "# my note on this policy\n"
    (out / "policy.yaml").write_text(edited)
    user_file(out / "params", "thesis.tex")
    assert main(["export", str(finished), "--out", str(out)]) == 2
    assert "(params/thesis.tex, policy.yaml)" in capsys.readouterr().err
    assert (out / "policy.yaml").read_text() == edited


def test_export_replaces_a_policy_it_saved_and_leaves_nothing_aside(finished, tmp_path):
    out = tmp_path / "policy"
    assert main(["export", str(finished), "--out", str(out), "--step", "24"]) == 0
    assert main(["export", str(finished), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [".nnxrl-policy.json", "params", "policy.yaml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy"]  # no partial or old copy


# -- symbolic links ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["config.yaml", "metrics.jsonl", "mlflow_run_id", "policy"])
def test_a_fresh_run_refuses_a_link_among_its_files(tmp_path, capsys, name):
    outside = tmp_path / "outside"
    target = user_file(outside) if name != "policy" else outside
    kept = user_file(outside / "params", "weights.txt") if name == "policy" else target
    run = tmp_path / "run"
    run.mkdir()
    (run / name).symlink_to(target)
    assert main(["train", CARTPOLE, "--out", str(run)] + sets(SHORT)) == 2
    assert f"{run / name} is a symbolic link" in capsys.readouterr().err
    assert kept.read_text() == "my notes\n"
    assert sorted(p.name for p in run.iterdir()) == [name]  # refused before the lock is taken


def test_resume_refuses_a_metrics_file_linked_to_a_users_file(stopped, tmp_path, capsys):
    notes = user_file(tmp_path / "outside")
    (stopped / "metrics.jsonl").unlink()
    (stopped / "metrics.jsonl").symlink_to(notes)
    assert main(["train", "--resume", str(stopped)]) == 2
    assert "metrics.jsonl is a symbolic link" in capsys.readouterr().err
    assert notes.read_text() == "my notes\n"


def test_the_end_of_run_export_never_deletes_through_a_linked_policy(stopped, tmp_path, capsys):
    outside = tmp_path / "outside"
    weights = user_file(outside / "params", "weights.txt")
    (stopped / "policy").symlink_to(outside)
    assert main(["train", "--resume", str(stopped)]) == 2
    assert "policy is a symbolic link" in capsys.readouterr().err
    assert weights.read_text() == "my notes\n"


# -- records and config on resume --------------------------------------------------------


def test_a_duplicated_record_after_the_newest_checkpoint_is_repaired(finished, stopped, capsys):
    with (stopped / "metrics.jsonl").open("a") as f:  # update 24 twice, after its checkpoint
        f.write((stopped / "metrics.jsonl").read_text().splitlines(keepends=True)[-1])
    assert main(["train", "--resume", str(stopped)]) == 0
    err = capsys.readouterr().err
    assert "metrics.jsonl, line 25: update 24, member 0 again" in err
    assert "rewritten from the checkpoint there" in err
    assert (stopped / "metrics.jsonl").read_bytes() == (finished / "metrics.jsonl").read_bytes()


def test_a_duplicated_record_before_the_newest_checkpoint_is_refused_with_its_line(
    finished, stopped, capsys
):
    lines = (stopped / "metrics.jsonl").read_text().splitlines(keepends=True)
    lines.insert(10, lines[2])  # update 3 again at line 11, before the checkpoint at 24
    (stopped / "metrics.jsonl").write_text("".join(lines))
    before = (stopped / "metrics.jsonl").read_bytes()
    assert main(["train", "--resume", str(stopped)]) == 2
    err = capsys.readouterr().err
    assert "metrics.jsonl, line 11: update 3, member 0 again" in err
    assert "in order only through update 10, before the newest checkpoint (update 24)" in err
    assert f"--resume {stopped} --step 8" in err
    assert (stopped / "metrics.jsonl").read_bytes() == before  # nothing touched
    # the command it gives repairs the records
    assert main(["train", "--resume", str(stopped), "--step", "8"]) == 0
    assert (stopped / "metrics.jsonl").read_bytes() == (finished / "metrics.jsonl").read_bytes()


def test_a_run_without_checkpoints_refuses_a_resume_from_an_edited_config(tmp_path, capsys):
    run = tmp_path / "run"
    overrides = [*SHORT, "checkpoint.enabled=false"]
    assert (
        main(["train", CARTPOLE, "--out", str(run), "--stop-after", "8"] + sets(overrides)) == 130
    )
    before = (run / "metrics.jsonl").read_bytes()
    saved = run / "config.yaml"
    saved.write_text(saved.read_text().replace("learning_rate: 0.00025", "learning_rate: 0.1"))
    capsys.readouterr()
    assert main(["train", "--resume", str(run)]) == 2
    err = capsys.readouterr().err
    assert "different config" in err and "ppo.learning_rate: 0.00025 -> 0.1" in err
    assert (run / "metrics.jsonl").read_bytes() == before


def test_config_yaml_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    import os

    from nnxrl.errors import StorageError
    from nnxrl.store import own_files

    path = tmp_path / "config.yaml"
    path.write_text("seed: 3\n")

    def full(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(StorageError, match="could not write .*config.yaml .No space left"):
        own_files.write_text(path, "seed: 4\n")
    monkeypatch.undo()
    assert path.read_text() == "seed: 3\n"
    assert [p.name for p in tmp_path.iterdir()] == ["config.yaml"]


def test_a_copy_of_a_finished_run_is_still_recognised(finished, tmp_path, capsys):
    """The checks above leave a plain run alone: eval reads it, resume says it is done."""
    copy = tmp_path / "copy"
    shutil.copytree(finished, copy)
    assert main(["train", "--resume", str(copy)]) == 0
    assert "already complete (40 of 40 updates)" in capsys.readouterr().err
    meta = json.loads((copy / "run.json").read_text())
    assert meta["config"]["ppo"]["num_steps"] == 32
