"""`python -m convlog ...`: the `convlog` command, for when its script is not on PATH
(a venv not activated, a program starting `convlog serve` with its own interpreter)."""

import sys

from convlog.cli.main import main

sys.exit(main())
