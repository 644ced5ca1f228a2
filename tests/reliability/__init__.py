"""Reliability tests: real processes killed, hung and crashed on purpose (docs/reliability.md)."""
