"""Fine-tune BERT text classifiers: data -> tokenization -> training -> evaluation."""

import time

__version__ = "0.1.0"
# When the package was first imported: the start of the process where the kernel does not record it (common/clock.py).
IMPORTED_AT = time.perf_counter()
