"""Integration tests: real TensorFlow trials of the fixture experiments (mostly slow)."""
