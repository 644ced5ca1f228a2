"""The study as TensorBoard runs: each trial's validation curve, configuration and objectives.

``tensorboard --logdir autotune_logs/<study key>`` then shows, beside the profiles the trials
already keep there, the curves of all trials and of the baseline seeds side by side (Scalars),
and one row per trial in the HParams table and parallel-coordinates view, as KerasTuner does.

Layout (one TensorBoard run per folder, so the run names are those of the profiles)::

    <study key>/events.out.tfevents.autotune.study      the HParams experiment (write_study_config)
    <study key>/trial_<n>/events.out.tfevents.autotune.trial          (write_trial)
    <study key>/baseline_seed_<s>/events.out.tfevents.autotune.baseline (write_baseline)

A run holds its session start info (the hparam values) and the metric scalars together, which is
where TensorBoard's HParams plugin looks for a session's metrics (metric group ""). Each file is
written whole under a temporary name and then renamed over its fixed name, so writing again
(a resumed study) replaces it instead of adding a second copy.

Only TensorBoard's pure-Python pieces are used (protos, the hparams ``summary_v2`` builders and
the record framing): TensorFlow is never imported, here or when writing.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tensorboard.compat.proto import (
    event_pb2,
    summary_pb2,
    tensor_pb2,
    tensor_shape_pb2,
    types_pb2,
)
from tensorboard.plugins.hparams import summary_v2 as hparams_summary
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.summary.writer.record_writer import RecordWriter

from autotune import settings
from autotune.config import TrialConfig
from autotune.space import Choice, IntRange, SearchSpace
from autotune.store.result import CurvePoint

VALIDATION_LOSS_TAG = "validation/loss"
THROUGHPUT_TAG = "objective/throughput"
FIDELITY_TAG = "objective/fidelity"
ROLE = "role"
ROLES = ("baseline", "trial")
EVENT_FILE_PREFIX = "events.out.tfevents.autotune."
#: Above this many values a string-valued range gets no domain (the plugin then filters nothing).
MAX_DISCRETE = 256

_METRICS = (
    (THROUGHPUT_TAG, "throughput (samples/s)", "median training samples/s (maximised)"),
    (FIDELITY_TAG, "fidelity (noise floors)", "curve distance to the baseline (minimised)"),
    (VALIDATION_LOSS_TAG, "validation loss (last)", "validation loss at the last checkpoint"),
)

Curve = Sequence[CurvePoint | tuple[float, float]]


def write_study_config(study_folder: Path, space: SearchSpace, baseline: TrialConfig) -> None:
    """Writes the HParams experiment of a study into ``study_folder`` (its log root).

    One hparam per searched setting with its domain (the space's choices, or its range for
    integers), widened to hold ``baseline``'s value so the baseline rows pass TensorBoard's
    default filters; ``role`` ('baseline' or 'trial'); metrics throughput (samples/s), fidelity
    (noise-floor units) and the last validation loss. Writing it again replaces it.

    Raises:
        ValueError: ``space`` or ``baseline`` is not what is expected.
        OSError: the folder or file cannot be written.
    """
    if not isinstance(space, SearchSpace):
        raise ValueError(f"space must be a SearchSpace. Received: space={space!r}")
    _check_config("baseline", baseline)
    hparams = []
    for key, parameter in space.parameters.items():
        setting = settings.setting(key)
        domain = _domain(key, parameter, getattr(baseline, key))
        hparams.append(hparams_summary.HParam(key, domain, setting.label, setting.summary))
    hparams.append(
        hparams_summary.HParam(
            ROLE, hparams_summary.Discrete(list(ROLES)), ROLE, "a search trial or a baseline seed"
        )
    )
    metrics = [
        hparams_summary.Metric(
            tag,
            display_name=display,
            description=description,
            dataset_type=hparams_summary.Metric.VALIDATION if tag == VALIDATION_LOSS_TAG else None,
        )
        for tag, display, description in _METRICS
    ]
    now = time.time()
    summary = hparams_summary.hparams_config_pb(hparams, metrics, time_created_secs=now)
    _write_run(Path(study_folder), "study", [(0, summary)], now)


def write_trial(
    trial_folder: Path,
    number: int,
    config: TrialConfig,
    throughput_samples_per_second: float | None,
    fidelity: float | None,
    curve: Curve,
) -> None:
    """Writes trial ``number`` as one TensorBoard run into ``trial_folder`` (``trial_<n>``).

    The run holds the trial's hparam values (session ``trial_<number>``), its validation curve
    as the scalar ``validation/loss`` with step = training samples seen, and its objectives as
    scalars: throughput in samples/s and fidelity in noise-floor units (each left out when
    None). Writing it again replaces it.

    Raises:
        ValueError: a value is not a number that can be shown (negative, NaN, infinite).
        OSError: the folder or file cannot be written.
    """
    _check_index("number", number)
    session = f"trial_{number}"
    throughput = throughput_samples_per_second
    _write_session(Path(trial_folder), "trial", session, config, throughput, fidelity, curve)


def write_baseline(
    folder: Path,
    seed: int,
    config: TrialConfig,
    throughput_samples_per_second: float | None,
    curve: Curve,
    fidelity: float | None = None,
) -> None:
    """Writes the baseline's run with ``seed`` into ``folder`` (``baseline_seed_<seed>``), as
    :func:`write_trial` does for a trial, with role 'baseline' (session
    ``baseline_seed_<seed>``); throughput is None for the curve-only seeds.

    Raises:
        ValueError: a value is not a number that can be shown (negative, NaN, infinite).
        OSError: the folder or file cannot be written.
    """
    _check_index("seed", seed)
    session = f"baseline_seed_{seed}"
    throughput = throughput_samples_per_second
    _write_session(Path(folder), "baseline", session, config, throughput, fidelity, curve)


def hparam_values(config: TrialConfig, role: str) -> dict[str, bool | float | str]:
    """The hparam values TensorBoard shows for ``config``: every setting (those that take
    "autotune", ``prefetch`` and ``num_parallel_calls``, as strings such as 'autotune' or '4',
    so one hparam has one type) and ``role``."""
    values: dict[str, bool | float | str] = {}
    for setting in settings.SETTINGS:
        value = getattr(config, setting.name)
        values[setting.name] = str(value) if setting.autotune else value
    values[ROLE] = role
    return values


# --------------------------------------------------------------------------------------------


def _write_session(
    folder: Path,
    role: str,
    session: str,
    config: TrialConfig,
    throughput: float | None,
    fidelity: float | None,
    curve: Curve,
) -> None:
    _check_config("config", config)
    now = time.time()
    start = hparams_summary.hparams_pb(
        hparam_values(config, role), trial_id=session, start_time_secs=now
    )
    summaries: list[tuple[int, summary_pb2.Summary]] = [(0, start)]
    for samples, loss in _points(curve):
        summaries.append((samples, _scalar(VALIDATION_LOSS_TAG, loss)))
    if throughput is not None:
        _check_number("throughput_samples_per_second", throughput, positive=True)
        summaries.append((0, _scalar(THROUGHPUT_TAG, throughput)))
    if fidelity is not None:
        _check_number("fidelity", fidelity)
        summaries.append((0, _scalar(FIDELITY_TAG, fidelity)))
    _write_run(folder, role, summaries, now)


def _domain(key: str, parameter: Choice | IntRange, base: Any) -> Any:
    """The hparams domain of one searched setting, holding the baseline's value ``base``."""
    if settings.setting(key).autotune:  # "autotune" or a count: always strings
        if isinstance(parameter, IntRange):
            count = (parameter.high - parameter.low) // parameter.multiple_of + 1
            if count > MAX_DISCRETE:
                return None
            values: list[Any] = [
                str(v) for v in range(parameter.low, parameter.high + 1, parameter.multiple_of)
            ]
        else:
            values = [str(v) for v in parameter.values]
        return hparams_summary.Discrete(sorted({*values, str(base)}), dtype=str)
    if isinstance(parameter, IntRange):
        return hparams_summary.IntInterval(min(parameter.low, base), max(parameter.high, base))
    values = list(dict.fromkeys([*parameter.values, base]))
    return hparams_summary.Discrete(values, dtype=type(values[0]))


def _scalar(tag: str, value: float) -> summary_pb2.Summary:
    """A scalar summary as TensorFlow 2 writes one: a float32 tensor with scalars metadata."""
    summary = summary_pb2.Summary()
    summary.value.add(
        tag=tag,
        tensor=tensor_pb2.TensorProto(
            dtype=types_pb2.DT_FLOAT,
            tensor_shape=tensor_shape_pb2.TensorShapeProto(),
            float_val=[float(value)],
        ),
        metadata=scalar_metadata.create_summary_metadata(display_name=tag, description=""),
    )
    return summary


def _points(curve: Curve) -> list[tuple[int, float]]:
    """``curve`` as (samples seen, validation loss) pairs, checked."""
    if isinstance(curve, (str, bytes)) or not isinstance(curve, Sequence):
        raise ValueError(
            f"curve must be a sequence of (samples, val_loss) points. Received: {curve!r}"
        )
    points = []
    for index, point in enumerate(curve):
        pair = (point.samples, point.val_loss) if isinstance(point, CurvePoint) else point
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(
                f"curve[{index}] must be a CurvePoint or a (samples, val_loss) pair. "
                f"Received: {point!r}"
            )
        samples, loss = pair
        _check_number(f"curve[{index}] samples", samples)
        if float(samples) != int(samples):
            raise ValueError(
                f"curve[{index}] samples must be a whole number of examples. Received: {samples!r}"
            )
        _check_number(f"curve[{index}] val_loss", loss)
        points.append((int(samples), float(loss)))
    return points


def _check_index(name: str, value: object) -> None:
    """``value`` (a trial number or a seed) must be an integer >= 0."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0. Received: {name}={value!r}")


def _check_number(name: str, value: object, positive: bool = False) -> None:
    """``value`` must be a finite real number >= 0 (> 0 with ``positive``)."""
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value < 0
        or (positive and value == 0)
    ):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be a finite number {bound}. Received: {value!r}")


def _check_config(name: str, config: object) -> None:
    if not isinstance(config, TrialConfig):
        raise ValueError(f"{name} must be a TrialConfig. Received: {name}={config!r}")


def _write_run(
    folder: Path, label: str, summaries: list[tuple[int, summary_pb2.Summary]], wall_time: float
) -> None:
    """Writes one event file ``events.out.tfevents.autotune.<label>`` into ``folder``, whole:
    under a temporary name TensorBoard ignores, then renamed over the fixed name."""
    target = folder / f"{EVENT_FILE_PREFIX}{label}"
    temporary = folder / f".autotune-{label}-{os.getpid()}.tmp"
    header = event_pb2.Event(wall_time=wall_time, file_version="brain.Event:2")
    events = [header] + [
        event_pb2.Event(wall_time=wall_time, step=step, summary=summary)
        for step, summary in summaries
    ]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with temporary.open("wb") as handle:
            writer = RecordWriter(handle)
            for event in events:
                writer.write(event.SerializeToString())
        os.replace(temporary, target)
    except OSError as error:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise OSError(
            error.errno,
            f"the TensorBoard {label} events cannot be written to {target}: "
            f"{error.strerror or error}",
        ) from error


__all__ = [
    "FIDELITY_TAG",
    "THROUGHPUT_TAG",
    "VALIDATION_LOSS_TAG",
    "hparam_values",
    "write_baseline",
    "write_study_config",
    "write_trial",
]
