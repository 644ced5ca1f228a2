"""The stored record of a warm start, and reading it back.

A study started warm (:mod:`autotune.study.warm_start`) proposes an earlier study's answer and
Pareto front first, re-measured here. It stores, under :data:`WARM_START_KEY`, where they came
from (the earlier study, its storage without a password), each proposal with the earlier trial
it came from and what that trial was there, and how the earlier study's identity differs from
this one's; each trial it proposed carries :data:`WARM_START_ATTR` (the earlier trial's role).
A study without the key was started cold. No TensorFlow here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autotune.config import TrialConfig
from autotune.store.damage import stored_as

#: Study attribute: the warm start's record (:meth:`WarmStart.to_dict`).
WARM_START_KEY = "autotune_warm_start"
#: Trial attribute of a warm-start proposal: where it came from (:meth:`WarmProposal.origin`).
WARM_START_ATTR = "warm_start"

#: A proposal's role in the earlier study.
CONFIRMED = "its confirmed answer"
UNCONFIRMED = "its answer, unconfirmed"
FRONT = "on its Pareto front"


@dataclass(frozen=True)
class WarmProposal:
    """One configuration a warm start proposes.

    Attributes:
        config: the configuration as this study's space holds it (what runs).
        trial: the earlier study's trial it comes from.
        role: what that trial was there (:data:`CONFIRMED`, :data:`UNCONFIRMED`, :data:`FRONT`).
        speedup: its speed-up over that study's baseline as the earlier study measured it
            (confirmed where :data:`CONFIRMED`); None when unknown.
        moved: the settings whose earlier values this study's space does not hold, each
            ``"name: earlier -> here"`` (empty when it runs as measured there).
    """

    config: TrialConfig
    trial: int
    role: str
    speedup: float | None = None
    moved: tuple[str, ...] = ()

    def describe(self, study: str) -> str:
        """'trial 7 of 'x' (its confirmed answer, 1.42x; here batch_size: 512 -> 256)'."""
        facts = [self.role]
        if self.speedup is not None:
            facts.append(f"{self.speedup:.2f}x there")
        if self.moved:
            facts.append("here " + ", ".join(self.moved))
        return f"trial {self.trial} of {study!r} ({'; '.join(facts)})"

    def origin(self, study: str) -> dict[str, Any]:
        """What the trial it proposes stores under :data:`WARM_START_ATTR`."""
        return {"trial": self.trial, "text": self.describe(study)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config.to_dict(),
            "trial": self.trial,
            "role": self.role,
            "speedup": self.speedup,
            "moved": list(self.moved),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> WarmProposal:
        stored_as(data, dict, where, "a JSON object")
        speedup = data.get("speedup")
        return cls(
            config=TrialConfig.from_dict(data["config"], f"{where}.config"),
            trial=int(data["trial"]),
            role=str(data["role"]),
            speedup=None if speedup is None else float(speedup),
            moved=tuple(str(m) for m in data.get("moved") or ()),
        )


@dataclass(frozen=True)
class WarmStart:
    """Where a warm study's first proposals came from.

    Attributes:
        storage: the earlier study's storage (a file by its absolute path, any other URL
            without its password).
        study: the earlier study's name.
        proposals: what it proposes first, in order: the answer, then the front, fastest first.
        differences: how the earlier study's identity differs from this one's, each
            ``"key: earlier X, now Y"`` (empty when it was made the same way).
    """

    storage: str
    study: str
    proposals: tuple[WarmProposal, ...]
    differences: tuple[str, ...] = ()

    @property
    def source(self) -> tuple[str, str]:
        """(storage, study): what a resume compares."""
        return self.storage, self.study

    @property
    def configs(self) -> list[TrialConfig]:
        return [p.config for p in self.proposals]

    def summary(self) -> str:
        """One line for ``run``, ``status`` and the report: the source, what it proposes and
        how the earlier study differs."""
        count = len(self.proposals)
        text = (
            f"warm start from study {self.study!r} in {self.storage}: "
            f"{count} configuration{'' if count == 1 else 's'} proposed first, re-measured here"
        )
        if not self.differences:
            return text + "; made the same way (same experiment file, space, machine, versions)"
        return text + "; differs in " + "; ".join(self.differences)

    def to_dict(self) -> dict[str, Any]:
        return {
            "storage": self.storage,
            "study": self.study,
            "proposals": [p.to_dict() for p in self.proposals],
            "differences": list(self.differences),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WarmStart:
        stored_as(data, dict, WARM_START_KEY, "a JSON object")
        proposals = stored_as(data.get("proposals"), list, f"{WARM_START_KEY}.proposals", "a list")
        return cls(
            storage=str(data["storage"]),
            study=str(data["study"]),
            proposals=tuple(
                WarmProposal.from_dict(p, f"{WARM_START_KEY}.proposals[{i}]")
                for i, p in enumerate(proposals or ())
            ),
            differences=tuple(str(d) for d in data.get("differences") or ()),
        )


def origin_of(user_attrs: Mapping[str, Any]) -> tuple[int, str] | None:
    """(earlier trial, description) of a trial a warm start proposed; None for any other."""
    data = user_attrs.get(WARM_START_ATTR)
    if not isinstance(data, dict) or not isinstance(data.get("trial"), int):
        return None
    return data["trial"], str(data.get("text", ""))


def warm_start_of(user_attrs: Mapping[str, Any]) -> WarmStart | None:
    """The study's warm start; None for a study started cold."""
    data = user_attrs.get(WARM_START_KEY)
    return None if data is None else WarmStart.from_dict(data)


__all__ = [
    "CONFIRMED",
    "FRONT",
    "UNCONFIRMED",
    "WARM_START_ATTR",
    "WARM_START_KEY",
    "WarmProposal",
    "WarmStart",
    "origin_of",
    "warm_start_of",
]
