"""A run's directory: where it goes, what may be written there, where a resume starts.

A fresh run needs a directory that holds no run (no record in metrics.jsonl and no
checkpoint); a failed start leaves neither, so the same ``--out`` works again. A
resumed run starts from the newest checkpoint whose updates all reached
metrics.jsonl (or ``step``), drops the records after it and appends from there; with
no such checkpoint it starts again from update 0, which gives the same records,
since a run is deterministic. Every destination is checked before anything is
written, so bad input leaves nothing behind.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from nnxrl import config as config_lib
from nnxrl.config import population, schedule
from nnxrl.errors import NonFiniteError, StorageError
from nnxrl.logging import members_of
from nnxrl.logging.jsonl import RECORD_FILES, RecordOrder, records_in_order, truncate_after
from nnxrl.store import checkpoint, own_files
from nnxrl.store import lock as run_lock
from nnxrl.store.own_files import ensure_writable_dir
from nnxrl.version import git_commit, version

NONFINITE_FILE = "nonfinite.json"  # written when a NaN/inf stopped the run
RUN_FILE = "run.json"  # the config a run started with, which a resume must match


@dataclass(frozen=True)
class StartPoint:
    """Where a run starts: ``update`` 0 from the initial state, else from the
    checkpoint of that update; ``mlflow_run_id`` the MLflow run to continue."""

    update: int
    mlflow_run_id: str | None


def fresh_run_dir(path: str | Path, what: str = "out_dir") -> Path:
    """A directory for a fresh run, checked before anything starts: created if need
    be, writable, no symbolic link where the run's files go, and holding no run (under
    the run's lock); each refusal names ``what`` (the CLI's ``--out``)."""
    out_dir = ensure_writable_dir(path, what)
    own_files.refuse_links(out_dir)
    with run_lock.hold(out_dir):
        refuse_a_run(out_dir, what)
    return out_dir


def holds_run(out_dir: Path) -> bool:
    """True when ``out_dir`` holds a run: a record in metrics.jsonl or a checkpoint."""
    records = out_dir / "metrics.jsonl"
    has_records = records.is_file() and records.stat().st_size > 0
    return has_records or bool(checkpoint.available(out_dir))


def refuse_a_run(out_dir: Path, what: str = "--out") -> None:
    """A fresh run's directory must not hold a run already."""
    if holds_run(out_dir):
        raise config_lib.ConfigError(
            f"{what}: {out_dir} already holds a run; continue it with "
            f"`nnxrl train --resume {out_dir}` or choose another directory"
        )


def prepare(
    config: config_lib.Config, out_dir: Path, resume: bool, step: int | None = None
) -> StartPoint:
    """Check ``out_dir`` for a fresh run or find where a resumed one starts (see the
    module docstring), trimming the record files to it."""
    own_files.refuse_links(out_dir)
    saved_in = checkpoint.checkpoint_dir(out_dir)
    if saved_in.exists():
        if not saved_in.is_dir():
            raise config_lib.ConfigError(
                f"{saved_in} is a file, but nnxrl keeps the run's checkpoints there; move it "
                "away, or choose another directory"
            )
        ensure_writable_dir(saved_in, "checkpoints")
    if not resume:
        refuse_a_run(out_dir)
        truncate_after(
            out_dir, 0, population.num_members(config)
        )  # what a failed start may have left
        return StartPoint(0, None)
    return resume_point(config, out_dir, step)


def resume_point(config: config_lib.Config, out_dir: Path, step: int | None) -> StartPoint:
    """Where a resumed run starts: the newest checkpoint (or ``step``) whose records
    are all in metrics.jsonl, once the config is checked against the run's; the
    records after it are trimmed."""
    saved = checkpoint.available(out_dir)
    if step is not None and step not in saved:
        raise checkpoint.CheckpointError(
            f"--step: no checkpoint for update {step} in {checkpoint.checkpoint_dir(out_dir)}; "
            f"available: {saved}"
        )
    newest = step if step is not None else (saved[-1] if saved else None)
    rewritten = False  # records written back from the checkpoint
    if newest is not None:
        meta = checkpoint.load_meta(out_dir, newest)
        check_same_config(out_dir, meta["config"], config)
        rewritten = restore_unrecorded(out_dir, meta, population.num_members(config))
    else:
        check_same_config(out_dir, started_config(out_dir), config)
    order = records_in_order(out_dir / "metrics.jsonl", members_of(config))
    logged = order.last
    if order.problem is not None:
        check_repairable(out_dir, order, newest if newest is not None else 0)
    usable = [u for u in saved if u <= logged and (step is None or u == step)]
    if step is not None and not usable:
        raise checkpoint.CheckpointError(
            f"--step: the checkpoint for update {step} is newer than the last update "
            f"fully written to {out_dir / 'metrics.jsonl'} ({logged}); choose one of "
            f"{[u for u in saved if u <= logged]}"
        )
    update = usable[-1] if usable else 0
    _refuse_nonfinite(out_dir, update, config.algo)
    if update >= schedule.num_updates(config) and not rewritten:
        say_complete(out_dir, update, schedule.num_updates(config))
    truncate_after(out_dir, update, population.num_members(config))
    run_id_file = out_dir / "mlflow_run_id"
    run_id = run_id_file.read_text().strip() if run_id_file.exists() else None
    return StartPoint(update, run_id or None)


def say_complete(out_dir: Path, update: int, num_updates: int) -> None:
    """What resuming a complete run does, and what it does not."""
    print(
        f"nnxrl: the run in {out_dir} is already complete ({update} of {num_updates} "
        "updates): resuming it trains nothing and finishes only what a stop during its "
        "end may have left undone (the exported policy, the trackers' records). A resumed "
        "run does not extend a run (total_env_steps sets the learning-rate schedule): "
        "train a new one to go further",
        file=sys.stderr,
        flush=True,
    )


def write_config(config: config_lib.Config, out_dir: Path, fresh: bool) -> None:
    """config.yaml (the config as this start of the run reads it) and, when the run
    starts (or predates it), run.json: the config it started with, which every resume
    is checked against, also when config.yaml was edited since."""
    own_files.write_text(out_dir / "config.yaml", config_lib.saved_yaml(config))
    if fresh or not (out_dir / RUN_FILE).is_file():
        manifest = {
            "config": config_lib.saved_dict(config),
            "nnxrl": version(),
            "git_commit": git_commit(),  # the code the run started from (None: not in git)
        }
        own_files.write_text(out_dir / RUN_FILE, json.dumps(manifest, indent=1))


def check_repairable(out_dir: Path, order: RecordOrder, newest: int) -> None:
    """metrics.jsonl is out of order at ``order.line``: the resume at ``newest`` (a
    checkpoint, or 0 for none) rewrites what follows the last update in order; a
    problem before ``newest`` would lose updates that only the records hold, so it is
    refused, naming the line and the checkpoints that would repair it."""
    where = f"{out_dir / 'metrics.jsonl'}, line {order.line}"
    if newest <= order.last:
        print(
            f"nnxrl: {where}: {order.problem}; the records after update {newest} are "
            "rewritten from the checkpoint there",
            file=sys.stderr,
            flush=True,
        )
        return
    earlier = [u for u in checkpoint.available(out_dir) if u <= order.last]
    choice = (
        f"resume from an earlier checkpoint that comes before it with `nnxrl train --resume "
        f"{out_dir} --step {earlier[-1]}` (it rewrites the records after it)"
        if earlier
        else "no checkpoint comes before it"
    )
    raise config_lib.ConfigError(
        f"{where}: {order.problem}. The records are in order only through update "
        f"{order.last}, before the newest checkpoint (update {newest}); {choice}, or "
        "repair the file (were the records edited, or did two runs write here?)"
    )


def started_config(out_dir: Path) -> dict:
    """The config a run started with: run.json's (written once, when it started), or
    config.yaml's for a run from before run.json."""
    manifest = out_dir / RUN_FILE
    if manifest.is_file():
        return json.loads(manifest.read_text())["config"]
    return yaml.safe_load((out_dir / "config.yaml").read_text())


def check_same_config(out_dir: Path, saved: dict, config: config_lib.Config) -> None:
    differences = checkpoint.config_differences(saved, config_lib.to_dict(config))
    if differences:
        raise config_lib.ConfigError(
            f"the run in {out_dir} was made with a different config; only logging.*, "
            "checkpoint.*, compile_cache.*, mesh.* and distributed.* may change on resume. "
            "Differing keys: " + "; ".join(differences)
        )


def restore_unrecorded(out_dir: Path, meta: dict, num_members: int) -> bool:
    """Write back the records a checkpoint holds because metrics.jsonl could not be
    written when it was taken (``meta['unrecorded']``), so the files reach its update.
    Returns whether there were any."""
    held = meta.get("unrecorded")
    if not held:
        return False
    truncate_after(out_dir, held["recorded_through"], num_members)
    for name in RECORD_FILES:
        with (out_dir / name).open("a") as f:
            f.writelines(line + "\n" for line in held[name])
    return True


def mark_nonfinite(out_dir: Path, update: int, failure: str) -> None:
    """Note that the run stopped on a NaN/inf after ``update`` (its last good state)."""
    try:
        own_files.write_text(
            out_dir / NONFINITE_FILE, json.dumps({"update": update, "failure": failure})
        )
    except StorageError:  # the message on the console says it all the same
        pass


def _refuse_nonfinite(out_dir: Path, update: int, algo: str) -> None:
    """A run that stopped on a NaN/inf would meet it again: say so instead of resuming."""
    marker = out_dir / NONFINITE_FILE
    if not marker.exists():
        return
    try:
        noted = json.loads(marker.read_text(errors="replace"))
        noted_update, failure = int(noted["update"]), str(noted["failure"])
    except (ValueError, KeyError, TypeError):
        raise config_lib.ConfigError(
            f"{marker} is damaged (not the JSON nnxrl wrote). It marks a run stopped by a "
            f"NaN/inf; delete it (rm {marker}) to resume anyway"
        ) from None
    noted = {"update": noted_update, "failure": failure}
    if noted["update"] == update:
        raise NonFiniteError(
            f"the run in {out_dir} stopped because of {noted['failure']}. Resuming with the "
            "same config meets them again (a run is deterministic); start a new run with a "
            f"changed config instead, e.g. a lower {algo}.learning_rate or {algo}.max_grad_norm "
            f"(the last good state is the checkpoint at update {update})"
        )
