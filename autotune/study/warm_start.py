"""Starting a study warm from an earlier one: its answer and Pareto front, proposed first.

An earlier study of the same model (another version of it, another machine, another space)
already knows where the fast configurations were. A warm start (``autotune run --warm-start
STORAGE[:STUDY]``, ``Study(warm_start=...)``) reads that study and proposes, before the new
study's structured start, its answer (the confirmed one where it has one, else its fastest
feasible trial, unconfirmed) and then its Pareto front's trials within its tolerance, fastest
first, at most :data:`MAX_PROPOSALS`. Each is moved into the new space (a value the space does
not hold becomes the nearest it holds, a setting it does not search the baseline's) and
measured again like any trial: the earlier figures are never copied, since what was fast on
another machine or for another model version need not be fast here. Batch sizes carry over as
numbers (what the hardware liked), not as multiples of the base.

Only a new study starts warm: its record (:mod:`autotune.store.warm_start`) says where the
proposals came from and how the earlier study's identity differs (experiment and its file,
space, measurement, objectives, tolerance, machine, versions). Resuming with the same warm
start is resuming; with another one it is refused. No TensorFlow here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import optuna

from autotune import hardware
from autotune.analysis.attribution import changed_settings
from autotune.config import TrialConfig
from autotune.exceptions import ConfigError
from autotune.space import SearchSpace
from autotune.store import writer
from autotune.store.log_folders import storage_identity
from autotune.store.objectives import DEFAULT_OBJECTIVES
from autotune.store.recommendation import recommend
from autotune.store.records import StudyRecords, load_records
from autotune.store.warm_start import (
    CONFIRMED,
    FRONT,
    UNCONFIRMED,
    WarmProposal,
    WarmStart,
    warm_start_of,
)
from autotune.study import identity
from autotune.study.start import centre_of, moved_into

if TYPE_CHECKING:  # the study calls prepare() while it is made
    from autotune.study.study import Study

#: The most configurations a warm start proposes (the answer and the front's fastest).
MAX_PROPOSALS = 6
ARGUMENT = "warm_start"
#: How errors about the earlier study name its storage and study.
_NAMES = {"storage": "its storage", "study_name": "its study"}


def parse_source(source: str) -> tuple[str, str | None]:
    """``"STORAGE[:STUDY]"`` as (storage URL, study name or None for the storage's only study).
    The study is what follows the last ``:`` when that holds no ``/`` or ``@`` (so
    ``sqlite:///a.db:old`` names study "old" and ``postgresql://u:pw@host/db`` none)."""
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(
            f"must be STORAGE[:STUDY], for example 'sqlite:///old.db:digits_cnn-cpu'. "
            f"Received: {source!r}",
            argument=ARGUMENT,
        )
    text = source.strip()
    head, colon, tail = text.rpartition(":")
    if colon and "://" in head and tail and not any(c in tail for c in "/@"):
        return head, tail
    return text, None


def read_earlier(source: str, storage_url: str, study_name: str) -> StudyRecords:
    """The earlier study ``source`` names, read only; ConfigError naming ``warm_start`` when it
    cannot be read or is the study being made."""
    url, name = parse_source(source)
    try:
        earlier = load_records(url, name)
    except ConfigError as error:
        raise ConfigError(f"{source!r}: {error.render(_NAMES)}", argument=ARGUMENT) from error
    same_storage = storage_identity(url) == storage_identity(storage_url)
    if same_storage and earlier.study_name == study_name:
        raise ConfigError(
            f"{source!r} names the study being made ({study_name!r}); name an earlier one",
            argument=ARGUMENT,
        )
    if earlier.baseline.config is None or earlier.baseline.throughput is None:
        raise ConfigError(
            f"{source!r}: study {earlier.study_name!r} has no measured baseline yet, so it "
            "has no answer to start from",
            argument=ARGUMENT,
        )
    return earlier


def _moved(earlier: TrialConfig, here: TrialConfig) -> tuple[str, ...]:
    return tuple(
        f"{name}: {getattr(earlier, name)} -> {getattr(here, name)}"
        for name in changed_settings(here, earlier)
    )


def proposals_of(
    earlier: StudyRecords, space: SearchSpace, base_batch_size: int
) -> list[WarmProposal]:
    """What ``earlier`` proposes to a study of ``space`` at ``base_batch_size``: its answer
    (:func:`~autotune.store.recommendation.recommend`), then its Pareto front's trials within
    its tolerance, fastest first, each moved into ``space``; never the new baseline, never one
    configuration twice, at most :data:`MAX_PROPOSALS`."""
    found: list[tuple[TrialConfig, int, str, float | None]] = []
    answer = recommend(earlier)
    if answer.number is not None:
        role = CONFIRMED if answer.confirmed else UNCONFIRMED
        found.append((answer.recipe.config, answer.number, role, answer.figures.speedup))
    for row in earlier.pareto():
        if row.config is not None and row.feasible and row.duplicate_of is None:
            found.append((row.config, row.number, FRONT, earlier.speedup(row)))
    baseline = centre_of(space, base_batch_size)
    proposals: list[WarmProposal] = []
    for config, number, role, speedup in found:
        here = moved_into(space, config, base_batch_size)
        if here == baseline or any(p.config == here for p in proposals):
            continue
        proposals.append(WarmProposal(here, number, role, speedup, _moved(config, here)))
    return proposals[:MAX_PROPOSALS]


def differences(
    earlier: StudyRecords, current: dict[str, Any], reference: str, space: SearchSpace
) -> list[str]:
    """How ``earlier``'s identity differs from ``current`` (this study's), each
    ``"key: earlier X, now Y"``: the space by name, the experiment's file by its digest, the
    machine by the facts behind its fingerprint."""
    stored = dict(earlier.identity)
    found = [
        line
        for line in identity.differences(stored, current, then="earlier")
        if not line.startswith(("space:", "hardware:"))
    ]
    if stored.get("space") != current.get("space"):
        was = (earlier.info.get("space") or {}).get("name", "?")
        found.append(f"space: earlier {was!r}, now {space.name!r} (other parameters or ranges)")
    digest = earlier.info.get(identity.DIGEST_KEY)
    if digest is not None and digest != identity.experiment_digest(reference):
        found.append(f"experiment file: {earlier.experiment_reference!r} then, {reference!r} now")
    if stored.get("hardware") != current.get("hardware"):
        facts = identity.hardware_differences(earlier.hardware, hardware.hardware(), "earlier")
        found += facts or ["hardware: another machine fingerprint"]
    if earlier.throughput_only is not None:
        found.append("the earlier study is throughput only: its fidelity checked nothing")
    return found


def prepare(source: str, study: Study, objectives: Sequence[str] | None) -> WarmStart:
    """The warm start ``source`` (``"STORAGE[:STUDY]"``) gives ``study``, being made with
    ``objectives`` (None: the default): read before the new study is stored, so a source that
    cannot be read stores nothing."""
    earlier = read_earlier(source, study.storage_url, study.name)
    base_batch_size = study.experiment.base_batch_size
    current = identity.identity(
        study.experiment,
        study.space,
        study.tolerance,
        study.settings,
        objectives or DEFAULT_OBJECTIVES,
    )
    return WarmStart(
        storage=storage_identity(earlier.storage),
        study=earlier.study_name,
        proposals=tuple(proposals_of(earlier, study.space, base_batch_size)),
        differences=tuple(differences(earlier, current, study.reference, study.space)),
    )


def settle(study: optuna.Study, warm: WarmStart | None, is_new: bool) -> WarmStart | None:
    """Stores ``warm`` with a new study; for a stored one, the warm start it was made with
    (None: cold), refusing a different ``warm`` (ConfigError naming ``warm_start``)."""
    if is_new:
        if warm is not None:
            writer.write_warm_start(study, warm)
        return warm
    stored = warm_start_of(study.user_attrs)
    same = stored is not None and warm is not None and stored.source == warm.source
    if warm is not None and not same:
        made = f"warm from study {stored.study!r} in {stored.storage}" if stored else "cold"
        raise ConfigError(
            f"applies to a new study only: {study.study_name!r} exists already (started "
            f"{made}). Received: study {warm.study!r} in {warm.storage}. Leave it out to "
            "resume, or choose another {study_name}",
            argument=ARGUMENT,
            mentions=("study_name",),
        )
    return stored


__all__ = [
    "MAX_PROPOSALS",
    "differences",
    "parse_source",
    "prepare",
    "proposals_of",
    "read_earlier",
    "settle",
]
