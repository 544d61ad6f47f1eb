"""``checkpointfs doctor``: whether an object store gives what direct writes rely on.

Works under a scratch prefix (``<prefix>/checkpointfs-doctor-<uuid>/``) and removes everything it wrote. Probes:
``If-None-Match: *`` on PutObject and on CompleteMultipartUpload, N racing writers of one key (exactly one must
win), read-after-write and list-after-write, the write id round-tripping through user metadata, an aborted multipart
upload leaving nothing behind, and delete. The store is safe when every probe passes. On ``gs://`` and Azure's paths,
the same probes through the store interface (:mod:`checkpointfs.tools.doctor_store`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from .. import paths, protocol
from ..errors import InvalidPathError
from ..s3 import WRITE_ID_KEY
from .doctor_report import Check as Check
from .doctor_report import DoctorReport as DoctorReport
from .doctor_report import answer_code as _code
from .doctor_report import answer_status as _status
from .doctor_report import guarded as _guarded
from .doctor_report import racing_writers as _racing_writers
from .store import Location, store_error

T = TypeVar("T")

DEFAULT_WRITERS = 8
CONDITIONAL_ATTEMPTS = 5
"""Attempts of one conditional request while the store answers with a class the protocol retries and that applied
nothing (409 ConditionalRequestConflict of racing writers, throttling): a manager re-sends those, and so does the
doctor, so that what it judges is the answer a manager ends with."""


def answer_class(error: BaseException) -> protocol.AnswerClass:
    """The protocol's class of the store's answer that ``error`` (a boto3 client's) carries."""
    names = tuple(c.__name__ for c in type(error).__mro__)
    return protocol.classify(protocol.Answer(status=_status(error) or 0, code=_code(error),
                                             transport=protocol.RULES.transport_of(names), python_classes=names))


def refused(error: BaseException) -> bool:
    """Whether ``error`` is the store refusing a conditional write because the key is taken (class ``conflict``:
    412 PreconditionFailed; a 409 ConditionalRequestConflict is class ``retry``, re-sent by :func:`_conditional`)."""
    return answer_class(error).name == "conflict"


def _conditional(call: Callable[[], T]) -> T:
    """``call`` (a conditional request), re-sent while its answer is of a class the protocol retries and that
    applied nothing."""
    for attempt in range(1, CONDITIONAL_ATTEMPTS + 1):
        try:
            return call()
        except Exception as e:
            found = answer_class(e)
            if not found.retried or found.may_have_applied or attempt == CONDITIONAL_ATTEMPTS:
                raise
        time.sleep(0.05 * 2 ** attempt)
    raise AssertionError("unreachable")  # pragma: no cover


class _Probe:
    """The probes, sharing one client and the scratch prefix."""

    def __init__(self, location: Location, writers: int) -> None:
        self.location = location
        self.client = location.s3_client()
        self.bucket = location.bucket
        self.prefix = paths.join(location.key, f"checkpointfs-doctor-{uuid.uuid4().hex[:12]}").lstrip("/") + "/"
        self.writers = writers

    def key(self, name: str) -> str:
        return self.prefix + name

    def put(self, name: str, body: bytes, *, if_none_match: bool = False, **args: Any) -> Any:
        if not if_none_match:
            return self.client.put_object(Bucket=self.bucket, Key=self.key(name), Body=body, **args)
        return _conditional(lambda: self.client.put_object(Bucket=self.bucket, Key=self.key(name), Body=body,
                                                           IfNoneMatch="*", **args))

    def get(self, name: str) -> bytes:
        return bytes(self.client.get_object(Bucket=self.bucket, Key=self.key(name))["Body"].read())

    def exists(self, name: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self.key(name))
            return True
        except Exception as e:
            if answer_class(e).name == "not-found":
                return False
            raise

    def listed(self) -> list[str]:
        keys = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix):
            keys += [obj["Key"][len(self.prefix):] for obj in page.get("Contents", ())]
        return keys

    def uploads(self) -> list[tuple[str, str]]:
        answer = self.client.list_multipart_uploads(Bucket=self.bucket, Prefix=self.prefix)
        return [(u["Key"], u["UploadId"]) for u in answer.get("Uploads", [])]

    # -- the probes -----------------------------------------------------------------------------------------------
    def reach(self) -> Check:
        self.client.list_objects_v2(Bucket=self.bucket, Prefix=self.prefix, MaxKeys=1)
        return Check("reach", True, f"listed s3://{self.bucket}/{self.prefix}")

    def put_if_none_match(self) -> Check:
        self.put("conditional", b"first", if_none_match=True)
        try:
            self.put("conditional", b"second", if_none_match=True)
        except Exception as e:
            if refused(e):
                kept = self.get("conditional") == b"first"
                return Check("put_if_none_match", kept, f"a second PutObject with If-None-Match: * was refused "
                                                        f"({_status(e)} {_code(e)})" +
                             ("" if kept else ", but the object changed"))
            raise
        return Check("put_if_none_match", False, "a second PutObject with If-None-Match: * replaced the object: "
                                                 "the store ignores the condition")

    def complete_if_none_match(self) -> Check:
        fresh = self._multipart("multipart-fresh", b"fresh", if_none_match=True)
        if fresh is not None:
            return Check("complete_multipart_if_none_match", False,
                         f"CompleteMultipartUpload with If-None-Match: * on a new key failed ({fresh})")
        refused = self._multipart("multipart-fresh", b"again", if_none_match=True)
        if refused is None:
            return Check("complete_multipart_if_none_match", False,
                         "CompleteMultipartUpload with If-None-Match: * replaced an existing object: the store "
                         "ignores the condition")
        kept = self.get("multipart-fresh") == b"fresh"
        return Check("complete_multipart_if_none_match", kept, f"a second CompleteMultipartUpload with If-None-Match: "
                                                               f"* was refused ({refused})" +
                     ("" if kept else ", but the object changed"))

    def _multipart(self, name: str, body: bytes, *, if_none_match: bool) -> str | None:
        """Upload ``body`` as a one-part upload; None when completed, the refusal's status and code otherwise (the
        upload is aborted then)."""
        key = self.key(name)
        upload = self.client.create_multipart_upload(Bucket=self.bucket, Key=key)["UploadId"]
        try:
            part = self.client.upload_part(Bucket=self.bucket, Key=key, UploadId=upload, PartNumber=1, Body=body)
            args: dict[str, Any] = {"IfNoneMatch": "*"} if if_none_match else {}
            _conditional(lambda: self.client.complete_multipart_upload(
                Bucket=self.bucket, Key=key, UploadId=upload,
                MultipartUpload={"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]}, **args))
            return None
        except Exception as e:
            self.client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload)
            if refused(e):
                return f"{_status(e)} {_code(e)}"
            raise

    def racing_writers(self) -> Check:
        def write(index: int) -> str:
            try:
                self.put("race", f"writer-{index}".encode(), if_none_match=True)
                return "won"
            except Exception as e:  # noqa: BLE001 - recorded as the outcome
                return "lost" if refused(e) else f"error {_status(e)} {_code(e)}"

        return _racing_writers(self.writers, write, lambda: self.get("race"))

    def read_after_write(self) -> Check:
        body = uuid.uuid4().bytes * 4
        self.put("read-after-write", body)
        got = self.get("read-after-write")
        return Check("read_after_write", got == body,
                     "a GET right after the PUT returned the new bytes" if got == body else
                     "a GET right after the PUT returned other bytes")

    def list_after_write(self) -> Check:
        self.put("list-after-write", b"x")
        seen = "list-after-write" in self.listed()
        return Check("list_after_write", seen, "a listing right after the PUT showed the key" if seen else
                     "a listing right after the PUT did not show the key")

    def user_metadata(self) -> Check:
        write_id = str(uuid.uuid4())
        self.put("metadata", b"m", Metadata={WRITE_ID_KEY: write_id})
        got = self.client.head_object(Bucket=self.bucket, Key=self.key("metadata")).get("Metadata", {})
        ok = got.get(WRITE_ID_KEY) == write_id
        return Check("user_metadata", ok, f"x-amz-meta-{WRITE_ID_KEY} came back " +
                     ("unchanged" if ok else f"as {got.get(WRITE_ID_KEY)!r}"))

    def abort(self) -> Check:
        key = self.key("aborted")
        upload = self.client.create_multipart_upload(Bucket=self.bucket, Key=key)["UploadId"]
        self.client.upload_part(Bucket=self.bucket, Key=key, UploadId=upload, PartNumber=1, Body=b"partial")
        self.client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload)
        visible = self.exists("aborted")
        listed = "aborted" in self.listed()
        open_upload = any(u == upload for _, u in self.uploads())
        ok = not (visible or listed or open_upload)
        leftovers = [what for what, bad in (("the object reads", visible), ("the key is listed", listed),
                                            ("the upload is still open", open_upload)) if bad]
        return Check("abort_leaves_nothing", ok, "an aborted multipart upload left no object, key or upload" if ok
                     else "after the abort " + ", ".join(leftovers))

    def delete(self) -> Check:
        self.put("deleted", b"d")
        self.client.delete_object(Bucket=self.bucket, Key=self.key("deleted"))
        gone = not self.exists("deleted") and "deleted" not in self.listed()
        self.client.delete_object(Bucket=self.bucket, Key=self.key("never-written"))  # absent: must not fail
        return Check("delete", gone, "a deleted key no longer reads nor lists; deleting an absent key succeeds"
                     if gone else "a deleted key still reads or lists")

    def clean_up(self) -> Check:
        for key, upload in self.uploads():
            self.client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload)
        keys = self.listed()
        for start in range(0, len(keys), 1000):
            self.client.delete_objects(Bucket=self.bucket, Delete={
                "Objects": [{"Key": self.key(k)} for k in keys[start:start + 1000]], "Quiet": True})
        left = self.listed() + [k for k, _ in self.uploads()]
        return Check("clean_up", not left, f"removed {len(keys)} scratch objects under s3://{self.bucket}/"
                                           f"{self.prefix}" + (f"; {len(left)} remain" if left else ""))


def run_doctor(location: Location, *, writers: int = DEFAULT_WRITERS,
               on_check: Callable[[Check], None] | None = None) -> DoctorReport:
    """Probe the store of ``location`` (an ``s3://`` prefix; a ``gs://`` or an Azure one: the same probes through the
    store interface, checkpointfs.tools.doctor_store). Raises the :mod:`checkpointfs.errors` error of the failure
    (:func:`~checkpointfs.tools.store.store_error`) when the store cannot be listed, and :class:`InvalidPathError`
    for a location that is not on an object store; any other failure of a probe is reported as that probe failing."""
    if location.is_object_store and not location.is_s3:
        from .doctor_store import run_store_doctor

        return run_store_doctor(location.uri, location.object_store(), writers=writers, on_check=on_check,
                                secrets=location.secrets)
    if not location.is_s3:
        raise InvalidPathError(location.uri, "doctor probes object stores: give an s3:// (or s3a://), gs:// or Azure "
                                             "(az://, abfs[s]://, wasb[s]://) prefix")
    report = DoctorReport(location.uri)
    if location.client_settings is not None:
        report.settings = location.client_settings.to_json()
    probe = _Probe(location, writers)
    try:
        report.checks.append(probe.reach())
    except Exception as e:
        mapped = store_error(e, location.uri, "list_objects_v2", location.secrets)
        if mapped is None or mapped is e:
            raise
        raise mapped from None
    probes = [("put_if_none_match", probe.put_if_none_match),
              ("complete_multipart_if_none_match", probe.complete_if_none_match),
              ("racing_writers", probe.racing_writers), ("read_after_write", probe.read_after_write),
              ("list_after_write", probe.list_after_write), ("user_metadata", probe.user_metadata),
              ("abort_leaves_nothing", probe.abort), ("delete", probe.delete)]
    try:
        for name, run in probes:
            report.checks.append(_guarded(name, run, location.secrets))
            if on_check is not None:
                on_check(report.checks[-1])
    finally:
        report.checks.append(_guarded("clean_up", probe.clean_up, location.secrets))
    return report
