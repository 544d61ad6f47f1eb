"""Contenders measured side by side take turns: each round starts with the next one, so that no contender always
runs first (on a cold cache) or last (after the others warmed the machine)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def rotated(items: Sequence[T], round_index: int) -> list[T]:
    """``items`` in the order of round ``round_index``: rotated left by the round's number."""
    if not items:
        return []
    shift = round_index % len(items)
    return [*items[shift:], *items[:shift]]
