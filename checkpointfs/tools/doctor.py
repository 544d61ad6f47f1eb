"""``checkpointfs doctor``: whether an object store gives what direct writes rely on, judged on the requests
DirectWriteManager sends there: the probes go through the store the managers use
(:class:`~checkpointfs.store.base.ObjectStore`, with its retries and its answer table), on S3, GCS and Azure alike.

A second put-if-absent write must be refused (S3: PutObject with ``If-None-Match: *``, 412; GCS: a single-request
upload with ``ifGenerationMatch=0``, 412; Azure: Put Blob with ``If-None-Match: *``, 409) and so must a second
put-if-absent multipart completion (S3: CompleteMultipartUpload; GCS: a resumable upload's finalizing chunk; Azure:
Put Block List); N racing writers of one name must leave exactly one winner; a read and a listing right after a
write must see it; the write id must round-trip through the object's metadata (GCS: stored base64-encoded, as
Google's Hadoop connector reads it); a cancelled upload must leave no object, no open upload the store can list, and
a name that can be created again; delete must work, and deleting an absent name must succeed. Where a store keeps
no user metadata (an S3 directory bucket may not), the checksum sent with a write and its size must come back
instead: a lost answer is settled by them. On S3 the bucket's type is named (a directory bucket, S3 Express One Zone,
or a general purpose one) and the listing rules checkpointfs relies on there are checked (``bucket_type``). Each
kind of request a writer sends is tried once and a refused one named with what to grant on which bucket
(``permissions``; protocol.json ``permissions``, docs/operations.md): the probe fails when one a checkpoint cannot
be written without is refused, and passes, naming the cost, when only the orphan-upload clean-up is.
Neither GCS's resumable sessions nor Azure's uncommitted blocks can be listed: an unfinished one is invisible and
expires. Everything is written under a scratch prefix (``<prefix>/checkpointfs-doctor-<id>/``) and removed. The
store is safe when every probe passes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from .. import paths
from ..errors import AccessDeniedError, CheckpointFsError, InvalidPathError, PathNotFoundError
from ..protocol import permissions
from ..store.base import ObjectPath, ObjectStore, PutMode
from .doctor_report import Check, DoctorReport, guarded, racing_writers
from .store import Location, store_error

__all__ = ["DEFAULT_WRITERS", "Check", "DoctorReport", "run_doctor", "run_store_doctor"]

DEFAULT_WRITERS = 8
"""Writers of the race probe."""

_PART = 256 * 1024
"""The first part of a probe's multipart upload: a multiple of GCS's chunk size (its non-final chunks must be)."""
_CONDITION = {"s3": "If-None-Match: *", "gcs": "ifGenerationMatch=0", "azure": "If-None-Match: *"}
"""How each store family's put-if-absent is sent, as the findings name it."""


def _refused(error: CheckpointFsError) -> bool:
    return error.answer_class is not None and error.answer_class.name == "conflict"


def _said(error: CheckpointFsError) -> str:
    """The store's answer the error stands for: its status and code (``412 PreconditionFailed``), else the failure
    without an answer and its cause."""
    answer = error.answer
    if answer is not None and answer.status:
        return f"{answer.status} {answer.code}".strip()
    kind = answer.transport if answer is not None and answer.transport else type(error).__name__
    return f"{kind}: {error.cause}"


class _StoreProbe:
    """The probes, sharing one store and the scratch prefix."""

    def __init__(self, store: ObjectStore, location: ObjectPath, writers: int) -> None:
        self.store = store
        self.writers = writers
        self.prefix = paths.join(location.key, f"checkpointfs-doctor-{uuid.uuid4().hex[:12]}").lstrip("/") + "/"
        self.root = location.at(self.prefix)
        self.condition = _CONDITION.get(store.capabilities.family, "put-if-absent")

    def at(self, name: str) -> ObjectPath:
        return self.root.at(self.prefix + name)

    def put(self, name: str, body: bytes, *, create: bool = False, write_id: str = "") -> None:
        self.store.put(self.at(name), body, mode=PutMode.CREATE if create else PutMode.OVERWRITE,
                       write_id=write_id or uuid.uuid4().hex)

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
        return [o.key[len(self.prefix):] for o in self.store.list(self.root).objects]

    def multipart(self, name: str, body: bytes) -> str | None:
        """``body`` as a put-if-absent multipart upload: one part, or where the store sends the last part with the
        completion (GCS), its first :data:`_PART` bytes as a part and the rest as the completion's tail; None when
        published, the refusal otherwise (the upload is cancelled then)."""
        where = self.at(name)
        upload = self.store.create_multipart(where, mode=PutMode.CREATE, write_id=uuid.uuid4().hex)
        try:
            tail = body[_PART:] if self.store.capabilities.tail_in_completion else b""
            parts = [self.store.upload_part(where, upload.upload_id, 1, body[:len(body) - len(tail)])]
            self.store.complete_multipart(where, upload.upload_id, parts, mode=PutMode.CREATE, tail=tail)
            return None
        except CheckpointFsError as e:
            try:
                self.store.abort_multipart(where, upload.upload_id)
            except CheckpointFsError:
                pass  # gone with its refusal (a finalized GCS session): nothing of it is visible either way
            if _refused(e):
                return _said(e)
            raise

    # -- the probes -----------------------------------------------------------------------------------------------
    def reach(self) -> Check:
        next(self.store.list_pages(self.root, page_size=1), None)
        return Check("reach", True, f"listed {self.root.uri}")

    def permissions(self) -> Check:
        """Each kind of request a writer sends (protocol.json ``permissions``), once, on scratch names: a refused one
        (:class:`AccessDeniedError`) is named with what to grant; any other failure fails the probe as it is."""
        family, bucket = self.store.capabilities.family, self.root.bucket
        refused: list[str] = []

        def tried(request: str, send: Callable[[], object]) -> None:
            try:
                send()
            except PathNotFoundError:
                pass  # a missing key answered as missing: what a head of one must give
            except AccessDeniedError:
                refused.append(request)

        upload = self.at("permissions-upload")
        tried("put", lambda: self.put("permissions", b"p", create=True))
        tried("head", lambda: self.store.head(self.at("permissions")))
        tried("head_missing", lambda: self.store.head(self.at("permissions-never-written")))
        tried("get", lambda: self.get("permissions"))
        tried("list", self.listed)
        tried("delete", lambda: self.store.delete(self.at("permissions")))
        if permissions.actions(family, "list_uploads"):
            try:
                started = self.store.create_multipart(upload, mode=PutMode.CREATE, write_id=uuid.uuid4().hex)
            except AccessDeniedError:  # starting an upload is a put: named once, with the put above
                refused.extend([] if "put" in refused else ["put"])
            else:
                tried("list_uploads", lambda: self.store.list_uploads(upload))
                tried("abort_upload", lambda: self.store.abort_multipart(upload, started.upload_id))
        needed = [r for r in refused if r.removesuffix("_missing") in permissions.REQUIRED]
        said = [f"{r.replace('_missing', ' of a missing key')}: {permissions.needs(family, r, bucket)}"
                for r in refused]
        if needed:
            return Check("permissions", False, "refused, a checkpoint cannot be written without: " + "; ".join(said))
        if refused:
            return Check("permissions", True, "every request a checkpoint needs was allowed; refused: "
                         + "; ".join(said) + " (works at a cost: an upload left open by a lost answer is never "
                         "cleaned up and keeps its parts until a lifecycle rule expires it)")
        return Check("permissions", True, "every request a writer sends was allowed (head, get, put, list, delete"
                     + (", the upload clean-up)" if permissions.actions(family, "list_uploads") else ")"))

    def put_if_none_match(self) -> Check:
        self.put("conditional", b"first", create=True)
        try:
            self.put("conditional", b"second", create=True)
        except CheckpointFsError as e:
            if _refused(e):
                kept = self.get("conditional") == b"first"
                return Check("put_if_none_match", kept, f"a second put-if-absent write ({self.condition}) was "
                                                        f"refused ({_said(e)})"
                             + ("" if kept else ", but the object changed"))
            raise
        return Check("put_if_none_match", False, f"a second put-if-absent write ({self.condition}) replaced the "
                                                 "object: the store ignores the condition")

    def complete_if_none_match(self) -> Check:
        name = "complete_multipart_if_none_match"
        fresh = b"f" * _PART + b"fresh"
        failed = self.multipart("multipart", fresh)
        if failed is not None:
            return Check(name, False, f"a put-if-absent multipart upload of a new name was refused ({failed})")
        refused = self.multipart("multipart", b"a" * _PART + b"again")
        if refused is None:
            return Check(name, False, "a put-if-absent multipart upload replaced an existing object: the store "
                                      "ignores the condition at its completion")
        kept = self.get("multipart") == fresh
        return Check(name, kept, f"a second put-if-absent multipart upload ({self.condition}) was refused at "
                                 f"finalize ({refused})" + ("" if kept else ", but the object changed"))

    def racing_writers(self) -> Check:
        def write(index: int) -> str:
            try:
                self.put("race", f"writer-{index}".encode(), create=True, write_id=f"writer-{index}")
                return "won"
            except CheckpointFsError as e:
                return "lost" if _refused(e) else f"error {_said(e)}"

        return racing_writers(self.writers, write, lambda: self.get("race"))

    def read_after_write(self) -> Check:
        body = uuid.uuid4().bytes * 4
        self.put("read-after-write", body)
        ok = self.get("read-after-write") == body
        return Check("read_after_write", ok, "a read right after the write returned the new bytes" if ok else
                     "a read right after the write returned other bytes")

    def list_after_write(self) -> Check:
        self.put("list-after-write", b"x")
        seen = "list-after-write" in self.listed()
        return Check("list_after_write", seen, "a listing right after the write showed the name" if seen else
                     "a listing right after the write did not show the name")

    def user_metadata(self) -> Check:
        write_id = uuid.uuid4().hex
        self.put("metadata", b"m", create=True, write_id=write_id)
        head = self.store.head(self.at("metadata"))
        if head.write_id == write_id:
            return Check("user_metadata", True, "the write id came back unchanged from the object's metadata")
        sent = self.store.checksum(b"m")
        if not head.write_id and sent and head.checksum == sent and head.size == 1:
            return Check("user_metadata", True, f"no user metadata kept, but the {sent.split(':')[0]} sent with the "
                                                "write and the size came back: they settle a lost answer")
        return Check("user_metadata", False, f"the write id came back as {head.write_id!r}"
                     + ("" if head.write_id else " and no checksum sent with the write came back: a lost answer "
                                                 "cannot be settled as the writer's"))

    def bucket_type(self) -> Check:
        """S3 only: which kind of bucket this is (a directory bucket, S3 Express One Zone, by its ``--x-s3`` name;
        else a general purpose one), and the listing rules checkpointfs relies on there: a listing of a directory
        (its prefix ending in ``/``, ``/`` as the delimiter) shows every name in it, in whatever order (checkpointfs
        sorts), and the open uploads of a directory list by its prefix."""
        kind = ("a directory bucket (S3 Express One Zone)" if paths.is_directory_bucket(self.root.bucket)
                else "a general purpose bucket")
        names = ["listing/b", "listing/a", "listing/c"]
        for name in names:
            self.put(name, b"l")
        listed = self.store.list(self.at("listing/"), delimiter="/")
        shown = [o.key[len(self.prefix):] for o in listed.objects]
        where = self.at("listing/uploads")
        upload = self.store.create_multipart(where, mode=PutMode.CREATE, write_id=uuid.uuid4().hex)
        try:
            uploads = [u.upload_id for u in self.store.list_uploads(where)]
        finally:
            self.store.abort_multipart(where, upload.upload_id)
        problems = [what for what, bad in (("a directory listing missed names", sorted(shown) != sorted(names)),
                                           ("the open upload of a name did not list", upload.upload_id not in uploads))
                    if bad]
        order = "in name order" if shown == sorted(shown) else "in no set order (checkpointfs sorts)"
        if problems:
            return Check("bucket_type", False, f"{kind}; " + "; ".join(problems))
        return Check("bucket_type", True, f"{kind}; a directory listing showed every name, {order}; an open upload "
                                          "listed")

    def abort(self) -> Check:
        where = self.at("aborted")
        upload = self.store.create_multipart(where, mode=PutMode.CREATE, write_id=uuid.uuid4().hex)
        self.store.upload_part(where, upload.upload_id, 1, b"p" * _PART)
        self.store.abort_multipart(where, upload.upload_id)
        leftovers = [what for what, bad in (("the object reads", self.exists("aborted")),
                                            ("the name is listed", "aborted" in self.listed()),
                                            ("an upload is still open", bool(self.store.list_uploads(where))))
                     if bad]
        try:
            self.put("aborted", b"created after the cancel", create=True)
        except CheckpointFsError as e:
            leftovers.append(f"a put-if-absent write of the name afterwards failed ({_said(e)})")
        ok = not leftovers
        return Check("abort_leaves_nothing", ok, "a cancelled upload left nothing, and the name could be created "
                                                 "afterwards" if ok else "after the cancel " + ", ".join(leftovers))

    def delete(self) -> Check:
        self.put("deleted", b"d")
        self.store.delete(self.at("deleted"))
        gone = not self.exists("deleted") and "deleted" not in self.listed()
        self.store.delete(self.at("never-written"))  # absent: must not fail
        return Check("delete", gone, "a deleted name no longer reads nor lists; deleting an absent name succeeds"
                     if gone else "a deleted name still reads or lists")

    def clean_up(self) -> Check:
        keys = [o.key for o in self.store.list(self.root).objects]
        for upload in self.store.list_uploads(self.root):
            self.store.abort_multipart(self.root.at(upload.key), upload.upload_id)
        for start in range(0, len(keys), 256):
            self.store.delete_many(self.root, keys[start:start + 256])
        left = self.listed() + [u.key for u in self.store.list_uploads(self.root)]
        return Check("clean_up", not left, f"removed {len(keys)} scratch objects under {self.root.uri}"
                     + (f"; {len(left)} remain" if left else ""))


def run_doctor(location: Location, *, writers: int = DEFAULT_WRITERS,
               on_check: Callable[[Check], None] | None = None) -> DoctorReport:
    """Probe the object store of ``location`` (its prefix), through the store the managers use, without the store
    check's wrapper (the doctor is that check, at length): see the module. Raises :class:`InvalidPathError` for a
    location that is not on an object store, and the :mod:`checkpointfs.errors` error of the failure when the
    prefix cannot be listed; any other failure of a probe is reported as that probe failing."""
    if not location.is_object_store:
        raise InvalidPathError(location.uri, "doctor probes object stores: give an s3:// (or s3a://), gs:// or Azure "
                                             "(az://, abfs[s]://, wasb[s]://) prefix")
    try:
        store = location.object_store()
        report = run_store_doctor(location.uri, store, writers=writers, on_check=on_check, secrets=location.secrets)
    except Exception as e:
        mapped = store_error(e, location.uri, "list", location.secrets)
        if mapped is None or mapped is e:
            raise
        raise mapped from None
    if location.client_settings is not None:
        report.settings = location.client_settings.to_json()
    return report


def run_store_doctor(uri: str, store: ObjectStore, *, writers: int,
                     on_check: Callable[[Check], None] | None = None, secrets: tuple[str, ...] = ()) -> DoctorReport:
    """Probe ``store`` (the store itself, without the store check's wrapper) under the prefix ``uri``; see the
    module. A failure to list the prefix is raised (the store's :mod:`checkpointfs.errors` error); any other failure
    of a probe is reported as that probe failing, ``secrets`` redacted."""
    report = DoctorReport(uri)
    probe = _StoreProbe(store, ObjectPath.parse(uri), writers)
    report.checks.append(probe.reach())
    probes: list[tuple[str, Callable[[], Check]]] = [
        ("permissions", probe.permissions), ("put_if_none_match", probe.put_if_none_match),
        ("complete_multipart_if_none_match", probe.complete_if_none_match),
        ("racing_writers", probe.racing_writers), ("read_after_write", probe.read_after_write),
        ("list_after_write", probe.list_after_write), ("user_metadata", probe.user_metadata),
        ("abort_leaves_nothing", probe.abort), ("delete", probe.delete)]
    if store.capabilities.family == "s3":
        probes.append(("bucket_type", probe.bucket_type))
    try:
        for name, run in probes:
            report.checks.append(guarded(name, run, secrets))
            if on_check is not None:
                on_check(report.checks[-1])
    finally:
        report.checks.append(guarded("clean_up", probe.clean_up, secrets))
    return report
