"""A :class:`Recipe`: the configuration a study recommends, with its provenance, as JSON; and
:func:`apply` to reproduce it in the user's own training code."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autotune.config import AUTOTUNE, TrialConfig
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
        fidelity: fidelity distance (1.0 = as different as a seed re-run; 0 for the baseline).
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
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as error:
            raise ConfigError(f"{source} cannot be read: {error.strerror}") from error
        except json.JSONDecodeError as error:
            raise ConfigError(f"{source} is not valid JSON: {error}") from error
        if not isinstance(data, dict):
            raise ConfigError(f"{source} must hold a JSON object. Received: {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{source} has unknown key(s) {unknown}")
        if "config" not in data:
            raise ConfigError(f"{source} has no 'config'")
        values = dict(data)
        values["config"] = TrialConfig.from_dict(values["config"], source=f"{source}: config")
        try:
            return cls(**values)
        except TypeError as error:
            raise ConfigError(f"{source}: {error}") from error


@dataclass(frozen=True)
class AppliedRecipe:
    """What :func:`apply` leaves for the user's code: compile and pipeline settings."""

    config: TrialConfig
    learning_rate: float | None

    @property
    def batch_size(self) -> int:
        return self.config.batch_size

    def compile_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``model.compile``: ``{"jit_compile": ...}``."""
        return {"jit_compile": self.config.jit_compile}

    def pipeline(self, dataset: Any, preprocess: Any = None, seed: int = 0) -> Any:
        """Builds autotune's training pipeline (shuffle -> repeat -> map -> batch with
        drop_remainder -> prefetch) over an unbatched ``tf.data.Dataset`` of (x, y) pairs."""
        from autotune.trial.pipeline import prepare_training

        prepared, _ = prepare_training(dataset, self.config, preprocess, seed)
        return prepared


def apply(recipe: Recipe | str | Path) -> AppliedRecipe:
    """Sets the recipe's Keras dtype policy (call before building the model) and returns the
    compile and pipeline settings to use."""
    if not isinstance(recipe, Recipe):
        recipe = Recipe.load(recipe)
    import keras

    keras.config.set_dtype_policy(recipe.config.precision)
    return AppliedRecipe(recipe.config, recipe.learning_rate)


__all__ = ["AUTOTUNE", "AppliedRecipe", "Recipe", "apply"]
