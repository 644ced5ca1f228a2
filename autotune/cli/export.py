"""``autotune export``: a stored study's best configuration, as a JSON recipe for
``autotune.apply()`` or as Python code to paste (:mod:`autotune.trial.recipe_code`)."""

from __future__ import annotations

import click

from autotune.cli._errors import handle_errors
from autotune.cli._options import (
    MAX_FIDELITY_OPTION,
    MAX_MEMORY_OPTION,
    STORAGE_OPTION,
    STUDY_OPTION,
    read_records,
)


@click.command()
@STORAGE_OPTION
@STUDY_OPTION
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Where to write the recipe (a regular file or a new path; '-': standard output). "
    "[default: recipe.json, or recipe.py with --format python]",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["json", "python"]),
    default="json",
    show_default=True,
    help="json: the recipe, for autotune.apply() in your own code; python: a short module of "
    "plain Keras and tf.data code that reproduces it without autotune.",
)
@MAX_FIDELITY_OPTION
@MAX_MEMORY_OPTION
@handle_errors
def export(
    storage: str,
    study_name: str | None,
    output: str | None,
    output_format: str,
    max_fidelity: float | None,
    max_memory: float | None,
) -> None:
    """Write the best configuration as a JSON recipe or as Python code to paste."""
    from autotune.outputs import check_output, is_stdout, write_output
    from autotune.store.storage import storage_files
    from autotune.views.terminal import plain

    python = output_format == "python"
    output = output or ("recipe.py" if python else "recipe.json")
    what = "recipe code file" if python else "recipe file"
    protected = storage_files(storage)
    check_output(output, what=what, protected=protected)
    records = read_records(storage, study_name)
    recipe = records.best(max_fidelity, max_memory)
    if python:
        from autotune.trial.recipe_code import python_snippet

        path = write_output(output, python_snippet(recipe), what=what, protected=protected)
    else:
        path = recipe.save(output, protected=protected)
    where = "standard output" if is_stdout(output) else path
    click.echo(
        f"wrote {where}: {recipe.config.describe()} ({plain(recipe.note)})", err=is_stdout(output)
    )


__all__ = ["export"]
