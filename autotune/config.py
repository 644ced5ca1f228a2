"""Frozen, validated descriptions of what one trial runs: :class:`TrialConfig` and
:class:`RunSettings`.

Both round-trip through JSON so that a trial can be described to a child process, stored with a
result and compared across runs.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autotune import settings
from autotune.exceptions import ConfigError
from autotune.float32_layers import Float32Layers
from autotune.lr_rules import LrRule
from autotune.settings import AUTOTUNE, Backend, Precision, Tunable

PRECISIONS: tuple[str, ...] = settings.setting("precision").choices
BACKENDS: tuple[str, ...] = settings.setting("backend").choices
#: What installs each optional backend.
BACKEND_INSTALL = {"jax": "pip install 'autotune[jax]'"}


def backend_missing(backend: str) -> str | None:
    """Why the Keras backend ``backend`` cannot run here (its package is not installed), or
    None when it can. TensorFlow is always installed (the input pipeline is tf.data)."""
    if backend == "tensorflow" or importlib.util.find_spec(backend) is not None:
        return None
    install = BACKEND_INSTALL.get(backend, f"pip install {backend}")
    return f"the Keras backend {backend!r} needs {backend}, which is not installed ({install})"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: The largest values accepted: the settings' (:attr:`autotune.settings.Setting.maximum`) and
#: numpy's seed range.
LIMITS = {**settings.limits(), "seed": 2**32 - 1}


#: TrialConfig's CPU thread counts (0: the default), set in the trial process before TensorFlow
#: runs anything (:mod:`autotune.trial.threads`).
THREAD_SETTINGS = settings.in_group(settings.THREADS)


def _range_text(minimum: int, maximum: int | None) -> str:
    return f">= {minimum}" if maximum is None else f">= {minimum} and <= {maximum:,}"


def _check_int(owner: str, name: str, value: object, minimum: int) -> None:
    maximum = LIMITS.get(name)
    if not _is_int(value) or value < minimum or (maximum is not None and value > maximum):  # type: ignore[operator]
        raise ConfigError(
            f"{owner}.{name} must be an integer {_range_text(minimum, maximum)}. "
            f"Received: {name}={value!r}"
        )


def is_positive_finite(value: object) -> bool:
    """Whether ``value`` is a real number > 0 that is not infinite or NaN (bools are not)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def _from_mapping(cls: type[Any], data: object, source: str) -> Any:
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"{source} must be a JSON object. Received: {type(data).__name__} {data!r}"
        )
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(
            f"{source} has unknown key(s) {unknown}; expected some of {sorted(known)}. "
            f"Received: {dict(data)!r}"
        )
    try:
        return cls(**data)
    except ConfigError as error:
        raise ConfigError(f"{source}: {error}") from error
    except TypeError as error:  # a required field is missing
        raise ConfigError(f"{source}: {error}. Received: {dict(data)!r}") from error


def read_json_object(path: Path, source: str) -> dict[str, Any]:
    """The JSON object in the file ``path``; ConfigError naming ``source`` (e.g. "recipe file
    'r.json'") when it cannot be read, is not JSON or holds something else."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{source} cannot be read: {error.strerror}") from error
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{source} is not UTF-8 text (byte {error.object[error.start]:#04x} at offset "
            f"{error.start})"
        ) from error
    data = _parse_json(text, source)
    if not isinstance(data, dict):
        raise ConfigError(f"{source} must hold a JSON object. Received: {type(data).__name__}")
    return data


def _parse_json(text: str, source: str) -> object:
    if not isinstance(text, (str, bytes)):
        raise ConfigError(f"{source} must be JSON text. Received: {text!r}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{source} is not valid JSON ({error}). Received: {_excerpt(text)}"
        ) from error
    except UnicodeDecodeError as error:  # bytes
        raise ConfigError(f"{source} is not UTF-8 text (offset {error.start})") from error
    except RecursionError as error:
        raise ConfigError(
            f"{source} nests JSON arrays or objects too deeply to read ({len(text):,} characters)"
        ) from error


def _excerpt(text: str | bytes, limit: int = 200) -> str:
    """``text`` as repr, its first ``limit`` characters only when it is longer."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


@dataclass(frozen=True)
class TrialConfig:
    """The training performance settings of one trial: one field per setting of
    :data:`autotune.settings.SETTINGS`, whose help says what each does.

    On TensorFlow ``jit_compile`` is XLA; on JAX it is ``jax.jit`` (XLA too), which JAX needs:
    ``backend="jax"`` without ``jit_compile`` is refused, since Keras would then run every JAX
    operation eagerly, one by one (a debugging mode, not a speed setting). On JAX the thread
    counts size only the TensorFlow pools of the input pipeline; XLA's CPU runtime keeps its own.
    """

    batch_size: int
    precision: Precision = "float32"
    jit_compile: bool = False
    prefetch: Tunable = AUTOTUNE
    num_parallel_calls: Tunable = AUTOTUNE
    shuffle_buffer: int = 1024
    steps_per_execution: int = 1
    intra_op_threads: int = 0
    inter_op_threads: int = 0
    private_threadpool_size: int = 0
    backend: Backend = "tensorflow"
    lr_rule: LrRule = "experiment"
    float32_layers: Float32Layers = "none"

    def __post_init__(self) -> None:
        for name in _FIELDS:
            settings.setting(name).check("TrialConfig", getattr(self, name))
        if self.backend == "jax" and not self.jit_compile:
            raise ConfigError(
                "TrialConfig: backend='jax' needs jit_compile=true: Keras trains a JAX model "
                "through jax.jit (XLA), and without it runs every operation eagerly, one by one "
                "(a debugging mode, not a speed setting). Received: backend='jax', "
                "jit_compile=False"
            )

    @classmethod
    def baseline(cls, batch_size: int) -> TrialConfig:
        """The reference configuration: TensorFlow, float32, no XLA, pipeline defaults."""
        return cls(batch_size=batch_size)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: object, source: str = "trial config") -> TrialConfig:
        config: TrialConfig = _from_mapping(cls, data, source)
        return config

    @classmethod
    def from_json(cls, text: str, source: str = "trial config") -> TrialConfig:
        return cls.from_dict(_parse_json(text, source), source)

    def process_differences(self, other: TrialConfig) -> list[str]:
        """The settings a trial process fixes when it starts (the backend, TensorFlow's thread
        pools) on which ``other`` differs, as 'name: mine vs other': empty when both can be
        timed in one process."""
        return [
            f"{name}: {getattr(self, name)!r} vs {getattr(other, name)!r}"
            for name in settings.process_fixed()
            if getattr(self, name) != getattr(other, name)
        ]

    @property
    def compiler(self) -> str:
        """How the training step is compiled, for people: 'xla' or 'no-xla' on TensorFlow (a
        tf.function graph either way), 'jax.jit' on JAX."""
        if self.backend == "jax":
            return "jax.jit"
        return "xla" if self.jit_compile else "no-xla"

    def describe(self) -> str:
        """A one-line summary for people, e.g. 'bs=128 mixed_bfloat16 xla pf=autotune ...':
        each setting by its :attr:`~autotune.settings.Setting.short` key, those not
        :attr:`~autotune.settings.Setting.shown_at_default` only where they are not at their
        default (steps per execution, thread counts); XLA and the backend as :attr:`compiler`
        ('jax.jit' in place of 'xla' on the JAX backend)."""
        parts = []
        for setting in settings.SETTINGS:
            value = getattr(self, setting.name)
            if setting.name == "jit_compile":
                parts.append(self.compiler)
            elif setting.short is not None and (
                setting.shown_at_default or value != setting.default
            ):
                parts.append(f"{setting.short}={value}" if setting.short else str(value))
        return " ".join(parts)

    @property
    def samples_per_call(self) -> int:
        """Training examples per call of the training function: batch size x steps per
        execution."""
        return self.batch_size * self.steps_per_execution


#: TrialConfig's fields, in order (the settings table's order: tests/unit/test_settings.py).
_FIELDS = tuple(field.name for field in dataclasses.fields(TrialConfig))


@dataclass(frozen=True)
class RunSettings:
    """How a trial is measured: seed, warm-up, timed windows, curve and limits.

    Attributes:
        seed: seed for weights, shuffling and dropout; the same seed gives the same curve.
        measure_throughput: run the warm-up and timed windows (off for extra baseline seeds).
        warmup_min_steps: training steps always run before steady state can be declared, in
            whole calls (at 64 steps per execution, one); the steady-state test itself compares
            spans of 3 steps, so a warm-up is 7 calls at one step a call and 3 from 3 steps on.
        warmup_max_steps: warm-up ends after this many calls even if call times still fall (at
            least 2: the first call compiles, so a steady call time needs a second).
        warmup_max_seconds: warm-up ends after this long even if step times still fall.
        window_seconds: target length of one timed window; windows hold whole steps.
        min_window_steps: fewest training steps in one timed window (a window holds whole calls
            of ``steps_per_execution`` steps).
        windows: number of timed windows.
        curve: train the fidelity curve (fixed sample budget, validation at checkpoints).
        curve_samples: training examples in the curve run; None takes the experiment's.
        checkpoints: validation evaluations, evenly spaced over the curve's samples.
        time_limit_seconds: the trial process is stopped after this long.
        memory_limit_bytes: the trial process tree is stopped above this resident size;
            None takes 80% of the machine's memory.
        input_ablation: after the timed windows, time ``ablation_windows`` windows fed one
            cached batch, each alternating with one of the real pipeline, to measure how much of
            the step time the input costs.
        ablation_windows: pairs of timed windows (real pipeline, cached batch) of the ablation;
            fewer, one at least, where the trial's windows of whole calls take more than twice
            ``window_seconds`` (:func:`autotune.measure.ablation_pairs`).
        stop_below_samples_per_second: stop after the timed windows (before the curve) when the
            throughput is confidently below this figure; None never stops early.
        profile_dir: after the timed windows, profile one more window of steps with the
            TensorBoard profiler into this folder and read it with XProf; None does not profile.
        profile_steps: most steps in the profiled window (it holds one timed window's steps,
            up to this many).
    """

    seed: int = 0
    measure_throughput: bool = True
    warmup_min_steps: int = 5
    warmup_max_steps: int = 300
    warmup_max_seconds: float = 60.0
    window_seconds: float = 0.5
    min_window_steps: int = 3
    windows: int = 7
    curve: bool = True
    curve_samples: int | None = None
    checkpoints: int = 6
    time_limit_seconds: float = 600.0
    memory_limit_bytes: int | None = None
    input_ablation: bool = True
    ablation_windows: int = 3
    stop_below_samples_per_second: float | None = None
    profile_dir: str | None = None
    profile_steps: int = 50

    def __post_init__(self) -> None:
        _check_int("RunSettings", "seed", self.seed, 0)
        _check_int("RunSettings", "warmup_min_steps", self.warmup_min_steps, 1)
        _check_int("RunSettings", "warmup_max_steps", self.warmup_max_steps, 2)
        if self.warmup_max_steps < self.warmup_min_steps:
            raise ConfigError(
                "RunSettings: warmup_min_steps <= warmup_max_steps must hold. Received: "
                f"warmup_min_steps={self.warmup_min_steps}, "
                f"warmup_max_steps={self.warmup_max_steps}"
            )
        _check_int("RunSettings", "min_window_steps", self.min_window_steps, 1)
        _check_int("RunSettings", "windows", self.windows, 1)
        _check_int("RunSettings", "checkpoints", self.checkpoints, 1)
        if self.curve_samples is not None:
            _check_int("RunSettings", "curve_samples", self.curve_samples, 1)
        if self.memory_limit_bytes is not None:
            _check_int("RunSettings", "memory_limit_bytes", self.memory_limit_bytes, 1)
        for name in ("warmup_max_seconds", "window_seconds", "time_limit_seconds"):
            value = getattr(self, name)
            if not is_positive_finite(value):
                raise ConfigError(
                    f"RunSettings.{name} must be a number of seconds > 0 (finite). "
                    f"Received: {name}={value!r}"
                )
        _check_int("RunSettings", "ablation_windows", self.ablation_windows, 1)
        _check_int("RunSettings", "profile_steps", self.profile_steps, 2)
        if self.profile_dir is not None and (
            not isinstance(self.profile_dir, str) or not self.profile_dir
        ):
            raise ConfigError(
                "RunSettings.profile_dir must be a folder path or None. "
                f"Received: profile_dir={self.profile_dir!r}"
            )
        for name in ("measure_throughput", "curve", "input_ablation"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(
                    f"RunSettings.{name} must be true or false. "
                    f"Received: {name}={getattr(self, name)!r}"
                )
        stop = self.stop_below_samples_per_second
        if stop is not None and (
            not isinstance(stop, (int, float)) or isinstance(stop, bool) or not math.isfinite(stop)
        ):
            raise ConfigError(
                "RunSettings.stop_below_samples_per_second must be a finite number or None. "
                f"Received: stop_below_samples_per_second={stop!r}"
            )
        if not self.measure_throughput and not self.curve:
            raise ConfigError(
                "RunSettings: at least one of measure_throughput and curve must be true. "
                "Received: measure_throughput=False, curve=False"
            )

    def replace(self, **changes: Any) -> RunSettings:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: object, source: str = "run settings") -> RunSettings:
        run_settings: RunSettings = _from_mapping(cls, data, source)
        return run_settings
