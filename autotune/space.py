"""Search spaces: which performance settings a study tries, loaded from TOML or built in Python.

A space file has a ``[parameters]`` table with one entry per :class:`TrialConfig` field, each
either a list of choices or a range, and an optional ``[measure]`` table of :class:`RunSettings`
overrides (shorter windows for a quick demo, for example)::

    name = "quick"
    description = "A few minutes on a 2-core CPU."

    [parameters]
    precision = ["float32", "mixed_bfloat16"]
    jit_compile = [false, true]
    batch_size = { low = 32, high = 256, multiple_of = 16 }
    num_parallel_calls = ["autotune", 1]

    [measure]
    windows = 5

A parameter left out keeps the baseline's value (the experiment's base batch size, float32, no
XLA, pipeline defaults). Every mistake raises :class:`ConfigError` naming the file, key, what was
expected and what was received.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autotune import settings
from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

if TYPE_CHECKING:
    import optuna

#: The parameters a space may search, in the order they are drawn: the settings of
#: :data:`autotune.settings.SETTINGS` (read from it when a space is checked or sampled).
PARAMETERS = settings.draw_order()
#: Parameters searched as whole numbers (a list or a range).
INTEGER_PARAMETERS = settings.integers()
#: Fields of RunSettings a space file may set in [measure].
MEASURE_KEYS = (
    "warmup_min_steps",
    "warmup_max_steps",
    "warmup_max_seconds",
    "window_seconds",
    "min_window_steps",
    "windows",
    "checkpoints",
    "curve_samples",
    "time_limit_seconds",
    "memory_limit_bytes",
)
MULTIPLES = settings.setting("batch_size").multiples


@dataclass(frozen=True)
class Choice:
    """A categorical parameter: one of ``values``."""

    values: tuple[Any, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"choices": list(self.values)}


@dataclass(frozen=True)
class IntRange:
    """An integer range ``low..high`` (inclusive) in steps of ``multiple_of``."""

    low: int
    high: int
    multiple_of: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "multiple_of": self.multiple_of}


Parameter = Choice | IntRange


def inactive_parameters(
    values: Mapping[str, Any], base_batch_size: int | None = None
) -> dict[str, Any]:
    """The parameters a configuration with ``values`` does not draw, with the value each takes:
    ``jit_compile`` (true) on the JAX backend, which trains through ``jax.jit``; and, given the
    experiment's ``base_batch_size``, ``lr_rule`` ("experiment") at that batch size, where every
    rule gives the base learning rate (:mod:`autotune.lr_rules`); ``float32_layers`` ("none")
    under float32, where every layer is float32 already (:mod:`autotune.float32_layers`). Two
    trials that differ only in those are the same configuration."""
    inactive: dict[str, Any] = {"jit_compile": True} if values.get("backend") == "jax" else {}
    if base_batch_size is not None and values.get("batch_size") == base_batch_size:
        inactive["lr_rule"] = settings.setting("lr_rule").default
    precision = settings.setting("precision")
    if values.get("precision", precision.default) == precision.default:
        inactive["float32_layers"] = settings.setting("float32_layers").default
    return inactive


@dataclass(frozen=True)
class SearchSpace:
    """The parameters a study searches, and measurement overrides.

    Build one in Python with ``SearchSpace(name, {"precision": Choice(("float32",
    "mixed_bfloat16")), "batch_size": IntRange(32, 256, 16)})``; it is validated the same way as
    a file.
    """

    name: str
    parameters: Mapping[str, Parameter]
    measure: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    source: str = "<python>"

    def __post_init__(self) -> None:
        for key, parameter in self.parameters.items():
            _validate_parameter(self.source, key, parameter)
        _validate_measure(self.source, self.measure)

    def sample(self, trial: optuna.Trial, base_batch_size: int) -> TrialConfig:
        """Draws a configuration for ``trial``; absent parameters keep the baseline's value.

        The backend, precision and jit_compile are drawn before batch size, so a sampler can
        relate the batch sizes that fit in memory to them. On the JAX backend ``jit_compile`` is
        not drawn: JAX trains through ``jax.jit`` (see :class:`TrialConfig`), so it is true; at
        ``base_batch_size`` the learning-rate rule is not drawn either (the experiment's), nor
        under float32 the float32 layers (none).
        """
        values: dict[str, Any] = {"batch_size": base_batch_size}
        for key in settings.draw_order():
            parameter = self.parameters.get(key)
            fixed = inactive_parameters(values, base_batch_size)
            if key in fixed:
                values[key] = fixed[key]
                continue
            if isinstance(parameter, Choice):
                values[key] = trial.suggest_categorical(key, list(parameter.values))
            elif isinstance(parameter, IntRange):
                values[key] = trial.suggest_int(
                    key, parameter.low, parameter.high, step=parameter.multiple_of
                )
        return TrialConfig(**values)

    def run_settings(self, base: RunSettings | None = None) -> RunSettings:
        """``base`` (default RunSettings()) with this space's [measure] overrides."""
        return (base or RunSettings()).replace(**dict(self.measure))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "parameters": {k: p.to_dict() for k, p in sorted(self.parameters.items())},
            "measure": dict(sorted(self.measure.items())),
        }

    def digest(self) -> str:
        """A short hash of what the space searches and how it measures (not its name or file)."""
        content = {k: v for k, v in self.to_dict().items() if k != "name"}
        return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]

    def size(self) -> int:
        """Number of distinct configurations in the space (a JAX configuration has one
        jit_compile value, true)."""
        total = 1
        for key, parameter in self.parameters.items():
            if key not in ("backend", "jit_compile"):
                total *= _count(parameter)
        backends = self.parameters.get("backend", Choice(("tensorflow",)))
        jits = _count(self.parameters.get("jit_compile", Choice((False,))))
        return total * sum(jits if b == "tensorflow" else 1 for b in space_values(backends))


def _count(parameter: Parameter) -> int:
    if isinstance(parameter, Choice):
        return len(parameter.values)
    return (parameter.high - parameter.low) // parameter.multiple_of + 1


def space_values(parameter: Parameter) -> tuple[Any, ...]:
    """Every value ``parameter`` can take."""
    if isinstance(parameter, Choice):
        return parameter.values
    return tuple(range(parameter.low, parameter.high + 1, parameter.multiple_of))


#: The longest space name: with the experiment's name it names the study (Optuna holds 512).
MAX_NAME = 256


def _fail(source: str, key: str, expected: str, received: object) -> ConfigError:
    return ConfigError(f"{source}: {key} must be {expected}. Received: {received!r}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_value(source: str, name: str, key: str, value: object) -> None:
    """Checks one candidate value of parameter ``name``; ``key`` locates it in messages."""
    setting = settings.setting(name)
    if not setting.accepts(value):
        raise _fail(source, key, setting.expected(explain_zero=True), value)


def _validate_parameter(source: str, key: str, parameter: object) -> None:
    where = f"parameters.{key}"
    if key not in settings.names():
        raise ConfigError(
            f"{source}: unknown parameter {where!r}; expected some of "
            f"{list(settings.draw_order())}. Received: {key!r}"
        )
    if isinstance(parameter, Choice):
        if not parameter.values:
            raise _fail(source, where, "a non-empty list of choices", list(parameter.values))
        if len(set(map(repr, parameter.values))) != len(parameter.values):
            raise _fail(source, where, "a list without repeated choices", list(parameter.values))
        for index, value in enumerate(parameter.values):
            _check_value(source, key, f"{where}[{index}]", value)
    elif isinstance(parameter, IntRange):
        if key not in settings.integers():
            raise _fail(
                source,
                where,
                "a list of choices (a range is only for integers)",
                parameter.to_dict(),
            )
        for bound in ("low", "high"):
            _check_value(source, key, f"{where}.{bound}", getattr(parameter, bound))
        if parameter.low > parameter.high:
            raise ConfigError(
                f"{source}: {where}: low <= high must hold. "
                f"Received: low={parameter.low}, high={parameter.high}"
            )
        step = parameter.multiple_of
        multiples = settings.setting(key).multiples
        if multiples and step not in (1, *multiples):
            allowed = " or ".join(map(str, multiples))
            raise _fail(
                source, f"{where}.multiple_of", f"{allowed} (or left out for any integer)", step
            )
        if not _is_int(step) or step < 1:
            raise _fail(source, f"{where}.multiple_of", "an integer >= 1", step)
        if parameter.low % step or parameter.high % step:
            raise ConfigError(
                f"{source}: {where}: low and high must be multiples of multiple_of={step}. "
                f"Received: low={parameter.low}, high={parameter.high}"
            )
    else:
        raise _fail(source, where, "a Choice or an IntRange", parameter)


def _validate_measure(source: str, measure: Mapping[str, Any]) -> None:
    for key in measure:
        if key not in MEASURE_KEYS:
            raise ConfigError(
                f"{source}: unknown key 'measure.{key}'; expected some of {list(MEASURE_KEYS)}. "
                f"Received: {key!r}"
            )
    try:
        RunSettings().replace(**dict(measure))
    except ConfigError as error:
        raise ConfigError(f"{source}: [measure]: {error}") from error


def _parse_parameter(source: str, key: str, raw: object) -> Parameter:
    where = f"parameters.{key}"
    if isinstance(raw, list):
        return Choice(tuple(raw))
    if isinstance(raw, Mapping):
        allowed = {"low", "high", "multiple_of"}
        if "choices" in raw:
            extra = sorted(set(raw) - {"choices"})
            if extra:
                raise _fail(
                    source, where, "either {choices = [...]} or {low, high, multiple_of}", dict(raw)
                )
            if not isinstance(raw["choices"], list):
                raise _fail(source, f"{where}.choices", "a list", raw["choices"])
            return Choice(tuple(raw["choices"]))
        unknown = sorted(set(raw) - allowed)
        missing = sorted({"low", "high"} - set(raw))
        if unknown or missing:
            raise _fail(
                source,
                where,
                "a list of choices or a table with low, high and optional multiple_of",
                dict(raw),
            )
        for bound in ("low", "high", "multiple_of"):
            if bound in raw and not _is_int(raw[bound]):
                raise _fail(source, f"{where}.{bound}", "an integer", raw[bound])
        return IntRange(int(raw["low"]), int(raw["high"]), int(raw.get("multiple_of", 1)))
    raise _fail(source, where, "a list of choices or a {low, high, multiple_of} table", raw)


def space_from_dict(data: Mapping[str, Any], source: str) -> SearchSpace:
    """Builds a :class:`SearchSpace` from parsed TOML, naming ``source`` in every error."""
    allowed = {"name", "description", "parameters", "measure"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(
            f"{source}: unknown top-level key(s) {unknown}; expected some of {sorted(allowed)}"
        )
    parameters = data.get("parameters")
    if not isinstance(parameters, Mapping) or not parameters:
        raise _fail(source, "[parameters]", "a table with at least one parameter", parameters)
    measure = data.get("measure", {})
    if not isinstance(measure, Mapping):
        raise _fail(source, "[measure]", "a table", measure)
    name = data.get("name", Path(source).stem)
    if not isinstance(name, str) or not name:
        raise _fail(source, "name", "a non-empty string", name)
    if len(name) > MAX_NAME or any(ord(c) < 32 or ord(c) == 127 for c in name):
        shown = name if len(name) <= 80 else f"{name[:60]}... ({len(name):,} characters)"
        raise _fail(
            source, "name", f"at most {MAX_NAME} characters without control characters", shown
        )
    description = data.get("description", "")
    if not isinstance(description, str):
        raise _fail(source, "description", "a string", description)
    parsed = {}
    for key, raw in parameters.items():
        if key not in settings.names():
            raise ConfigError(
                f"{source}: unknown parameter 'parameters.{key}'; expected some of "
                f"{list(settings.draw_order())}. Received: {key!r}"
            )
        parsed[key] = _parse_parameter(source, key, raw)
    return SearchSpace(name, parsed, dict(measure), description, source)


def load_space(path: str | Path) -> SearchSpace:
    """Loads and validates a TOML search-space file."""
    path = Path(path)
    source = str(path)
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError as error:
        raise ConfigError(f"search space file {source!r} does not exist") from error
    except IsADirectoryError as error:
        raise ConfigError(f"search space file {source!r} is a directory") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"search space file {source!r} is not valid TOML: {error}") from error
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"search space file {source!r} is not UTF-8 text (TOML must be): byte "
            f"{error.object[error.start : error.start + 1]!r} at offset {error.start}"
        ) from error
    except OSError as error:
        raise ConfigError(
            f"search space file {source!r} cannot be read: {error.strerror or error}"
        ) from error
    return space_from_dict(data, source)


def resolve_space(space: SearchSpace | str | Path) -> SearchSpace:
    """A :class:`SearchSpace` from an object or a file path. A bundled space's name ('quick') is
    the edge's to resolve: :func:`autotune.bundled.resolve_space` takes both."""
    if isinstance(space, SearchSpace):
        return space
    return load_space(Path(space))


def choices(*values: Any) -> Choice:
    """Shorthand for :class:`Choice` in Python-built spaces."""
    return Choice(tuple(values))


def describe_parameters(space: SearchSpace) -> Sequence[str]:
    """One line per parameter for people: 'batch_size: 32..256 step 16'."""
    lines = []
    for key, parameter in space.parameters.items():
        if isinstance(parameter, Choice):
            lines.append(f"{key}: {', '.join(map(str, parameter.values))}")
        else:
            lines.append(f"{key}: {parameter.low}..{parameter.high} step {parameter.multiple_of}")
    return lines


__all__ = [
    "Choice",
    "IntRange",
    "SearchSpace",
    "choices",
    "inactive_parameters",
    "load_space",
    "resolve_space",
    "space_from_dict",
    "space_values",
]
