"""Starting a study warm from an earlier one (autotune.study.warm_start): the earlier answer and
Pareto front are the first proposals, moved into the new space and measured again; where they
came from and how the earlier study differs are stored and shown; a source that cannot be read
is refused before anything is stored, and a stored study keeps the start it was made with.
Nothing is trained: the fake world of tests.support.fake_trials."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner

import autotune.study.study
from autotune.cli import main
from autotune.config import TrialConfig
from autotune.exceptions import ConfigError
from autotune.space import SearchSpace, choices
from autotune.store.records import load_records
from autotune.store.warm_start import CONFIRMED, FRONT, UNCONFIRMED, WARM_START_KEY
from autotune.study import Study
from autotune.study.warm_start import MAX_PROPOSALS, parse_source
from tests.support.demo_study import write_experiment
from tests.support.fake_trials import BASE_BATCH, SPACE, RecordingRunner

optuna.logging.set_verbosity(optuna.logging.WARNING)

#: The fake space without batch 64, the fake world's fastest feasible batch size.
NARROW = SearchSpace(
    "narrow",
    {
        "precision": choices("float32", "mixed_bfloat16", "mixed_float16"),
        "jit_compile": choices(False, True),
        "batch_size": choices(16, 32, 128),
    },
)


Runner = RecordingRunner  # the fake world's trials, recording each trial's configuration


@pytest.fixture
def reference(tmp_path: Path) -> str:
    return write_experiment(tmp_path)


def make(folder: Path, reference: str, runner=None, space=SPACE, **kwargs) -> Study:
    folder.mkdir(parents=True, exist_ok=True)
    return Study(
        reference,
        space,
        f"sqlite:///{folder / 's.db'}",
        runner=runner or Runner(),
        seed=0,
        profile_mode="off",
        **kwargs,
    )


@pytest.fixture
def earlier(tmp_path: Path, reference: str) -> Study:
    """An earlier study of the fake world: its start, combination and a few neighbours."""
    study = make(tmp_path / "earlier", reference)
    study.optimize(n_trials=9)
    return study


def source_of(study: Study) -> str:
    return f"{study.storage_url}:{study.name}"


# --------------------------------------------------------------------------------------------
# The source
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("sqlite:///old.db:digits_cnn-cpu", ("sqlite:///old.db", "digits_cnn-cpu")),
        ("sqlite:///old.db", ("sqlite:///old.db", None)),
        ("sqlite:////abs/old.db", ("sqlite:////abs/old.db", None)),
        ("postgresql://u:pw@host:5432/db", ("postgresql://u:pw@host:5432/db", None)),
        ("postgresql://u:pw@host/db:old", ("postgresql://u:pw@host/db", "old")),
        ("journal:///j.log:a.b-c", ("journal:///j.log", "a.b-c")),
        ("  sqlite:///old.db  ", ("sqlite:///old.db", None)),
    ],
)
def test_the_source_is_a_storage_and_an_optional_study(given, expected) -> None:
    assert parse_source(given) == expected


@pytest.mark.parametrize("given", ["", "   "])
def test_an_empty_source_is_refused(given) -> None:
    with pytest.raises(ConfigError, match=r"^warm_start must be STORAGE\[:STUDY\]"):
        parse_source(given)


# --------------------------------------------------------------------------------------------
# The proposals
# --------------------------------------------------------------------------------------------


def test_a_warm_study_measures_the_earlier_answer_and_front_first(
    tmp_path, reference, earlier
) -> None:
    before = load_records(earlier.storage_url)
    answer = before.best()
    runner = Runner()
    study = make(tmp_path / "new", reference, runner, warm_start=source_of(earlier))
    warm = study.warm_start
    assert warm is not None

    study.optimize(n_trials=len(warm.proposals) + 2)

    # The answer first (not confirmed there), then the front's other feasible trials, fastest
    # first; none is the baseline, none twice, each run again here (never copied).
    assert warm.proposals[0].config == answer.config
    assert warm.proposals[0].role == UNCONFIRMED and warm.proposals[0].trial == answer.trial
    front = [r for r in before.pareto() if r.feasible and r.config != answer.config]
    assert [p.config for p in warm.proposals[1:]] == [r.config for r in front][: MAX_PROPOSALS - 1]
    assert {p.role for p in warm.proposals[1:]} <= {FRONT}
    assert runner.trials[: len(warm.proposals)] == warm.configs
    assert TrialConfig.baseline(BASE_BATCH) not in warm.configs
    assert len(set(warm.configs)) == len(warm.configs)
    # Made the same way: nothing differs, and nothing had to move.
    assert warm.differences == ()
    assert all(p.moved == () for p in warm.proposals)
    # Stored, and each proposed trial says where it came from.
    records = load_records(study.storage_url)
    assert records.warm_start == warm
    assert records.warm_start.storage == f"sqlite:///{(tmp_path / 'earlier' / 's.db').resolve()}"
    rows = records.trials[: len(warm.proposals)]
    assert [r.warm_from[0] for r in rows] == [p.trial for p in warm.proposals]
    assert rows[0].warm_from[1].startswith(f"trial {answer.trial} of {earlier.name!r}")
    assert all(r.warm_from is None for r in records.trials[len(warm.proposals) :])


def test_after_the_proposals_the_structured_start_goes_on_without_repeating_them(
    tmp_path, reference, earlier
) -> None:
    runner = Runner()
    study = make(tmp_path / "new", reference, runner, warm_start=source_of(earlier))
    proposals = study.warm_start.configs
    starts = [TrialConfig.from_dict(c) for c in study.optuna.user_attrs["autotune_start"]]

    study.optimize(n_trials=len(proposals) + 3)

    after = runner.trials[len(proposals) :]
    assert after == [c for c in starts if c not in proposals][:3]
    assert len(set(runner.trials)) == len(runner.trials)


def test_a_confirmed_answer_is_proposed_as_confirmed(tmp_path, reference, earlier) -> None:
    earlier.confirm(top=1, rounds=3)
    answer = load_records(earlier.storage_url).best()
    assert answer.confirmation is not None

    study = make(tmp_path / "new", reference, warm_start=source_of(earlier))

    first = study.warm_start.proposals[0]
    assert (first.config, first.role) == (answer.config, CONFIRMED)
    assert first.speedup == pytest.approx(answer.speedup)
    assert "its confirmed answer" in first.describe(earlier.name)


def test_proposals_move_into_another_space_and_the_differences_are_named(
    tmp_path, reference, earlier
) -> None:
    answer = load_records(earlier.storage_url).best().config
    assert answer.batch_size == 64  # the fake world's answer: not in the narrow space

    study = make(
        tmp_path / "new", reference, space=NARROW, tolerance=2.0, warm_start=source_of(earlier)
    )

    first = study.warm_start.proposals[0]
    assert first.config.batch_size == 32  # the nearest the space holds
    assert first.config.precision == answer.precision
    assert first.moved == ("batch_size: 64 -> 32",)
    assert "here batch_size: 64 -> 32" in first.describe(earlier.name)
    assert all(p.config.batch_size in (16, 32, 128) for p in study.warm_start.proposals)
    differences = study.warm_start.differences
    assert "tolerance: earlier 1.5, now 2.0" in differences
    assert any(d.startswith("space: earlier 'fake', now 'narrow'") for d in differences)
    assert "differs in tolerance: earlier 1.5, now 2.0" in study.warm_start.summary()


def test_an_earlier_study_whose_answer_is_the_baseline_proposes_its_front_only(
    tmp_path, reference
) -> None:
    only_baseline = SearchSpace("one", {"batch_size": choices(32, 512)})  # 512 drifts
    earlier = make(tmp_path / "earlier", reference, space=only_baseline)
    earlier.optimize(n_trials=1)

    study = make(tmp_path / "new", reference, warm_start=source_of(earlier))

    assert study.warm_start.proposals == ()
    assert "0 configurations proposed first" in study.warm_start.summary()


def test_a_random_start_runs_the_proposals_then_the_sampler(tmp_path, reference, earlier) -> None:
    runner = Runner()
    study = make(tmp_path / "new", reference, runner, start="random", warm_start=source_of(earlier))

    study.optimize(n_trials=len(study.warm_start.proposals) + 1)

    assert study.optuna.user_attrs["autotune_start"] == []
    assert runner.trials[: len(study.warm_start.proposals)] == study.warm_start.configs


# --------------------------------------------------------------------------------------------
# Refusals, and resuming
# --------------------------------------------------------------------------------------------


def test_an_unreadable_source_is_refused_before_anything_is_stored(tmp_path, reference) -> None:
    missing = f"sqlite:///{tmp_path / 'missing.db'}"

    with pytest.raises(ConfigError, match=r"^warm_start 'sqlite:///.*missing\.db': its storage"):
        make(tmp_path / "new", reference, warm_start=missing)

    assert optuna.get_all_study_names(f"sqlite:///{tmp_path / 'new' / 's.db'}") == []
    assert not (tmp_path / "missing.db").exists()


def test_a_storage_of_several_studies_needs_the_study(tmp_path, reference, earlier) -> None:
    make(tmp_path / "earlier", reference, space=NARROW).optimize(n_trials=1)

    with pytest.raises(ConfigError, match=r"warm_start .*its study is needed: .*several studies"):
        make(tmp_path / "new", reference, warm_start=earlier.storage_url)
    with pytest.raises(ConfigError, match=r"warm_start .*'nope' is not in .*it holds"):
        make(tmp_path / "new", reference, warm_start=f"{earlier.storage_url}:nope")


def test_a_study_cannot_start_warm_from_itself_or_from_one_without_a_baseline(
    tmp_path, reference, earlier
) -> None:
    with pytest.raises(ConfigError, match=r"names the study being made"):
        make(tmp_path / "earlier", reference, warm_start=source_of(earlier))
    unmeasured = make(tmp_path / "unmeasured", reference)  # made, its baseline never run

    with pytest.raises(ConfigError, match=r"has no measured baseline yet"):
        make(tmp_path / "new", reference, warm_start=source_of(unmeasured))


def test_a_stored_study_keeps_its_warm_start(tmp_path, reference, earlier) -> None:
    first = make(tmp_path / "new", reference, warm_start=source_of(earlier))
    first.optimize(n_trials=2)
    stored = first.optuna.user_attrs[WARM_START_KEY]

    # Resuming with the same warm start, or without one, is resuming: the proposals go on.
    runner = Runner()
    again = make(tmp_path / "new", reference, runner, warm_start=source_of(earlier))
    plain = make(tmp_path / "new", reference, runner)
    assert again.warm_start == plain.warm_start == first.warm_start
    plain.optimize(n_trials=3)
    assert runner.trials == [first.warm_start.configs[2]]
    assert plain.optuna.user_attrs[WARM_START_KEY] == stored
    # Another warm start for a stored study is refused, naming both.
    other = make(tmp_path / "other", reference, space=NARROW)
    other.optimize(n_trials=1)
    with pytest.raises(ConfigError, match=r"applies to a new study only: .*started warm from"):
        make(tmp_path / "new", reference, warm_start=source_of(other))
    cold = make(tmp_path / "cold", reference)
    with pytest.raises(ConfigError, match=r"exists already \(started cold\)"):
        make(tmp_path / "cold", reference, warm_start=source_of(earlier))
    assert cold.warm_start is None


# --------------------------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------------------------


def test_run_warm_start_shows_the_source_and_status_marks_the_trials(
    tmp_path, reference, earlier, monkeypatch
) -> None:
    monkeypatch.setattr(autotune.study.study, "isolated_runner", Runner())
    monkeypatch.chdir(tmp_path)
    storage = f"sqlite:///{tmp_path / 'warm.db'}"
    cli = CliRunner(env={"COLUMNS": "200"})

    done = cli.invoke(
        main,
        ["run", reference, "--space", "quick", "--trials", "2", "--storage", storage,
         "--profile", "off", "--confirm-top", "0", "--warm-start", source_of(earlier)],
    )  # fmt: skip

    assert done.exit_code == 0, done.output
    assert f"warm start from study {earlier.name!r}" in done.output
    assert "its answer, unconfirmed" in done.output
    assert "space: earlier 'fake', now 'quick'" in done.output
    status = cli.invoke(main, ["status", "--storage", storage])
    assert "warm start from study" in status.output
    assert "(warm: earlier #" in status.output
    as_json = json.loads(cli.invoke(main, ["status", "--json", "--storage", storage]).stdout)
    assert as_json["warm_start"]["study"] == earlier.name
    assert as_json["trials"][0]["warm_from"] is not None


def test_run_refuses_an_unreadable_warm_start_naming_the_flag(tmp_path, reference) -> None:
    done = CliRunner().invoke(
        main,
        ["run", reference, "--storage", f"sqlite:///{tmp_path / 'a.db'}",
         "--warm-start", f"sqlite:///{tmp_path / 'none.db'}"],
    )  # fmt: skip

    assert done.exit_code == 2
    assert "--warm-start 'sqlite:///" in done.output and "does not exist" in done.output


def test_the_report_names_the_warm_start_and_each_proposed_point(
    tmp_path, reference, earlier
) -> None:
    from autotune.views.report import header_info, pareto_info

    study = make(tmp_path / "new", reference, warm_start=source_of(earlier))
    study.optimize(n_trials=len(study.warm_start.proposals))
    records = load_records(study.storage_url)

    facts = dict(header_info(records).facts)
    assert facts["warm start"] == study.warm_start.summary()
    info = pareto_info(records)
    points = {p.number: p for p in [*info.pareto, *info.dominated, *info.infeasible]}
    first = records.trials[0]
    assert f"warm start: trial {first.warm_from[0]} of" in points[first.number].hover
    cold = load_records(earlier.storage_url)
    assert "warm start" not in dict(header_info(cold).facts)
