"""The storage contract: what a trial's row holds (:mod:`~autotune.store.schema`), reading a
stored study into records (:mod:`~autotune.store.records`), opening storages (SQLite, Journal
file, PostgreSQL: :mod:`~autotune.store.storage`), the profile facts kept per trial, the log
folders, and writing outputs atomically (:mod:`~autotune.outputs`). No TensorFlow, no
Plotly, nothing of the study's orchestration."""
