"""Small statistical tests the scores and the reports share, on plain counts (no NumPy, no PyTorch)."""

from __future__ import annotations

import math


def mcnemar_exact_p(only_first_right: int, only_second_right: int) -> float | None:
    """Two-sided exact binomial p-value of McNemar's test; None without discordant pairs."""
    discordant = only_first_right + only_second_right
    if discordant == 0:
        return None
    tail = sum(math.comb(discordant, k) for k in range(min(only_first_right, only_second_right) + 1))
    # Integer arithmetic: 0.5 ** n underflows for the thousands of discordant texts of a large test set.
    return min(1.0, 2 * tail / 2**discordant)
