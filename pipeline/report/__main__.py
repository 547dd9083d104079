"""`python -m pipeline.report`: run the command line and exit with its status."""

import sys

from pipeline.report.cli import main

sys.exit(main())
