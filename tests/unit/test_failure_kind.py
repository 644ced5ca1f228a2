"""autotune.exceptions.failure_kind: out of memory, as TensorFlow, XLA, CUDA or Python report it,
is ``oom`` (never ``exception`` or ``xla_compile``). TensorFlow's error classes are stood in for by
classes of the same names, so no TensorFlow is imported."""

from __future__ import annotations

import pytest

from autotune.exceptions import TrialFailure, failure_kind, is_out_of_memory


class OpError(Exception):  # tf.errors.OpError
    pass


class ResourceExhaustedError(OpError):  # tf.errors.ResourceExhaustedError
    pass


class InternalError(OpError):  # tf.errors.InternalError
    pass


class UnknownError(OpError):  # tf.errors.UnknownError
    pass


class XlaRuntimeError(RuntimeError):  # jaxlib's
    pass


class OutOfMemoryError(RuntimeError):  # torch.cuda's
    pass


XLA_OOM = (
    "XLA compilation failed: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
    "68719476736 bytes."
)

OOM = [
    MemoryError("cannot allocate"),
    ResourceExhaustedError("OOM when allocating tensor with shape[4096,4096,64]"),
    ResourceExhaustedError("Graph execution error"),
    InternalError(XLA_OOM),
    UnknownError("Failed to allocate: RESOURCE_EXHAUSTED in jit-compiled cluster"),
    XlaRuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 123 bytes"),
    OutOfMemoryError("CUDA out of memory."),
    RuntimeError("CUDA_ERROR_OUT_OF_MEMORY: out of memory"),
]


@pytest.mark.parametrize("jit_compile", [False, True])
@pytest.mark.parametrize("error", OOM, ids=lambda e: type(e).__name__)
def test_out_of_memory_in_any_form_is_oom(error: BaseException, jit_compile: bool) -> None:
    assert is_out_of_memory(error)
    assert failure_kind(error, jit_compile=jit_compile) == "oom"


def test_out_of_memory_raised_from_is_oom() -> None:
    try:
        try:
            raise ResourceExhaustedError("OOM when allocating")
        except ResourceExhaustedError as cause:
            raise ValueError("the step failed") from cause
    except ValueError as error:
        assert failure_kind(error, jit_compile=False) == "oom"


def test_an_xla_error_that_is_not_about_memory_is_xla_compile_with_jit_only() -> None:
    error = InternalError("XLA compilation failed: unsupported op CustomThing")
    assert failure_kind(error, jit_compile=True) == "xla_compile"
    assert failure_kind(error, jit_compile=False) == "exception"


def test_anything_else_is_exception_and_a_trial_failure_keeps_its_kind() -> None:
    assert failure_kind(RuntimeError("misbehave: raised on purpose"), jit_compile=True) == (
        "exception"
    )
    assert failure_kind(ValueError("XLA"), jit_compile=True) == "exception"  # not an OpError
    assert failure_kind(TrialFailure("nan", "loss became nan"), jit_compile=False) == "nan"


def test_an_exception_whose_str_fails_is_still_classified() -> None:
    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert not is_out_of_memory(Broken())
