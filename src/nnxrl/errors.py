"""Every way nnxrl refuses input or ends a run early, in one place, with the exit code
the command line gives it (``ConfigError`` is also ``nnxrl.ConfigError`` and
``nnxrl.config.ConfigError``)."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value is unknown, of the wrong type, out of range or
    inconsistent; also any other bad input (paths, plugins, environment variables):
    exit 2."""


class RunLockedError(ConfigError):
    """Another process writes to this run directory (exit 2)."""


class CheckpointError(RuntimeError):
    """A checkpoint is missing, damaged, or does not belong to the requested run
    (exit 2)."""


class NonFiniteError(RuntimeError):
    """Training produced a NaN or inf (exit 3); the message names the seed, update and
    metrics, and where the last good state is checkpointed."""


class StorageError(RuntimeError):
    """A file the run must keep could not be written (disk full, read-only, I/O error;
    exit 4); the message says what was kept and how to continue."""


class Stopped(KeyboardInterrupt):
    """The run was stopped on request (signal or ``stop_after``) at ``update`` (exit
    130); ``checkpointed``: a checkpoint of that update exists, so ``nnxrl train
    --resume`` continues it (not so for a stop before the first update, or with
    checkpoints off)."""

    def __init__(self, update: int, out_dir: object = None, checkpointed: bool = True) -> None:
        super().__init__(f"stopped at update {update}")
        self.update, self.out_dir, self.checkpointed = update, out_dir, checkpointed
