"""The one place autotune imports Plotly and Dash (the report and dashboard extras).

Importing this module never fails: when Plotly is missing, the names below are left unset and
:func:`require` raises a :class:`ConfigError` that says what to install. Data functions of the
report do not touch Plotly at all, so they work (and are tested) without it.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from autotune.exceptions import ConfigError

INSTALL = {"plotly": "plotly>=6", "dash": "dash>=3"}

_plotly_error: ImportError | None = None
try:
    import plotly.graph_objects as go
    import plotly.io as pio
    from plotly.subplots import make_subplots
except ImportError as error:  # pragma: no cover - plotly is a dependency
    _plotly_error = error


def require(package: str = "plotly") -> ModuleType:
    """Imports ``package`` ("plotly" or "dash") or raises ConfigError naming the pip command."""
    if package == "plotly" and _plotly_error is not None:
        raise _missing(package, _plotly_error)
    try:
        return import_module(package)
    except ImportError as error:
        raise _missing(package, error) from error


def _missing(package: str, error: ImportError) -> ConfigError:
    wanted = INSTALL.get(package, package)
    return ConfigError(
        f"autotune's reports and dashboard need {package}: pip install '{wanted}'. "
        f"Received: {error}"
    )


__all__ = ["go", "make_subplots", "pio", "require"]
