"""A study's identity: what it refuses to mix on resume, and the ledger of allowed mismatches.

The identity (experiment, space digest, measurement digest, objectives, tolerance, fidelity
definition, hardware fingerprint, TensorFlow and Keras versions) is stored when a study is created
(:data:`autotune.store.schema.IDENTITY_KEY`), beside its provenance
(:data:`autotune.store.schema.INFO_KEY`). Resuming with another identity is refused, naming each
difference, unless allowed; an allowed mismatch is recorded
(:data:`autotune.store.schema.MISMATCHES_KEY`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import optuna

from autotune import bundled, hardware
from autotune.config import RunSettings
from autotune.exceptions import ConfigError
from autotune.experiment import Experiment
from autotune.fidelity import DEFINITION as FIDELITY_DEFINITION
from autotune.space import SearchSpace
from autotune.store import writer
from autotune.store.objectives import DEFAULT_OBJECTIVES, described
from autotune.store.schema import IDENTITY_KEY, INFO_KEY, MISMATCHES_KEY
from autotune.store.storage import quiet_experimental

#: RunSettings fields that a study sets per run; the others decide how every trial is measured.
PER_RUN_SETTINGS = (
    "seed",
    "measure_throughput",
    "curve",
    "stop_below_samples_per_second",
    "profile_dir",
    "profile_steps",
)


def measurement(settings: RunSettings) -> dict[str, Any]:
    """The settings that decide how every trial is measured (:data:`PER_RUN_SETTINGS` left out)."""
    return {k: v for k, v in settings.to_dict().items() if k not in PER_RUN_SETTINGS}


def identity(
    experiment: Experiment,
    space: SearchSpace,
    tolerance: float,
    settings: RunSettings,
    objectives: Sequence[str] = DEFAULT_OBJECTIVES,
) -> dict[str, Any]:
    """What a study made with these inputs on this machine must match to be resumed."""
    versions = hardware.versions()
    digest = json.dumps(measurement(settings), sort_keys=True).encode()
    return {
        "experiment": experiment.name,
        "space": space.digest(),
        "measurement": hashlib.sha256(digest).hexdigest()[:16],
        "objectives": described(objectives),
        "tolerance": tolerance,
        "fidelity": FIDELITY_DEFINITION,
        "hardware": hardware.fingerprint(),
        "tensorflow": versions.get("tensorflow", ""),
        "keras": versions.get("keras", ""),
    }


#: The provenance key of the sha256 of the experiment's file (:func:`experiment_digest`).
DIGEST_KEY = "experiment_digest"


def _experiment_file(reference: str) -> Path | None:
    """The file a reference's experiment is defined in, found without importing it (a module
    reference's parent packages are imported by :func:`importlib.util.find_spec`: they are
    named by the caller, never by a storage); None when it cannot be found."""
    reference = bundled.experiment_reference(reference.strip())
    target = reference.rpartition(":")[0] if ":" in reference else reference
    if not target:
        return None
    if target.endswith(".py") or "/" in target:
        path = Path(target).expanduser()
        return path.resolve() if path.is_file() else None
    try:
        spec = importlib.util.find_spec(target)
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec is not None else None
    return Path(origin) if origin and Path(origin).is_file() else None


def experiment_digest(reference: str) -> str | None:
    """The sha256 of the contents of the file ``reference`` names (a bundled name, a
    ``file.py[:name]`` or ``module:name``), read without importing it; None when no file is
    found (then the reference alone identifies the experiment)."""
    path = _experiment_file(reference)
    if path is None:
        return None
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _short(value: object, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "...(cut)"


def check_experiment(info: dict[str, Any], given: str, *, study_name: str, storage_url: str) -> str:
    """The operator's experiment ``given`` resolved to its reference, once it matches the
    study's stored identity: the stored reference and, where one was stored, the digest of the
    file. ConfigError naming both (stored vs given) otherwise; nothing is imported here. A study
    stored before digests has its reference compared alone."""
    reference = bundled.experiment_reference(given.strip())
    stored = info.get("experiment_reference")
    where = f"study {study_name!r} in {storage_url!r}"
    if not isinstance(stored, str) or reference != stored:
        raise ConfigError(
            f"{where} was made with experiment {_short(stored)}, not {_short(reference)}: a "
            "worker runs "
            "only the experiment the study was made with; name that one"
        )
    digest = info.get(DIGEST_KEY)
    if digest is not None:
        now = experiment_digest(reference)
        if now != digest:
            raise ConfigError(
                f"{where}: the file of experiment {_short(reference)} has changed since the "
                f"study was made (digest stored {str(digest)[:16]}, given {str(now)[:16]}); a "
                "worker runs only the experiment file the study was made with"
            )
    return reference


def objectives_of(
    study: optuna.Study, requested: Sequence[str] | None, is_new: bool
) -> tuple[str, ...]:
    """The objectives of ``study``: ``requested`` (default: throughput and fidelity) for a new
    one; a stored one keeps those it was made with (Optuna stores their directions), and a
    different ``requested`` is refused (ConfigError naming ``objectives``)."""
    if is_new:
        return tuple(requested or DEFAULT_OBJECTIVES)
    with quiet_experimental():
        names = study.metric_names
    stored = tuple(names) if names else DEFAULT_OBJECTIVES
    if requested is not None and tuple(requested) != stored:
        raise ConfigError(
            f"cannot change the objectives of the stored study {study.study_name!r}: it was "
            f"made with {','.join(stored)} and keeps them (Optuna stores their directions). "
            "Leave them out to resume it, or choose another {study_name} for a new study. "
            f"Received: {','.join(requested)}",
            argument="objectives",
            mentions=("study_name",),
        )
    return stored


def differences(stored: dict[str, Any], current: dict[str, Any], then: str = "stored") -> list[str]:
    """'key: stored X, now Y' for every key whose value differs (``then`` in place of
    "stored")."""
    return [
        f"{key}: {then} {stored.get(key)!r}, now {current.get(key)!r}"
        for key in sorted(set(stored) | set(current))
        if stored.get(key) != current.get(key)
    ]


def _fact(facts: dict[str, Any], key: str) -> Any:
    if key == "usable_cores":  # stored before core sets: the whole machine
        return facts.get(key, facts.get("logical_cores"))
    return facts.get(key)


def hardware_differences(
    stored: dict[str, Any], current: dict[str, Any], then: str = "stored"
) -> list[str]:
    """The fingerprinted facts behind a hardware difference (the CPU, its cores, the cores
    this process may use, the GPUs, the architecture), as 'key: stored X, now Y' (``then`` in
    place of "stored")."""
    keys = ("cpu", "logical_cores", "usable_cores", "gpus", "machine")
    return [
        f"{key}: {then} {_fact(stored, key)!r}, now {_fact(current, key)!r}"
        for key in keys
        if _fact(stored, key) != _fact(current, key)
    ]


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def record(
    study: optuna.Study,
    current: dict[str, Any],
    *,
    reference: str,
    space: SearchSpace,
    settings: RunSettings,
) -> None:
    """Stores a new study's identity, objective names and provenance."""
    with quiet_experimental():
        study.set_metric_names([name.split(":")[0] for name in current["objectives"]])
    writer.write_identity(
        study,
        current,
        {
            "experiment_reference": reference,
            DIGEST_KEY: experiment_digest(reference),
            "space": space.to_dict(),
            "space_source": space.source,
            "settings": measurement(settings),
            "hardware": hardware.hardware(),
            "versions": hardware.versions(),
            "created": _now(),
        },
    )


def check(
    study: optuna.Study,
    current: dict[str, Any],
    *,
    storage_url: str,
    allow_mismatch: bool,
    ledger: bool,
) -> None:
    """Refuses a stored identity other than ``current`` unless ``allow_mismatch``; with
    ``ledger``, an allowed mismatch is appended to the study's record of them."""
    found = differences(study.user_attrs[IDENTITY_KEY], current)
    if any(line.startswith("hardware:") for line in found):
        stored_facts = (study.user_attrs.get(INFO_KEY) or {}).get("hardware") or {}
        found = [*found, *hardware_differences(stored_facts, hardware.hardware())]
    if found and not allow_mismatch:
        raise ConfigError(
            f"study {study.study_name!r} in {storage_url!r} was made with different settings "
            f"({'; '.join(found)}); resuming would mix incomparable results. Use "
            "another {study_name}, or {allow_mismatch} to resume anyway",
            mentions=("study_name", "allow_mismatch"),
        )
    if found and ledger:
        allowed = list(study.user_attrs.get(MISMATCHES_KEY, []))
        allowed.append({"when": dt.datetime.now(dt.timezone.utc).isoformat(), "differences": found})
        writer.write_mismatches(study, allowed)


__all__ = [
    "DIGEST_KEY",
    "PER_RUN_SETTINGS",
    "check",
    "check_experiment",
    "differences",
    "experiment_digest",
    "hardware_differences",
    "identity",
    "measurement",
    "record",
]
