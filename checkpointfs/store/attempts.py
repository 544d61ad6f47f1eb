"""One request's attempts, whatever the store: :func:`run_attempts` sends a request again while the protocol table's
class of its failure is retried, and raises the last failure as the checkpointfs error it stands for, carrying
whether any attempt may have been applied (:class:`Attempts`). Each store gives its own translation of its client's
exceptions (S3's botocore, GCS's requests and google-auth, Azure's SDK)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from ..errors import AccessDeniedError, CheckpointFsError
from ..metrics import record
from .base import Abandoned
from .retry import RetryPolicy, sleep_until

__all__ = ["Attempts", "Failure", "run_attempts"]

T = TypeVar("T")

Failure = Callable[[Exception], "tuple[CheckpointFsError, bool] | None"]
"""A store's translation of one attempt's exception: the checkpointfs error it stands for and whether the store asked
to slow down (the metric ``throttled``); None for an exception that is not the store client's (raised as it is)."""


class Attempts:
    """What the attempts of one request showed: whether any may have been applied."""

    maybe_applied = False


def _hides_credentials(error: CheckpointFsError) -> bool:
    """Auth failures are raised without the client's exception: it may hold the request and its credentials."""
    return isinstance(error, AccessDeniedError) or (
        error.answer_class is not None and error.answer_class.error == "AccessDeniedError")


def run_attempts(policy: RetryPolicy, what: str, send: Callable[[], T], failure: Failure, *,
                 abandon: threading.Event | None = None, attempts: Attempts | None = None) -> T:
    """``send`` with retries per ``policy`` while the answer's class is retried (``what`` names the request in
    logs); the last failure raised as ``failure`` translates it, carrying its class and whether any attempt
    (``attempts``, shared by the caller's other requests of one write) may have been applied. Once ``abandon`` is
    set, :class:`~checkpointfs.store.base.Abandoned` is raised instead of another attempt, and the backoff is cut
    short. Counts the metrics ``retries`` and ``throttled``."""
    seen = attempts or Attempts()
    retrying = policy.retrying(what=what, sleep=sleep_until(abandon) if abandon else time.sleep)
    for attempt in retrying:
        with attempt:
            if abandon is not None and abandon.is_set():
                raise Abandoned(what)
            if attempt.retry_state.attempt_number > 1:
                record("retries")
            try:
                return send()
            except CheckpointFsError as e:  # raised by the store's own code within the attempt
                e.maybe_applied = seen.maybe_applied or e.maybe_applied
                raise
            except Exception as e:
                translated = failure(e)
                if translated is None:
                    raise
                error, throttled = translated
                if throttled:
                    record("throttled")
                seen.maybe_applied = seen.maybe_applied or bool(
                    error.answer_class and error.answer_class.may_have_applied)
                error.maybe_applied = seen.maybe_applied
                raise error from (None if _hides_credentials(error) else e)
    raise AssertionError("unreachable: tenacity either returns or raises")
