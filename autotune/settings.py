"""The one table of tunable settings: :data:`SETTINGS`, one :class:`Setting` per field of
:class:`autotune.config.TrialConfig`.

Each setting is declared once here, with its name, Python type, default, choices or bounds,
whether it changes what the model learns, whether the trial process fixes it when it starts, its
help and how it is shown. The rest derives from the table: TrialConfig's checks and
:data:`autotune.config.LIMITS`, the search space's parameters and checks, the ``--config`` help,
the JSON schema, the TensorBoard HParams, attribution's settings and the curve reuse. The
functions below read :data:`SETTINGS` when they are called, so a table changed at run time (a
test's extra setting) reaches them. Applying a setting in the trial is the trial's code
(:mod:`autotune.trial`). No TensorFlow here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from autotune.exceptions import ConfigError
from autotune.float32_layers import Float32Layers
from autotune.lr_rules import LrRule

Precision = Literal["float32", "mixed_float16", "mixed_bfloat16"]
#: The Keras 3 backends a trial can run on (set as ``KERAS_BACKEND`` before Keras is imported).
Backend = Literal["tensorflow", "jax"]
AUTOTUNE: Literal["autotune"] = "autotune"
Tunable = int | Literal["autotune"]
#: :attr:`Setting.group` of the CPU thread counts (0: the default).
THREADS = "threads"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class Setting:
    """One tunable setting: what it accepts, what it does and how it is shown.

    Attributes:
        name: the TrialConfig field and search-space parameter.
        kind: the Python type of its values: bool, int or str (then ``choices`` holds them).
        default: the baseline's value; None where the experiment gives it (``batch_size``).
        help: what it does, for people (the documentation and the ``--config`` help).
        label: its display name (TensorBoard's HParams table, the JSON schema's title).
        summary: one short line of what it is (TensorBoard's HParams description).
        short: its key in one-line summaries (:meth:`autotune.config.TrialConfig.describe`,
            "bs=128"); "" shows the value alone ("float32"); None: not shown on its own.
        shown_at_default: whether a summary shows it at its default value too.
        choices: the values of a str setting.
        minimum, maximum: the bounds of an int setting. The maximum is far above any real job
            and low enough that a typo (1e20) or an overflow is refused before it reaches numpy
            or TensorFlow.
        autotune: an int setting that also takes "autotune" (tf.data picks the value).
        zero: what 0 means, said in a search space's messages ("the default").
        multiples: the only steps a search-space range of it may take besides 1 (empty: any).
        changes_learning: whether it can change what the model learns (its validation curve).
            Configurations that differ only in settings that do not change it train the same
            curve, which a study trains once (:func:`autotune.study.prediction.learning_twin`).
        process_fixed: whether the trial process fixes it when it starts, before the model is
            built (the backend as ``KERAS_BACKEND``, TensorFlow's thread pools).
        group: a family of settings handled together ("threads": the CPU thread counts).
        draw_first: where a search space draws it before the other settings (0 first): the
            backend (which decides whether XLA is drawn at all), then precision and XLA, so a
            sampler can relate the batch sizes that fit to them; None: after them, in table
            order.
        probe: where the structured start's one-factor probes and neighbours change it (0
            first; :mod:`autotune.study.start`); None: never probed alone.
    """

    name: str
    kind: type[bool] | type[int] | type[str]
    default: Any
    help: str
    label: str
    summary: str
    short: str | None = None
    shown_at_default: bool = False
    choices: tuple[str, ...] = ()
    minimum: int = 0
    maximum: int = 0
    autotune: bool = False
    zero: str | None = None
    multiples: tuple[int, ...] = ()
    changes_learning: bool = True
    process_fixed: bool = False
    group: str | None = None
    draw_first: int | None = None
    probe: int | None = None

    def accepts(self, value: object) -> bool:
        """Whether ``value`` is one this setting takes."""
        if self.choices:
            return value in self.choices
        if self.kind is bool:
            return isinstance(value, bool)
        if self.autotune and value == AUTOTUNE:
            return True
        return _is_int(value) and self.minimum <= value <= self.maximum  # type: ignore[operator]

    def expected(self, explain_zero: bool = False) -> str:
        """What the setting takes, for messages: "one of [...]", "true or false", "an integer
        >= 1 and <= 4,096" (with ``explain_zero``, what 0 means after its minimum)."""
        if self.choices:
            return f"one of {list(self.choices)}"
        if self.kind is bool:
            return "true or false"
        lead = "'autotune' or " if self.autotune else ""
        zero = f" (0: {self.zero})" if explain_zero and self.zero and self.minimum == 0 else ""
        return f"{lead}an integer >= {self.minimum}{zero} and <= {self.maximum:,}"

    def check(self, owner: str, value: object) -> None:
        """Raises ConfigError, "TrialConfig.prefetch must be ... Received: prefetch=-1", unless
        the setting takes ``value``."""
        if not self.accepts(value):
            raise ConfigError(
                f"{owner}.{self.name} must be {self.expected()}. Received: {self.name}={value!r}"
            )

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema of the setting's values, with its help as description."""
        schema: dict[str, Any]
        if self.choices:
            schema = {"type": "string", "enum": list(self.choices)}
        elif self.kind is bool:
            schema = {"type": "boolean"}
        else:
            schema = {"type": "integer", "minimum": self.minimum, "maximum": self.maximum}
            if self.autotune:
                schema = {"oneOf": [schema, {"const": AUTOTUNE}]}
        if self.default is not None:
            schema["default"] = self.default
        return {"title": self.label, "description": self.help, **schema}


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "batch_size",
        int,
        None,
        help="examples per training step.",
        label="batch size",
        summary="examples per training step",
        short="bs",
        shown_at_default=True,
        minimum=1,
        maximum=1 << 20,
        multiples=(8, 16),
        probe=2,
    ),
    Setting(
        "precision",
        str,
        "float32",
        help="Keras dtype policy name: float32, mixed_float16 or mixed_bfloat16.",
        label="precision",
        summary="Keras dtype policy",
        short="",
        shown_at_default=True,
        choices=get_args(Precision),
        draw_first=1,
        probe=0,
    ),
    Setting(
        "jit_compile",
        bool,
        False,
        help="compile the training step with XLA (on the JAX backend: jax.jit, which JAX needs).",
        label="XLA",
        summary="training step compiled with XLA (jit_compile)",
        draw_first=2,
        probe=1,
    ),
    Setting(
        "prefetch",
        int,
        AUTOTUNE,
        help="batches tf.data prefetches, or 'autotune'; 0 is no prefetch at all (tf.data's "
        "own prefetch injection is turned off too). It only buffers: the same learning.",
        label="prefetch",
        summary="batches tf.data prefetches: 'autotune' or a count",
        short="prefetch",
        shown_at_default=True,
        maximum=1 << 12,
        autotune=True,
        changes_learning=False,
    ),
    Setting(
        "num_parallel_calls",
        int,
        AUTOTUNE,
        help="parallel calls of the per-example preprocessing map, or 'autotune'. The map is "
        "deterministic at any parallelism: the same learning.",
        label="parallel calls",
        summary="parallel calls of the preprocessing map",
        short="parallel",
        shown_at_default=True,
        minimum=1,
        maximum=1 << 12,
        autotune=True,
        changes_learning=False,
    ),
    Setting(
        "shuffle_buffer",
        int,
        1024,
        help="examples in the shuffle buffer (1 disables shuffling).",
        label="shuffle buffer",
        summary="examples in the shuffle buffer",
        short="shuffle",
        shown_at_default=True,
        minimum=1,
        maximum=1 << 30,
    ),
    Setting(
        "steps_per_execution",
        int,
        1,
        help="training steps Keras runs per call of its training function "
        "(model.compile(steps_per_execution=...)): fewer calls from Python, less per-step "
        "overhead; the same batches in the same order, so the same learning (a trial's curve "
        "is trained one step per call).",
        label="steps per execution",
        summary="training steps per call (model.compile)",
        short="steps",
        minimum=1,
        maximum=1 << 12,
        changes_learning=False,
        probe=3,
    ),
    Setting(
        "intra_op_threads",
        int,
        0,
        help="threads TensorFlow gives one op (tf.config.threading); 0 leaves TensorFlow's "
        "default (one per usable core).",
        label="intra-op threads",
        summary="threads per TensorFlow op (0: its default)",
        short="intra",
        maximum=1 << 10,
        zero="the default",
        process_fixed=True,
        group=THREADS,
    ),
    Setting(
        "inter_op_threads",
        int,
        0,
        help="ops TensorFlow runs at once; 0 leaves its default.",
        label="inter-op threads",
        summary="TensorFlow ops run at once (0: its default)",
        short="inter",
        maximum=1 << 10,
        zero="the default",
        process_fixed=True,
        group=THREADS,
    ),
    Setting(
        "private_threadpool_size",
        int,
        0,
        help="threads of the training pipeline's own tf.data pool (tf.data.Options()."
        "threading); 0 shares TensorFlow's.",
        label="tf.data pool",
        summary="the pipeline's own threads (0: shared pool)",
        short="data-pool",
        maximum=1 << 10,
        zero="the default",
        group=THREADS,
    ),
    Setting(
        "backend",
        str,
        "tensorflow",
        help="the Keras backend the model trains on, tensorflow or jax (the tf.data pipeline "
        "feeds either); jax needs jit_compile.",
        label="Keras backend",
        summary="tensorflow or jax (KERAS_BACKEND)",
        choices=get_args(Backend),
        process_fixed=True,
        draw_first=0,
        probe=4,
    ),
    Setting(
        "lr_rule",
        str,
        "experiment",
        help="how the learning rate follows the batch size: the experiment's own lr_scaling "
        "(experiment), linear, sqrt or none, or linear/sqrt reached by a warm-up over the first "
        "10% of the steps (linear_warmup, sqrt_warmup). It changes what the model learns; a "
        "study draws it only at batch sizes other than the base (see autotune.lr_rules).",
        label="learning-rate rule",
        summary="how the learning rate follows the batch size",
        short="lr",
        choices=get_args(LrRule),
    ),
    Setting(
        "float32_layers",
        str,
        "none",
        help="the layers a mixed-precision trial keeps in float32 besides its output: none, "
        "norms (normalisation layers) or norms+attention (and the attention layers, logits and "
        "softmax included). It changes what the model learns; a study draws it only under a "
        "mixed policy (see autotune.float32_layers).",
        label="float32 layers",
        summary="layers kept in float32 under mixed precision",
        short="f32",
        choices=get_args(Float32Layers),
    ),
)


def setting(name: str) -> Setting:
    """The setting called ``name``; KeyError when there is none."""
    for entry in SETTINGS:
        if entry.name == name:
            return entry
    raise KeyError(name)


def names() -> tuple[str, ...]:
    """Every setting's name, in table order (TrialConfig's field order)."""
    return tuple(entry.name for entry in SETTINGS)


def draw_order() -> tuple[str, ...]:
    """The settings in the order a search space draws them (:attr:`Setting.draw_first`)."""
    first = sorted(
        (s for s in SETTINGS if s.draw_first is not None), key=lambda s: s.draw_first or 0
    )
    return tuple(s.name for s in [*first, *(s for s in SETTINGS if s.draw_first is None)])


def integers() -> tuple[str, ...]:
    """The settings whose values are whole numbers (a search space may give them a range)."""
    return tuple(s.name for s in SETTINGS if s.kind is int)


def curve_neutral() -> tuple[str, ...]:
    """The settings that do not change what the model learns (:attr:`Setting.changes_learning`)."""
    return tuple(s.name for s in SETTINGS if not s.changes_learning)


def in_group(group: str) -> tuple[str, ...]:
    """The settings of ``group`` (:data:`THREADS`), in table order."""
    return tuple(s.name for s in SETTINGS if s.group == group)


def process_fixed() -> tuple[str, ...]:
    """The settings a trial process fixes when it starts (:attr:`Setting.process_fixed`)."""
    return tuple(s.name for s in SETTINGS if s.process_fixed)


def probed() -> tuple[str, ...]:
    """The settings a one-factor probe changes, in the order they are probed."""
    ranked = sorted((s for s in SETTINGS if s.probe is not None), key=lambda s: s.probe or 0)
    return tuple(s.name for s in ranked)


def limits() -> dict[str, int]:
    """The largest value each whole-number setting takes."""
    return {s.name: s.maximum for s in SETTINGS if s.kind is int}


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a TrialConfig (what ``to_dict`` gives and ``from_dict`` takes)."""
    return {
        "type": "object",
        "properties": {s.name: s.json_schema() for s in SETTINGS},
        "required": [s.name for s in SETTINGS if s.default is None],
        "additionalProperties": False,
    }


__all__ = [
    "AUTOTUNE",
    "SETTINGS",
    "THREADS",
    "Backend",
    "Precision",
    "Setting",
    "Tunable",
    "curve_neutral",
    "draw_order",
    "in_group",
    "integers",
    "json_schema",
    "limits",
    "names",
    "probed",
    "process_fixed",
    "setting",
]
