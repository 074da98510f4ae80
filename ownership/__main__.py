"""`python -m ownership ...`: the `ownership` command, for when the console script is not on PATH."""

from .cli import main

if __name__ == "__main__":
    main()
