"""The store contract: what every :class:`~checkpointfs.store.base.ObjectStore` must do, one plain function per rule,
in the style of arrow-rs ``object_store``'s ``integration.rs``.

Each function takes a connected ``store``, a ``root`` (an :class:`ObjectPath` whose key is a prefix no one else
writes under) and the store's :class:`StoreCaps` (what differs per store beyond
:class:`~checkpointfs.store.base.StoreCapabilities`), states its rule in its docstring (what "done" means), and
asserts it: contents, visibility, errors (type and answer class), and no leftovers (nothing under the root but what
the rule leaves, no multipart upload left open). tests/store/test_integration.py runs every function over every store
and wrapper; a new store's author adds the store there (docs/testing.md, "The store contract").

A rule that needs something a store lacks here (a fault layer, listable uploads) skips, saying why. A rule a store is
known to break is named in :attr:`StoreCaps.gaps` and runs as a strict xfail: a store that starts keeping it is
noticed.
"""

from __future__ import annotations

import inspect
import re
import sys
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import pytest

from checkpointfs.errors import (
    BucketNotFoundError,
    CheckpointFsError,
    FileAlreadyExistsError,
    PathNotFoundError,
    StoreError,
)
from checkpointfs.store.base import ObjectPath, ObjectStore, Part, PutMode
from checkpointfs.store.settle import Sent, settle_failed_create
from checkpointfs.testing.faults import Fault, FaultPlan

__all__ = ["FaultLayer", "Rule", "StoreCaps", "rules"]


@dataclass(frozen=True)
class FaultLayer:
    """A way to lose the store's answers: ``store`` reaches the same bucket through the layer (the store under test
    itself where the fault layer is the server's own, as the embedded S3's), and ``inject`` puts a
    :class:`FaultPlan` in force for the requests that follow (None: no faults). Plans name operations by S3's names
    (``PutObject``, ``CompleteMultipartUpload``), as every fault layer of the project takes them."""

    store: ObjectStore
    inject: Callable[[FaultPlan | None], None]


@dataclass(frozen=True)
class StoreCaps:
    """What differs per store beyond :class:`~checkpointfs.store.base.StoreCapabilities`.

    ``part_size``: a size the store accepts for every part but the last (at least its minimum part size, a multiple
    of its chunk size where it asks one). ``lists_uploads``: :meth:`ObjectStore.list_uploads` shows an open upload
    (False: the store cannot list them, and they are invisible). ``open_uploads``: the keys under a prefix that have
    an open upload, asked of the server itself, not through the store (None: the server cannot tell, as
    fake-gcs-server of resumable sessions): the ground truth of "no upload left open". ``keeps_write_id``: the
    store keeps the write id (user metadata) a head reads back (False: it drops user metadata, as a directory bucket
    may; a lost answer is then settled by the checksum and size). ``sorted_listing``: listings come in name order
    (False: an S3 directory bucket's). ``faults``: makes the store's
    :class:`FaultLayer` (None: none here, ``no_faults`` says why). ``gaps``: rules (function names) the store is
    known to break, each with why; they run as strict xfails."""

    name: str
    part_size: int
    lists_uploads: bool
    open_uploads: Callable[[str], list[str]] | None = None
    keeps_write_id: bool = True
    sorted_listing: bool = True
    faults: Callable[[], FaultLayer] | None = None
    no_faults: str = ""
    gaps: Mapping[str, str] = field(default_factory=dict)

    def fault_layer(self) -> FaultLayer:
        """The store's fault layer; skips the rule, saying why, where there is none."""
        if self.faults is None:
            pytest.skip(f"{self.name} has no fault layer here: {self.no_faults}")
        return self.faults()


Rule = Callable[[ObjectStore, ObjectPath, StoreCaps], None]
"""One rule of the contract: asserts it on the store, under the root."""

ABSENT_BUCKET = "checkpointfs-absent-bucket"
"""A bucket (an Azure container) no test store has."""


# -- helpers -------------------------------------------------------------------------------------------------------
def _at(root: ObjectPath, name: str) -> ObjectPath:
    """The object ``name`` under the root."""
    return root.at(f"{root.key}/{name}")


def _below(root: ObjectPath, name: str = "") -> ObjectPath:
    """The prefix ``name`` under the root, for listings (``""``: the root's directory)."""
    return root.below(f"{root.key}/{name}")


def _write_id() -> str:
    return uuid.uuid4().hex


def _kept(caps: StoreCaps, write_id: str) -> str:
    """The write id a head of an object written with ``write_id`` reads back on this store."""
    return write_id if caps.keeps_write_id else ""


def _in_order(caps: StoreCaps, names: list[str]) -> list[str]:
    """``names`` as the rule compares them: as listed, or sorted where the store lists in no order."""
    return names if caps.sorted_listing else sorted(names)


def _read(store: ObjectStore, where: ObjectPath, start: int = 0) -> bytes:
    """The object's bytes from ``start``."""
    got = store.get(where, start=start)
    try:
        chunks = []
        while chunk := got.body.read(1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        got.body.close()


def _names(store: ObjectStore, root: ObjectPath, name: str = "") -> list[str]:
    """The object names listed under the root's prefix ``name``, relative to the root, as listed."""
    return [o.key[len(root.key) + 1:] for o in store.list(_below(root, name)).objects]


def _absent(store: ObjectStore, where: ObjectPath) -> None:
    """Nothing is visible at ``where``: head and get are PathNotFoundError of class ``not-found``."""
    for ask in (store.head, store.get):
        with pytest.raises(PathNotFoundError) as raised:
            ask(where)
        assert raised.value.path == where.uri
        assert raised.value.answer_class is not None and raised.value.answer_class.name == "not-found"


def _no_leftovers(store: ObjectStore, root: ObjectPath, caps: StoreCaps, *names: str) -> None:
    """Under the root: exactly the objects ``names`` (no canary, no stray part), and no open multipart upload, as
    the store lists them and as the server itself tells."""
    assert sorted(_names(store, root)) == sorted(names)
    assert store.list_uploads(_below(root)) == []
    if caps.open_uploads is not None:
        assert caps.open_uploads(root.key + "/") == []


def _refused_as_existing(error: FileAlreadyExistsError, where: ObjectPath) -> None:
    """``error`` is the store's put-if-absent refusal of ``where``: class ``conflict``, nothing applied."""
    assert error.path == where.uri
    assert error.answer_class is not None and error.answer_class.name == "conflict"
    assert not error.maybe_applied


def _parts(caps: StoreCaps, count: int) -> list[bytes]:
    """``count`` distinct parts of the size the store accepts for all but the last."""
    return [bytes([65 + n]) * caps.part_size for n in range(count)]


def _start(store: ObjectStore, where: ObjectPath, parts: list[bytes], last: bytes, *, mode: PutMode,
           write_id: str) -> tuple[str, list[Part]]:
    """Start a multipart upload of ``parts`` then ``last`` and send its parts (``last`` among them unless the store
    takes it with the completion; out of order where the store takes parts in parallel): its id and parts."""
    upload = store.create_multipart(where, mode=mode, write_id=write_id)
    assert not upload.lost_attempts
    pieces = list(enumerate(parts if store.capabilities.tail_in_completion else [*parts, last], 1))
    order = pieces[::-1] if store.capabilities.parallel_parts else pieces
    sent = sorted((store.upload_part(where, upload.upload_id, n, data) for n, data in order), key=lambda p: p.number)
    assert [p.number for p in sent] == [n for n, _ in pieces]
    return upload.upload_id, sent


def _complete(store: ObjectStore, where: ObjectPath, upload: tuple[str, list[Part]], last: bytes, *,
              mode: PutMode) -> None:
    """Complete an upload :func:`_start` started (with ``last`` as the tail where the store takes it so)."""
    upload_id, sent = upload
    tail = last if store.capabilities.tail_in_completion else b""
    store.complete_multipart(where, upload_id, sent, mode=mode, tail=tail)


def _multipart(store: ObjectStore, where: ObjectPath, parts: list[bytes], last: bytes, *, mode: PutMode,
               write_id: str) -> None:
    """Upload ``parts`` then ``last`` as one object, completed."""
    _complete(store, where, _start(store, where, parts, last, mode=mode, write_id=write_id), last, mode=mode)


def _abort_after_refusal(store: ObjectStore, where: ObjectPath, upload_id: str) -> None:
    """Abort an upload whose completion was refused, as a writer does; ``upload-gone`` (the refusal ended it) is
    fine."""
    try:
        store.abort_multipart(where, upload_id)
    except CheckpointFsError as e:
        if e.answer_class is None or e.answer_class.name != "upload-gone":
            raise


def _lose_the_answer(layer: FaultLayer, operation: str, where: ObjectPath) -> FaultPlan:
    """A plan losing the answer to the next ``operation`` on ``where`` (the request is applied), put in force."""
    plan = FaultPlan([Fault("lost-response", frozenset({operation}), key_pattern=re.escape(where.key) + "$",
                            times=1)])
    layer.inject(plan)
    return plan


def _settled(store: ObjectStore, where: ObjectPath, write_id: str, commit: Callable[[], None],
             sent: Sent | None = None) -> str:
    """Send a put-if-absent ``commit`` (which ``sent``, when a single put) and settle its failure as a writer does
    (checkpointfs.store.settle): the outcome, ``success`` when it returned. A failure must say that an attempt may
    have been applied."""
    try:
        commit()
    except CheckpointFsError as e:
        assert e.maybe_applied, f"an answer was lost, yet the store's error says nothing was applied: {e!r}"
        settled = settle_failed_create(e, store, where, write_id, overwrite=False, sent=sent)
        assert settled is not None, f"the store's error carries no answer class to settle by: {e!r}"
        return settled.outcome
    return "success"


# -- writing and reading -------------------------------------------------------------------------------------------
def round_trip(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """A put is read back whole by get and head: its bytes, size and write id, one etag; an empty object too."""
    for name, data in (("round/trip", b"v1\n{\"batchWatermarkMs\":0}\n" * 3), ("round/empty", b"")):
        where = _at(root, name)
        write_id = _write_id()
        store.put(where, data, mode=PutMode.CREATE, write_id=write_id)
        meta = store.head(where)
        assert (meta.key, meta.size, meta.write_id) == (where.key, len(data), _kept(caps, write_id))
        assert meta.etag
        got = store.get(where)
        try:
            assert (got.size, got.write_id, got.etag) == (len(data), _kept(caps, write_id), meta.etag)
            assert got.body.read(len(data) + 1) == data
            assert got.body.read(1) == b""
        finally:
            got.body.close()
    _no_leftovers(store, root, caps, "round/empty", "round/trip")


def ranged_and_pinned_reads(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """A read from an offset gives the bytes from there and the object's full size; a read pinned to an etag gives
    that version, and fails with class ``conflict`` once the object is replaced (never mixing versions)."""
    where = _at(root, "offsets/1")
    store.put(where, b"0123456789", mode=PutMode.CREATE, write_id=_write_id())
    first = store.get(where)
    first.body.close()
    ranged = store.get(where, start=4, expected_etag=first.etag)
    try:
        assert (ranged.size, ranged.body.read(100)) == (10, b"456789")
    finally:
        ranged.body.close()
    store.put(where, b"replaced", mode=PutMode.OVERWRITE, write_id=_write_id())
    with pytest.raises(StoreError) as raised:
        store.get(where, start=4, expected_etag=first.etag).body.close()
    assert raised.value.answer_class is not None and raised.value.answer_class.name == "conflict"
    assert _read(store, where) == b"replaced"
    _no_leftovers(store, root, caps, "offsets/1")


def put_if_absent(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """A put-if-absent creates an absent name; on a taken one it is refused in one request (FileAlreadyExistsError,
    class ``conflict``, naming the path, nothing applied) and the object keeps its bytes and write id."""
    where = _at(root, "commits/0")
    first = _write_id()
    store.put(where, b"first", mode=PutMode.CREATE, write_id=first)
    sent = store.requests.total
    with pytest.raises(FileAlreadyExistsError) as raised:
        store.put(where, b"second", mode=PutMode.CREATE, write_id=_write_id())
    _refused_as_existing(raised.value, where)
    assert store.requests.total - sent == 1, "a conflict is the store's answer: never retried"
    assert (_read(store, where), store.head(where).write_id) == (b"first", _kept(caps, first))
    _no_leftovers(store, root, caps, "commits/0")


def overwrite(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """An overwrite creates an absent name and replaces a taken one whole: the new bytes, size and write id."""
    where = _at(root, "metadata")
    for data in (b"created by an overwrite", b"replaced"):
        write_id = _write_id()
        store.put(where, data, mode=PutMode.OVERWRITE, write_id=write_id)
        meta = store.head(where)
        assert (_read(store, where), meta.size, meta.write_id) == (data, len(data), _kept(caps, write_id))
    _no_leftovers(store, root, caps, "metadata")


def missing_object(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """Head and get of an absent name are PathNotFoundError (class ``not-found``, naming the path); asking creates
    nothing."""
    _absent(store, _at(root, "never/written"))
    _no_leftovers(store, root, caps)


def missing_bucket(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """head_bucket passes on the root's bucket and is PathNotFoundError on an absent one; a put or a listing there
    is BucketNotFoundError naming the bucket (never PathNotFoundError: an absent bucket is no absent file)."""
    store.head_bucket(root)
    scheme = root.uri.split("://", 1)[0]
    nowhere = ObjectPath.parse(f"{scheme}://{ABSENT_BUCKET}/k")
    with pytest.raises(PathNotFoundError):
        store.head_bucket(nowhere)
    with pytest.raises(BucketNotFoundError, match=ABSENT_BUCKET):
        store.put(nowhere, b"x", mode=PutMode.CREATE, write_id=_write_id())
    with pytest.raises(BucketNotFoundError, match=ABSENT_BUCKET):
        store.list(nowhere)


# -- multipart uploads ---------------------------------------------------------------------------------------------
def multipart_upload(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """A multipart upload publishes nothing until its completion, then is its parts in order (then the tail), read
    whole or from any offset, stamped with its write id, and is no longer open."""
    where = _at(root, "state/1.zip")
    parts, last = _parts(caps, 2), b"the last piece"
    write_id = _write_id()
    upload = _start(store, where, parts, last, mode=PutMode.CREATE, write_id=write_id)
    _absent(store, where)
    assert _names(store, root) == []
    _complete(store, where, upload, last, mode=PutMode.CREATE)
    data = b"".join(parts) + last
    meta = store.head(where)
    assert (meta.size, meta.write_id) == (len(data), _kept(caps, write_id))
    assert _read(store, where) == data
    assert _read(store, where, start=caps.part_size + 1) == data[caps.part_size + 1:]
    _no_leftovers(store, root, caps, "state/1.zip")


def open_uploads_listed(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """Where the store lists uploads, an open one is listed, with its id, under its whole key and under any prefix of
    it (its directory: what writers and tools clean up by); once completed or aborted it is listed no more."""
    if not caps.lists_uploads:
        pytest.skip(f"{caps.name} cannot list open uploads (they are invisible and expire): list_uploads is empty")
    done, dropped = _at(root, "state/up/1.zip"), _at(root, "state/up/2.zip")
    uploads = {where.key: _start(store, where, _parts(caps, 1), b"x", mode=PutMode.CREATE, write_id=_write_id())
               for where in (done, dropped)}
    expected = sorted((key, upload[0]) for key, upload in uploads.items())
    for prefix in (done, _below(root, "state/up/"), _below(root)):
        listed = sorted((u.key, u.upload_id) for u in store.list_uploads(prefix))
        assert listed == [e for e in expected if e[0].startswith(prefix.key)], f"under {prefix.key!r}: {listed}"
    _complete(store, done, uploads[done.key], b"x", mode=PutMode.CREATE)
    store.abort_multipart(dropped, uploads[dropped.key][0])
    for prefix in (done, dropped, _below(root)):
        assert store.list_uploads(prefix) == []
    _no_leftovers(store, root, caps, "state/up/1.zip")


def multipart_put_if_absent(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """A put-if-absent multipart upload of a taken name is refused at its completion (FileAlreadyExistsError, class
    ``conflict``, nothing applied); the existing object is unchanged, and the upload, aborted, leaves nothing open."""
    where = _at(root, "state/2.zip")
    first = _write_id()
    store.put(where, b"existing", mode=PutMode.CREATE, write_id=first)
    upload = _start(store, where, _parts(caps, 1), b"y", mode=PutMode.CREATE, write_id=_write_id())
    with pytest.raises(FileAlreadyExistsError) as raised:
        _complete(store, where, upload, b"y", mode=PutMode.CREATE)
    _refused_as_existing(raised.value, where)
    _abort_after_refusal(store, where, upload[0])
    assert (_read(store, where), store.head(where).write_id) == (b"existing", _kept(caps, first))
    _no_leftovers(store, root, caps, "state/2.zip")


def multipart_overwrite(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """An overwriting multipart upload replaces the existing object at its completion, not before."""
    where = _at(root, "state/3.zip")
    store.put(where, b"old", mode=PutMode.CREATE, write_id=_write_id())
    parts, last = _parts(caps, 1), b"new"
    write_id = _write_id()
    upload = _start(store, where, parts, last, mode=PutMode.OVERWRITE, write_id=write_id)
    assert _read(store, where) == b"old"
    _complete(store, where, upload, last, mode=PutMode.OVERWRITE)
    assert (_read(store, where), store.head(where).write_id) == (b"".join(parts) + last, _kept(caps, write_id))
    _no_leftovers(store, root, caps, "state/3.zip")


def abort_multipart(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """An aborted upload publishes nothing and is no longer open; the name can then be created, by a put and by
    another upload."""
    where = _at(root, "state/4.zip")
    parts, last = _parts(caps, 2), b"z"
    upload = _start(store, where, parts, last, mode=PutMode.CREATE, write_id=_write_id())
    store.abort_multipart(where, upload[0])
    _absent(store, where)
    _no_leftovers(store, root, caps)
    store.put(where, b"after the abort", mode=PutMode.CREATE, write_id=_write_id())
    assert _read(store, where) == b"after the abort"
    again = _at(root, "state/5.zip")
    store.abort_multipart(again, _start(store, again, parts, last, mode=PutMode.CREATE, write_id=_write_id())[0])
    write_id = _write_id()
    _multipart(store, again, parts, last, mode=PutMode.CREATE, write_id=write_id)
    assert (_read(store, again), store.head(again).write_id) == (b"".join(parts) + last, _kept(caps, write_id))
    _no_leftovers(store, root, caps, "state/4.zip", "state/5.zip")


def complete_after_abort(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """Where aborting drops an upload's parts (``aborts_uploads``), completing the aborted upload fails with class
    ``upload-gone`` and publishes nothing."""
    if not store.capabilities.aborts_uploads:
        pytest.skip(f"{caps.name} cannot drop an upload's parts (aborts_uploads=False): they stay, invisible, until "
                    "they expire, so a completion after the abort may publish them")
    where, last = _at(root, "state/7.zip"), b"z"
    upload = _start(store, where, _parts(caps, 1), last, mode=PutMode.CREATE, write_id=_write_id())
    store.abort_multipart(where, upload[0])
    with pytest.raises(CheckpointFsError) as raised:
        _complete(store, where, upload, last, mode=PutMode.CREATE)
    assert raised.value.answer_class is not None and raised.value.answer_class.name == "upload-gone", raised.value
    _absent(store, where)
    _no_leftovers(store, root, caps)


def concurrent_multipart_uploads(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """Two put-if-absent uploads of one name never mix: the one completed first is the object, whole, with its
    write id; the other is refused at its completion (class ``conflict``) and leaves nothing open."""
    where = _at(root, "state/6.zip")
    a, b = _write_id(), _write_id()
    pieces = {a: ([b"a" * caps.part_size], b"A"), b: ([b"b" * caps.part_size], b"B")}
    uploads = {w: _start(store, where, *pieces[w], mode=PutMode.CREATE, write_id=w) for w in (a, b)}
    _complete(store, where, uploads[b], pieces[b][1], mode=PutMode.CREATE)
    with pytest.raises(FileAlreadyExistsError) as raised:
        _complete(store, where, uploads[a], pieces[a][1], mode=PutMode.CREATE)
    _refused_as_existing(raised.value, where)
    _abort_after_refusal(store, where, uploads[a][0])
    assert (_read(store, where), store.head(where).write_id) == (b"".join(pieces[b][0]) + pieces[b][1], _kept(caps, b))
    _no_leftovers(store, root, caps, "state/6.zip")


# -- listing -------------------------------------------------------------------------------------------------------
_TREE = {"0": b"0", "1": b"11", "a/1": b"a11", "a/2": b"a222", "b/1": b"b1111", "c": b"c22222"}
"""A small tree: files at the top, two directories (each object a size of its own)."""


def _plant(store: ObjectStore, root: ObjectPath) -> None:
    for name, data in _TREE.items():
        store.put(_at(root, name), data, mode=PutMode.CREATE, write_id=_write_id())


def list_pages(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """A listing gives every object under the prefix once, in name order (in any order where the store lists so,
    ``sorted_listing``), with its size, etag and time, whatever the page size; with a delimiter, the objects directly
    under it and each common prefix once across pages, in order; an empty prefix lists nothing."""
    since = datetime.now(timezone.utc) - timedelta(hours=1)
    _plant(store, root)
    for page_size in (2, 1000):
        flat = store.list(_below(root), page_size=page_size)
        sizes = {o.key[len(root.key) + 1:]: o.size for o in flat.objects}
        assert _in_order(caps, [o.key[len(root.key) + 1:] for o in flat.objects]) == sorted(_TREE)
        assert sizes == {n: len(data) for n, data in _TREE.items()}
        assert all(o.etag and o.last_modified > since for o in flat.objects), flat.objects
        assert flat.prefixes == []
        nested = store.list(_below(root), delimiter="/", page_size=page_size)
        assert _in_order(caps, [o.key for o in nested.objects]) == [f"{root.key}/{n}" for n in ("0", "1", "c")]
        assert _in_order(caps, nested.prefixes) == [f"{root.key}/a/", f"{root.key}/b/"]
        assert _in_order(caps, _names(store, root, "a/")) == ["a/1", "a/2"]
    assert store.list(_below(root, "nothing/")).objects == []
    _no_leftovers(store, root, caps, *_TREE)


def list_page_size(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """No page holds more than ``page_size`` entries (objects and prefixes together), so a listing longer than a
    page takes more than one."""
    _plant(store, root)
    for delimiter in (None, "/"):
        pages = list(store.list_pages(_below(root), delimiter=delimiter, page_size=2))
        sizes = [len(p.objects) + len(p.prefixes) for p in pages]
        assert len(pages) > 1 and max(sizes) <= 2, f"delimiter {delimiter!r}: pages of {sizes} entries"
    _no_leftovers(store, root, caps, *_TREE)


# -- deleting ------------------------------------------------------------------------------------------------------
def delete(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """A delete removes the object (head and get: PathNotFoundError; gone from listings) and nothing else; deleting
    an absent name succeeds."""
    kept, gone = _at(root, "kept"), _at(root, "gone")
    for where in (kept, gone):
        store.put(where, b"x", mode=PutMode.CREATE, write_id=_write_id())
    store.delete(gone)
    _absent(store, gone)
    store.delete(gone)
    store.delete(_at(root, "never/written"))
    assert _read(store, kept) == b"x"
    _no_leftovers(store, root, caps, "kept")


def delete_many(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """delete_many removes every key given, absent ones included without error, and no other."""
    names = [f"d/{n}" for n in range(5)]
    for name in names:
        store.put(_at(root, name), b"d", mode=PutMode.CREATE, write_id=_write_id())
    store.delete_many(root, [f"{root.key}/{n}" for n in (*names[:4], "d/absent")])
    for name in names[:4]:
        _absent(store, _at(root, name))
    _no_leftovers(store, root, caps, "d/4")


# -- lost answers --------------------------------------------------------------------------------------------------
def lost_answer_put_if_absent(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """A put-if-absent whose answer is lost (applied, unanswered) is retried and settled to success by its write
    id: never a false "already exists"; the object is ours."""
    layer = caps.fault_layer()
    where, write_id = _at(root, "offsets/7"), _write_id()
    plan = _lose_the_answer(layer, "PutObject", where)
    try:
        outcome = _settled(layer.store, where, write_id,
                           lambda: layer.store.put(where, b"ours", mode=PutMode.CREATE, write_id=write_id),
                           Sent(store.checksum(b"ours"), 4))
    finally:
        layer.inject(None)
    assert plan.kinds_injected() == {"lost-response": 1}
    assert outcome == "success"
    assert (_read(store, where), store.head(where).write_id) == (b"ours", _kept(caps, write_id))
    _no_leftovers(store, root, caps, "offsets/7")


def lost_answer_on_a_taken_name(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """A put-if-absent of a taken name whose refusal is lost is settled to conflict by the write id the object
    carries: never a false success; the object is unchanged."""
    layer = caps.fault_layer()
    where, theirs, ours = _at(root, "offsets/8"), _write_id(), _write_id()
    store.put(where, b"theirs", mode=PutMode.CREATE, write_id=theirs)
    plan = _lose_the_answer(layer, "PutObject", where)
    try:
        outcome = _settled(layer.store, where, ours,
                           lambda: layer.store.put(where, b"ours", mode=PutMode.CREATE, write_id=ours),
                           Sent(store.checksum(b"ours"), 4))
    finally:
        layer.inject(None)
    assert plan.kinds_injected() == {"lost-response": 1}
    assert outcome == "conflict"
    assert (_read(store, where), store.head(where).write_id) == (b"theirs", _kept(caps, theirs))
    _no_leftovers(store, root, caps, "offsets/8")


def lost_answer_multipart_completion(store: ObjectStore, root: ObjectPath, caps: StoreCaps) -> None:
    """A put-if-absent multipart completion whose answer is lost is retried and settled to success by its write
    id; the object is the upload's, and no upload is left open."""
    layer = caps.fault_layer()
    where, write_id = _at(root, "state/9.zip"), _write_id()
    parts, last = _parts(caps, 1), b"tail"
    upload = _start(layer.store, where, parts, last, mode=PutMode.CREATE, write_id=write_id)
    plan = _lose_the_answer(layer, "CompleteMultipartUpload", where)
    try:
        outcome = _settled(layer.store, where, write_id,
                           lambda: _complete(layer.store, where, upload, last, mode=PutMode.CREATE))
    finally:
        layer.inject(None)
    assert plan.kinds_injected() == {"lost-response": 1}
    assert outcome == "success"
    assert (_read(store, where), store.head(where).write_id) == (b"".join(parts) + last, _kept(caps, write_id))
    _no_leftovers(store, root, caps, "state/9.zip")


def rules() -> list[Rule]:
    """Every rule of this module, in the order they are written."""
    module = sys.modules[__name__]
    found = [(f.__code__.co_firstlineno, f) for name, f in vars(module).items()
             if inspect.isfunction(f) and f.__module__ == __name__ and not name.startswith("_") and name != "rules"]
    return [f for _, f in sorted(found, key=lambda pair: pair[0])]
