"""Float32 layers in a real model (docs/studies.md, "Float32 layers"): each ``float32_layers``
value sets the normalisation and attention layers' dtype policies, a trial records what it
changed, and ``autotune.apply`` reproduces the same policies in the user's model. A tiny
attention model on CPU."""

from __future__ import annotations

import math

import keras
import pytest

from autotune import TrialConfig
from autotune.bundled import load_experiment
from autotune.experiment import Experiment
from autotune.float32_layers import AVAILABLE_KEY, CHANGED_KEY
from autotune.trial.applied import apply
from autotune.trial.layer_policies import keep_float32
from autotune.trial.runner import run_trial
from tests.support.recipes import recipe_for

pytestmark = [
    pytest.mark.slow,  # imports TensorFlow and trains
    pytest.mark.usefixtures("float32_policy"),
]
BF16 = "mixed_bfloat16"


@pytest.fixture(scope="module")
def tiny_attention(tiny_ref) -> Experiment:
    return load_experiment(tiny_ref("tiny_attention"))


def policies(model: keras.Model) -> dict[str, str]:
    """The dtype policy of each named layer of ``model`` and of the attention's softmax."""
    named = {layer.name: layer.dtype_policy.name for layer in model.layers}
    attention = model.get_layer("attention")
    named["attention/softmax"] = attention._softmax.dtype_policy.name
    named["attention/query"] = attention._query_dense.dtype_policy.name
    return named


@pytest.mark.parametrize(
    ("value", "float32"),
    [
        ("none", set()),
        ("norms", {"token_norm", "batch_norm"}),
        ("norms+attention", {"token_norm", "batch_norm", "attention"}),
    ],
)
def test_each_value_sets_its_layers_to_float32(tiny_attention, value, float32) -> None:
    keras.config.set_dtype_policy(BF16)
    model = tiny_attention.model()

    record = keep_float32(model, value)

    assert set(record[CHANGED_KEY]) == float32
    assert record[AVAILABLE_KEY] == {"norms": 2, "attention": 1}
    found = policies(model)
    for name in ("token_norm", "batch_norm", "attention"):
        assert found[name] == ("float32" if name in float32 else BF16), name
    inner = "float32" if "attention" in float32 else BF16  # the attention's own sublayers too
    assert found["attention/softmax"] == found["attention/query"] == inner
    assert found["tokens"] == BF16  # everything else stays mixed


def test_under_float32_nothing_changes_but_the_layers_are_counted(tiny_attention) -> None:
    record = keep_float32(tiny_attention.model(), "norms+attention")

    assert record[CHANGED_KEY] == [] and record[AVAILABLE_KEY] == {"norms": 2, "attention": 1}


def test_a_trial_trains_with_its_float32_layers_and_records_them(tiny_attention, settings) -> None:
    config = TrialConfig(batch_size=32, precision=BF16, float32_layers="norms+attention")

    result = run_trial(tiny_attention, config, settings.replace(measure_throughput=False))

    assert result.effective["float32_layers"] == "norms+attention"
    assert sorted(result.effective[CHANGED_KEY]) == ["attention", "batch_norm", "token_norm"]
    assert result.effective[AVAILABLE_KEY] == {"norms": 2, "attention": 1}
    assert result.effective["head_fix"] == "last_layer"
    assert result.curve and all(math.isfinite(p.val_loss) for p in result.curve)


def test_apply_reproduces_the_float32_layers_in_build_and_in_the_users_model(
    tiny_attention,
) -> None:
    config = TrialConfig(batch_size=32, precision=BF16, float32_layers="norms")
    applied = apply(recipe_for(config, experiment="tiny_attention"))
    built, train = applied.build(tiny_attention)
    own = applied.float32_output(tiny_attention.model(), next(iter(train))[0])

    for model in (built, own):
        found = policies(model)
        assert found["token_norm"] == found["batch_norm"] == "float32"
        assert found["attention"] == found["attention/softmax"] == BF16
        assert found["head"] == "float32"  # the head, as every mixed trial keeps it
        assert found["tokens"] == BF16
