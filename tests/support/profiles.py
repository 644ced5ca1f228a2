"""The real TensorBoard profiles in tests/fixtures/profiles, unpacked where the profiler writes.

``compute_bound`` (a wide MLP, about 2% of each step waiting for input) and ``slow_input`` (a
pipeline sleeping 2 ms per example, about 97% waiting for input), both captured by autotune's
runner from tiny Keras models on a CPU.
"""

from __future__ import annotations

import gzip
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "profiles"
SESSION = "2026_01_01_00_00_00"


def unpack_profile(name: str, log_dir: Path, session: str = SESSION) -> Path:
    """Gunzips fixture ``name`` into ``log_dir`` where the TensorBoard profiler writes it."""
    target = log_dir / "plugins" / "profile" / session / "host.xplane.pb"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(gzip.decompress((FIXTURES / f"{name}.xplane.pb.gz").read_bytes()))
    return target
