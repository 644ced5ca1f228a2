"""The fresh processes a confirmation runs, each counted: one configuration alone, or several
timed side by side beside a reference (the baseline in a round, the winner in an attribution
round) in one process, each compiled and warmed up once (:func:`autotune.trial.runner.
run_side_by_side`). A group whose process fails (one model out of memory, say) is timed again
one configuration at a time beside the reference, so one failure never drops the others. No
TensorFlow here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import TrialFailure
from autotune.store.result import RunResult

#: Runs one configuration with these settings, logging into the folder.
ConfirmRunner = Callable[[TrialConfig, RunSettings, Path], RunResult]
#: Times configurations side by side in one process, throughput only, logging into the folder:
#: their results in the order given (the order they are set up and timed in).
ConfirmPairRunner = Callable[[Sequence[TrialConfig], RunSettings, Path], Sequence[RunResult]]
#: Told one line per finished run ("round 2/6: trial 7 1,234 samples/s").
ProgressListener = Callable[[str], None]
#: A configuration's median samples/s and its reference's beside it, or why that run failed.
Beside = tuple[float, float] | TrialFailure


def speed_of(result: RunResult) -> float:
    """A throughput run's median samples/s; TrialFailure when it measured none."""
    if result.throughput is None:
        raise TrialFailure("exception", "the run measured no throughput")
    return result.throughput.median


def speeds_beside(outcome: Beside) -> tuple[float, float]:
    """A side-by-side outcome's (samples/s, the reference's beside it); its failure raised."""
    if isinstance(outcome, TrialFailure):
        raise outcome
    return outcome


def failure_text(failure: TrialFailure) -> str:
    return f"{failure.kind}: {failure.message}"


class ConfirmRuns:
    """A confirmation's processes: ``run`` for one configuration, ``run_pair`` (None: never
    side by side) for several; :attr:`processes` counts every process started."""

    def __init__(
        self,
        run: ConfirmRunner,
        run_pair: ConfirmPairRunner | None,
        on_progress: ProgressListener,
        processes: int = 0,
    ) -> None:
        self.run_one = run
        self.run_pair = run_pair
        self.on_progress = on_progress
        self.processes = processes

    def alone(self, config: TrialConfig, settings: RunSettings, folder: Path) -> RunResult:
        """One fresh process for ``config``."""
        self.processes += 1
        return self.run_one(config, settings, folder)

    def speed_alone(self, config: TrialConfig, settings: RunSettings, folder: Path) -> float:
        """One fresh throughput process for ``config``: its median samples/s."""
        return speed_of(self.alone(config, settings, folder))

    def pairs(self, config: TrialConfig, reference: TrialConfig) -> bool:
        """Whether ``config`` is timed beside ``reference`` in one process."""
        return self.run_pair is not None and not config.process_differences(reference)

    def beside(
        self,
        configs: Sequence[TrialConfig],
        reference: TrialConfig,
        settings: RunSettings,
        folders: Sequence[Path],
        number: int,
        where: str = "",
    ) -> list[Beside]:
        """Times ``configs`` (each :meth:`pairs` with ``reference``) beside ``reference``, all
        in one process, in round ``number``: for each, its samples/s and the reference's in its
        process, or its failure. Who is set up and timed first alternates by round (the
        configs in odd rounds, the reference in even ones, the configs then in reverse), so an
        edge of going first favours no one. ``where`` names the round in the line that says a
        group failed (default "round ``number``"). The group's process logs into the first
        folder's parent, under ``together_<first folder's name>``; a config timed again after
        the group failed, into its own folder."""
        if len(configs) > 1:
            folder = folders[0].with_name(f"together_{folders[0].name}")
            try:
                speeds, speed = self._together(configs, reference, settings, folder, number)
                return [(s, speed) for s in speeds]
            except TrialFailure as failure:
                self.on_progress(
                    f"{where or f'round {number}'}: {len(configs)} configurations beside the "
                    f"reference in one process failed ({failure.kind}): each is timed again "
                    "beside it in a process of its own"
                )
        results: list[Beside] = []
        for config, folder in zip(configs, folders, strict=True):
            try:
                (speed,), reference_speed = self._together(
                    [config], reference, settings, folder, number
                )
                results.append((speed, reference_speed))
            except TrialFailure as failure:
                results.append(failure)
        return results

    def _together(
        self,
        configs: Sequence[TrialConfig],
        reference: TrialConfig,
        settings: RunSettings,
        folder: Path,
        number: int,
    ) -> tuple[list[float], float]:
        assert self.run_pair is not None
        self.processes += 1
        if number % 2:
            *results, own = self.run_pair([*configs, reference], settings, folder)
        else:
            own, *reverse = self.run_pair([reference, *reversed(configs)], settings, folder)
            results = reverse[::-1]
        return [speed_of(r) for r in results], speed_of(own)


__all__ = [
    "Beside",
    "ConfirmPairRunner",
    "ConfirmRunner",
    "ConfirmRuns",
    "ProgressListener",
    "failure_text",
    "speed_of",
    "speeds_beside",
]
