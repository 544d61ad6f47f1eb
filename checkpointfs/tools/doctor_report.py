"""What ``checkpointfs doctor`` reports, whatever the store: each probe's :class:`Check`, the :class:`DoctorReport`
and its verdict, and :func:`guarded`, which turns a probe that raised into a failed check (checkpointfs.tools.doctor
for S3, checkpointfs.tools.doctor_gcs for GCS)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..redact import redact

__all__ = ["Check", "DoctorReport", "answer_code", "answer_status", "guarded"]


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


def answer_status(error: BaseException) -> int | None:
    """The HTTP status a boto3 client's error carries (None: none)."""
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return int(status) if status is not None else None
    return None


def answer_code(error: BaseException) -> str:
    """The S3 error code a boto3 client's error carries (``""``: none)."""
    response = getattr(error, "response", None)
    return str(response.get("Error", {}).get("Code", "")) if isinstance(response, dict) else ""


def guarded(name: str, run: Callable[[], Check], secrets: tuple[str, ...] = ()) -> Check:
    """The check ``run`` gives, or, when it raises, a failed check named ``name`` saying why (``secrets``
    redacted)."""
    try:
        return run()
    except Exception as e:  # noqa: BLE001 - a probe that fails with an error is a failed probe
        detail = f"{answer_status(e) or ''} {answer_code(e)}".strip() or type(e).__name__
        return Check(name, False, redact(f"the probe failed: {detail}: {e}", secrets))
