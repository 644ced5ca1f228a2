"""The :class:`Experiment` a user writes to describe the job to tune, and loading it by reference.

An experiment is plain data plus factories: the factories run inside the trial process, after the
dtype policy is set, so this module never imports TensorFlow. A reference (``path/to/file.py:name``,
``path/to/file.py`` or ``package.module:name``) lets a child process rebuild the same experiment.
Short names such as ``digits_cnn`` are the edge's to resolve (:mod:`autotune.bundled` passes its
names in ``short_names``); this module knows none.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autotune import lr_rules
from autotune.exceptions import ExperimentError
from autotune.lr_rules import LR_SCALINGS, LrScaling

#: Data is a zero-argument factory returning a ``tf.data.Dataset`` of (x, y) pairs (a batched
#: one is unbatched: the trial batches at its own batch size), a ``keras.utils.PyDataset`` of
#: known length, or (x, y) arrays; or a pair of arrays ``(x, y)`` with examples along the first
#: axis (see :mod:`autotune.trial.data_forms`).
Data = Callable[[], Any] | tuple[Any, Any]


@dataclass(frozen=True, eq=False)
class Experiment:
    """A training job whose performance settings autotune searches.

    Attributes:
        name: short name shown in reports.
        model: zero-argument factory returning an uncompiled ``keras.Model``; it is called after
            the dtype policy is set, so layers pick the trial's precision up.
        train_data: the training data, unbatched or batched (see :data:`Data`).
        validation_data: the validation data, unbatched or batched (see :data:`Data`).
        loss: a Keras loss name or object.
        optimizer: factory taking a learning rate and returning a Keras optimizer.
        base_batch_size: the batch size the experiment is normally trained with.
        base_learning_rate: the learning rate at ``base_batch_size``.
        lr_scaling: how the learning rate follows the batch size: "linear" (lr * b / b0),
            "sqrt" (lr * sqrt(b / b0)) or "none".
        preprocess: optional per-example function ``(x, y) -> (x, y)`` mapped over the training
            data (augmentation, decoding); tf.data runs it with the trial's num_parallel_calls.
        validation_preprocess: optional per-example function for the validation data.
        metrics: Keras metrics to compile with.
        curve_samples: training examples in the fidelity curve run; None means one pass over the
            training data.
        description: one sentence for reports.
        train_step: optional training step of your own, ``train_step(model, optimizer,
            batch) -> loss`` (a scalar tensor), run instead of Keras's: compute the gradients of
            ``optimizer.scale_loss(loss)`` and apply them with ``optimizer.apply(gradients,
            model.trainable_variables)`` (under ``mixed_float16`` the optimizer is a
            ``LossScaleOptimizer``, which unscales them and skips non-finite steps). autotune
            compiles it as Keras compiles its own (``jit_compile``, ``steps_per_execution``
            steps per call); TensorFlow backend only (see :mod:`autotune.trial.custom_step`).
            Its trials compile no ``metrics``: your step updates none, and the curve is scored on
            the validation loss.
    """

    name: str
    model: Callable[[], Any]
    train_data: Data
    validation_data: Data
    loss: Any
    optimizer: Callable[[float], Any]
    base_batch_size: int
    base_learning_rate: float
    lr_scaling: LrScaling = "linear"
    preprocess: Callable[..., Any] | None = None
    validation_preprocess: Callable[..., Any] | None = None
    metrics: Sequence[Any] = field(default_factory=tuple)
    curve_samples: int | None = None
    description: str = ""
    train_step: Callable[[Any, Any, Any], Any] | None = None

    def __post_init__(self) -> None:
        where = f"Experiment {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise ExperimentError(
                f"Experiment.name must be a non-empty string. Received: {self.name!r}"
            )
        for attribute in ("model", "optimizer"):
            if not callable(getattr(self, attribute)):
                raise ExperimentError(
                    f"{where}: {attribute} must be a callable factory. "
                    f"Received: {attribute}={getattr(self, attribute)!r}"
                )
        for attribute in ("train_data", "validation_data"):
            value = getattr(self, attribute)
            if not callable(value) and not (isinstance(value, tuple) and len(value) == 2):
                raise ExperimentError(
                    f"{where}: {attribute} must be a zero-argument function returning a "
                    "tf.data.Dataset of (x, y) pairs (unbatched or batched) or a "
                    "keras.utils.PyDataset, or a pair of arrays (x, y). "
                    f"Received: {type(value).__name__}"
                )
        if self.train_step is not None and not callable(self.train_step):
            raise ExperimentError(
                f"{where}: train_step must be a function (model, optimizer, batch) -> loss or "
                f"None. Received: train_step={self.train_step!r}"
            )
        for attribute in ("preprocess", "validation_preprocess"):
            value = getattr(self, attribute)
            if value is not None and not callable(value):
                raise ExperimentError(
                    f"{where}: {attribute} must be a function (x, y) -> (x, y) or None. "
                    f"Received: {value!r}"
                )
        batch = self.base_batch_size
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
            raise ExperimentError(
                f"{where}: base_batch_size must be an integer >= 1. Received: {batch!r}"
            )
        rate = self.base_learning_rate
        if (
            not isinstance(rate, (int, float))
            or isinstance(rate, bool)
            or not (rate > 0 and math.isfinite(rate))
        ):
            raise ExperimentError(
                f"{where}: base_learning_rate must be a number > 0. Received: {rate!r}"
            )
        if self.lr_scaling not in LR_SCALINGS:
            raise ExperimentError(
                f"{where}: lr_scaling must be one of {list(LR_SCALINGS)}. "
                f"Received: lr_scaling={self.lr_scaling!r}"
            )
        samples = self.curve_samples
        if samples is not None and (
            not isinstance(samples, int) or isinstance(samples, bool) or samples < 1
        ):
            raise ExperimentError(
                f"{where}: curve_samples must be an integer >= 1 or None. Received: {samples!r}"
            )

    def learning_rate(self, batch_size: int) -> float:
        """The learning rate for ``batch_size`` under this experiment's scaling rule."""
        return lr_rules.scaled_rate(
            self.base_learning_rate, self.base_batch_size, batch_size, self.lr_scaling
        )

    def learning_rate_of(self, rule: str, batch_size: int, samples: int) -> lr_rules.LearningRate:
        """The learning rate of a run of ``samples`` training examples at ``batch_size`` under
        the ``lr_rule`` setting ``rule`` (:mod:`autotune.lr_rules`; "experiment": this
        experiment's ``lr_scaling``)."""
        return lr_rules.learning_rate(
            rule,
            experiment_scaling=self.lr_scaling,
            base_rate=self.base_learning_rate,
            base_batch_size=self.base_batch_size,
            batch_size=batch_size,
            samples=samples,
        )


def short_name_reference(reference: str, short_names: Mapping[str, str]) -> str:
    """The reference a short name in ``short_names`` stands for, else ``reference`` unchanged."""
    return short_names.get(reference.strip(), reference)


def load_experiment(reference: str, *, short_names: Mapping[str, str] | None = None) -> Experiment:
    """Loads an experiment from ``path/to/file.py:name``, ``path/to/file.py`` or
    ``module:name``, or a name in ``short_names`` (the bundled experiments' names and their
    references, which :func:`autotune.bundled.load_experiment` passes).

    A file path without a name picks the one :class:`Experiment` the file defines at top level.
    Every mistake raises :class:`ExperimentError` naming the reference and what to fix.
    """
    names = dict(short_names or {})
    if not isinstance(reference, str) or not reference.strip():
        named = f"a bundled experiment's name {list(names)}, " if names else ""
        raise ExperimentError(
            f"experiment reference must be {named}"
            f"'path/to/file.py[:name]' or 'module:name'. Received: {reference!r}"
        )
    reference = short_name_reference(reference.strip(), names)
    target, _, name = reference.rpartition(":") if ":" in reference else (reference, "", "")
    if not target:  # "name" alone after rpartition of "x:" edge cases
        raise ExperimentError(
            f"experiment reference {reference!r} has no file or module before ':'"
        )
    if target.endswith(".py") or "/" in target or Path(target).suffix == ".py":
        module = _import_file(Path(target), reference)
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as error:
            raise ExperimentError(
                f"experiment reference {reference!r}: cannot import module {target!r} ({error}). "
                "Use 'path/to/file.py:name' for a file, "
                + (f"a bundled experiment's name ({', '.join(names)}), " if names else "")
                + "or install the module."
            ) from error
        except (Exception, SystemExit) as error:
            raise ExperimentError(
                f"experiment module {target!r} raised {type(error).__name__} on import: {error}"
            ) from error
    return _pick(module, name, reference)


def _import_file(path: Path, reference: str) -> Any:
    path = path.expanduser().resolve()
    if not path.is_file():
        raise ExperimentError(
            f"experiment file {str(path)!r} does not exist (from reference {reference!r})"
        )
    module_name = f"autotune_experiment_{abs(hash(str(path))):x}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ExperimentError(f"experiment file {str(path)!r} cannot be imported as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as error:
        del sys.modules[module_name]
        raise ExperimentError(
            f"experiment file {str(path)!r} has a syntax error at line {error.lineno}: {error.msg}"
        ) from error
    except ExperimentError:
        del sys.modules[module_name]
        raise
    except (Exception, SystemExit) as error:
        del sys.modules[module_name]
        raise ExperimentError(
            f"experiment file {str(path)!r} raised {type(error).__name__} on import: {error}"
        ) from error
    setattr(module, "__autotune_reference_file__", str(path))  # noqa: B010
    return module


def _pick(module: Any, name: str, reference: str) -> Experiment:
    if name:
        if not hasattr(module, name):
            found = _experiments_in(module)
            hint = f" It defines: {sorted(found)}." if found else " It defines no Experiment."
            raise ExperimentError(f"experiment reference {reference!r}: no name {name!r}.{hint}")
        value = getattr(module, name)
        if callable(value) and not isinstance(value, Experiment):
            try:
                value = value()
            except Exception as error:
                raise ExperimentError(
                    f"experiment reference {reference!r}: calling {name}() to get the experiment "
                    f"raised {type(error).__name__}: {error}"
                ) from error
            if value is None:
                raise ExperimentError(
                    f"experiment reference {reference!r}: {name}() returned None; "
                    "it must return an autotune.Experiment"
                )
        if not isinstance(value, Experiment):
            raise ExperimentError(
                f"experiment reference {reference!r}: {name!r} must be an autotune.Experiment "
                f"(or a function returning one). Received: {type(value).__name__}"
            )
        return value
    found = _experiments_in(module)
    if len(found) != 1:
        listed = sorted(found) if found else "none"
        raise ExperimentError(
            f"experiment reference {reference!r} names no experiment and the file defines "
            f"{len(found)} ({listed}); use 'file.py:name'"
        )
    return next(iter(found.values()))


def _experiments_in(module: Any) -> dict[str, Experiment]:
    return {
        name: value
        for name, value in vars(module).items()
        if isinstance(value, Experiment) and not name.startswith("_")
    }


def reference_of(
    experiment: Experiment | str, *, short_names: Mapping[str, str] | None = None
) -> str:
    """A reference a child process can load: the string itself, or where the object lives.

    A name in ``short_names`` becomes the reference it stands for (a bundled experiment's
    module reference, ``autotune.bundled.NAME:experiment``); an :class:`Experiment` object is
    found by identity among the loaded modules' top-level names.
    """
    if isinstance(experiment, str):
        return short_name_reference(experiment, short_names or {})
    if not isinstance(experiment, Experiment):
        raise ExperimentError(
            f"experiment must be an autotune.Experiment or a reference string. "
            f"Received: {type(experiment).__name__}"
        )
    found: list[str] = []
    for module_name, module in list(sys.modules.items()):
        for name, value in list(vars(module).items()) if module is not None else []:
            if value is not experiment:
                continue
            path = getattr(module, "__autotune_reference_file__", None)
            if path is not None:  # loaded from a file by load_experiment: its true home
                return f"{path}:{name}"
            if module_name == "__main__":
                script = getattr(module, "__file__", None)
                if script:
                    found.append(f"{script}:{name}")
            else:
                found.insert(0, f"{module_name}:{name}")
    if found:  # an importable module first, the running script last
        return found[0]
    raise ExperimentError(
        f"experiment {experiment.name!r} is not a top-level name of any module, so a trial "
        "process cannot rebuild it; define it at the top level of a module or file and pass "
        "'file.py:name'"
    )
