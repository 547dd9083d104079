"""`python -m pipeline.report`: run the command line and exit with its status. The per-run tools load PyTorch, so
they are imported only when asked for: a report starts in about a second."""

import sys

from pipeline.report.cli import wants_tools

if wants_tools(sys.argv[1:]):
    from pipeline.report.tools import main
else:
    from pipeline.report.cli import main

sys.exit(main())
