"""A package's public names, loaded from their modules on first use (PEP 562), so that importing one module of a
package does not import its siblings: a report reads scoring's thresholds without loading PyTorch."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, modules: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]], list]:
    """`modules`: module name -> its public names, space-separated. Returns the package's __getattr__, __dir__ and
    __all__."""
    owner = {name: f"{package}.{module}" for module, names in modules.items() for name in names.split()}

    def __getattr__(name: str) -> Any:
        if name not in owner:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(owner[name]), name)

    def __dir__() -> list[str]:
        return sorted(owner)

    return __getattr__, __dir__, sorted(owner)
