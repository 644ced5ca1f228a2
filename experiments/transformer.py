"""The bundled ``transformer`` experiment at its old checkout path, so references to this file keep
working. Its code lives in autotune/bundled/transformer.py, installed with the package, where
``autotune run transformer`` finds it by name."""

from autotune.bundled.transformer import experiment

__all__ = ["experiment"]
