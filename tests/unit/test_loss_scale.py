"""Loss-scale health under mixed_float16 (autotune.analysis.loss_scale), recorded with the curve
(autotune.store.result.CurvePoint) and shown with the trial, with fake scales. No TensorFlow."""

from __future__ import annotations

import dataclasses

from autotune.analysis.loss_scale import (
    CALIBRATION_STEPS,
    MAX_SKIPPED_SHARE,
    loss_scale_collapse,
)
from autotune.config import TrialConfig
from autotune.exceptions import FAILURE_KINDS, TrialFailure
from autotune.store.result import CurvePoint, RunResult
from autotune.store.schema import TrialRow
from autotune.views.terminal import loss_scale_text, trial_line
from tests.support.fake_trials import fake_curve


def test_a_healthy_scale_and_the_first_halvings_are_no_collapse() -> None:
    assert loss_scale_collapse([32768.0, 16384.0, 32768.0], skipped=1, steps=200) is None
    # halving from 2^15 to 2 at the start: calibration, not a collapse
    assert loss_scale_collapse([2.0, 4.0], skipped=CALIBRATION_STEPS - 2, steps=40) is None
    assert loss_scale_collapse([], skipped=0, steps=200) is None  # no loss scaling


def test_a_scale_driven_under_one_is_a_collapse() -> None:
    why = loss_scale_collapse([32768.0, 8.0, 0.5], skipped=17, steps=400)

    assert why is not None and "collapsed to 0.5" in why
    assert "32768, 8, 0.5" in why and "17 of 400 steps skipped" in why


def test_skipped_steps_beyond_the_calibration_over_the_share_are_a_collapse() -> None:
    steps = 200
    allowed = int(MAX_SKIPPED_SHARE * steps)  # 10 of 200 beyond the first 16
    at_limit = loss_scale_collapse([1024.0], CALIBRATION_STEPS + allowed, steps)
    over = loss_scale_collapse([1024.0], CALIBRATION_STEPS + allowed + 1, steps)

    assert at_limit is None
    assert over is not None and "kept overflowing: 27 steps skipped" in over


def test_the_record_round_trips_and_is_absent_without_loss_scaling() -> None:
    scaled = [
        CurvePoint(256, 1.5, loss_scale=32768.0, skipped_steps=2),
        CurvePoint(512, 1.2, loss_scale=16384.0, skipped_steps=3),
    ]
    plain = fake_curve(0.0, 2)

    assert scaled[0].to_dict() == {
        "samples": 256, "val_loss": 1.5, "loss_scale": 32768.0, "skipped_steps": 2,
    }  # fmt: skip
    assert plain[0].to_dict() == {"samples": plain[0].samples, "val_loss": plain[0].val_loss}
    result = RunResult(
        config=TrialConfig(batch_size=32), effective={}, throughput=None, curve=scaled
    )
    assert RunResult.from_json(result.to_json()).curve == scaled
    assert loss_scale_text(scaled) == "loss scale 32768 -> 16384, 3 steps skipped"
    assert loss_scale_text(plain) == ""


def test_the_trial_line_shows_the_loss_scale() -> None:
    config = TrialConfig(batch_size=32, precision="mixed_float16")
    curve = (CurvePoint(256, 1.5, 32768.0, 0), CurvePoint(512, 1.2, 8192.0, 2))
    row = TrialRow(
        number=3, state="complete", config=config, throughput=None, fidelity=0.4, feasible=True,
        curve=curve,
    )  # fmt: skip

    assert trial_line(row).endswith("loss scale 32768 -> 8192, 2 steps skipped")
    plain = TrialRow(
        number=4, state="complete", config=config, throughput=None, fidelity=0.4, feasible=True
    )
    assert "loss scale" not in trial_line(plain)


def test_a_collapse_is_a_failure_kind_of_its_own() -> None:
    assert "loss_scale" in FAILURE_KINDS
    assert TrialFailure("loss_scale", "collapsed").kind == "loss_scale"


def test_the_report_names_the_loss_scale_beside_the_trial_curve(tmp_path) -> None:
    from autotune.store.records import load_records
    from autotune.views.report.curves import curves_info
    from tests.support.demo_study import fake_study
    from tests.support.fake_trials import fake_result

    def scaled(reference, config, settings, log_dir) -> RunResult:
        """The fake world, with float16 as fast as bfloat16 (not stopped) and a loss scale."""
        if config.precision != "mixed_float16":
            return fake_result(config, settings)
        fast = fake_result(dataclasses.replace(config, precision="mixed_bfloat16"), settings)
        result = dataclasses.replace(fast, config=config)
        if not result.curve:
            return result
        curve = [
            CurvePoint(p.samples, p.val_loss, loss_scale=2.0**15 / 2**i, skipped_steps=i)
            for i, p in enumerate(result.curve)
        ]
        return dataclasses.replace(result, curve=curve)

    study = fake_study(tmp_path, scaled)
    study.optuna.enqueue_trial(
        {"precision": "mixed_float16", "jit_compile": True, "batch_size": 32}
    )
    study.optimize(n_trials=1)

    (line,) = curves_info(load_records(study.storage_url), [0]).trials
    assert line.name == "trial 0 (loss scale 32768 -> 1024, 5 steps skipped)"
