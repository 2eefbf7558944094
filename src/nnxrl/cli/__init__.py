"""The command line: ``parser.py`` reads it, ``commands.py`` calls the Python API,
``printing.py`` shows what came back. Exit codes are decided here, once.

nnxrl train CONFIG [--set KEY=VALUE ...] [--out DIR] [--stop-after UPDATES]
nnxrl train --resume RUN_DIR [CONFIG] [--set KEY=VALUE ...] [--step UPDATE]
nnxrl eval RUN_DIR|POLICY_DIR [--episodes N] [--greedy | --epsilon E] [--step UPDATE]
           [--setting I] [--json FILE] [--fast-compile]
nnxrl render RUN_DIR|POLICY_DIR [--seed I] [--out episode.gif] [--greedy | --epsilon E]
             [--step UPDATE] [--setting I] [--scale K] [--overlay] [--fast-compile]
nnxrl export RUN_DIR [--step UPDATE] [--setting I] [--out DIR]
nnxrl sweep-report RUN_DIR  (a sweep's settings ranked; writes best.yaml, sweep.png)
nnxrl plot RUN_DIR [RUN_DIR ...] [--metric NAME ...] [--smooth W] [--statistic mean|iqm]
           [--no-interval] [--out FILE.png]
nnxrl configs                (the shipped configs, which train and --resume take by name)
nnxrl --plugin MODULE ...   (import MODULE first: it may register envs and add-ons)
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Sequence
from typing import Any

import nnxrl
from nnxrl.cli import parser, plugins
from nnxrl.errors import CheckpointError, ConfigError, NonFiniteError, Stopped, StorageError
from nnxrl.hints import bytecode_tip, command, cut_long_words
from nnxrl.store import own_files

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; exit codes: 0 done, 2 bad input (config, paths, checkpoints),
    3 non-finite values, 4 a write failed (disk full, read-only), 130 stopped."""
    args = parser.build_parser().parse_args(argv)
    if sys.stderr.isatty():  # for a person at a terminal, not a log
        jax_file = getattr(sys.modules.get("jax"), "__file__", None)
        if tip := bytecode_tip(sys.dont_write_bytecode, jax_file):
            print(f"nnxrl: {tip}", file=sys.stderr)
    try:
        nnxrl.use_cpu_devices()  # one per core, unless the config's mesh.cpu_devices says otherwise
        plugins.load_plugins(args.plugin)
        return args.func(args)
    except ConfigError as e:
        say(f"config error: {e}")
        return 2
    except CheckpointError as e:
        say(f"checkpoint error: {e}")
        return 2
    except (FileNotFoundError, ValueError) as e:
        say(str(e))
        return 2
    except NonFiniteError as e:
        say(f"training stopped: {e}")
        return 3
    except StorageError as e:
        say(f"storage error: {e}")
        return 4
    except Stopped as e:
        print(f"nnxrl: {stopped_message(e, getattr(args, 'stop_after', None))}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("nnxrl: interrupted; metrics written so far are kept", file=sys.stderr)
        return 130
    except OSError as e:  # a path the OS refuses (too long, not permitted, ...)
        say(os_refusal(e))
        return 4 if e.errno in STORAGE_ERRNOS else 2


def say(message: str) -> None:
    """A refusal on stderr, a value pasted whole cut short (``cut_long_words``)."""
    print(f"nnxrl: {cut_long_words(message)}", file=sys.stderr)


def os_refusal(e: OSError) -> str:
    """An OS error on a path in one line: the path (cut) and what the OS said (for a
    path too long, which part is and what the file system allows)."""
    name = str(e.filename or "")
    where = f"{own_files.shown_path(name)}: " if name else ""
    return f"{where}{own_files.os_problem(e, name)}"


def stopped_message(e: Any, stop_after: int | None) -> str:
    """Where a stopped run stands: checkpointed (and how to continue), or stopped
    before anything could be saved; and why a --stop-after stop came later."""
    if e.checkpointed:
        said = f"stopped at update {e.update}, checkpointed"
        if e.out_dir:
            said += f"; continue with `{command(f'train --resume {e.out_dir}')}`"
    elif e.update == 0:
        said = "stopped before the first update: nothing was trained or checkpointed; "
        said += "run the same command again to start"
    else:
        said = f"stopped at update {e.update}; no checkpoint holds it (checkpoints are off)"
    if stop_after is not None and e.update > stop_after:
        said += (
            f" (--stop-after {stop_after} stops at the end of the chunk that reaches it; "
            "set logging.updates_per_chunk to stop sooner)"
        )
    return said


# OS errors that mean the storage failed (exit 4) rather than a bad path (exit 2)
STORAGE_ERRNOS = {errno.ENOSPC, errno.EROFS, errno.EIO, errno.EDQUOT}
