"""The README's "Tune your own model" section as test material: its ``my_experiment.py`` and its
training code, so tests load and run what the README shows rather than a copy of it."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## Tune your own model"


def section(title: str = SECTION, readme: Path = README) -> str:
    """The text of the README section headed ``title``, up to the next second-level heading."""
    text = readme.read_text(encoding="utf-8")
    start = text.index(f"\n{title}\n")
    end = text.find("\n## ", start + len(title) + 2)
    return text[start : end if end >= 0 else len(text)]


def python_blocks(text: str) -> list[str]:
    """The ```python fenced blocks of ``text``, in order."""
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def my_experiment_source() -> str:
    """The section's first Python block: the complete ``my_experiment.py``."""
    return python_blocks(section())[0]


def training_source() -> str:
    """The section's second Python block: the training code that applies a recipe."""
    return python_blocks(section())[1]


def write_my_experiment(folder: Path) -> Path:
    """Writes the README's ``my_experiment.py`` into ``folder`` and returns its path."""
    path = folder / "my_experiment.py"
    path.write_text(my_experiment_source(), encoding="utf-8")
    return path
