import sys

from pipeline.export.cli import main

sys.exit(main())
