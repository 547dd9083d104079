import sys

from pipeline.common.clock import exit_without_teardown
from pipeline.predict.cli import main

try:
    main()
except SystemExit as done:  # --help, or an error: its exit status (a message is printed, as Python would)
    if isinstance(done.code, str):
        sys.stderr.write(f"{done.code}\n")
    exit_without_teardown(done.code if isinstance(done.code, int) else 0 if done.code is None else 1)
exit_without_teardown(0)
