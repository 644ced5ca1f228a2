"""The recipe as code (docs/your-model.md, "The answer as code"): the module
autotune.trial.recipe_code writes holds the recipe's values, parses whatever a stored name holds,
and ``autotune export --format python`` writes it. Running it is
tests/integration/test_recipe_code.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner

from autotune.cli import main
from autotune.config import TrialConfig
from autotune.recipe import Recipe
from autotune.store.records import load_records
from autotune.trial.recipe_code import python_snippet
from tests.support.demo_study import DemoStudy

CONFIG = TrialConfig(
    batch_size=128,
    precision="mixed_bfloat16",
    jit_compile=True,
    prefetch=0,
    num_parallel_calls=4,
    shuffle_buffer=2048,
    steps_per_execution=16,
    intra_op_threads=2,
    inter_op_threads=1,
    private_threadpool_size=3,
    lr_rule="sqrt_warmup",
    float32_layers="norms+attention",
)


def recipe(config: TrialConfig = CONFIG, **changes: object) -> Recipe:
    values: dict[str, object] = {
        "config": config,
        "learning_rate": 0.002,
        "throughput": None,
        "baseline_throughput": None,
        "speedup": 1.32,
        "fidelity": 0.6,
        "tolerance": 1.5,
        "experiment": "digits_cnn",
        "study": "digits_cnn-cpu",
        "storage": "sqlite:///autotune.db",
        "trial": 7,
        "effective": {"lr_scaling": "sqrt", "lr_warmup_steps": 13, "pipeline": {"padded": True}},
        "hardware": {"cpu": "AMD EPYC", "gpus": []},
    }
    return Recipe(**{**values, **changes})  # type: ignore[arg-type]


def constants(code: str) -> dict[str, str]:
    """Each module-level NAME = value of ``code``, as the value's source text."""
    tree = ast.parse(code)
    return {
        node.targets[0].id: ast.get_source_segment(code, node.value) or ""
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }


def test_the_module_holds_every_value_of_the_recipe() -> None:
    code = python_snippet(recipe())
    values = constants(code)

    literal = {name: ast.literal_eval(values[name]) for name in values if name != "FLOAT32_LAYERS"}
    literal.pop("NUM_PARALLEL_CALLS")  # checked below
    assert literal == {
        "BATCH_SIZE": 128,
        "PRECISION": "mixed_bfloat16",
        "LEARNING_RATE": 0.002,
        "WARMUP_STEPS": 13,
        "COMPILE": {"jit_compile": True, "steps_per_execution": 16, "auto_scale_loss": True},
        "SHUFFLE_BUFFER": 2048,
        "PREFETCH": 0,
        "INTRA_OP_THREADS": 2,
        "INTER_OP_THREADS": 1,
        "PRIVATE_THREADPOOL_SIZE": 3,
        "PADDED": True,
    }
    assert values["NUM_PARALLEL_CALLS"] == "4"
    kept = values["FLOAT32_LAYERS"]
    assert "keras.layers.LayerNormalization" in kept and "keras.layers.MultiHeadAttention" in kept
    assert 'os.environ["KERAS_BACKEND"] = "tensorflow"' in code
    doc = ast.get_docstring(ast.parse(code)) or ""
    assert doc.startswith('Training settings autotune measured for digits_cnn (study "digits_cnn')
    assert "1.32x the float32/no-XLA baseline, fidelity 0.60 (tolerance 1.5)" in " ".join(
        doc.split()
    )
    functions = {n.name for n in ast.parse(code).body if isinstance(n, ast.FunctionDef)}
    assert functions >= {"set_up", "learning_rate", "keep_float32", "pipeline"}


def test_defaults_render_as_tf_data_autotune_and_no_float32_layers() -> None:
    baseline = recipe(TrialConfig(batch_size=32), trial=None, speedup=None, effective={})
    values = constants(python_snippet(baseline))

    assert values["NUM_PARALLEL_CALLS"] == values["PREFETCH"] == "tf.data.AUTOTUNE"
    assert values["FLOAT32_LAYERS"] == "()"
    assert values["WARMUP_STEPS"] == "0" and values["PADDED"] == "False"
    assert "the float32/no-XLA baseline (nothing beat it" in python_snippet(baseline)
    jax = python_snippet(recipe(TrialConfig(batch_size=32, backend="jax", jit_compile=True)))
    assert 'os.environ["KERAS_BACKEND"] = "jax"' in jax


@pytest.mark.parametrize(
    "hostile",
    ['x"""; import os; os.system("echo hacked")  #', "back\\slash \\N{oops} \\", 'q"' * 60],
)
def test_a_stored_name_cannot_break_out_of_the_docstring(hostile: str) -> None:
    code = python_snippet(recipe(experiment=hostile, study=hostile, hardware={"cpu": hostile}))

    tree = ast.parse(code)
    doc = " ".join((ast.get_docstring(tree) or "").split())
    assert " ".join(hostile.split()) in doc
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert not any(getattr(c.func, "attr", None) == "system" for c in calls)


def test_export_writes_the_code_of_the_best_configuration(demo: DemoStudy, tmp_path: Path) -> None:
    runner = CliRunner()
    output = tmp_path / "recipe.py"

    result = runner.invoke(
        main, ["export", "--storage", demo.storage, "--format", "python", "-o", str(output)]
    )

    assert result.exit_code == 0, result.output
    best = load_records(demo.storage).best()
    assert output.read_text(encoding="utf-8") == python_snippet(best)
    assert f"BATCH_SIZE = {best.config.batch_size}" in output.read_text(encoding="utf-8")
    default = runner.invoke(
        main, ["export", "--storage", demo.storage, "--format", "python", "-o", "-"]
    )
    assert default.exit_code == 0 and default.stdout.startswith('"""Training settings')
    refused = runner.invoke(main, ["export", "--storage", demo.storage, "--format", "yaml"])
    assert refused.exit_code == 2 and "'yaml' is not one of 'json', 'python'" in refused.output


def test_export_names_its_default_file_by_format(
    demo: DemoStudy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    monkeypatch.chdir(tmp_path)

    python = runner.invoke(main, ["export", "--storage", demo.storage, "--format", "python"])
    json_ = runner.invoke(main, ["export", "--storage", demo.storage])

    assert python.exit_code == 0 and json_.exit_code == 0, python.output + json_.output
    assert (tmp_path / "recipe.py").read_text(encoding="utf-8").startswith('"""Training settings')
    assert (tmp_path / "recipe.json").read_text(encoding="utf-8").startswith("{")
