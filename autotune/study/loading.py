"""Opening a stored study as a :class:`~autotune.study.Study` again, with the experiment and
space it was made with (to run more trials; reading alone needs
:func:`autotune.store.records.load_records`, which imports no experiment)."""

from __future__ import annotations

import optuna

from autotune.config import RunSettings
from autotune.exceptions import ConfigError
from autotune.space import space_from_dict
from autotune.store.schema import IDENTITY_KEY, INFO_KEY
from autotune.store.storage import DEFAULT_STORAGE, STUDY_NAME, open_storage, pick_study_name
from autotune.study.identity import check_experiment
from autotune.study.placement import Placement
from autotune.study.study import PairRunner, Study, TrialRunner


def load_study(
    storage: str = DEFAULT_STORAGE,
    study_name: str | None = None,
    *,
    runner: TrialRunner | None = None,
    pair_runner: PairRunner | None = None,
    seed: int = 0,
    placement: Placement | None = None,
    read_only: bool = True,
    experiment: str | None = None,
) -> Study:
    """Opens a stored study with the experiment and space it was made with.

    With ``study_name`` None, the storage must hold exactly one study. ``read_only`` False
    checks the identity at once (a worker on other hardware is refused before it runs
    anything); ``runner``, ``pair_runner``, ``seed`` and ``placement`` as in :class:`Study`.
    ``experiment`` (what a worker passes: the one its operator named) must match the study's
    stored experiment, its reference and the digest of its file, before anything is imported
    (:func:`autotune.study.identity.check_experiment`); it is then the one loaded, never the
    stored reference.
    """
    probe = open_storage(storage, must_exist=True, read_only=True)
    name = pick_study_name(probe, storage, study_name)
    stored = optuna.load_study(study_name=name, storage=probe)
    info = stored.user_attrs.get(INFO_KEY)
    if not info or not stored.user_attrs.get(IDENTITY_KEY):
        raise ConfigError(f"{name!r} in {storage!r} was not made by autotune", argument=STUDY_NAME)
    if not isinstance(info, dict):
        raise ConfigError(f"{name!r} in {storage!r} was not made by autotune", argument=STUDY_NAME)
    reference = str(info.get("experiment_reference", ""))
    if experiment is not None:
        reference = check_experiment(info, experiment, study_name=name, storage_url=storage)
    space = space_from_dict(info["space"], source=info.get("space_source", "<stored space>"))
    return Study(
        reference,
        space,
        storage,
        name,
        tolerance=stored.user_attrs[IDENTITY_KEY]["tolerance"],
        settings=RunSettings().replace(**info.get("settings", {})),
        runner=runner,
        pair_runner=pair_runner,
        seed=seed,
        placement=placement,
        read_only=read_only,
    )


__all__ = ["load_study"]
