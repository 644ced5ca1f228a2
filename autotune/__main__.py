"""``python -m autotune``: the ``autotune`` command (how ``autotune run --workers`` starts its
workers with the same interpreter)."""

from autotune.cli import main

if __name__ == "__main__":
    main()
