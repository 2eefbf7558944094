"""A run's compiled programs kept on disk, so that a repeated config starts at once.

JAX's persistent compilation cache (``compile_cache.py``) keys on the lowered
program, so even a hit traces and lowers it first: seconds on CPU. This first level
keeps the executables themselves (JAX's executable serialisation), under a key of
everything the program could depend on, so that a hit traces nothing and only loads
them:

- the program's config: every section that shapes it, traced values (which enter
  as arguments) left out, so another learning rate still hits;
- the code: nnxrl's own source files, every loaded module outside the installed
  packages (a user's registered env, network or algorithm), each by its text and its
  path within the package or its module's name, not by the folder it lies in (a fresh
  clone of the same commit loads what another saved), and the versions of the
  distributions the program can import (nnxrl's requirements and its env suite's,
  with theirs: ``used_distributions``; another installed extra keeps the programs);
- where it runs: Python and JAX versions, the backend, its devices and their kinds,
  XLA's options (``XLA_FLAGS``) and the JAX flags that change lowering.

An entry lives at ``<compile_cache.dir>/programs/<config digest>/<code digest>-<name>``.
A missing entry compiles; one whose config was saved by other code (an edit, an
upgrade) compiles again and says so in one line, replacing it; one that cannot be
loaded (truncated, corrupt, for devices that are gone) says so, compiles and is
rewritten. Nothing stale can run: a different key is a different file. An entry is
written aside and renamed when whole; what a save killed mid-write leaves aside is
deleted by a later save (``forget_killed_saves``).

The code's key also names the registered components the config uses (its env
factory if registered, network kind, algorithm and add-on) by their functions'
qualified names, so another function registered under a name is another key.

A program is saved only from a fresh compilation: on CPU an executable loaded from
JAX's cache loses its code when serialised again (measured with jax 0.10), so a
miss here compiles with JAX's cache off. JAX's cache stays the level for every other
program (evaluation, ``eval``, ``render``) and for these when saving is off
(``compile_cache.save_programs``) or not possible. A read-only cache folder is read:
a saved program loads, a missing one compiles through JAX's cache (which may hold it)
and is saved nowhere. Like JAX's cache, these files are trusted code: loading one
runs it.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import pickle
import re
import sys
import sysconfig
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jax
from jax.experimental import serialize_executable

from nnxrl import config as config_lib
from nnxrl.algos.registry import algorithm
from nnxrl.envs.registry import registered_env
from nnxrl.intrinsic.base import registration
from nnxrl.networks.registry import network_kind
from nnxrl.store.compile_cache import persistent_cache_off, writable

FORMAT = 2  # bump when an entry's layout changes
PACKAGE = Path(__file__).resolve().parents[1]  # nnxrl/
KEEP_OTHER_CODE = 2  # entries of a program saved by other code kept beside the newest
KILLED_SAVE_SECONDS = 600.0  # a part file older than this was left by a killed save
HOST_SECTIONS = ("seed", "checkpoint", "compile_cache", "evaluation", "hp_schedule")
PROGRAM_LOGGING = ("updates_per_chunk", "return_window")  # logging keys the program reads
COMPILER_VARIABLES = ("XLA_FLAGS", "LIBTPU_INIT_ARGS", "NVIDIA_TF32_OVERRIDE")
JAX_FLAGS = (
    "jax_enable_x64",
    "jax_default_matmul_precision",
    "jax_default_prng_impl",
    "jax_threefry_partitionable",
    "jax_numpy_dtype_promotion",
    "jax_numpy_rank_promotion",
    "jax_use_shardy_partitioner",
)


@dataclass(frozen=True)
class SavedPrograms:
    """Where a config's programs are kept; ``folder`` None: not kept (compiled as usual)."""

    folder: Path | None
    code: str = ""  # the code digest: an entry's file name starts with it
    writable: bool = True  # False: entries are loaded, none is saved
    # name -> the memory the program needs (program_bytes), saved with it
    needs: dict = field(default_factory=dict)

    def need(self, name: str) -> int | None:
        """The memory program ``name`` (compiled or loaded here) needs at its peak."""
        return self.needs.get(name)

    def holds(self, name: str) -> bool:
        """Whether program ``name`` is saved under this key (it may still fail to load)."""
        return self.folder is not None and self.entry(name).exists()

    def entry(self, name: str) -> Path:
        """The file program ``name`` is kept in under this key."""
        return self.folder / f"{self.code}-{name}"

    def compiled(self, name: str, compile_program: Callable[[], Any]) -> Any:
        """The program ``name``: loaded when saved under this key, else compiled by
        ``compile_program`` (with JAX's cache off, so that it can be saved) and saved
        (unless the folder is read-only)."""
        if self.folder is None:
            return self.unsaved(name, compile_program)
        path = self.entry(name)
        if path.exists():
            loaded, need, problem = load(path)
            if loaded is not None:
                self.needs[name] = need
                return loaded
            say(f"the saved {name} program {path} could not be loaded ({problem}); compiling it")
        elif self.writable and self.saved_by_other_code(name):
            say(
                f"the {name} program of this config was saved by other code (nnxrl's source, a "
                "package, JAX or the devices changed); compiling it again"
            )
        if not self.writable:
            return self.unsaved(name, compile_program)
        with persistent_cache_off():
            program = compile_program()
        self.needs[name] = program_bytes(program)
        self.save(path, name, program)
        return program

    def unsaved(self, name: str, compile_program: Callable[[], Any]) -> Any:
        """Program ``name`` compiled with JAX's cache as it is, and kept nowhere."""
        program = compile_program()
        self.needs[name] = program_bytes(program)
        return program

    def saved_by_other_code(self, name: str) -> bool:
        """Whether this config's folder holds ``name`` under another code digest."""
        return any(self.folder.glob(f"*-{name}"))

    def save(self, path: Path, name: str, program: Any) -> None:
        """Write ``program`` to ``path`` atomically, keeping the newest KEEP_OTHER_CODE
        entries of ``name`` saved by other code (another checkout sharing the folder);
        a failure is said in one line and loses nothing."""
        try:
            data = dump(program, self.needs[name])
        except (ValueError, NotImplementedError, pickle.PicklingError, TypeError) as e:
            say(
                f"the {name} program cannot be saved on this backend ({e}), so the next run "
                "compiles it again; compile_cache.save_programs=false leaves it to JAX's cache"
            )
            return
        part = path.with_name(f".{path.name}.{os.getpid()}.part")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            forget_killed_saves(path)
            part.write_bytes(data)
            os.replace(part, path)
        except OSError as e:
            with suppress(OSError):
                part.unlink(missing_ok=True)
            say(f"the {name} program could not be saved in {self.folder} ({e.strerror or e})")
            return
        self.forget_other_code(path, name)

    def forget_other_code(self, path: Path, name: str) -> None:
        """Delete all but the newest KEEP_OTHER_CODE entries of ``name`` beside ``path``
        (another process may be doing the same: what is gone is gone)."""
        try:
            others = sorted(
                (p.stat().st_mtime, p) for p in self.folder.glob(f"*-{name}") if p != path
            )
            for _, old in others[: -KEEP_OTHER_CODE or None]:
                old.unlink(missing_ok=True)
        except OSError:
            pass


def forget_killed_saves(path: Path) -> None:
    """Delete the part files of ``path`` that no save is still writing: a save killed
    mid-write (SIGKILL, power loss) leaves its ``.part`` and never renames it. A part
    untouched for ``KILLED_SAVE_SECONDS`` is such a one (no save takes that long);
    another process's save in progress is younger and kept."""
    now = time.time()
    for part in path.parent.glob(f".{path.name}.*.part"):
        with suppress(OSError):
            if now - part.stat().st_mtime > KILLED_SAVE_SECONDS:
                part.unlink()


def saved_programs(config: config_lib.Config, cache_dir: Path | None) -> SavedPrograms:
    """Where ``config``'s programs are kept: under ``cache_dir`` (None: JAX's cache is
    off or unusable, and so is this) unless ``compile_cache.save_programs`` is false or
    the run spans processes (each holds only its own devices' part) or Python is
    interactive (a notebook's cells are in no file, so an edited cell would not change
    the key)."""
    off = cache_dir is None or not config.compile_cache.save_programs
    if off or jax.process_count() > 1 or interactive():
        return SavedPrograms(None)
    folder = Path(cache_dir) / "programs" / digest(program_config(config))
    code = {
        **code_facts(),
        "distributions": used_distributions(env_distributions(config.env.id)),
        "components": described(components(config)),
    }
    return SavedPrograms(folder, digest(code), writable=writable(Path(cache_dir)))


def interactive() -> bool:
    """Whether the main program is a session (a notebook, a REPL) rather than a file."""
    return not hasattr(sys.modules.get("__main__"), "__file__")


def components(config: config_lib.Config) -> tuple:
    """The registered components ``config`` names: its env's factory (None unless
    registered), network kind, algorithm and add-on."""
    return (
        registered_env(config.env.id),
        network_kind(config.network.kind),
        algorithm(config.algo),
        registration(config.intrinsic.addon),
    )


def program_config(config: config_lib.Config) -> dict:
    """The config as the program sees it: host-only sections and keys dropped, traced
    values (arguments of the program) blanked."""
    data = config_lib.to_dict(config)
    for key in HOST_SECTIONS:
        data.pop(key, None)
    data["logging"] = {k: data["logging"][k] for k in PROGRAM_LOGGING}
    for dotted in config_lib.traced_keys(config):
        section, key = dotted.split(".", 1)
        if key in data.get(section, {}):
            data[section][key] = None
    return data


def code_facts() -> dict:
    """Everything besides the config that a compiled program depends on."""
    devices = jax.devices()
    return {
        "format": FORMAT,
        "python": sys.version,
        "jax": jax.__version__,
        "backend": [jax.default_backend(), devices[0].client.platform_version],
        "devices": [[d.id, d.platform, d.device_kind] for d in devices],
        "environment": {k: os.environ.get(k) for k in COMPILER_VARIABLES},
        "flags": {f: str(getattr(jax.config, f, None)) for f in JAX_FLAGS},
        "source": source_digest(),
    }


def source_digest(package: Path = PACKAGE) -> str:
    """A digest of nnxrl's source files (``package``) and of every loaded module outside
    Python's and the installed packages' folders (a user's own code): each file's text
    under its path within the package, or under its module's name, never where it lies,
    so that another checkout of the same code (a fresh clone, a moved folder) has the
    same key and loads what this one saved."""
    files = {
        f"nnxrl/{path.relative_to(package).as_posix()}": path for path in package.rglob("*.py")
    }
    installed = installed_folders()
    # a copy taken in one step: a thread importing meanwhile (a tracker's, say) changes
    # sys.modules, which broke ``list(sys.modules.items())`` once in the tests
    for name, module in sys.modules.copy().items():
        file = getattr(module, "__file__", None)
        if file and file.endswith(".py") and not file.startswith(installed):
            path = Path(file).resolve()
            if not str(path).startswith(installed) and not path.is_relative_to(PACKAGE):
                files.setdefault(name, path)
    h = hashlib.sha256()
    for label, path in sorted(files.items()):
        h.update(label.encode())
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"unreadable")
    return h.hexdigest()


@cache
def installed_folders() -> tuple[str, ...]:
    """Python's own and the installed packages' folders, as given and resolved."""
    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    folders |= {os.path.realpath(f) for f in folders}
    return tuple(os.path.join(f, "") for f in folders)


def env_distributions(env_id: str) -> tuple[str, ...]:
    """The optional distribution an env id's suite comes from (brax, jumanji, ...)."""
    from nnxrl.envs.brax_env import PREFIX as BRAX_PREFIX
    from nnxrl.envs.suites import suite_of

    if env_id.startswith(BRAX_PREFIX):
        return ("brax",)
    suite = suite_of(env_id)
    return (suite.package,) if suite else ()


@cache
def used_distributions(extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """name==version of what a program's code can come from: nnxrl's requirements and
    those of the ``extra`` distributions (an env suite's), each with its own
    requirements in turn, and JAX's plugins. Not every installed distribution:
    installing an extra the config does not use keeps its saved programs. Read from
    the dist-info folders' names and METADATA files (``importlib.metadata`` looks each
    name up along the whole path: 6 s for these ~100)."""
    installed = dist_info_folders()
    plugins = [name for name in installed if name.startswith("jax") and "plugin" in name]
    versions: dict[str, str] = {}
    todo = ["nnxrl", *extra, *plugins]
    while todo:
        name = canonical(todo.pop())
        if name in versions or name not in installed:
            continue
        folder = installed[name]
        versions[name] = folder.name.removesuffix(".dist-info").rsplit("-", 1)[-1]
        todo += requirements(folder / "METADATA")
    return tuple(f"{n}=={v}" for n, v in sorted(versions.items()))


def canonical(name: str) -> str:
    """A distribution's name as packaging compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def dist_info_folders() -> dict[str, Path]:
    """Every installed distribution's dist-info folder, by canonical name."""
    found = {}
    for key in ("purelib", "platlib"):
        folder = Path(sysconfig.get_paths()[key])
        for info in folder.glob("*.dist-info") if folder.is_dir() else ():
            found[canonical(info.name.removesuffix(".dist-info").rsplit("-", 1)[0])] = info
    return found


def requirements(path: Path) -> list[str]:
    """The names a METADATA file requires, an extra's requirements left out (installed
    only when asked for)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    wanted = [x.split(":", 1)[1] for x in lines if x.startswith("Requires-Dist:")]
    return [
        re.split(r"[\s;<>=!~\[(]", w.strip(), maxsplit=1)[0] for w in wanted if "extra ==" not in w
    ]


def described(component: Any) -> Any:
    """A registered component as the same in every process: its functions and classes
    by qualified name (another function registered under the name is another key)."""
    if isinstance(component, tuple | list):
        return [described(c) for c in component]
    if isinstance(component, dict):
        return {k: described(v) for k, v in component.items()}
    if isinstance(component, functools.partial):
        return [described(component.func), len(component.args), sorted(component.keywords)]
    if hasattr(component, "__qualname__"):
        return f"{getattr(component, '__module__', '')}.{component.__qualname__}"
    if isinstance(component, str | int | float | bool | None):
        return component
    return type(component).__qualname__


def digest(data: Any) -> str:
    """A short stable digest of JSON-able ``data``."""
    text = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def dump(program: Any, need: int | None) -> bytes:
    """A compiled program as bytes: JAX's serialisation, its argument and result
    structures, the devices it runs on (by id) and the memory it ``need``s."""
    payload, in_tree, out_tree = serialize_executable.serialize(program)
    devices = [d.id for d in program.runtime_executable().local_devices()]
    with io.BytesIO() as file:
        pickle.dump((FORMAT, payload, in_tree, out_tree, devices, need), file)
        return file.getvalue()


def load(path: Path) -> tuple[Any, int | None, str]:
    """(the program saved at ``path``, the memory it needs, "") or (None, None, why it
    cannot be loaded)."""
    try:
        version, payload, in_tree, out_tree, ids, need = pickle.loads(path.read_bytes())
        if version != FORMAT:
            return None, None, f"format {version}, not {FORMAT}"
        by_id = {d.id: d for d in jax.devices()}
        if not all(i in by_id for i in ids):
            return None, None, f"it runs on devices {ids}, not all of which exist"
        devices = [by_id[i] for i in ids]
        program = serialize_executable.deserialize_and_load(
            payload, in_tree, out_tree, execution_devices=devices
        )
    except Exception as e:  # a truncated or foreign file fails in many ways
        return None, None, f"{type(e).__name__}: {e}"
    return program, need, ""


def say(message: str) -> None:
    print(f"nnxrl: {message}", file=sys.stderr, flush=True)


def program_bytes(compiled: Any) -> int | None:
    """Memory one compiled program holds at its peak on each device, by XLA's count."""
    try:
        m = compiled.memory_analysis()
    except Exception:  # not every backend or release has it
        return None
    if m is None:
        return None
    return (
        m.argument_size_in_bytes
        + m.output_size_in_bytes
        - m.alias_size_in_bytes
        + m.temp_size_in_bytes
    )
