"""Reliability tests: real processes killed, hung and crashed on purpose (README, Reliability)."""
