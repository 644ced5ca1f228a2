"""The bundled ``tabular_mlp`` experiment at its old checkout path, so references to this file keep
working. Its code lives in autotune/bundled/tabular_mlp.py, installed with the package, where
``autotune run tabular_mlp`` finds it by name."""

from autotune.bundled.tabular_mlp import experiment

__all__ = ["experiment"]
