"""What ``checkpointfs doctor`` reports, whatever the store: each probe's :class:`Check`, the :class:`DoctorReport`
and its verdict, :func:`guarded`, which turns a probe that raised into a failed check, and :func:`racing_writers`,
the race probe's judgement (checkpointfs.tools.doctor)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import CheckpointFsError
from ..redact import redact

__all__ = ["Check", "DoctorReport", "guarded", "racing_writers"]


@dataclass
class Check:
    """One probe's finding."""

    name: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        """``{"name", "ok", "detail"}``."""
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass
class DoctorReport:
    """Every probe's finding and the verdict."""

    store: str
    checks: list[Check] = field(default_factory=list)
    settings: dict[str, Any] | None = None
    """The S3A settings taken from ``--spark-conf`` (no secrets), None without one."""

    @property
    def safe(self) -> bool:
        """True when every probe passed."""
        return bool(self.checks) and all(c.ok for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        """``{"safe": bool, "store": str, "checks": [...]}``, and ``settings`` with ``--spark-conf``."""
        result: dict[str, Any] = {"safe": self.safe, "store": self.store, "checks": [c.to_json() for c in self.checks]}
        if self.settings is not None:
            result["settings"] = self.settings
        return result


def guarded(name: str, run: Callable[[], Check], secrets: tuple[str, ...] = ()) -> Check:
    """The check ``run`` gives, or, when it raises, a failed check named ``name`` saying why (``secrets``
    redacted): a store's error by its cause, any other by its type and message."""
    try:
        return run()
    except CheckpointFsError as e:
        return Check(name, False, redact(f"the probe failed: {e.cause}", secrets))
    except Exception as e:  # noqa: BLE001 - a probe that fails with an error is a failed probe
        return Check(name, False, redact(f"the probe failed: {type(e).__name__}: {e}", secrets))


def racing_writers(writers: int, write: Callable[[int], str], read: Callable[[], bytes]) -> Check:
    """The ``racing_writers`` probe: ``writers`` threads released at once each make one put-if-absent write of the
    same name (``write(index)``: ``"won"``, ``"lost"`` when refused as a conflict, or ``"error <why>"``) of the bytes
    ``writer-<index>``; exactly one must win, and the name (``read()``) must hold its bytes."""
    barrier = threading.Barrier(writers)
    outcomes = ["?"] * writers

    def run(index: int) -> None:
        barrier.wait()
        outcomes[index] = write(index)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [i for i, outcome in enumerate(outcomes) if outcome == "won"]
    errors = [o for o in outcomes if o not in ("won", "lost")]
    content = read()
    ok = len(winners) == 1 and not errors and content == f"writer-{winners[0]}".encode()
    detail = f"{writers} writers, {len(winners)} won, {outcomes.count('lost')} lost"
    if errors:
        detail += f", {len(errors)} failed otherwise ({errors[0]})"
    if len(winners) == 1 and content != f"writer-{winners[0]}".encode():
        detail += ", but the object holds another writer's data"
    return Check("racing_writers", ok, detail + ("" if ok else ": exactly one must win"))
