"""Reading stored values defensively: a value of the wrong type read back from an Optuna storage
is a damaged study, reported in one line that names the storage, the study and the key. No
TensorFlow here."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from autotune.exceptions import ConfigError


def stored_as(value: Any, kind: type | tuple[type, ...], key: str, what: str) -> Any:
    """``value`` read back from the storage under ``key`` (or None); ValueError naming ``key``
    and ``what`` it must be when it is not a ``kind``: a damaged study (:func:`damaged_study`)."""
    if value is None:
        return None
    if not isinstance(value, kind) or isinstance(value, bool):  # no stored value is a bool
        raise ValueError(f"{key!r} must be {what}. Received: {repr(value)[:80]}")
    return value


@contextlib.contextmanager
def damaged_study(url: str, name: str, where: str) -> Iterator[None]:
    """Reports a stored value of the wrong type, read in the block, as a damaged study: one
    line (ConfigError naming the storage, exit 2) naming the study, ``where`` (a trial, the
    baseline) and the key."""
    try:
        yield
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        raise ConfigError(
            f"{url!r}: study {name!r} is damaged: in {where}, {error} (a stored value of the "
            "wrong type); autotune does not read or write it. Restore the storage from a copy, "
            "or start a new study",
            argument="storage",
        ) from error


__all__ = ["damaged_study", "stored_as"]
