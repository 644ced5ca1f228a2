"""``python -m autotune.cli``: the ``autotune`` command."""

from autotune.cli import main

if __name__ == "__main__":
    main()
