"""Where a worker's trials run on its host: a core set or one GPU, never shared silently.

Two workers on one CPU would slow each other's trials, so every throughput, and the early stop
measured against the baseline, would be wrong. A worker therefore claims what its trials run on,
for as long as it runs trials: each core of its core set (all the cores this process may use,
unless ``--cpus`` narrows it), or its GPU (``--device``). A claim is an exclusive ``flock`` on
``<lock folder>/cpu-<n>.lock`` or ``gpu-<id>.lock`` (:func:`lock_folder`); the kernel drops it
with the process. So by default one CPU worker runs per host, and several only with disjoint
core sets; a worker asking for a core or GPU another holds is refused, naming the holder.
:meth:`Placement.apply` pins this process, and so every trial process it starts, to the core set
(CPU affinity) and the GPU (``CUDA_VISIBLE_DEVICES``); each trial records both
(:func:`autotune.study.recovery.this_worker`). ``shared=True`` (``--share-cores``) claims nothing,
and is recorded too. No TensorFlow here.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import re
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from autotune.exceptions import ConfigError, StudyError

#: Environment variable naming the folder of the host's claims (tests give each "host" one).
LOCK_FOLDER_ENV = "AUTOTUNE_HOST_LOCKS"
_RANGE = re.compile(r"^(\d{1,9})(?:-(\d{1,9}))?$")
#: The most GPU ids a device list may name.
MAX_DEVICES = 64
#: The most cores a core list may name, whatever the machine (checked before a range is expanded).
MAX_CPUS = 4096


def lock_folder() -> Path:
    """The folder of this host's claims: ``$AUTOTUNE_HOST_LOCKS``, else ``autotune-host-locks``
    in the system's temporary folder (shared by every user, sticky like ``/tmp``)."""
    configured = os.environ.get(LOCK_FOLDER_ENV)
    folder = Path(configured) if configured else Path(tempfile.gettempdir()) / "autotune-host-locks"
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        if not configured:
            os.chmod(folder, 0o1777)
    return folder


def usable_cpus() -> tuple[int, ...]:
    """The cores this process may run on (its CPU affinity)."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity on this system
        return tuple(range(os.cpu_count() or 1))


def parse_cpus(text: str, argument: str = "cpus") -> tuple[int, ...]:
    """A core set written as ``0-3,6``: sorted, each core once; ConfigError naming
    ``argument`` for anything else or a core this machine does not have. (A process pinned to
    fewer cores may still name the others: ``autotune run --workers`` pins itself to the first
    core set and starts its workers on the rest.)"""
    count = os.cpu_count() or 1
    limit = min(count, MAX_CPUS)
    if len(text) > 16 * MAX_CPUS:
        raise ConfigError(
            f"must list at most {MAX_CPUS} cores. Received: {len(text):,} characters",
            argument=argument,
        )
    cores: set[int] = set()
    for part in text.split(","):
        match = _RANGE.match(part.strip())
        if match is None:
            raise ConfigError(
                f"must list cores as numbers and ranges, such as '0-3,6'. Received: {text!r}",
                argument=argument,
            )
        low, high = int(match[1]), int(match[2] or match[1])
        if high < low:
            raise ConfigError(f"has a range that ends below its start: {part!r}", argument=argument)
        if high >= limit:  # before the range is expanded: 0-99999999999 must not fill memory
            first = max(low, limit)
            outside = str(list(range(first, high + 1))) if high - first < 8 else f"[{first}-{high}]"
            raise ConfigError(
                f"names cores {outside} that this machine does not have (it has "
                f"0-{limit - 1}). Received: {text!r}",
                argument=argument,
            )
        cores.update(range(low, high + 1))
    return tuple(sorted(cores))


def format_cpus(cores: tuple[int, ...] | list[int]) -> str:
    """``(0, 1, 2, 5)`` as ``0-2,5``."""
    parts: list[str] = []
    ordered = sorted(cores)
    start = previous = ordered[0] if ordered else 0
    for core in [*ordered[1:], None]:
        if core is not None and core == previous + 1:
            previous = core
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if core is not None:
            start = previous = core
    return ",".join(parts) if ordered else ""


def parse_devices(text: str, argument: str = "devices") -> tuple[str, ...]:
    """GPU ids for ``CUDA_VISIBLE_DEVICES`` (indexes or UUIDs), comma-separated, each once."""
    if len(text) > 64 * 64 or text.count(",") >= MAX_DEVICES:
        raise ConfigError(
            f"must list at most {MAX_DEVICES} GPU ids. Received: {len(text):,} characters",
            argument=argument,
        )
    devices = tuple(part.strip() for part in text.split(","))
    if not all(re.fullmatch(r"[A-Za-z0-9-]+", d) for d in devices) or len(set(devices)) != len(
        devices
    ):
        raise ConfigError(
            f"must list distinct GPU ids (indexes such as '0,1' or UUIDs). Received: {text!r}",
            argument=argument,
        )
    return devices


@dataclass(frozen=True)
class Placement:
    """What one worker's trials run on: ``cpus`` (None: every core this process may use) or
    one GPU ``device``; ``shared`` claims nothing (the user accepts sharing)."""

    cpus: tuple[int, ...] | None = None
    device: str | None = None
    shared: bool = False

    def resources(self) -> list[str]:
        """The host's claims this placement takes: ``gpu-<id>`` or ``cpu-<n>`` each."""
        if self.shared:
            return []
        if self.device is not None:
            return [f"gpu-{self.device}"]
        return [f"cpu-{core}" for core in (self.cpus or usable_cpus())]

    def describe(self) -> str:
        where = f"GPU {self.device}" if self.device is not None else None
        cores = f"cores {format_cpus(self.cpus or usable_cpus())}"
        return f"{where or cores}{' (shared)' if self.shared else ''}"

    def apply(self) -> None:
        """Pins this process, and every trial process it starts, to the core set and GPU."""
        if self.cpus is not None and hasattr(os, "sched_setaffinity"):
            try:
                os.sched_setaffinity(0, self.cpus)
            except OSError as error:  # outside this process's cgroup (cpuset)
                raise ConfigError(
                    f"cannot pin this process to cores {format_cpus(self.cpus)}: "
                    f"{error.strerror or error}",
                    argument="cpus",
                ) from error
        if self.device is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = self.device


def split_cores(workers: int, cpus: tuple[int, ...] | None = None) -> list[tuple[int, ...]]:
    """``workers`` disjoint core sets of equal size from ``cpus`` (default: the usable ones),
    the cores left over unused; ConfigError when there are fewer cores than workers."""
    cores = cpus or usable_cpus()
    if workers > len(cores):
        raise ConfigError(
            f"{workers} CPU workers need {workers} disjoint core sets, and this host offers "
            f"{len(cores)} core{'s' if len(cores) != 1 else ''} ({format_cpus(cores)}): a worker "
            "that shares cores slows the others' trials. Use at most "
            f"{len(cores)} workers, or --share-cores to share them knowingly",
            argument="workers",
        )
    size = len(cores) // workers
    return [tuple(cores[i * size : (i + 1) * size]) for i in range(workers)]


def local_placements(
    workers: int,
    devices: tuple[str, ...] | None = None,
    cpus: tuple[int, ...] | None = None,
    shared: bool = False,
) -> list[Placement]:
    """One placement per local worker: a GPU each with ``devices`` (as many workers as GPUs),
    else disjoint core sets (all sharing ``cpus`` when ``shared``)."""
    if devices:
        if workers not in (1, len(devices)):
            raise ConfigError(
                f"{workers} workers and {len(devices)} devices {list(devices)}: --devices runs "
                "one worker per GPU; leave out --workers or give as many",
                mentions=("workers", "devices"),
            )
        return [Placement(device=device) for device in devices]
    if shared:
        return [Placement(cpus=cpus, shared=True) for _ in range(workers)]
    if workers == 1:
        return [Placement(cpus=cpus)]
    return [Placement(cpus=cores) for cores in split_cores(workers, cpus)]


class HostClaim:
    """Holds a placement's claims on this host while its block runs trials (re-entrant)."""

    def __init__(self, placement: Placement, study_name: str) -> None:
        self.placement = placement
        self.study_name = study_name
        self._descriptors: list[int] = []
        self._depth = 0

    def __enter__(self) -> HostClaim:
        if self._depth == 0:
            self._acquire()
        self._depth += 1
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._release()

    def _acquire(self) -> None:
        folder = lock_folder()
        holder = json.dumps(
            {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "study": self.study_name,
                "since": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            }
        ).encode()
        try:
            for resource in self.placement.resources():
                path = folder / f"{resource}.lock"
                descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(descriptor)
                    raise StudyError(self._refusal(resource, path)) from None
                self._descriptors.append(descriptor)
                os.ftruncate(descriptor, 0)
                os.pwrite(descriptor, holder, 0)
        except BaseException:
            self._release()
            raise

    def _refusal(self, resource: str, path: Path) -> str:
        try:
            held = json.loads(path.read_text(encoding="utf-8"))
            who = f"pid {held['pid']} (study {held['study']!r}, since {held['since']})"
        except (OSError, ValueError, KeyError, TypeError):
            who = "another process"
        what = resource.replace("-", " ", 1).replace("cpu", "core").replace("gpu", "GPU")
        advice = (
            "give each worker its own GPU (--device)"
            if resource.startswith("gpu")
            else "give each worker on this host its own cores (--cpus 0-3, --cpus 4-7, ...; "
            "'autotune run --workers K' splits them), or --share-cores to share them knowingly"
        )
        return (
            f"{what} is already running trials for {who}: two workers on one {what.split()[0]} "
            f"would slow each other's trials and every throughput would be wrong. Wait for it, "
            f"or {advice}"
        )

    def _release(self) -> None:
        for descriptor in self._descriptors:
            os.close(descriptor)
        self._descriptors = []


__all__ = [
    "LOCK_FOLDER_ENV",
    "HostClaim",
    "Placement",
    "format_cpus",
    "local_placements",
    "lock_folder",
    "parse_cpus",
    "parse_devices",
    "split_cores",
    "usable_cpus",
]
