"""Confirmation: the search's best candidates re-measured head to head with the baseline.

A search takes the fastest of many noisy medians, which flatters the winner (the winner's curse),
and calls a configuration feasible on one curve from one seed. So before anything is
recommended, the top candidates (feasible Pareto trials, fastest first) and the baseline are
measured again, interleaved round by round (A B C, A B C, ...), so that drift on a shared machine
hits all of them alike. In each round the candidates that share what a process fixes with the
baseline (backend, thread pools) are timed beside it in one fresh process, their windows taken
in turn (:func:`autotune.trial.runner.run_side_by_side`); one that does not is timed alone and
paired with the round's own baseline process. Either way its speed-up in round r is::

    ratio_r = candidate samples/s in round r / the baseline's samples/s measured for it in round r

and its speed-up is the median of the ratios with the distribution-free order-statistic interval
of :func:`autotune.measure.summarize` (6 rounds give [min, max] with 96.9% coverage; 5 would give
93.8%). The rounds are sequential (:mod:`autotune.analysis.sequential`): ``rounds`` is the most
that run; a candidate that can no longer be faster beyond noise drops out at once, one whose
interval lies above 1 from :func:`~autotune.analysis.sequential.first_look` on (5 of 6 rounds)
stops once its rank among the others is settled, and the rounds end when no candidate is left
running. A "faster beyond noise" then holds at the procedure's one-sided coverage (96.9% for at
most 6 rounds; 98.4% for 6 fixed rounds, the format-1 confirmations stored before).

Each candidate that could win has its curve trained with more seeds, fastest first, until one is
within the tolerance; its fidelity is the mean over all its seeds (seed s against the baseline's
seed s), reported with the range. Every candidate whose mean fidelity could be over the tolerance,
its other seeds as far above its search fidelity as the seeds' noise allows, has its seeds curved
before the first round (:meth:`Confirmation.first_curve`), and one over the tolerance on them is
measured in no round (it cannot win). A candidate that differs from the baseline, or from a
candidate already curved, only in settings that do not change what the model learns trains that very
curve: it takes that one's curve instead of training it again (:meth:`Confirmation.known_curve`).
The winner is the fastest candidate (by median ratio) faster beyond noise whose mean fidelity is
within the tolerance; when there is none, the answer is that no configuration beat the baseline
beyond noise. The winner's settings are then attributed (:mod:`autotune.analysis.attribution`):
those whose effect is within noise go back to the baseline's values, and that minimal recipe is
recommended once it is confirmed against the baseline the same way; otherwise the winner is. No
TensorFlow here.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autotune.analysis import sequential
from autotune.analysis.attribution import Attribution, same_curve
from autotune.analysis.candidate import Candidate, Verdict, paired_ratio
from autotune.config import TrialConfig
from autotune.measure import Estimate

#: Candidates confirmed by default: the fastest feasible Pareto trials.
DEFAULT_TOP = 3
#: Head-to-head rounds at most by default (6: the smallest number whose [min, max] covers 95%).
DEFAULT_ROUNDS = 6
#: Extra curve seeds for each candidate (seed 0 is the search's own curve).
EXTRA_SEEDS = (1, 2)
#: 3: a baseline speed per candidate and round (paired in one process where it can be); 2:
#: sequential rounds and a process count, one baseline process per round; 1: fixed rounds.
CONFIRMATION_FORMAT = 3


@dataclass(frozen=True)
class Confirmation:
    """The head-to-head confirmation of a study's top candidates.

    Attributes:
        rounds: rounds at most (all of them when not ``sequential``).
        seeds: the curve seeds every candidate that could win is judged on (0 and the extra ones).
        baseline_config: the baseline's configuration.
        baseline_samples_per_second: the baseline's median throughput in each completed round:
            its own process's, or, in a round where every candidate was timed beside it, the
            median of its paired speeds. A candidate's ratios use its own baseline speeds
            (:attr:`Candidate.baseline_samples_per_second`), or, stored before format 3, the
            first ``len(candidate.samples_per_second)`` of these.
        candidates: the candidates, fastest (in the search) first.
        sequential: rounds stop once the decision is settled (format 2); False for a stored
            format-1 confirmation, whose every candidate ran every round.
        curve_tolerance: the fidelity tolerance the curves stop at (once the fastest candidate
            faster beyond noise is within it, slower ones are not curved); None: every candidate
            faster beyond noise is curved.
        processes: fresh processes run for it (each a throughput or a curve run); None when
            stored before they were counted (:attr:`process_count` estimates them then).
    """

    rounds: int
    seeds: tuple[int, ...]
    baseline_config: TrialConfig
    baseline_samples_per_second: tuple[float, ...] = ()
    candidates: tuple[Candidate, ...] = ()
    attribution: Attribution | None = None
    minimal: Candidate | None = None
    minimal_baseline_samples_per_second: tuple[float, ...] = ()
    attribution_done: bool = False
    sequential: bool = True
    curve_tolerance: float | None = None
    processes: int | None = None

    @property
    def completed_rounds(self) -> int:
        return len(self.baseline_samples_per_second)

    @property
    def paired(self) -> bool:
        """Whether every round of every candidate timed it beside the baseline in one process."""
        measured = [c for c in self.candidates if c.samples_per_second]
        return bool(measured) and all(c.paired_throughout for c in measured)

    # ------------------------------------------------------------------ sequential rounds
    def baseline_for(
        self, candidate: Candidate, baseline: Sequence[float] | None = None
    ) -> Sequence[float]:
        """The baseline's samples/s ``candidate``'s rounds pair with: ``baseline`` when given,
        else its own (format 3), else the confirmation's rounds (its rounds are the first)."""
        if baseline is not None:
            return baseline
        return candidate.baseline_samples_per_second or self.baseline_samples_per_second

    def ratios(self, candidate: Candidate, baseline: Sequence[float] | None = None) -> list[float]:
        """``candidate``'s per-round ratios over the baseline, paired by round."""
        base = self.baseline_for(candidate, baseline)
        return [c / b for c, b in zip(candidate.samples_per_second, base, strict=False) if b > 0]

    def passes(self, candidate: Candidate, baseline: Sequence[float] | None = None) -> bool:
        """Whether ``candidate`` is faster than the baseline beyond noise at its rounds."""
        ratios = self.ratios(candidate, baseline)
        return candidate.failure is None and sequential.passes(ratios, self.rounds, self.sequential)

    def running(self, candidate: Candidate, baseline: Sequence[float] | None = None) -> bool:
        """Whether ``candidate`` ran every round so far (of ``baseline``'s, when given) and more
        could change its verdict."""
        so_far = self.completed_rounds if baseline is None else len(baseline)
        n = len(candidate.samples_per_second)
        if candidate.failure is not None or n != so_far or n >= self.rounds:
            return False
        return sequential.open_verdict(self.ratios(candidate, baseline), self.rounds)

    def _bounds(self, candidate: Candidate, live: bool) -> tuple[float, float]:
        return sequential.median_bounds(self.ratios(candidate), self.rounds, live)

    def active(self) -> tuple[int, ...]:
        """The candidate trials the next round measures: those whose verdict is open, and those
        faster beyond noise whose rank against another that may be is not settled yet."""
        if not self.sequential:
            return tuple(c.trial for c in self.candidates if c.failure is None)
        level = self.completed_rounds
        fresh = {
            c.trial: len(c.samples_per_second) == level and level < self.rounds
            for c in self.candidates
        }
        can_win = [c for c in self.candidates if not self.over_tolerance(c)]
        open_ = {c.trial for c in can_win if self.running(c)}
        contenders = [c for c in can_win if c.trial in open_ or self.passes(c)]
        bounds = {c.trial: self._bounds(c, fresh[c.trial]) for c in contenders}
        unranked = {
            c.trial
            for c in contenders
            if fresh[c.trial]
            and any(
                not sequential.ranked_apart(bounds[c.trial], bounds[o.trial])
                for o in contenders
                if o.trial != c.trial
            )
        }
        return tuple(c.trial for c in contenders if c.trial in open_ | unranked)

    @property
    def rounds_done(self) -> bool:
        """No more rounds run: every one did, or no candidate is left to measure."""
        left = any(c.failure is None and not self.over_tolerance(c) for c in self.candidates)
        return self.completed_rounds >= self.rounds or (
            self.sequential and (self.completed_rounds > 0 or not left) and not self.active()
        )

    # ---------------------------------------------------------------------------- curves
    def curve_queue(self) -> tuple[Candidate, ...]:
        """The candidates whose curves decide the winner, fastest (median ratio) first: every
        one faster beyond noise, or, with a :attr:`curve_tolerance`, those up to the first whose
        mean fidelity over all seeds is within it (format 1: every candidate)."""
        if not self.sequential:
            return tuple(c for c in self.candidates if c.failure is None)
        faster = sorted(
            (c for c in self.candidates if self.passes(c)),
            key=lambda c: (-statistics.median(self.ratios(c)), c.trial),
        )
        queue = []
        for candidate in faster:
            queue.append(candidate)
            tolerance, mean = self.curve_tolerance, self._seed_mean(candidate)
            if tolerance is not None and mean is not None and mean <= tolerance:
                break
            if not set(self.seeds) <= set(candidate.fidelity):
                break  # its curves come first: whether more are needed depends on them
        return tuple(queue)

    def _seed_mean(self, candidate: Candidate) -> float | None:
        """``candidate``'s mean fidelity over all the seeds; None while one is missing."""
        if not set(self.seeds) <= set(candidate.fidelity):
            return None
        return statistics.fmean(candidate.fidelity[s] for s in self.seeds)

    def over_tolerance(self, candidate: Candidate) -> bool:
        """Whether ``candidate``'s mean fidelity over all the seeds is over the
        :attr:`curve_tolerance`: it cannot win, so no round measures it further."""
        mean = self._seed_mean(candidate)
        return self.curve_tolerance is not None and mean is not None and mean > self.curve_tolerance

    def first_curve(self, margin: float) -> tuple[int, int] | None:
        """(trial, seed) of the next curve to train before the first round, or None: every
        candidate whose mean fidelity over the seeds could be over the tolerance, each seed not
        yet curved taken as far above its search fidelity (seed 0) as ``margin`` (fidelity
        units: how far a re-run with another seed could move it), has all its seeds curved,
        fastest in the search first. One over the tolerance on them cannot win: training its
        curves first spares every round the time of measuring it. A comfortably feasible
        candidate ahead of it in the search does not spare it, since the rounds may well find
        the near one faster."""
        if not self.sequential or self.completed_rounds or self.curve_tolerance is None:
            return None
        for candidate in self.candidates:
            if candidate.failure is not None or self.over_tolerance(candidate):
                continue  # out of the rounds
            first = candidate.fidelity.get(self.seeds[0])
            missing = [s for s in self.seeds if s not in candidate.fidelity]
            if first is None or not missing:
                continue
            known = sum(candidate.fidelity[s] for s in self.seeds if s in candidate.fidelity)
            highest_mean = (known + len(missing) * (first + margin)) / len(self.seeds)
            if highest_mean > self.curve_tolerance:
                return candidate.trial, missing[0]
        return None

    def next_curve(self) -> tuple[int, int] | None:
        """(trial, seed) of the next curve to train, or None when the curves are done."""
        for candidate in self.curve_queue():
            for seed in self.seeds:
                if candidate.failure is None and seed not in candidate.fidelity:
                    return candidate.trial, seed
        return None

    def known_curve(self, candidate: Candidate, seed: int) -> tuple[str, float | None] | None:
        """Where ``candidate``'s curve for ``seed`` is known without training it, as (whose
        curve, its fidelity): the baseline's own seed curve when the two differ only in
        curve-neutral settings (fidelity None: that curve against itself), or the curve of a
        candidate that trains the same one, its fidelity for ``seed`` measured; None when it
        must be trained."""
        if same_curve(candidate.config, self.baseline_config):
            return "the baseline", None
        for other in self.candidates:
            twin = other is not candidate and same_curve(other.config, candidate.config)
            if twin and seed in other.fidelity:
                return f"trial {other.trial}", other.fidelity[seed]
        return None

    @property
    def candidates_complete(self) -> bool:
        """The rounds are done, and every candidate that could win has a fidelity per seed."""
        return self.rounds_done and self.next_curve() is None

    @property
    def complete(self) -> bool:
        """The candidates are confirmed and the winner's settings attributed (at once for a
        confirmation without candidates: nothing feasible to confirm)."""
        return not self.candidates or (self.candidates_complete and self.attribution_done)

    @property
    def one_sided_coverage(self) -> float:
        """The one-sided confidence of each "faster beyond noise" verdict (see
        :mod:`autotune.analysis.sequential`)."""
        return sequential.one_sided_coverage(self.rounds, self.sequential)

    @property
    def process_count(self) -> int:
        """Fresh processes run for this confirmation: as counted, or, for one stored before
        they were counted, one per stored measurement (the failed runs too)."""
        if self.processes is not None:
            return self.processes
        runs = self.completed_rounds + len(self.minimal_baseline_samples_per_second)
        for c in (*self.candidates, *((self.minimal,) if self.minimal else ())):
            runs += len(c.samples_per_second) + (c.failure is not None)
            runs += len([s for s in c.fidelity if s != self.seeds[0]])
        if self.attribution is not None:
            runs += self.attribution.completed_rounds + len(self.attribution.failed)
            runs += sum(len(v) for v in self.attribution.reverted_samples_per_second.values())
        return runs

    def same_plan(self, trials: Sequence[int], rounds: int, seeds: Sequence[int]) -> bool:
        """Whether this confirmation is of these candidate trials, rounds and seeds."""
        return (
            [c.trial for c in self.candidates] == list(trials)
            and self.rounds == rounds
            and self.seeds == tuple(seeds)
        )

    def verdict(self, candidate: Candidate, tolerance: float) -> Verdict:
        """What the confirmation says of ``candidate`` at fidelity ``tolerance``."""
        return self._judge(candidate, None, tolerance)

    def minimal_verdict(self, tolerance: float) -> Verdict | None:
        """What the confirmation says of the minimal recipe (None when there is none)."""
        if self.minimal is None:
            return None
        return self._judge(self.minimal, self.minimal_baseline_samples_per_second, tolerance)

    def _judge(
        self, candidate: Candidate, baseline: Sequence[float] | None, tolerance: float
    ) -> Verdict:
        ratio = None
        n = len(candidate.samples_per_second)
        base = self.baseline_for(candidate, baseline)
        if n and (n <= len(base) if self.sequential else n == len(base)):
            ratio = paired_ratio(candidate.samples_per_second, base[:n])
        values = [candidate.fidelity[s] for s in self.seeds if s in candidate.fidelity]
        mean = statistics.fmean(values) if values else None
        low, high = (min(values), max(values)) if values else (None, None)
        curved = set(self.seeds) <= set(candidate.fidelity)
        stopped = self.sequential and n < self.rounds and not self.running(candidate, baseline)
        if candidate.failure is not None:
            text, eligible = f"failed: {candidate.failure}", False
        elif mean is not None and mean > tolerance and (ratio is not None or curved):
            text, eligible = f"over the fidelity tolerance {tolerance:g}", False
        elif ratio is None:
            text, eligible = "not measured yet", False
        elif self.passes(candidate, baseline):
            text, eligible = "faster beyond noise", mean is not None and curved
            if not curved and self.rounds_done and self.next_curve() is None:
                text += "; not curved (a faster candidate won)"
        elif stopped:
            text, eligible = f"not faster beyond noise (stopped after {n} of {self.rounds})", False
        elif ratio.low > 1.0 and n < self.rounds:
            text, eligible = "faster so far (more rounds needed)", False
        elif ratio.high < 1.0:
            text, eligible = "slower than the baseline", False
        else:
            text, eligible = "within noise of the baseline", False
        return Verdict(candidate, ratio, mean, low, high, text, eligible)

    def verdicts(self, tolerance: float) -> list[Verdict]:
        return [self.verdict(c, tolerance) for c in self.candidates]

    def winner(self, tolerance: float) -> Verdict | None:
        """The eligible candidate with the highest median ratio (the earlier trial on a tie),
        or None: no candidate beat the baseline beyond noise within ``tolerance``."""
        eligible = [v for v in self.verdicts(tolerance) if v.eligible and v.ratio is not None]
        if not self.candidates_complete or not eligible:
            return None
        return max(eligible, key=lambda v: (v.ratio.median if v.ratio else 0, -v.candidate.trial))

    def recommended(self, tolerance: float) -> Verdict | None:
        """The :meth:`winner`, or its minimal recipe when that is confirmed too (faster than
        the baseline beyond noise, mean fidelity within ``tolerance``); None until complete."""
        winner = self.winner(tolerance)
        if winner is None or not self.complete:
            return None
        minimal = self.minimal_verdict(tolerance)
        attributed = (
            self.attribution is not None and self.attribution.trial == winner.candidate.trial
        )
        if minimal is not None and minimal.eligible and attributed:
            return minimal
        return winner

    def summary(self, tolerance: float) -> str:
        """One sentence: the confirmed answer."""
        if not self.candidates:
            return "no feasible candidate to confirm; keep the baseline"
        if not self.complete:
            if self.candidates_complete:
                return "confirmation unfinished (the winner's settings are not attributed yet)"
            return f"confirmation unfinished ({self.completed_rounds} of {self.rounds} rounds)"
        best = self.recommended(tolerance)
        if best is None and not self.completed_rounds:
            return (
                f"no candidate could win ({len(self.candidates)} candidate(s), each over the "
                "fidelity tolerance on its seeds or failed before the first round); keep the "
                "baseline"
            )
        if best is None or best.ratio is None:
            return (
                f"no configuration beat the baseline beyond noise ({len(self.candidates)} "
                f"candidate(s), {self._rounds_text()} head to head); keep the baseline"
            )
        ratio = best.ratio
        what = f"trial {best.candidate.trial}"
        if best.candidate is self.minimal:
            what += f" with {', '.join(self._reverted())} at the baseline's value (minimal recipe)"
        text = (
            f"{what}: {ratio.median:.2f}x the baseline ({_coverage(ratio)} "
            f"{ratio.low:.2f}-{ratio.high:.2f}, {self._rounds_text(ratio.n)} head to head"
            f"{_paired_text(best)}; faster beyond noise at {self.one_sided_coverage:.1%} "
            "one-sided), fidelity "
            f"{best.fidelity_mean:.2f} over seeds {list(self.seeds)} (range "
            f"{best.fidelity_low:.2f}-{best.fidelity_high:.2f})"
        )
        if self.attribution is not None and self.attribution.trial == best.candidate.trial:
            text += f"; speed-up {self.attribution.describe()}"
        return text

    def _rounds_text(self, n: int | None = None) -> str:
        """'6 rounds', or '5 of at most 6 rounds' when the rounds stopped early."""
        done = self.completed_rounds if n is None else n
        if done >= self.rounds:
            return f"{self.rounds} rounds"
        return f"{done} of at most {self.rounds} rounds"

    def _reverted(self) -> tuple[str, ...]:
        return self.attribution.within_noise() if self.attribution is not None else ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": CONFIRMATION_FORMAT if self.sequential else 1,
            "rounds": self.rounds,
            "seeds": list(self.seeds),
            "baseline_config": self.baseline_config.to_dict(),
            "baseline_samples_per_second": list(self.baseline_samples_per_second),
            "candidates": [c.to_dict() for c in self.candidates],
            "attribution": self.attribution.to_dict() if self.attribution else None,
            "minimal": self.minimal.to_dict() if self.minimal else None,
            "minimal_baseline_samples_per_second": list(self.minimal_baseline_samples_per_second),
            "attribution_done": self.attribution_done,
            "sequential": self.sequential,
            "curve_tolerance": self.curve_tolerance,
            "processes": self.processes,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Confirmation:
        return cls(
            rounds=int(data["rounds"]),
            seeds=tuple(int(s) for s in data["seeds"]),
            baseline_config=TrialConfig.from_dict(
                data["baseline_config"], source="stored confirmation"
            ),
            baseline_samples_per_second=tuple(
                float(v) for v in data.get("baseline_samples_per_second", [])
            ),
            candidates=tuple(Candidate.from_dict(c) for c in data.get("candidates", [])),
            attribution=(
                Attribution.from_dict(data["attribution"]) if data.get("attribution") else None
            ),
            minimal=Candidate.from_dict(data["minimal"]) if data.get("minimal") else None,
            minimal_baseline_samples_per_second=tuple(
                float(v) for v in data.get("minimal_baseline_samples_per_second", [])
            ),
            attribution_done=bool(data.get("attribution_done", False)),
            # format 1 (no "sequential" key) ran every round for every candidate
            sequential=bool(data.get("sequential", False)),
            curve_tolerance=(
                float(data["curve_tolerance"]) if data.get("curve_tolerance") is not None else None
            ),
            processes=int(data["processes"]) if data.get("processes") is not None else None,
        )


def _paired_text(verdict: Verdict) -> str:
    """' in one process each' when every round of ``verdict`` timed it beside the baseline in
    one process, ', 3 of them in one process' when some did, else ''."""
    candidate = verdict.candidate
    if candidate.paired_throughout:
        return " in one process each"
    return f", {candidate.paired_rounds} of them in one process" if candidate.paired_rounds else ""


def _coverage(ratio: Estimate) -> str:
    return f"{ratio.confidence:.0%} CI" if ratio.confidence < 0.95 else "95% CI"


def _ratio_text(ratio: Estimate) -> str:
    return f"{ratio.median:.2f}x ({_coverage(ratio)} {ratio.low:.2f}-{ratio.high:.2f})"


def ratio_text(ratio: Estimate | None) -> str:
    """'1.84x (95% CI 1.71-1.97)'; '-' for None."""
    return "-" if ratio is None else _ratio_text(ratio)


__all__ = [
    "CONFIRMATION_FORMAT",
    "DEFAULT_ROUNDS",
    "DEFAULT_TOP",
    "EXTRA_SEEDS",
    "Candidate",
    "Confirmation",
    "Verdict",
    "paired_ratio",
    "ratio_text",
]
