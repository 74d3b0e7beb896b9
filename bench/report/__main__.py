"""``python -m bench.report``: the command line of bench/report/cli.py."""

import sys

from bench.report.cli import main

sys.exit(main())
