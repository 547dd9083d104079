import sys

from pipeline.audit.cli import main

sys.exit(main())
