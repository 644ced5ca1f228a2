"""The import guard in front of Plotly and Dash (the report and dashboard extras).

The report reaches Plotly only through this module: ``go``, ``pio`` and ``make_subplots`` are
imported on first use, so importing this module (or :mod:`autotune.views.report`) imports neither
Plotly nor Dash and never fails. The dashboard calls ``require("dash")`` and then imports Dash
itself, inside the functions that draw the app. When a package is missing, :func:`require` (and
the first use of a Plotly name) raises a :class:`ConfigError` that says what to install. Data
functions of the report do not touch Plotly at all, so they work (and are tested) without it.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

from autotune.exceptions import ConfigError

if TYPE_CHECKING:  # for type checkers only; at run time module __getattr__ lends these names
    import plotly.graph_objects as go
    import plotly.io as pio
    from plotly.subplots import make_subplots

INSTALL = {"plotly": "plotly>=6", "dash": "dash>=3"}

#: The Plotly names this module lends: name -> (module, attribute of it; None for the module).
_PLOTLY_NAMES: dict[str, tuple[str, str | None]] = {
    "go": ("plotly.graph_objects", None),
    "pio": ("plotly.io", None),
    "make_subplots": ("plotly.subplots", "make_subplots"),
}


def require(package: str = "plotly") -> ModuleType:
    """Imports ``package`` ("plotly" or "dash") or raises ConfigError naming the pip command.

    For "plotly" the parts the report draws with (graph objects, io, subplots) are imported too.
    """
    try:
        if package == "plotly":
            for module, _ in _PLOTLY_NAMES.values():
                import_module(module)
        return import_module(package)
    except ImportError as error:
        raise _missing(package, error) from error


def __getattr__(name: str) -> Any:
    """``go``, ``pio`` or ``make_subplots``, imported on first use (ConfigError without Plotly)."""
    if name not in _PLOTLY_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    require("plotly")
    module, attribute = _PLOTLY_NAMES[name]
    loaded = import_module(module)
    return loaded if attribute is None else getattr(loaded, attribute)


def _missing(package: str, error: ImportError) -> ConfigError:
    wanted = INSTALL.get(package, package)
    return ConfigError(
        f"autotune's reports and dashboard need {package}: pip install '{wanted}'. "
        f"Received: {error}"
    )


__all__ = ["go", "make_subplots", "pio", "require"]
