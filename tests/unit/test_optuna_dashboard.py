"""optuna-dashboard on an autotune study, through the dashboard's own HTTP API (its WSGI app,
called in-process): every scored trial lists its constraint, the feasible trials the dashboard's
plots draw as best are Optuna's ``study.best_trials``, and the baseline's digest is a study
attribute (issue 14, item 2; :mod:`autotune.study.optuna_tools`).

The study is the shared demo study (tests/support/demo_study.py, fake runner): trial 1 (8000
samples/s, fidelity 2.7) is infeasible and dominated by nothing, the case that was shown as best.
"""

from __future__ import annotations

import io
import json
import math
import sys
from pathlib import Path
from typing import Any
from wsgiref.util import setup_testing_defaults

import optuna
import optuna_dashboard
import pytest
from optuna.storages import RDBStorage
from optuna.trial import TrialState

from autotune.store.records import load_records
from autotune.study import Study
from autotune.study.optuna_tools import (
    BASELINE_SUMMARY_KEY,
    DASHBOARD_CONSTRAINTS_KEY,
    named_constraints,
    set_constraints,
)
from tests.support.demo_study import (
    INFEASIBLE,
    PRUNED,
    REPEATS,
    DemoStudy,
    build_demo_study,
    fake_runner,
    params,
)
from tests.support.fake_trials import BASE_SPEED, FLOOR, SPACE, TOLERANCE

optuna.logging.set_verbosity(optuna.logging.ERROR)


# --------------------------------------------------------------------------------------------
# The dashboard's API, called in-process
# --------------------------------------------------------------------------------------------


def api_get(storage: str, path: str) -> Any:
    """GET ``path`` from optuna-dashboard's WSGI app on ``storage``; the decoded JSON body."""
    app = optuna_dashboard.wsgi(RDBStorage(storage))
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": sys.stderr,
    }
    setup_testing_defaults(environ)
    statuses: list[str] = []
    body = b"".join(app(environ, lambda status, headers, exc_info=None: statuses.append(status)))
    assert statuses == ["200 OK"], (statuses, body[:500])
    return json.loads(body)


def study_detail(demo: DemoStudy) -> dict[str, Any]:
    """The dashboard's ``/api/studies/<id>`` for the demo study."""
    studies = api_get(demo.storage, "/api/studies")["study_summaries"]
    (study_id,) = [s["study_id"] for s in studies if s["study_name"] == demo.name]
    return api_get(demo.storage, f"/api/studies/{study_id}")


@pytest.fixture(scope="module")
def detail(demo: DemoStudy) -> dict[str, Any]:
    return study_detail(demo)


@pytest.fixture(scope="module")
def optuna_study(demo: DemoStudy) -> optuna.Study:
    return optuna.load_study(study_name=demo.name, storage=demo.storage)


def feasible(trial: dict[str, Any]) -> bool:
    """The dashboard's rule for its plots (``trial.constraints.every(c => c <= 0)``)."""
    return all(c <= 0 for c in trial["constraints"])


def non_dominated(trials: list[dict[str, Any]], directions: list[str]) -> list[int]:
    """The numbers of the complete ``trials`` no other one dominates, as the dashboard's plots
    compute it (values turned to minimisation; equal values dominate neither way)."""
    points = {
        t["number"]: [
            v if d == "minimize" else -v for v, d in zip(t["values"], directions, strict=True)
        ]
        for t in trials
        if t["state"] == "Complete"
    }
    return sorted(
        n
        for n, p in points.items()
        if not any(
            q != p and all(a <= b for a, b in zip(q, p, strict=True)) for q in points.values()
        )
    )


def best_numbers(study: optuna.Study) -> list[int]:
    return sorted(t.number for t in study.best_trials)


# --------------------------------------------------------------------------------------------
# Constraints
# --------------------------------------------------------------------------------------------


def test_the_dashboard_reads_the_key_optuna_samplers_write() -> None:
    from optuna.study._constrained_optimization import _CONSTRAINTS_KEY
    from optuna_dashboard._serializer import CONSTRAINTS_KEY

    assert DASHBOARD_CONSTRAINTS_KEY == CONSTRAINTS_KEY == _CONSTRAINTS_KEY


def test_every_scored_trial_lists_its_constraint(detail: dict[str, Any]) -> None:
    measured = [t for t in detail["trials"] if t["number"] not in REPEATS]

    for trial in measured:
        if trial["state"] == "Complete":
            fidelity = trial["values"][1]
            assert trial["constraints"] == [pytest.approx(fidelity - TOLERANCE)], trial["number"]
        elif trial["state"] == "Pruned":  # stopped as slower: a violated speed constraint
            assert len(trial["constraints"]) == 1 and trial["constraints"][0] > 0, trial["number"]
        else:  # failed trials have no fidelity, so no constraint
            assert trial["constraints"] == [], trial["number"]
    assert [t["number"] for t in measured if not feasible(t)] == sorted(INFEASIBLE + PRUNED)


def test_a_repeated_configuration_lists_the_constraint_it_reuses(detail: dict[str, Any]) -> None:
    by_number = {t["number"]: t for t in detail["trials"]}

    for repeat, original in REPEATS.items():
        assert by_number[repeat]["constraints"] == by_number[original]["constraints"]


def test_the_plots_best_trials_are_optunas_feasible_pareto_trials(
    detail: dict[str, Any], optuna_study: optuna.Study
) -> None:
    feasible_trials = [t for t in detail["trials"] if feasible(t)]

    best = non_dominated(feasible_trials, detail["directions"])

    assert best == best_numbers(optuna_study) == [2, 3, 6]
    # Without the constraints every trial would be feasible and the infeasible one best too.
    assert set(INFEASIBLE) <= set(non_dominated(detail["trials"], detail["directions"]))


def test_the_best_trials_card_still_ignores_constraints(
    detail: dict[str, Any], optuna_study: optuna.Study
) -> None:
    """optuna-dashboard 0.21 computes ``best_trials`` (its "Best Trials" card) from the values
    alone (optuna/optuna-dashboard#772); docs/reports.md says so. When a version fixes that, this
    fails: update docs/reports.md and this test."""
    card = sorted(t["number"] for t in detail["best_trials"])

    assert card == sorted([*best_numbers(optuna_study), *INFEASIBLE])


def test_autotunes_own_reading_of_feasibility_is_unchanged(
    demo: DemoStudy, optuna_study: optuna.Study
) -> None:
    rows = {r.number: r for r in load_records(demo.storage).trials}

    for trial in optuna_study.trials:
        row = rows[trial.number]
        if trial.state != TrialState.COMPLETE or trial.number in REPEATS:
            continue
        expected = trial.values[1] - TOLERANCE
        assert named_constraints(trial) == {"fidelity": pytest.approx(expected)}
        # Optuna reads the named constraint and the dashboard's list: one value, twice.
        assert list(trial.constraints.values()) == [pytest.approx(expected)] * 2
        assert row.feasible is (trial.values[1] <= TOLERANCE)
    assert [r.number for r in load_records(demo.storage).pareto()] == [3, 2]


def test_set_constraints_rejects_nan_and_stores_nothing() -> None:
    study = optuna.create_study(directions=["maximize", "minimize"])
    trial = study.ask()

    with pytest.raises(ValueError, match="must not be NaN"):
        set_constraints(trial, {"fidelity": -1.0, "other": math.nan})
    with pytest.raises(TypeError, match="must be a float"):
        set_constraints(trial, {"fidelity": "close"})  # type: ignore[dict-item]

    (stored,) = study.get_trials(deepcopy=False)
    assert not any(k.startswith(DASHBOARD_CONSTRAINTS_KEY) for k in stored.system_attrs)


def test_a_trial_stored_with_set_constraint_alone_shows_no_constraint(tmp_path: Path) -> None:
    """What a study stored before this change shows: Optuna knows the constraint, the
    dashboard lists none (nothing backfills it: a finished trial takes no new attributes)."""
    storage = f"sqlite:///{tmp_path / 'old.db'}"
    study = optuna.create_study(
        storage=storage, study_name="old", directions=["maximize", "minimize"]
    )
    trial = study.ask()
    trial.set_constraint("fidelity", 1.2)
    study.tell(trial, [8000.0, 2.7])

    (listed,) = api_get(storage, f"/api/studies/{study._study_id}")["trials"]

    assert study.trials[0].constraints == {"fidelity": 1.2}
    assert listed["constraints"] == []


# --------------------------------------------------------------------------------------------
# The baseline
# --------------------------------------------------------------------------------------------


def test_the_baseline_digest_is_a_readable_study_attribute(detail: dict[str, Any]) -> None:
    attrs = {a["key"]: a["value"] for a in detail["user_attrs"]}

    shown = attrs[BASELINE_SUMMARY_KEY]
    summary = json.loads(shown)  # whole: the dashboard cuts attributes at 1024 characters

    assert len(shown) < 1024
    assert summary["config"].startswith("bs=32 float32 no-xla")
    assert summary["samples_per_second"] == pytest.approx(BASE_SPEED)
    assert summary["throughput"].startswith("1,000 samples/s (")
    assert summary["fidelity"] == 0.0
    assert summary["noise_floor"] == pytest.approx(FLOOR, rel=1e-3)
    assert summary["seeds"] == [0, 1, 2]
    assert "not an Optuna trial" in summary["what"]


def test_the_baseline_is_no_trial(detail: dict[str, Any], demo: DemoStudy) -> None:
    configs = [
        json.loads(a["value"])
        for t in detail["trials"]
        for a in t["user_attrs"]
        if a["key"] == "config"
    ]

    assert len(detail["trials"]) == len(load_records(demo.storage).trials) == 8
    assert params("float32", False, 32) not in [
        {k: c[k] for k in ("precision", "jit_compile", "batch_size")} for c in configs
    ]


@pytest.fixture
def before_digest(tmp_path: Path) -> DemoStudy:
    """A demo study of one trial whose baseline digest was cleared, as in a study stored
    before the digest existed (Optuna cannot delete a study attribute)."""
    demo = build_demo_study(tmp_path, trials=[params("mixed_bfloat16", True, 32)])
    study = optuna.load_study(study_name=demo.name, storage=demo.storage)
    study.set_user_attr(BASELINE_SUMMARY_KEY, None)
    return demo


def test_resuming_a_study_stores_the_missing_digest(before_digest: DemoStudy) -> None:
    study = Study(
        before_digest.experiment_ref,
        SPACE,
        before_digest.storage,
        before_digest.name,
        runner=fake_runner,
    )
    assert study.optuna.user_attrs[BASELINE_SUMMARY_KEY] is None

    study.ensure_baseline()  # what run and confirm do first; nothing is run again

    assert study.optuna.user_attrs[BASELINE_SUMMARY_KEY]["samples_per_second"] == BASE_SPEED
