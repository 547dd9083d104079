"""The processes of one `accelerate launch`: the main process decides (the next trial, pruning), the others follow.
The first trial's Accelerator opens the process group and every later trial reuses it (a group destroyed and opened
again on the same port is refused by the other processes); the search closes it at its end. No group exists before
the first trial, so decisions between trials (the next trial's parameters, whether to go on) pass through a file in
the study folder; during a trial, the pruning decision is broadcast."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.common.io import atomic_write_text

# How often the other processes look for the main process's next decision.
POLL_SECONDS = 0.2


@dataclass
class Group:
    folder: Path
    rank: int = field(default_factory=lambda: int(os.environ.get("RANK", "0")))
    world: int = field(default_factory=lambda: int(os.environ.get("WORLD_SIZE", "1")))
    sequence: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def share(self, payload: Any) -> Any:
        """The main process's `payload`, on every process (a file per decision, numbered in order)."""
        if self.world == 1:
            return payload
        self.sequence += 1
        path = self.folder / ".group" / f"{os.environ.get('MASTER_PORT', '0')}-{self.sequence}.json"
        if self.is_main:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps(payload))
            return payload
        while not path.exists():
            time.sleep(POLL_SECONDS)
        return json.loads(path.read_text(encoding="utf-8"))

    def agree(self, decision: bool) -> bool:
        """The main process's decision, during a trial (its process group is up)."""
        if self.world == 1:
            return decision
        from accelerate.utils import broadcast_object_list  # loaded with accelerate's state, as the run uses it

        return bool(broadcast_object_list([decision], from_process=0)[0])

    def before_run(self) -> None:
        """Several processes: a fresh Accelerator state for the next trial, on the process group already up."""
        if self.world == 1:
            return
        from accelerate.state import AcceleratorState, GradientState

        AcceleratorState._reset_state(True)
        GradientState._reset_state()

    def close(self) -> None:
        """At the search's end: the process group the trials shared."""
        import torch.distributed

        if self.world > 1 and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
