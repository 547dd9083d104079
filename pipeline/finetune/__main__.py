from pipeline.common import clock
from pipeline.finetune.cli import main

clock.exit_without_teardown(main())
