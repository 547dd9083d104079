import sys

from pipeline.tune.cli import main

sys.exit(main())
