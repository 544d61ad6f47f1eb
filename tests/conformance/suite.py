"""The conformance suite of docs/contract.md, as a mixin class every implementation's test module reuses.

A module runs the suite by defining a ``case`` fixture (a :class:`~tests.conformance.cases.Case`: the manager, a
fresh root, and the capabilities the case has) and a test class that inherits :class:`ContractSuite`::

    class TestContract(ContractSuite):
        '''The suite against every registered implementation.'''

Tests that need a capability a case lacks skip with the reason the case gives (the way fsspec's
``tests/abstract`` mixins and object_store's ``integration.rs`` functions share one suite across stores).
"""

from __future__ import annotations

import functools
import gc
import os
import re
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import pytest

from checkpointfs import paths
from checkpointfs.errors import CheckpointFsError, FileAlreadyExistsError, PathNotFoundError, UnsafeStoreError
from checkpointfs.testing import EmbeddedS3, Fault, Request

from .cases import Case

N_WRITERS = 8
T = TypeVar("T")


def write(case: Case, name: str, data: bytes, overwrite: bool = False) -> str:
    """Create ``name`` under the case root with ``data`` through the manager; returns its path."""
    path = case.path(name)
    with case.manager.create_atomic(path, overwrite_if_possible=overwrite) as out:
        out.write(data)
    return path


def read(case: Case, path: str) -> bytes:
    """The whole content of ``path`` read through the manager."""
    with case.manager.open(path) as f:
        return f.read()


def names(case: Case, directory: str) -> list[str]:
    """Names of the children of ``directory``, as the manager lists them."""
    return [status.name for status in case.manager.list(directory)]


def where_matches(pattern: str, request: Request) -> bool:
    """Whether a request the embedded S3 served falls under a fault's key pattern."""
    return re.search(pattern, f"{request.bucket}/{request.key}") is not None


def large_payload(case: Case) -> bytes:
    """Data spanning several parts where the manager streams parts, and a few hundred KiB otherwise."""
    size = (case.part_size or 64 * 1024) * 3 + 123
    return os.urandom(size)



class ContractSuite:
    """Every promise of docs/contract.md, as tests against the ``case`` fixture of the module that uses it."""

    # -- visibility -------------------------------------------------------------------------------------------------
    def test_visible_only_after_close(self, case: Case) -> None:
        path = case.path("offsets", "0")
        out = case.manager.create_atomic(path)
        out.write(b"v1\n")
        out.write(b'{"batchWatermarkMs":0}')
        assert not case.manager.exists(path)
        assert "0" not in names(case, case.path("offsets"))
        with pytest.raises(FileNotFoundError):
            read(case, path)
        out.close()
        assert case.manager.exists(path)
        assert read(case, path) == b'v1\n{"batchWatermarkMs":0}'
        assert "0" in names(case, case.path("offsets"))


    def test_round_trip_of_empty_file(self, case: Case) -> None:
        path = write(case, "empty", b"")
        assert case.manager.exists(path)
        assert read(case, path) == b""
        [status] = case.manager.list(case.root)
        assert (status.name, status.size, status.is_dir) == ("empty", 0, False)


    def test_large_file_round_trip(self, case: Case) -> None:
        data = large_payload(case)
        path = case.path("state", "1.snapshot")
        with case.manager.create_atomic(path) as out:
            for start in range(0, len(data), 1000):
                out.write(data[start : start + 1000])
            assert out.tell() == len(data)
            assert not case.manager.exists(path)
        assert read(case, path) == data
        assert case.open_uploads() == []


    # -- cancel -----------------------------------------------------------------------------------------------------
    def test_cancel_leaves_nothing(self, case: Case) -> None:
        path = case.path("commits", "0")
        out = case.manager.create_atomic(path)
        out.write(b"partial")
        out.cancel()
        assert not case.manager.exists(path)
        assert case.manager.list(case.path("commits")) == []
        with pytest.raises(PathNotFoundError):
            read(case, path)


    @pytest.mark.parametrize("overwrite", [False, True])
    def test_cancel_leaves_existing_file_unchanged(self, case: Case, overwrite: bool) -> None:
        path = write(case, "metadata", b'{"id":"original"}')
        out = case.manager.create_atomic(path, overwrite_if_possible=overwrite)
        out.write(b'{"id":"replacement"}')
        out.cancel()
        assert read(case, path) == b'{"id":"original"}'


    def test_cancel_of_large_file_midway_leaves_nothing(self, case: Case) -> None:
        data = large_payload(case)
        path = case.path("state", "2.delta")
        out = case.manager.create_atomic(path)
        out.write(data[: len(data) * 2 // 3])  # parts already sent where the manager streams them
        out.cancel()
        assert not case.manager.exists(path)
        assert case.manager.list(case.path("state")) == []
        assert case.open_uploads() == []


    def test_cancel_of_large_overwrite_leaves_existing_file_unchanged(self, case: Case) -> None:
        path = write(case, "state/6.snapshot", b"the original")
        out = case.manager.create_atomic(path, overwrite_if_possible=True)
        out.write(large_payload(case))
        out.cancel()
        assert read(case, path) == b"the original"
        assert case.open_uploads() == []


    def test_exception_inside_with_cancels_and_reraises(self, case: Case) -> None:
        path = case.path("offsets", "7")
        with pytest.raises(RuntimeError, match="serializer failed"):
            with case.manager.create_atomic(path) as out:
                out.write(b"v1\n{")
                raise RuntimeError("serializer failed")
        assert not case.manager.exists(path)
        assert case.open_uploads() == []


    def test_exception_midway_through_large_file_cancels(self, case: Case) -> None:
        data = large_payload(case)
        path = case.path("state", "3.zip")
        with pytest.raises(RuntimeError):
            with case.manager.create_atomic(path) as out:
                out.write(data[: len(data) // 2])
                raise RuntimeError("task killed")
        assert not case.manager.exists(path)
        assert case.open_uploads() == []


    @pytest.mark.parametrize("large", [False, True], ids=["small", "large"])
    def test_dropped_stream_is_cancelled(self, case: Case, large: bool) -> None:
        """A stream dropped without close or cancel is cancelled when collected: nothing published, nothing left."""
        path = case.path("offsets", "8")
        out = case.manager.create_atomic(path)
        out.write(large_payload(case) if large else b"v1\n{")
        del out
        gc.collect()
        assert not case.manager.exists(path)
        assert case.manager.list(case.path("offsets")) == []
        assert case.open_uploads() == []
        write(case, "offsets/8", b"v1\n{}")  # the path is free: the dropped write holds nothing
        assert read(case, path) == b"v1\n{}"

    # -- stream state machine ---------------------------------------------------------------------------------------
    def test_write_after_close_or_cancel_raises_value_error(self, case: Case) -> None:
        closed = case.manager.create_atomic(case.path("a"))
        closed.close()
        with pytest.raises(ValueError):
            closed.write(b"late")
        cancelled = case.manager.create_atomic(case.path("b"))
        cancelled.cancel()
        with pytest.raises(ValueError):
            cancelled.write(b"late")


    def test_cancel_after_close_is_a_no_op(self, case: Case) -> None:
        path = case.path("a")
        out = case.manager.create_atomic(path)
        out.write(b"kept")
        out.close()
        out.cancel()
        out.close()
        assert read(case, path) == b"kept"


    def test_close_after_cancel_is_a_no_op(self, case: Case) -> None:
        path = case.path("a")
        out = case.manager.create_atomic(path)
        out.write(b"dropped")
        out.cancel()
        out.close()
        out.cancel()
        assert not case.manager.exists(path)


    # -- overwrite --------------------------------------------------------------------------------------------------
    def test_no_overwrite_on_existing_file_raises_and_keeps_it(self, case: Case) -> None:
        path = write(case, "commits/3", b"v1\n{}")
        with pytest.raises(FileAlreadyExistsError) as raised:
            with case.manager.create_atomic(path) as out:
                out.write(b"v1\n{\"other\":1}")
        assert isinstance(raised.value, FileExistsError)
        assert path in str(raised.value)
        assert read(case, path) == b"v1\n{}"
        assert case.open_uploads() == []


    def test_no_overwrite_of_large_file_on_existing_file_raises_and_keeps_it(self, case: Case) -> None:
        path = write(case, "state/4.snapshot", b"the original")
        with pytest.raises(FileAlreadyExistsError):
            with case.manager.create_atomic(path) as out:
                out.write(large_payload(case))
        assert read(case, path) == b"the original"
        assert case.open_uploads() == []


    @pytest.mark.parametrize("large", [False, True], ids=["small", "large"])
    def test_overwrite_replaces(self, case: Case, large: bool) -> None:
        path = write(case, "state/5.delta", b"old")
        new = large_payload(case) if large else b"new"
        write(case, "state/5.delta", new, overwrite=True)
        assert read(case, path) == new
        assert case.open_uploads() == []


    def test_concurrent_creators_one_winner(self, case: Case) -> None:
        path = case.path("offsets", "42")
        barrier = threading.Barrier(N_WRITERS)
        outcomes: dict[int, str] = {}

        def writer(i: int) -> None:
            out = case.manager.create_atomic(path)
            out.write(f"writer {i}".encode())
            barrier.wait()
            try:
                out.close()
                outcomes[i] = "won"
            except FileAlreadyExistsError:
                outcomes[i] = "lost"

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(N_WRITERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [i for i, outcome in outcomes.items() if outcome == "won"]
        assert len(outcomes) == N_WRITERS
        assert len(winners) == 1, outcomes
        assert read(case, path) == f"writer {winners[0]}".encode()
        assert names(case, case.path("offsets")) == ["42"]


    def test_precondition_failed_on_an_absent_key_fails_the_create(self, case: Case) -> None:
        """A conditional create answered 412 fails with FileAlreadyExistsError even when the key then reads as
        absent (the writer that held it has removed it since), and is never sent again: the 412 is the store's
        answer at the write's linearization point (docs/contract.md). The attempt before it failed with a 500, so
        the write may have landed: the manager reads the key back, finds no write of its own, and fails."""
        if not case.conditional_writes or case.server is None:
            pytest.skip(f"{case.name}: creates are not conditional writes to the embedded S3, whose fault layer "
                        "answers them here")
        path = case.path("commits", "9")
        creates = frozenset({"PutObject", "CompleteMultipartUpload"})
        where = re.escape(path.split("://", 1)[1]) + "$"
        case.server.faults.add(Fault("precondition-failed", creates, where, times=1), first=True)
        case.server.faults.add(Fault("server-error", creates, where, times=1), first=True)
        since = len(case.server.requests)
        with pytest.raises(FileAlreadyExistsError) as raised:
            write(case, "commits/9", b"v1\n{}")
        assert raised.value.path == path
        sent = [r for r in case.server.requests.all()[since:] if r.operation in creates and where_matches(where, r)]
        assert [r.fault for r in sent] == ["server-error", "precondition-failed"]  # never sent a third time
        assert not case.manager.exists(path)
        assert case.open_uploads() == []

    # -- reading and listing ----------------------------------------------------------------------------------------
    def test_open_missing_raises_not_found(self, case: Case) -> None:
        path = case.path("offsets", "99")
        with pytest.raises(PathNotFoundError) as raised:
            read(case, path)
        assert isinstance(raised.value, FileNotFoundError)
        assert path in str(raised.value)


    def test_list_children_sorted_with_dirs_and_filter(self, case: Case) -> None:
        before_ms = int(time.time() * 1000) - 5000
        for name in ("2", "10", "1", "1.compact"):
            write(case, f"log/{name}", f"v1\n{name}".encode())
        write(case, "log/sub/inner", b"x")
        listing = case.manager.list(case.path("log"))
        assert [s.name for s in listing] == sorted(["1", "1.compact", "10", "2", "sub"])
        by_name = {s.name: s for s in listing}
        assert by_name["sub"].is_dir and not by_name["10"].is_dir
        assert by_name["10"].size == len(b"v1\n10")
        assert by_name["10"].path == case.path("log", "10")
        assert by_name["10"].modification_time_ms >= before_ms
        numeric = case.manager.list(case.path("log"), lambda p: p.rsplit("/", 1)[-1].isdigit())
        assert [s.name for s in numeric] == ["1", "10", "2"]


    def test_list_of_missing_or_empty_directory_is_empty(self, case: Case) -> None:
        assert case.manager.list(case.path("never-written")) == []
        case.manager.mkdirs(case.path("made"))
        assert case.manager.list(case.path("made")) == []


    def test_exists_for_files_directories_and_missing(self, case: Case) -> None:
        write(case, "sources/0/0", b"v1\n")
        assert case.manager.exists(case.path("sources", "0", "0"))
        assert case.manager.exists(case.path("sources", "0"))
        assert case.manager.exists(case.path("sources"))
        assert not case.manager.exists(case.path("sources", "1"))
        assert not case.manager.exists(case.path("sources", "0", "0", "deeper"))


    def test_delete_file_directory_and_absent(self, case: Case) -> None:
        write(case, "keep", b"k")
        write(case, "gone", b"g")
        for i in range(3):
            write(case, f"tree/{i}", b"t")
            write(case, f"tree/deep/{i}", b"t")
        case.manager.delete(case.path("gone"))
        case.manager.delete(case.path("tree"))
        case.manager.delete(case.path("never-existed"))
        assert names(case, case.root) == ["keep"]
        assert not case.manager.exists(case.path("tree", "deep", "0"))


    def test_mkdirs_is_idempotent_and_allows_creates(self, case: Case) -> None:
        directory = case.path("commits")
        case.manager.mkdirs(directory)
        case.manager.mkdirs(directory)
        write(case, "commits/0", b"v1\n{}")
        assert names(case, directory) == ["0"]


    def test_a_made_directory_exists_and_is_listed_until_deleted(self, case: Case) -> None:
        """As Spark's own CheckpointFileManagerTests asserts: after ``mkdirs(dir)``, ``exists`` of it and of its
        parents is true and a listing of its parent shows it, before anything is written in it; a delete of it
        makes it absent."""
        directory = case.path("dir", "subdir", "subsubdir")
        assert not case.manager.exists(directory)
        case.manager.mkdirs(directory)
        assert case.manager.exists(directory)
        assert case.manager.exists(case.path("dir", "subdir"))
        assert [(s.name, s.is_dir) for s in case.manager.list(case.root)] == [("dir", True)]
        assert case.manager.list(directory) == []
        case.manager.delete(case.path("dir"))
        assert not case.manager.exists(directory)
        assert names(case, case.root) == []


    def test_create_checkpoint_directory_returns_usable_uri(self, case: Case) -> None:
        qualified = case.manager.create_checkpoint_directory(case.path("query"))
        assert "://" in qualified
        with case.manager.create_atomic(qualified.rstrip("/") + "/metadata") as out:
            out.write(b'{"id":"q"}')
        assert read(case, case.path("query", "metadata")) == b'{"id":"q"}'


    def test_errors_name_the_path(self, case: Case) -> None:
        path = case.path("missing", "file")
        with pytest.raises(CheckpointFsError) as raised:
            case.manager.open(path)
        assert raised.value.path == path
        assert raised.value.cause


    # -- cost -------------------------------------------------------------------------------------------------------
    def _past_the_store_check(self, case: Case, *, multipart: bool = False) -> None:
        """Pay the store check of the process's first create-if-absent to the bucket (and, with ``multipart``, of
        its first multipart one) with a first file, so that the counts that follow are of a commit alone."""
        if case.store_check:
            write(case, "checked/0", b"x")
            if multipart:
                write(case, "checked/1.snapshot", large_payload(case))

    def test_the_first_create_pays_the_store_check_once(self, case: Case) -> None:
        """docs/contract.md, "The store check": before the first create-if-absent of a process to a bucket, a
        canary's key is headed on S3 while missing (404: s3:ListBucket granted), the canary created, read back on S3
        (what the store keeps to settle a lost answer by), created again (refused) and deleted, beside the file;
        after it, a commit costs its own requests alone."""
        if not case.store_check or case.server is None or case.small_commit_requests is None:
            pytest.skip(f"{case.name}: checks no store before its creates")
        case.server.requests.clear()
        write(case, "offsets/0", b'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1}\n{"offset":0}')
        check = {"PutObject": 2, "DeleteObject": 1}
        if case.root.split("://", 1)[0] in ("s3", "s3a"):
            check["HeadObject"] = 2
        expected = {op: case.small_commit_requests.get(op, 0) + check.get(op, 0) for op in {*check,
                                                                                           *case.small_commit_requests}}
        assert case.server_counts() == expected
        canaries = [r.key for r in case.server.requests.all() if r.operation == "PutObject"][:2]
        assert canaries[0] == canaries[1] and "/offsets/_checkpointfs-store-check-" in canaries[0]
        assert [s.path.rsplit("/", 1)[-1] for s in case.manager.list(case.path("offsets"))] == ["0"]  # no canary
        case.server.requests.clear()
        write(case, "offsets/1", b'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1}\n{"offset":1}')
        assert case.server_counts() == case.small_commit_requests

    def test_a_store_that_ignores_conditional_writes_is_refused_before_anything_is_written(self, case: Case) -> None:
        """A store that drops If-None-Match (the embedded S3's ignore_conditional_writes) accepts the check's second
        create: the first create-if-absent fails with UnsafeStoreError naming the store, and nothing is published
        under the root, then or on the next try."""
        if not case.store_check or case.server is None:
            pytest.skip(f"{case.name}: checks no store before its creates")
        if not case.conditional_writes:
            pytest.skip(f"{case.name}: its store has no fault layer that can drop If-None-Match (the embedded S3's)")
        case.server.faults.ignore_conditional_writes = True
        for _ in range(2):
            with pytest.raises(UnsafeStoreError) as raised:
                write(case, "metadata", b'{"id":"q"}')
            message = str(raised.value)
            assert case.path("metadata") in message and "accepted a second put-if-absent" in message
            assert "checkpointfs doctor" in message and case.server.endpoint_url in message
        assert case.keys(paths.parse_object(case.root).key + "/") == []

    def test_small_file_commit_costs_exactly_the_promised_requests(self, case: Case) -> None:
        if case.small_commit_requests is None:
            pytest.skip(f"{case.name}: no request count to check ({case.no_cost_promise})")
        assert case.server is not None
        self._past_the_store_check(case)
        case.server.requests.clear()
        write(case, "offsets/0", b'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1}\n{"offset":0}')
        assert case.server_counts() == case.small_commit_requests

    def test_large_file_goes_up_in_parts_of_the_part_size(self, case: Case) -> None:
        """A file larger than the case's part size is a multipart upload of parts of that size: for the shim, the
        session's fs.s3a.multipart.size (5M), which the shim's own checkpoint-write settings keep when chosen."""
        if case.small_commit_requests is None or case.part_size is None:
            pytest.skip(f"{case.name}: no request count to check ({case.no_cost_promise})")
        assert case.server is not None
        data = large_payload(case)
        self._past_the_store_check(case, multipart=True)
        case.server.requests.clear()
        write(case, "state/1.snapshot", data)
        counts = case.server_counts()
        parts = -(-len(data) // case.part_size) - (1 if case.last_part_with_completion else 0)
        assert (counts.get("CreateMultipartUpload", 0), counts.get("UploadPart"),
                counts.get("CompleteMultipartUpload")) == (case.multipart_start_requests, parts, 1)
        assert read(case, case.path("state", "1.snapshot")) == data

    # -- probes (docs/contract.md, "exists: the probe rule") ------------------------------------------------------
    def _probe_case(self, case: Case) -> EmbeddedS3:
        if not case.probe_rule or case.server is None:
            pytest.skip(f"{case.name}: makes no promise about probe costs ({case.no_cost_promise})")
        return case.server

    def _put_by_another_writer(self, case: Case, name: str, data: bytes) -> str:
        """A file this manager did not write (so it knows nothing of it), put with an uncounted client."""
        server = self._probe_case(case)
        where = paths.parse_object(case.path(name))
        server.client(admin=True).put_object(Bucket=where.bucket, Key=where.key, Body=data)
        return case.path(name)

    def _counted(self, case: Case, action: Callable[[], T]) -> tuple[T, dict[str, int]]:
        assert case.server is not None
        case.server.requests.clear()
        result = action()
        return result, case.server_counts()

    def test_exists_of_a_file_is_one_head(self, case: Case) -> None:
        path = self._put_by_another_writer(case, "offsets/5", b"v1\n{}")
        assert self._counted(case, lambda: case.manager.exists(path)) == (True, {"HeadObject": 1})

    def test_exists_of_an_absent_file_below_the_root_is_one_request(self, case: Case) -> None:
        self._probe_case(case)
        for name in ("offsets/7", "sources/0/3.compact", "state/0/1/4.delta", "metadata"):
            assert self._counted(case, functools.partial(case.manager.exists, case.path(name))) == (
                False, {"HeadObject": 1}), name

    def test_exists_of_a_directory_is_still_true(self, case: Case) -> None:
        self._put_by_another_writer(case, "offsets/5", b"v1\n{}")
        self._put_by_another_writer(case, "state/0/0/1.delta", b"d")
        self._put_by_another_writer(case, "sources/0/0", b"v1\n")
        for name in ("offsets", "state", ""):
            path = case.path(name) if name else case.root
            exists, counts = self._counted(case, functools.partial(case.manager.exists, path))
            assert exists and counts == {"HeadObject": 1, "ListObjectsV2": 1}, name
        # A directory named as Spark names only files, below the root: answered as a file (Spark never asks
        # exists() of one, docs/contract.md), until the manager has seen it is a directory (here, in a listing).
        assert self._counted(case, lambda: case.manager.exists(case.path("sources", "0"))) == (False, {"HeadObject": 1})
        case.manager.list(case.path("sources"))
        assert case.manager.exists(case.path("sources", "0"))
        assert self._counted(case, lambda: case.manager.exists(case.path("nothing")))[0] is False

    def test_exists_after_own_publish_sends_no_request_and_delete_forgets(self, case: Case) -> None:
        self._probe_case(case)
        path = write(case, "commits/3", b"v1\n{}")
        assert self._counted(case, lambda: case.manager.exists(path)) == (True, {})
        assert self._counted(case, lambda: read(case, path)) == (b"v1\n{}", {})
        case.manager.delete(path)
        assert self._counted(case, lambda: case.manager.exists(path)) == (False, {"HeadObject": 1})
        with pytest.raises(PathNotFoundError):
            read(case, path)

    def test_exists_of_the_next_batch_of_an_own_log_sends_no_request(self, case: Case) -> None:
        """The probe rule's rule 3: once this manager published batch N-1 of a log, exists(N) is false with no
        request (while the store check is on); a second writer's N then fails the create, never overwritten."""
        self._probe_case(case)
        free = {} if case.store_check else {"HeadObject": 1}
        write(case, "offsets/0", b"v1\n{0}")
        write(case, "offsets/1", b"v1\n{1}")
        assert self._counted(case, lambda: case.manager.exists(case.path("offsets", "2"))) == (False, free)
        assert self._counted(case, lambda: case.manager.exists(case.path("offsets", "2.compact"))) == (False, free)
        assert self._counted(case, lambda: case.manager.exists(case.path("offsets", "3"))) == (
            False, {"HeadObject": 1})  # its batch before is not this manager's
        assert self._counted(case, lambda: case.manager.exists(case.path("commits", "2"))) == (
            False, {"HeadObject": 1})  # another log
        write(case, "state/0/0/1.delta", b"d")  # not a log batch: its successor is probed
        assert self._counted(case, lambda: case.manager.exists(case.path("state", "0", "0", "2.delta"))) == (
            False, {"HeadObject": 1})
        self._put_by_another_writer(case, "offsets/2", b"v1\n{theirs}")
        assert self._counted(case, lambda: case.manager.exists(case.path("offsets", "2")))[0] is (not case.store_check)
        with pytest.raises(FileAlreadyExistsError):
            write(case, "offsets/2", b"v1\n{ours}")
        assert read(case, case.path("offsets", "2")) == b"v1\n{theirs}"
        case.manager.delete(case.path("offsets", "1"))  # forgotten: the next batch is probed again
        assert self._counted(case, lambda: case.manager.exists(case.path("offsets", "2"))) == (True, {"HeadObject": 1})

    def test_mkdirs_and_exists_of_a_made_directory_send_no_request(self, case: Case) -> None:
        """The probe rule's rule 1 for directories: mkdirs sends nothing, and the directory it made (and each
        parent) is present with no request; a listing of its parent adds it to the store's answer; once deleted it
        is probed again."""
        self._probe_case(case)
        directory = case.path("state", "0", "3")
        assert self._counted(case, lambda: case.manager.mkdirs(directory)) == (None, {})
        for path in (directory, case.path("state", "0"), case.path("state")):
            assert self._counted(case, functools.partial(case.manager.exists, path)) == (True, {}), path
        listing, counts = self._counted(case, lambda: case.manager.list(case.path("state", "0")))
        unmade = self._counted(case, lambda: case.manager.list(case.path("other", "0")))
        assert ([s.name for s in listing], counts) == (["3"], unmade[1]) and unmade[0] == [], (listing, counts, unmade)
        case.manager.delete(directory)
        exists, counts = self._counted(case, lambda: case.manager.exists(directory))
        assert not exists and "HeadObject" in counts, counts

    def test_exists_after_own_overwrite_probes(self, case: Case) -> None:
        self._probe_case(case)
        path = write(case, "state/0/0/1.delta", b"d", overwrite=True)
        assert self._counted(case, lambda: case.manager.exists(path)) == (True, {"HeadObject": 1})

    def test_open_is_one_get(self, case: Case) -> None:
        unseen = self._put_by_another_writer(case, "offsets/6", b"v1\n{}")
        heads = {"HeadObject": case.open_unseen_heads} if case.open_unseen_heads else {}
        assert self._counted(case, lambda: read(case, unseen)) == (b"v1\n{}", {**heads, "GetObject": 1})
        # A file the manager listed: one GET, whatever the implementation (the shim gives S3A the listed status).
        listed = self._put_by_another_writer(case, "offsets/7", b"v1\n{7}")
        case.manager.list(case.path("offsets"))
        assert self._counted(case, lambda: read(case, listed)) == (b"v1\n{7}", {"GetObject": 1})
        big = write(case, "offsets/8", b"x" * (70 * 1024))  # above what is kept in memory
        heads = {"HeadObject": case.open_own_large_heads} if case.open_own_large_heads else {}
        assert self._counted(case, lambda: read(case, big)) == (b"x" * (70 * 1024), {**heads, "GetObject": 1})

    def test_open_of_a_listed_file_changed_or_deleted_since_reads_the_store(self, case: Case) -> None:
        """What a listing said never hides a later change: open() reads the file as it is now, or fails as for a
        file never seen when it is gone."""
        changed = self._put_by_another_writer(case, "offsets/3", b"v1\n{3}")
        gone = self._put_by_another_writer(case, "offsets/4", b"v1\n{4}")
        case.manager.list(case.path("offsets"))
        self._put_by_another_writer(case, "offsets/3", b"v1\n{3, written again, longer}")
        server = self._probe_case(case)
        where = paths.parse_object(gone)
        server.client(admin=True).delete_object(Bucket=where.bucket, Key=where.key)
        assert read(case, changed) == b"v1\n{3, written again, longer}"
        with pytest.raises(PathNotFoundError):
            read(case, gone)
        assert not case.manager.exists(gone)
