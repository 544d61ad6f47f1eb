"""``checkpointfs doctor`` on a store reached through checkpointfs's own store interface (Azure Blob Storage): the
same probes as the S3 doctor (checkpointfs.tools.doctor), sent with the store's own requests, so that what is judged
is what DirectWriteManager sends there. On Azure: a second Put Blob and a second Put Block List with ``If-None-Match:
*`` must be refused (409), N racing writers of one name must leave exactly one winner, the write id must round-trip
through the blob's metadata, a read and a listing right after a write must see it, a cancelled block upload must
leave nothing (and the name must be creatable again), and delete must work. Everything is written under a scratch
prefix and removed."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

from .. import paths
from ..errors import CheckpointFsError, PathNotFoundError
from ..redact import redact
from ..store.base import ObjectPath, ObjectStore, PutMode
from .doctor import Check, DoctorReport

__all__ = ["run_store_doctor"]


def _refused(error: CheckpointFsError) -> bool:
    return error.answer_class is not None and error.answer_class.name == "conflict"


class _StoreProbe:
    """The probes, sharing one store and the scratch prefix."""

    def __init__(self, store: ObjectStore, location: ObjectPath, writers: int) -> None:
        self.store = store
        self.writers = writers
        self.prefix = paths.join(location.key, f"checkpointfs-doctor-{uuid.uuid4().hex[:12]}").lstrip("/") + "/"
        self.root = location.at(self.prefix)

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

    def multipart(self, name: str, body: bytes, *, create: bool) -> CheckpointFsError | None:
        """``body`` as a one-part upload; None when published, the refusal otherwise (the upload is aborted)."""
        where = self.at(name)
        mode = PutMode.CREATE if create else PutMode.OVERWRITE
        upload = self.store.create_multipart(where, mode=mode, write_id=uuid.uuid4().hex)
        part = self.store.upload_part(where, upload.upload_id, 1, body)
        try:
            self.store.complete_multipart(where, upload.upload_id, [part], mode=mode)
            return None
        except CheckpointFsError as e:
            self.store.abort_multipart(where, upload.upload_id)
            if _refused(e):
                return e
            raise

    # -- the probes -----------------------------------------------------------------------------------------------
    def reach(self) -> Check:
        next(self.store.list_pages(self.root, page_size=1), None)
        return Check("reach", True, f"listed {self.root.uri}")

    def put_if_none_match(self) -> Check:
        self.put("conditional", b"first", create=True)
        try:
            self.put("conditional", b"second", create=True)
        except CheckpointFsError as e:
            if _refused(e):
                kept = self.get("conditional") == b"first"
                return Check("put_if_none_match", kept, f"a second put-if-absent write was refused ({e.cause})"
                             + ("" if kept else ", but the object changed"))
            raise
        return Check("put_if_none_match", False, "a second put-if-absent write replaced the object: the store "
                                                 "ignores the condition")

    def complete_if_none_match(self) -> Check:
        name = "complete-if-none-match"
        fresh = self.multipart(name, b"fresh", create=True)
        if fresh is not None:
            return Check("complete_multipart_if_none_match", False,
                         f"a put-if-absent multipart completion of a new name was refused ({fresh.cause})")
        refused = self.multipart(name, b"again", create=True)
        if refused is None:
            return Check("complete_multipart_if_none_match", False, "a put-if-absent multipart completion replaced "
                                                                    "an existing object: the store ignores the "
                                                                    "condition")
        kept = self.get(name) == b"fresh"
        return Check("complete_multipart_if_none_match", kept, "a second put-if-absent multipart completion was "
                                                               f"refused ({refused.cause})"
                     + ("" if kept else ", but the object changed"))

    def racing_writers(self) -> Check:
        barrier = threading.Barrier(self.writers)
        outcomes = ["?"] * self.writers

        def write(index: int) -> None:
            barrier.wait()
            try:
                self.put("race", f"writer-{index}".encode(), create=True)
                outcomes[index] = "won"
            except CheckpointFsError as e:
                outcomes[index] = "lost" if _refused(e) else f"error {e.cause}"

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
        return Check("racing_writers", ok, detail + ("" if ok else ": exactly one must win"))

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
        head = self.store.head(self.at("metadata")).write_id
        ok = head == write_id
        return Check("user_metadata", ok, "the write id came back unchanged from the object's metadata" if ok else
                     f"the write id came back as {head!r}")

    def abort(self) -> Check:
        where = self.at("aborted")
        upload = self.store.create_multipart(where, mode=PutMode.CREATE, write_id=uuid.uuid4().hex)
        self.store.upload_part(where, upload.upload_id, 1, b"partial")
        self.store.abort_multipart(where, upload.upload_id)
        leftovers = [what for what, bad in (("the object reads", self.exists("aborted")),
                                            ("the name is listed", "aborted" in self.listed()),
                                            ("an upload is still open", bool(self.store.list_uploads(where))))
                     if bad]
        try:
            self.put("aborted", b"created after the cancel", create=True)
        except CheckpointFsError as e:
            leftovers.append(f"a put-if-absent write of the name afterwards failed ({e.cause})")
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
        for start in range(0, len(keys), 256):
            self.store.delete_many(self.root, keys[start:start + 256])
        left = self.listed()
        return Check("clean_up", not left, f"removed {len(keys)} scratch objects under {self.root.uri}"
                     + (f"; {len(left)} remain" if left else ""))


def run_store_doctor(uri: str, store: ObjectStore, *, writers: int,
                     on_check: Callable[[Check], None] | None = None, secrets: tuple[str, ...] = ()) -> DoctorReport:
    """Probe ``store`` under the prefix ``uri``: the S3 doctor's probes through the store interface. A failure to
    list the prefix is raised (the store's :mod:`checkpointfs.errors` error); any other failure of a probe is
    reported as that probe failing."""
    report = DoctorReport(uri)
    probe = _StoreProbe(store, ObjectPath.parse(uri), writers)
    report.checks.append(probe.reach())
    probes: list[tuple[str, Callable[[], Check]]] = [
        ("put_if_none_match", probe.put_if_none_match),
        ("complete_multipart_if_none_match", probe.complete_if_none_match),
        ("racing_writers", probe.racing_writers), ("read_after_write", probe.read_after_write),
        ("list_after_write", probe.list_after_write), ("user_metadata", probe.user_metadata),
        ("abort_leaves_nothing", probe.abort), ("delete", probe.delete)]
    try:
        for name, run in probes:
            report.checks.append(_guarded(name, run, secrets))
            if on_check is not None:
                on_check(report.checks[-1])
    finally:
        report.checks.append(_guarded("clean_up", probe.clean_up, secrets))
    return report


def _guarded(name: str, run: Callable[[], Check], secrets: tuple[str, ...]) -> Check:
    try:
        return run()
    except Exception as e:  # noqa: BLE001 - a probe that fails with an error is a failed probe
        cause = e.cause if isinstance(e, CheckpointFsError) else f"{type(e).__name__}: {e}"
        return Check(name, False, redact(f"the probe failed: {cause}", secrets))
