"""Waiting for a condition: the one polling helper of the library and the harness, built on tenacity."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_result

from .clock import Monotonic

T = TypeVar("T")


def poll_until(check: Callable[[], T | None], deadline: float, *, clock: Monotonic = time.monotonic,
               sleep: Callable[[float], None] = time.sleep, first_delay_s: float = 0.02,
               max_delay_s: float = 0.5) -> T | None:
    """Call ``check`` until it returns something other than None or ``clock()`` reaches ``deadline``; return the
    last result (None when the deadline passed first). ``check`` runs at least once; the pauses between calls
    double from ``first_delay_s`` up to ``max_delay_s`` and never reach past the deadline. An exception raised by
    ``check`` propagates at once."""

    def wait(state: RetryCallState) -> float:
        grown: float = first_delay_s * 2.0 ** (state.attempt_number - 1)
        return max(0.0, min(grown, max_delay_s, deadline - clock()))

    def last_result(state: RetryCallState) -> T | None:
        return state.outcome.result() if state.outcome is not None else None

    retrying = Retrying(sleep=sleep, stop=lambda _: clock() >= deadline, wait=wait,
                        retry=retry_if_result(lambda result: result is None), retry_error_callback=last_result)
    return retrying(check)


def poll(check: Callable[[], T | None], timeout_s: float, *, clock: Monotonic = time.monotonic,
         sleep: Callable[[float], None] = time.sleep, first_delay_s: float = 0.02,
         max_delay_s: float = 0.5) -> T | None:
    """:func:`poll_until` for ``timeout_s`` seconds from now."""
    return poll_until(check, clock() + timeout_s, clock=clock, sleep=sleep, first_delay_s=first_delay_s,
                      max_delay_s=max_delay_s)
