"""How the ``autotune`` command reports what went wrong: one line on stderr and an exit code.

``autotune: error: ...`` with exit code 2 for bad input (a :class:`ConfigError`, a usage error
from click, a storage that cannot be read), the error's own code for the rest of autotune's
errors (1 for a failed trial), 130 or 143 after Ctrl-C or SIGTERM. Library errors name library
arguments; :data:`FLAGS` shows each as the flag that sets it.
"""

from __future__ import annotations

import math
import re
import signal
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any, TypeVar

import click

from autotune.exceptions import AutotuneError, ConfigError
from autotune.store.storage import database_error_text, is_storage_error
from autotune.views.terminal import plain

F = TypeVar("F", bound=Callable[..., Any])


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so the running trial is stopped and recorded the same way."""


def _raise_terminated(signum: int, _frame: Any) -> None:
    raise Terminated(signum)


#: The flag that sets each library argument an error can name
#: (:attr:`autotune.exceptions.ConfigError.argument`).
FLAGS = {
    "storage": "--storage",
    "study_name": "--study",
    "output": "-o/--output",
    "allow_mismatch": "--allow-mismatch",
    "seed": "--seed",
    "tolerance": "--tolerance",
    "timeout": "--timeout",
    "max_fidelity": "--max-fidelity",
    "n_trials": "--trials",
    "log_root": "log folder",
    "log_dir": "--log-dir",
    "profile_dir": "--profile-dir",
    "top": "--confirm-top",
    "rounds": "--confirm-rounds",
    "plotly_js": "--plotly-js",
    "workers": "--workers",
    "devices": "--devices",
    "device": "--device",
    "cpus": "--cpus",
    "objectives": "--objectives",
    "max_memory_mib": "--max-memory",
    "warm_start": "--warm-start",
}


#: How many characters of one value an error line echoes (a 10 kB study name is cut short).
ECHO_LIMIT = 200
_LONG = f"{{{ECHO_LIMIT + 1},}}"
_QUOTED = re.compile(rf"""'(?:[^'\\\n]|\\.){_LONG}'|"(?:[^"\\\n]|\\.){_LONG}"|[^\s'"]{_LONG}""")


def _cut(match: re.Match[str]) -> str:
    text = match[0]
    quote = text[0] if text[0] in "'\"" else ""
    inner = text[1:-1] if quote else text
    return f"{quote}{inner[:ECHO_LIMIT]}{quote}... ({len(inner):,} characters)"


def shorten(message: str) -> str:
    """``message`` with each quoted value (and each unbroken run of text) longer than
    :data:`ECHO_LIMIT` characters cut to its start and its length: ``'nnn...'... (10,000
    characters)``."""
    return _QUOTED.sub(_cut, message)


def error_message(error: AutotuneError) -> str:
    """The error's message, naming the flag of each argument it names where there is one,
    with long values shortened (:func:`shorten`)."""
    if isinstance(error, ConfigError):
        return shorten(error.render(FLAGS))
    return shorten(str(error))


def handle_errors(command: F) -> F:
    """Turns autotune's errors into a message on stderr and the error's exit code; Ctrl-C and
    SIGTERM stop the running trial and exit 130 or 143 (128 + the signal's number)."""

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
        try:
            return command(*args, **kwargs)
        except AutotuneError as error:
            click.echo(f"autotune: error: {plain(error_message(error))}", err=True)
            sys.exit(error.exit_code)
        except Exception as error:
            if not is_storage_error(error):
                raise  # a bug: its traceback is what a report needs
            storage = kwargs.get("storage", "the storage")
            click.echo(
                shorten(
                    f"autotune: error: --storage {storage!r} cannot be read or written: "
                    f"{plain(database_error_text(error))}"
                ),
                err=True,
            )
            sys.exit(2)
        except KeyboardInterrupt as interrupt:
            number = signal.SIGTERM if isinstance(interrupt, Terminated) else signal.SIGINT
            click.echo(
                f"autotune: stopped by {signal.Signals(number).name}; the running trial was "
                "stopped and marked interrupted. Run the same command again to resume.",
                err=True,
            )
            sys.exit(128 + number)
        finally:
            signal.signal(signal.SIGTERM, previous)

    return wrapper  # type: ignore[return-value]


def finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A click callback: refuses NaN and infinity, which every comparison-based range lets by
    (``nan > 0`` is False, so is ``nan <= 0``) and which would switch a limit off."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"must be a finite number. Received: {value!r}")
    return value


class OneLineErrors(click.Group):
    """The ``autotune`` group: a usage error (an unknown option, a value out of range) is one
    line on stderr, ``autotune: error: ...``, with exit code 2, like every other bad input."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as shown:  # bare "autotune": its help
            click.echo(shown.format_message())
            sys.exit(0)
        except click.ClickException as error:
            context = getattr(error, "ctx", None)
            where = f"{context.command_path}: " if context is not None else ""
            click.echo(
                f"autotune: error: {plain(shorten(where + error.format_message()))}", err=True
            )
            sys.exit(error.exit_code)
        except click.Abort:
            click.echo("autotune: aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


__all__ = [
    "ECHO_LIMIT",
    "FLAGS",
    "OneLineErrors",
    "Terminated",
    "error_message",
    "finite",
    "handle_errors",
    "shorten",
]
