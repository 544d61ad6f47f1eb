"""What the S3 manager's tests share: a manager on the embedded S3 with its store check already passed, and a put."""

from __future__ import annotations

from checkpointfs import DirectWriteManager, RetryPolicy
from checkpointfs.testing import EmbeddedS3
from harness.servers.store_check import pass_store_check

PART = 4096
FAST = RetryPolicy(max_attempts=5, initial_backoff_s=0.01, max_backoff_s=0.05, max_elapsed_s=10)


def manager(s3: EmbeddedS3, *, checked: bool = True, **options: object) -> DirectWriteManager:
    """A manager on ``s3`` (parts of :data:`PART` bytes, :data:`FAST` retries); with ``checked``, its store check for
    ``ck/`` already passed (PutObject and multipart) and those requests and metrics forgotten, so that a test counts
    (or faults) its own requests alone."""
    settings: dict[str, object] = {"part_size": PART, "retry": FAST, **s3.manager_options()}
    settings.update(options)
    m = DirectWriteManager(**settings)  # type: ignore[arg-type]
    if checked:
        pass_store_check(m, s3.uri("ck/x"), multipart=True)
        s3.requests.clear()
        m.requests.reset()
        m.metrics.reset()
    return m


def put(m: DirectWriteManager, path: str, data: bytes, overwrite: bool = False) -> None:
    """Write ``data`` to ``path`` and publish it."""
    with m.create_atomic(path, overwrite_if_possible=overwrite) as out:
        out.write(data)
