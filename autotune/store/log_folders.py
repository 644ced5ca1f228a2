"""Where a study keeps its per-trial logs and profiles: a folder named by a safe, unique key.

A study name is free text (``--study ../../x``, an absolute path, 5,000 characters, markup), and
two databases in one folder may each hold a study of the same name, so the name alone never
becomes a path. :func:`study_key` makes a folder name of a slug of the name (letters, digits,
``.``, ``_`` and ``-`` only, at most :data:`SLUG_CHARS` characters) and a short hash of the
storage (an SQLite file by its resolved path) and the full name: it stays inside the log root and
differs between storages. :func:`default_log_root` puts it in ``autotune_logs/`` beside an SQLite
database, else in the current folder.

Every trial stores the folder its logs went to (``schema.LOG_DIR_ATTR``), and readers use that
stored path, so trials logged under an earlier layout keep being found.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from autotune.store.storage import database_file

LOG_FOLDER = "autotune_logs"
SLUG_CHARS = 60
HASH_CHARS = 12
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def storage_identity(storage_url: str) -> str:
    """The storage as one canonical string: an SQLite or Journal file by its resolved absolute
    path (so ``./a.db`` and ``/abs/a.db`` agree), any other URL without its password."""
    path = database_file(storage_url)
    if path is not None:
        return storage_url.split("://", 1)[0] + ":///" + str(path.resolve())
    scheme, sep, rest = storage_url.partition("://")
    if sep and "@" in rest:
        credentials, _, host = rest.rpartition("@")
        user = credentials.split(":", 1)[0]
        return f"{scheme}://{user}@{host}"
    return storage_url


def slug(study_name: str) -> str:
    """``study_name`` as a file name: runs of other characters become ``_``, no leading or
    trailing ``.``, ``_`` or ``-`` (so never ``.`` or ``..``), at most :data:`SLUG_CHARS`
    characters; ``study`` when nothing is left."""
    text = _UNSAFE.sub("_", study_name).strip("._-")[:SLUG_CHARS].rstrip("._-")
    return text or "study"


def study_key(storage_url: str, study_name: str) -> str:
    """The folder name of a study's logs: ``<slug>-<hash>``, where the hash (hex) is of the
    storage's identity and the full study name."""
    digest = hashlib.sha256(f"{storage_identity(storage_url)}\0{study_name}".encode()).hexdigest()
    return f"{slug(study_name)}-{digest[:HASH_CHARS]}"


def default_log_root(storage_url: str, study_name: str, cwd: Path | None = None) -> Path:
    """``autotune_logs/<study key>`` beside an SQLite database or Journal file, else in ``cwd``
    (default: the current folder); absolute."""
    database = database_file(storage_url)
    parent = database.resolve().parent if database else (cwd or Path.cwd()).resolve()
    return parent / LOG_FOLDER / study_key(storage_url, study_name)
