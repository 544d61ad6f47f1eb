"""How often and how long a store retries one request; which failures it retries is the protocol table's call
(:func:`is_retried`)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
)

from ..errors import CheckpointFsError

log = logging.getLogger(__name__)

__all__ = ["RetryPolicy", "is_retried", "sleep_until"]


def is_retried(error: BaseException) -> bool:
    """Whether ``error`` is a store's answer whose class in the protocol table is retried."""
    return isinstance(error, CheckpointFsError) and error.answer_class is not None and error.answer_class.retried


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry one request: at most ``max_attempts`` attempts and ``max_elapsed_s``
    seconds, sleeping a random time up to ``initial_backoff_s * 2**n`` (capped at ``max_backoff_s``) between them."""

    max_attempts: int = 10
    initial_backoff_s: float = 0.05
    max_backoff_s: float = 5.0
    max_elapsed_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be at least 1, got {self.max_attempts}")
        if self.initial_backoff_s < 0 or self.max_backoff_s < 0 or self.max_elapsed_s < 0:
            raise ValueError("RetryPolicy durations must not be negative")

    def retrying(self, retry_on: Callable[[BaseException], bool] = is_retried, what: str = "",
                 sleep: Callable[[float], None] = time.sleep) -> Retrying:
        """A tenacity ``Retrying`` for this policy that retries the exceptions ``retry_on`` accepts and re-raises
        the last one when the budget is spent; ``sleep`` waits out the backoff."""

        def before_sleep(state: RetryCallState) -> None:
            outcome = state.outcome
            error = outcome.exception() if outcome is not None else None
            # DEBUG: retries are counted (the metric ``retries``), not logged per request at INFO
            log.debug("%s: attempt %d failed (%s); retrying", what, state.attempt_number, type(error).__name__)

        return Retrying(
            stop=stop_after_attempt(self.max_attempts) | stop_after_delay(self.max_elapsed_s),
            wait=wait_random_exponential(multiplier=self.initial_backoff_s, max=self.max_backoff_s),
            retry=retry_if_exception(retry_on),
            reraise=True,
            before_sleep=before_sleep,
            sleep=sleep,
        )


def sleep_until(event: threading.Event) -> Callable[[float], None]:
    """A backoff sleep that ends early when ``event`` is set."""

    def sleep(seconds: float) -> None:
        event.wait(seconds)

    return sleep
