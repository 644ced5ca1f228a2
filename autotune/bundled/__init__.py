"""The experiments and search spaces shipped inside the package, reached by short name.

A bundled experiment is a module here (``autotune/bundled/digits_cnn.py``) whose top-level
``experiment`` is an :class:`~autotune.Experiment`; its short name (``"digits_cnn"``) stands for
the reference ``"autotune.bundled.digits_cnn:experiment"``, which a trial process imports from the
installed package, wherever that is. A bundled space is a TOML file named by its stem
(``"quick"``): in a checkout (and an editable install) the top-level ``search_spaces/`` folder, the
one source of them; in an installed wheel the same files as package data, ``spaces/`` beside this
module (pyproject.toml maps the one onto the other). Importing this module imports no experiment
and no TensorFlow.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from autotune.exceptions import ConfigError

if TYPE_CHECKING:
    from autotune.experiment import Experiment
    from autotune.space import SearchSpace

_HERE = Path(__file__).resolve().parent
#: The folder of the bundled search-space files (``quick.toml``, ``cpu.toml``, ...): the
#: wheel's package data where the package is installed, else the checkout's ``search_spaces/``.
SPACES = _HERE / "spaces" if (_HERE / "spaces").is_dir() else _HERE.parents[1] / "search_spaces"
#: The bundled experiments' short names, each a module of this package.
EXPERIMENTS = ("digits_cnn", "tabular_mlp", "transformer")
#: What ``autotune run`` and ``autotune trial`` tune without an EXPERIMENT argument.
DEFAULT_EXPERIMENT = "digits_cnn"


def short_names() -> dict[str, str]:
    """Each bundled experiment's short name and the module reference it stands for."""
    return {name: f"{__name__}.{name}:experiment" for name in EXPERIMENTS}


def experiment_reference(reference: str) -> str:
    """The module reference of a bundled experiment's short name, else ``reference`` unchanged.

    ``"tabular_mlp"`` becomes ``"autotune.bundled.tabular_mlp:experiment"``; a file path, a
    ``module:name`` reference or any other string is returned as it is, so
    ``"tabular_mlp:experiment"`` still names a module of your own called ``tabular_mlp``.
    """
    if reference.strip() in EXPERIMENTS:
        return f"{__name__}.{reference.strip()}:experiment"
    return reference


def space_file(name: str) -> Path | None:
    """The bundled space file called ``name`` (``"cpu"`` -> ``.../spaces/cpu.toml``), or None."""
    if not name or Path(name).name != name or Path(name).suffix:
        return None
    path = SPACES / f"{name}.toml"
    return path if path.is_file() else None


def space_names() -> list[str]:
    """The bundled spaces' names, sorted (``["cpu", "gpu", "input", "keras3", "quick"]``)."""
    return sorted(path.stem for path in SPACES.glob("*.toml"))


def load_experiment(reference: str) -> Experiment:
    """:func:`autotune.experiment.load_experiment` that also takes a bundled experiment's name
    (``digits_cnn``): what the command line, :class:`~autotune.Study` and
    :func:`autotune.load_experiment` call."""
    from autotune.experiment import load_experiment as load

    return load(reference, short_names=short_names())


def reference_of(experiment: Experiment | str) -> str:
    """:func:`autotune.experiment.reference_of`, a bundled experiment's name becoming its
    module reference (``autotune.bundled.NAME:experiment``)."""
    from autotune.experiment import reference_of as reference

    return reference(experiment, short_names=short_names())


def resolve_space(space: SearchSpace | str | Path) -> SearchSpace:
    """A :class:`~autotune.space.SearchSpace` from an object, a file path or a bundled space's
    name ('quick'); a file of that name in the current folder wins over the bundled space."""
    from autotune.space import SearchSpace, load_space

    if isinstance(space, SearchSpace):
        return space
    path = Path(space)
    if not path.exists():
        bundled = space_file(str(space))
        if bundled is not None:
            return load_space(bundled)
        if path.suffix == "":
            raise ConfigError(
                f"search space file {str(space)!r} does not exist, and no bundled space has "
                f"that name (bundled: {', '.join(space_names())})"
            )
    return load_space(path)


__all__ = [
    "DEFAULT_EXPERIMENT",
    "EXPERIMENTS",
    "SPACES",
    "experiment_reference",
    "load_experiment",
    "reference_of",
    "resolve_space",
    "short_names",
    "space_file",
    "space_names",
]
