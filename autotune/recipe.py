"""A :class:`Recipe`: the configuration a study recommends, with its provenance, as JSON.

:func:`autotune.apply` (:mod:`autotune.trial.applied`, beside the trial code it shares)
reproduces a recipe in the user's own training code. No TensorFlow here.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autotune import hardware
from autotune.config import AUTOTUNE, TrialConfig, read_json_object
from autotune.exceptions import ConfigError
from autotune.outputs import write_output

RECIPE_FORMAT = 1


@dataclass(frozen=True)
class Recipe:
    """A recommended configuration and where it came from.

    Attributes:
        config: the performance settings.
        learning_rate: the learning rate the trial trained with (rescaled for its batch size).
        throughput: samples/s (median, low, high, confidence, n) measured for this configuration.
        baseline_throughput: the float32/no-XLA baseline's samples/s, measured the same way.
        speedup: throughput median / baseline median.
        fidelity: fidelity distance (1.0 = worse by as much as a seed re-run; 0 for the baseline).
        tolerance: the study's fidelity tolerance.
        experiment, study, storage, trial: provenance; trial is None for the baseline.
        effective: the settings that took effect (dtype policy, jit_compile, output layer fix).
        hardware, versions: where and with what it was measured.
        note: a sentence for people, e.g. that no trial beat the baseline.
        confirmation: the head-to-head confirmation behind it (rounds, the paired speed-up
            ratio and its interval, fidelity over seeds, every candidate's verdict), or None
            when the study has not confirmed its candidates.
    """

    config: TrialConfig
    learning_rate: float | None
    throughput: dict[str, Any] | None
    baseline_throughput: dict[str, Any] | None
    speedup: float | None
    fidelity: float | None
    tolerance: float
    experiment: str
    study: str
    storage: str
    trial: int | None
    effective: dict[str, Any] = field(default_factory=dict)
    hardware: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    note: str = ""
    confirmation: dict[str, Any] | None = None
    created: str = ""
    format: int = RECIPE_FORMAT

    @property
    def is_baseline(self) -> bool:
        return self.trial is None

    @property
    def backend(self) -> str:
        """The Keras backend it was measured on: tensorflow or jax; :func:`apply` refuses it
        where Keras runs on another."""
        return self.config.backend

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["config"] = self.config.to_dict()
        return data

    def save(self, path: str | Path, *, protected: Iterable[Path] = ()) -> Path:
        """Writes the recipe as JSON to ``path`` atomically and returns the path; never over a
        symbolic link, an SQLite database or a ``protected`` file (see
        :func:`autotune.outputs.write_output`)."""
        text = json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"
        return write_output(path, text, what="recipe file", protected=protected)

    @classmethod
    def load(cls, path: str | Path) -> Recipe:
        """Reads a recipe saved by :meth:`save`; errors name the file and the key."""
        path = Path(path)
        source = f"recipe file {str(path)!r}"
        data = read_json_object(path, source)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{source} has unknown key(s) {unknown}")
        if "config" not in data:
            raise ConfigError(f"{source} has no 'config'")
        fmt = data.get("format", RECIPE_FORMAT)
        if isinstance(fmt, bool) or fmt != RECIPE_FORMAT:
            raise ConfigError(
                f"{source}: format must be {RECIPE_FORMAT} (the format this autotune reads). "
                f"Received: format={fmt!r}"
            )
        for key, kinds, what in _FIELD_TYPES:
            value = data.get(key)
            if value is not None and (
                not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)
            ):
                shown = repr(value)
                shown = (
                    shown if len(shown) <= 80 else f"{shown[:80]}... ({len(shown):,} characters)"
                )
                raise ConfigError(f"{source}: {key} must be {what}. Received: {key}={shown}")
        values = dict(data)
        values["config"] = TrialConfig.from_dict(values["config"], source=f"{source}: config")
        try:
            return cls(**values)
        except TypeError as error:
            raise ConfigError(f"{source}: {error}") from error


_NUMBER = (int, float)
#: The type each field of a recipe file must have (None is allowed where the field may be
#: missing), checked by :meth:`Recipe.load`.
_FIELD_TYPES: tuple[tuple[str, tuple[type, ...], str], ...] = (
    ("effective", (dict,), "a JSON object"),
    ("hardware", (dict,), "a JSON object"),
    ("versions", (dict,), "a JSON object"),
    ("throughput", (dict,), "a JSON object"),
    ("baseline_throughput", (dict,), "a JSON object"),
    ("confirmation", (dict,), "a JSON object"),
    ("learning_rate", _NUMBER, "a number"),
    ("speedup", _NUMBER, "a number"),
    ("fidelity", _NUMBER, "a number"),
    ("tolerance", _NUMBER, "a number"),
    ("trial", (int,), "an integer"),
    ("experiment", (str,), "a string"),
    ("study", (str,), "a string"),
    ("storage", (str,), "a string"),
    ("note", (str,), "a string"),
    ("created", (str,), "a string"),
)

#: The hardware facts :func:`autotune.hardware.fingerprint` hashes: the ones that decide which
#: configuration is fastest, so a recipe measured where one differs may not be fastest here.
HARDWARE_KEYS = ("cpu", "logical_cores", "gpus", "machine")


def hardware_differences(
    recorded: Mapping[str, Any], current: Mapping[str, Any] | None = None
) -> list[str]:
    """The fingerprinted hardware facts (:data:`HARDWARE_KEYS`) that differ between a recipe's
    ``recorded`` hardware and ``current`` (default: this machine's), as ``"key: A there, B
    here"``; facts the recipe does not record are not compared."""
    current = hardware.hardware() if current is None else current
    return [
        f"{key}: {recorded[key]!r} there, {current.get(key)!r} here"
        for key in HARDWARE_KEYS
        if key in recorded and recorded[key] != current.get(key)
    ]


__all__ = [
    "AUTOTUNE",
    "HARDWARE_KEYS",
    "Recipe",
    "hardware_differences",
]
