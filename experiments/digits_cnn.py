"""The bundled ``digits_cnn`` experiment at its old checkout path, so references to this file keep
working. Its code lives in autotune/bundled/digits_cnn.py, installed with the package, where
``autotune run digits_cnn`` finds it by name."""

from autotune.bundled.digits_cnn import experiment

__all__ = ["experiment"]
