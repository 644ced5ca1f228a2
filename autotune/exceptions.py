"""The two error tiers of autotune.

A :class:`ConfigError` means the user's input is wrong (a search-space file, an experiment, a CLI
argument): the command aborts with the message and exit code 2. A :class:`TrialFailure` means one
trial failed (it crashed, ran out of memory, produced NaN, ...): it is recorded with its kind and
the study goes on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal, get_args

FailureKind = Literal[
    "signal",  # the trial process was killed by a signal (segfault, SIGKILL, ...)
    "exit",  # the trial process exited with a non-zero code without reporting
    "timeout",  # the trial ran past its time limit and was stopped
    "oom",  # out of memory: MemoryError, ResourceExhaustedError, RESOURCE_EXHAUSTED, over the limit
    "xla_compile",  # XLA could not compile the training step
    "nan",  # the loss became NaN or infinite
    "loss_scale",  # mixed_float16's loss scale collapsed (autotune.analysis.loss_scale)
    "exception",  # any other exception raised by the trial
]
FAILURE_KINDS: tuple[str, ...] = get_args(FailureKind)


class AutotuneError(Exception):
    """Base class of every error autotune raises on purpose."""

    exit_code = 1


class ConfigError(AutotuneError, ValueError):
    """Bad user input: the command aborts with this message and exit code 2.

    Args:
        message: what is wrong, ending in what was received.
        argument: the library argument at fault (for example "storage" or "study_name"), when
            one is; the message then follows its name: ``str(error)`` is
            ``"<argument> <message>"``.
        mentions: other library arguments the message refers to, each written ``{name}`` in it
            (a remedy such as "or {allow_mismatch} to resume anyway").

    The CLI shows the flag that sets each argument instead (see :meth:`render`), so the library
    itself never names a flag.
    """

    exit_code = 2

    def __init__(
        self, message: str, *, argument: str | None = None, mentions: tuple[str, ...] = ()
    ) -> None:
        self.message = message
        self.argument = argument
        self.mentions = mentions
        super().__init__(self.render({}))

    def render(self, names: Mapping[str, str]) -> str:
        """The message with the argument and every mention shown as ``names`` calls it (a CLI
        flag), or by its own name where ``names`` has none."""
        text = self.message
        for mention in self.mentions:
            text = text.replace("{" + mention + "}", names.get(mention, mention))
        if self.argument is None:
            return text
        name = names.get(self.argument, self.argument)
        return f"{name}{'' if text.startswith(':') else ' '}{text}"

    def naming(self, name: str) -> str:
        """The message after ``name`` (a flag such as "--storage"), or alone without an
        argument."""
        return self.render({self.argument: name} if self.argument else {})


class ExperimentError(ConfigError):
    """An experiment cannot be loaded or does not build a usable model and data."""


class StudyError(AutotuneError):
    """The study cannot go on (its baseline failed, too many trials failed in a row)."""


class StudyBusyError(StudyError):
    """Another process runs trials on this single-process (SQLite) study: refused before
    anything runs, like bad input (exit code 2)."""

    exit_code = 2


class TrialFailure(AutotuneError):
    """One trial failed; the study records it and goes on.

    Attributes:
        kind: one of :data:`FAILURE_KINDS`.
        message: one line saying what happened.
        log_tail: the last lines the trial process wrote (empty when run in-process).
    """

    def __init__(self, kind: FailureKind, message: str, log_tail: str = "") -> None:
        if kind not in FAILURE_KINDS:
            raise ValueError(f"kind must be one of {FAILURE_KINDS}. Received: kind={kind!r}")
        super().__init__(f"[{kind}] {message}")
        self.kind: FailureKind = kind
        self.message = message
        self.log_tail = log_tail

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "message": self.message, "log_tail": self.log_tail}


#: Exception class names (anywhere in an exception's class hierarchy) that mean "out of memory":
#: Python's, TensorFlow's ``tf.errors.ResourceExhaustedError``, PyTorch's and JAX's.
OUT_OF_MEMORY_TYPES = frozenset(
    {"MemoryError", "ResourceExhaustedError", "OutOfMemoryError", "ResourceExhaustedException"}
)
#: What an out-of-memory error says, in whatever class it comes: XLA's and TensorFlow's status
#: code ``RESOURCE_EXHAUSTED`` (also inside a compilation error), "OOM when allocating tensor",
#: "Out of memory while trying to allocate", CUDA's ``CUDA_ERROR_OUT_OF_MEMORY``.
_OUT_OF_MEMORY_TEXT = re.compile(
    r"resource[_ ]exhausted|out[_ ]of[_ ]memory|\boom when allocating", re.IGNORECASE
)
_CHAIN_LIMIT = 16


def error_chain(error: BaseException) -> list[BaseException]:
    """``error`` and the exceptions it was raised from or while handling (``__cause__``, else
    ``__context__``), innermost last; at most :data:`_CHAIN_LIMIT`, each once."""
    found: list[BaseException] = []
    current: BaseException | None = error
    while (
        current is not None and len(found) < _CHAIN_LIMIT and all(current is not f for f in found)
    ):
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def is_out_of_memory(error: BaseException) -> bool:
    """Whether ``error``, or an exception it was raised from or while handling, says the trial
    ran out of memory: by its class name (:data:`OUT_OF_MEMORY_TYPES`, so no TensorFlow is
    needed to tell) or by its message (``RESOURCE_EXHAUSTED``, "out of memory", ...)."""
    for current in error_chain(error):
        if any(cls.__name__ in OUT_OF_MEMORY_TYPES for cls in type(current).__mro__):
            return True
        try:
            text = str(current)
        except Exception:  # a broken __str__ says nothing
            text = ""
        if _OUT_OF_MEMORY_TEXT.search(text):
            return True
    return False


def failure_kind(error: BaseException, *, jit_compile: bool) -> FailureKind:
    """The kind of failure an exception raised by a trial is: its own kind for a
    :class:`TrialFailure`; ``oom`` when :func:`is_out_of_memory` (checked first, so XLA's
    ``RESOURCE_EXHAUSTED`` while compiling is ``oom``); ``xla_compile`` for a TensorFlow
    ``OpError`` (told by class name) that mentions XLA, JIT or compiling in a trial with
    ``jit_compile``; else ``exception``."""
    if isinstance(error, TrialFailure):
        return error.kind
    if is_out_of_memory(error):
        return "oom"
    text = str(error).lower()
    op_error = any(cls.__name__ == "OpError" for cls in type(error).__mro__)
    if jit_compile and op_error and ("xla" in text or "jit" in text or "compil" in text):
        return "xla_compile"
    return "exception"
