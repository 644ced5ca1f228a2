"""The ``autotune`` command line: one module a group of commands, the library's errors mapped to
flags and exit codes here (the library never names a flag).

``main`` is the click group (``autotune = autotune.cli:main``); :mod:`~autotune.cli.commands`
holds the study commands, :mod:`~autotune.cli.trial` the single-trial command,
:mod:`~autotune.cli.workers` the workers'; the underscored modules are shared options, input
parsing and the error tier.
"""

from __future__ import annotations

from autotune.cli._errors import error_message
from autotune.cli.commands import main

__all__ = ["error_message", "main"]
