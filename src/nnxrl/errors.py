"""The ways a run ends early that the command line reports with their own exit code.

A config or input error is ``config.ConfigError`` (exit 2) and a missing or damaged
checkpoint ``checkpoint.CheckpointError`` (exit 2); a stop on request is
``stop.Stopped`` (exit 130). These two remain:
"""

from __future__ import annotations


class NonFiniteError(RuntimeError):
    """Training produced a NaN or inf (exit 3); the message names the seed, update and
    metrics, and where the last good state is checkpointed."""


class StorageError(RuntimeError):
    """A file the run must keep could not be written (disk full, read-only, I/O error;
    exit 4); the message says what was kept and how to continue."""
