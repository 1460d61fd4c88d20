"""`python -m harness probe --version 1.27`: what `make probe` runs (see harness/doors/cli.py)."""

import sys

from harness.doors.cli import main

sys.exit(main(sys.argv[1:]))
