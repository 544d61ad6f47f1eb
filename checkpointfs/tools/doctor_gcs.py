"""``checkpointfs doctor gs://bucket/prefix``: whether a Google Cloud Storage bucket gives what direct writes rely on.

The same probes as on S3 (:mod:`checkpointfs.tools.doctor`), by the same names, through the GCS store the managers
use (:class:`~checkpointfs.store.gcs.GcsStore`, its retries and its answer table): a second single-request upload
with ``ifGenerationMatch=0`` refused (``put_if_none_match``); a resumable upload with ``ifGenerationMatch=0``
finalized on a new key and refused at finalize on an existing one (``complete_multipart_if_none_match``); N racing
writers of one key, exactly one winning; read-after-write and list-after-write; the write id round-tripping through
the object's metadata (stored base64-encoded, as Google's Hadoop connector reads it); a cancelled resumable session
leaving no object; delete. GCS cannot list resumable sessions, so "no upload left open" is not probed: an
unfinalized session is invisible and expires on its own.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

from .. import paths
from ..errors import CheckpointFsError, PathNotFoundError
from ..store.base import ObjectPath, ObjectStore, PutMode
from .doctor_report import Check, DoctorReport, guarded
from .store import Location

__all__ = ["run_gcs_doctor"]

_CHUNK = 256 * 1024


def _refused(error: CheckpointFsError) -> bool:
    return error.answer_class is not None and error.answer_class.name == "conflict"


def _said(error: CheckpointFsError) -> str:
    """The store's answer as the error carries it: status and code, else its class in the table and its cause."""
    status = getattr(error, "status", 0)
    if status:
        return f"{status} {getattr(error, 'code', '')}".strip()
    kind = error.answer_class.name if error.answer_class is not None else type(error).__name__
    return f"{kind}: {error.cause}"


class _GcsProbe:
    """The probes, sharing the location's store and a scratch prefix."""

    def __init__(self, location: Location, writers: int) -> None:
        self.location = location
        store: ObjectStore = getattr(location.manager, "store")  # noqa: B009 - a DirectWriteManager's
        while isinstance(getattr(store, "inner", None), ObjectStore):  # the store itself, without the store check
            store = store.inner  # type: ignore[attr-defined]
        self.store = store
        self.base = ObjectPath.parse(location.uri)
        self.prefix = paths.join(location.key, f"checkpointfs-doctor-{uuid.uuid4().hex[:12]}").lstrip("/") + "/"
        self.writers = writers

    def at(self, name: str) -> ObjectPath:
        return self.base.at(self.prefix + name)

    def put(self, name: str, body: bytes, *, create: bool = False, write_id: str = "doctor") -> None:
        self.store.put(self.at(name), body, mode=PutMode.CREATE if create else PutMode.OVERWRITE, write_id=write_id)

    def get(self, name: str) -> bytes:
        answer = self.store.get(self.at(name))
        try:
            return answer.body.read(answer.size + 1)
        finally:
            answer.body.close()

    def exists(self, name: str) -> bool:
        try:
            self.store.head(self.at(name))
            return True
        except PathNotFoundError:
            return False

    def listed(self) -> list[str]:
        return [o.key[len(self.prefix):] for o in self.store.list(self.base.below(self.prefix)).objects]

    # -- the probes ---------------------------------------------------------------------------------------------------
    def reach(self) -> Check:
        next(self.store.list_pages(self.base.below(self.prefix), page_size=1), None)
        return Check("reach", True, f"listed gs://{self.base.bucket}/{self.prefix}")

    def put_if_none_match(self) -> Check:
        self.put("conditional", b"first", create=True)
        try:
            self.put("conditional", b"second", create=True)
        except CheckpointFsError as e:
            if _refused(e):
                kept = self.get("conditional") == b"first"
                return Check("put_if_none_match", kept, f"a second upload with ifGenerationMatch=0 was refused "
                                                        f"({_said(e)})" + ("" if kept else ", but the object changed"))
            raise
        return Check("put_if_none_match", False, "a second upload with ifGenerationMatch=0 replaced the object: the "
                                                 "store ignores the precondition")

    def _resumable(self, name: str, body: bytes) -> str | None:
        """``body`` as a resumable upload with ``ifGenerationMatch=0`` (one chunk, then the final one); None when
        finalized, the refusal otherwise (the session is cancelled then)."""
        where = self.at(name)
        upload = self.store.create_multipart(where, mode=PutMode.CREATE, write_id="doctor")
        try:
            part = self.store.upload_part(where, upload.upload_id, 1, body[:_CHUNK])
            self.store.complete_multipart(where, upload.upload_id, [part], mode=PutMode.CREATE, tail=body[_CHUNK:])
            return None
        except CheckpointFsError as e:
            try:
                self.store.abort_multipart(where, upload.upload_id)
            except CheckpointFsError:
                pass  # gone with its refusal: an unfinalized session is invisible either way
            if _refused(e):
                return _said(e)
            raise

    def complete_if_none_match(self) -> Check:
        name = "complete_multipart_if_none_match"
        fresh = b"f" * _CHUNK + b"fresh"
        failed = self._resumable("resumable", fresh)
        if failed is not None:
            return Check(name, False, f"a resumable upload with ifGenerationMatch=0 on a new key failed ({failed})")
        refused = self._resumable("resumable", b"a" * _CHUNK + b"again")
        if refused is None:
            return Check(name, False, "a resumable upload with ifGenerationMatch=0 replaced an existing object: the "
                                      "store ignores the precondition at finalize")
        kept = self.get("resumable") == fresh
        return Check(name, kept, f"a second resumable upload with ifGenerationMatch=0 was refused at finalize "
                                 f"({refused})" + ("" if kept else ", but the object changed"))

    def racing_writers(self) -> Check:
        barrier = threading.Barrier(self.writers)
        outcomes: list[str] = ["?"] * self.writers

        def write(index: int) -> None:
            barrier.wait()
            try:
                self.put("race", f"writer-{index}".encode(), create=True, write_id=f"writer-{index}")
                outcomes[index] = "won"
            except CheckpointFsError as e:
                outcomes[index] = "lost" if _refused(e) else f"error {_said(e)}"

        threads = [threading.Thread(target=write, args=(i,)) for i in range(self.writers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        winners = [i for i, outcome in enumerate(outcomes) if outcome == "won"]
        errors = [o for o in outcomes if o not in ("won", "lost")]
        content = self.get("race")
        ok = len(winners) == 1 and not errors and content == f"writer-{winners[0]}".encode()
        detail = f"{self.writers} writers, {len(winners)} won, {outcomes.count('lost')} lost"
        if errors:
            detail += f", {len(errors)} failed otherwise ({errors[0]})"
        if len(winners) == 1 and content != f"writer-{winners[0]}".encode():
            detail += ", but the object holds another writer's data"
        return Check("racing_writers", ok, detail + ("" if ok else ": exactly one must win"))

    def read_after_write(self) -> Check:
        body = uuid.uuid4().bytes * 4
        self.put("read-after-write", body)
        got = self.get("read-after-write")
        return Check("read_after_write", got == body, "a GET right after the upload returned the new bytes"
                     if got == body else "a GET right after the upload returned other bytes")

    def list_after_write(self) -> Check:
        self.put("list-after-write", b"x")
        seen = "list-after-write" in self.listed()
        return Check("list_after_write", seen, "a listing right after the upload showed the object" if seen else
                     "a listing right after the upload did not show the object")

    def user_metadata(self) -> Check:
        write_id = uuid.uuid4().hex
        self.put("metadata", b"m", write_id=write_id)
        got = self.store.head(self.at("metadata")).write_id
        ok = got == write_id
        return Check("user_metadata", ok, "the write id came back unchanged from the object's metadata (stored "
                                          "base64-encoded, as Google's Hadoop connector reads it)" if ok
                     else f"the write id came back as {got!r}")

    def abort(self) -> Check:
        where = self.at("aborted")
        upload = self.store.create_multipart(where, mode=PutMode.CREATE, write_id="doctor")
        self.store.upload_part(where, upload.upload_id, 1, b"p" * _CHUNK)
        self.store.abort_multipart(where, upload.upload_id)
        visible = self.exists("aborted")
        listed = "aborted" in self.listed()
        ok = not (visible or listed)
        leftovers = [what for what, bad in (("the object reads", visible), ("the key is listed", listed)) if bad]
        return Check("abort_leaves_nothing", ok, "a cancelled resumable upload left no object nor key (sessions "
                                                 "cannot be listed: an unfinalized one is invisible and expires)"
                     if ok else "after the cancel " + ", ".join(leftovers))

    def delete(self) -> Check:
        self.put("deleted", b"d")
        self.store.delete(self.at("deleted"))
        gone = not self.exists("deleted") and "deleted" not in self.listed()
        self.store.delete(self.at("never-written"))  # absent: must not fail
        return Check("delete", gone, "a deleted object no longer reads nor lists; deleting an absent one succeeds"
                     if gone else "a deleted object still reads or lists")

    def clean_up(self) -> Check:
        keys = self.listed()
        self.store.delete_many(self.base, [self.prefix + k for k in keys])
        left = self.listed()
        return Check("clean_up", not left, f"removed {len(keys)} scratch objects under gs://{self.base.bucket}/"
                                           f"{self.prefix}" + (f"; {len(left)} remain" if left else ""))


def run_gcs_doctor(location: Location, *, writers: int,
                   on_check: Callable[[Check], None] | None = None) -> DoctorReport:
    """Probe the GCS bucket of ``location`` (a ``gs://`` prefix); see the module. Raises the
    :mod:`checkpointfs.errors` error of the failure when the bucket cannot be listed; any other failure of a probe
    is reported as that probe failing."""
    report = DoctorReport(location.uri)
    probe = _GcsProbe(location, writers)
    report.checks.append(probe.reach())
    probes = [probe.put_if_none_match, probe.complete_if_none_match, probe.racing_writers, probe.read_after_write,
              probe.list_after_write, probe.user_metadata, probe.abort, probe.delete]
    names = ["put_if_none_match", "complete_multipart_if_none_match", "racing_writers", "read_after_write",
             "list_after_write", "user_metadata", "abort_leaves_nothing", "delete"]
    try:
        for name, run in zip(names, probes, strict=True):
            report.checks.append(guarded(name, run, location.secrets))
            if on_check is not None:
                on_check(report.checks[-1])
    finally:
        report.checks.append(guarded("clean_up", probe.clean_up, location.secrets))
    return report
