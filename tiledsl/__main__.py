"""`python -m tiledsl ...`: the `tiledsl` command, where the script is not on PATH."""
import sys

from .cli import main

sys.exit(main())
