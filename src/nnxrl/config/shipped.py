"""The configs shipped with nnxrl, found by name: ``nnxrl train ppo-cartpole`` runs
``configs/ppo-cartpole.yaml`` from a source checkout or from the installed package
(the wheel carries them as ``nnxrl/configs``) when no such file exists locally."""

from __future__ import annotations

from pathlib import Path


def configs_dir() -> Path | None:
    """The shipped configs: inside the installed package, else the source checkout's."""
    packaged = Path(__file__).parents[1] / "configs"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "configs").is_dir() and (checkout / "pyproject.toml").is_file():
        return checkout / "configs"
    return None


def shipped_configs() -> dict[str, Path]:
    """Name (the file name without .yaml) -> path, sorted by name."""
    folder = configs_dir()
    if folder is None:
        return {}
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))}


def find_config(path: str | Path) -> Path:
    """``path`` if it exists; else the shipped config it names (``ppo-cartpole``,
    ``ppo-cartpole.yaml`` or ``configs/ppo-cartpole.yaml``); else ``path`` unchanged,
    for the loader to report."""
    path = Path(path)
    if path.exists():
        return path
    name = path.name.removesuffix(".yaml").removesuffix(".yml")
    if path.parent in (Path("."), Path("configs")):
        return shipped_configs().get(name, path)
    return path


def describe(path: Path) -> str:
    """The first clause of a config's header comment (which says what it is)."""
    words = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        words.append(line.lstrip("# ").strip())
    text = " ".join(words)
    ends = [i for i in (text.find(". "), text.find(": "), text.find("; ")) if i >= 0]
    return text[: min(ends)] if ends else text.rstrip(".")
