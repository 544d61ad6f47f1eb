"""The golden tables of the manager's decisions (the probe rule, what a manager knows, the orphan-upload window)
against Python's functions. Each meta-test changes one clause of a rule and checks that some golden case then fails:
a rule no case pins is a defect of the table."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from checkpointfs import protocol
from checkpointfs.direct import probes
from checkpointfs.direct.probes import Knowledge, exists_plan
from checkpointfs.direct.stream import is_orphan

HERE = Path(__file__).parent
PROBES = json.loads((HERE / "golden_probes.json").read_text())
KNOWLEDGE = json.loads((HERE / "golden_knowledge.json").read_text())
ORPHANS = json.loads((HERE / "golden_orphans.json").read_text())
BUCKET = "b"


def located(path: str) -> tuple[str, str]:
    """``bucket:key`` or a key of the root's bucket."""
    bucket, _, key = path.rpartition(":")
    return bucket or BUCKET, key


def content_of(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, dict):
        return b"x" * int(value["size"])
    return str(value).encode()


# -- the probe rule --------------------------------------------------------------------------------------------------
def probe_plan(case: dict[str, Any]) -> str:
    known = Knowledge()
    for key in case.get("published", []):
        known.published(BUCKET, key, None, put_if_absent=True)
    known.listed(BUCKET, case.get("directories", []), [])
    for key in case.get("made", []):
        known.made(BUCKET, key)
    bucket, key = located(case["path"])
    return exists_plan(known, tuple(PROBES["root"]), bucket, key, mode=case.get("mode", "log-order"),
                       store_check=case.get("store_check", True))


def probe_failures() -> list[str]:
    return [f"{c['why']}: {got}" for c in PROBES["cases"] if (got := probe_plan(c)) != c["plan"]]


@pytest.mark.parametrize("case", PROBES["cases"], ids=lambda c: c["why"])
def test_probe_rule(case: dict[str, Any]) -> None:
    assert probe_plan(case) == case["plan"]


# -- what a manager knows -------------------------------------------------------------------------------------------
def knowledge_failures(case: dict[str, Any], make: Callable[[int, int], Knowledge] = Knowledge) -> list[str]:
    known = make(case.get("capacity", protocol.KNOWLEDGE_CAPACITY), case.get("budget", protocol.CONTENT_BUDGET_BYTES))
    wrong = []
    for op in case["ops"]:
        name, args = op[0], op[1:]
        if name == "published":
            known.published(BUCKET, args[0], content_of(args[1]), put_if_absent=args[2])
        elif name == "listed":
            known.listed(BUCKET, args[0], args[1])
        elif name == "forget":
            known.forget(BUCKET, args[0])
        elif name == "forget_file":
            known.forget_file(BUCKET, args[0])
        elif name == "made":
            known.made(BUCKET, args[0])
        else:
            got: Any = {"is_published": known.is_published, "content": known.content,
                        "is_directory": known.is_directory, "is_next_batch": known.is_next_batch,
                        "is_made": known.is_made, "made_children": known.made_children}[name](BUCKET, args[0])
            expected = content_of(args[1]) if name == "content" else args[1]
            if got != expected:
                wrong.append(f"{case['why']}: {op} gave {got!r}")
    return wrong


@pytest.mark.parametrize("case", KNOWLEDGE["cases"], ids=lambda c: c["why"])
def test_knowledge(case: dict[str, Any]) -> None:
    assert knowledge_failures(case) == []


def all_knowledge_failures(make: Callable[[int, int], Knowledge] = Knowledge) -> list[str]:
    return [f for case in KNOWLEDGE["cases"] for f in knowledge_failures(case, make)]


# -- the orphan-upload window ---------------------------------------------------------------------------------------
def orphan_failures(rule: Callable[..., bool] = is_orphan) -> list[str]:
    return [c["why"] for c in ORPHANS["cases"]
            if rule(c["initiated"], since=ORPHANS["since"], until=ORPHANS["until"],
                    slack=protocol.ORPHAN_CLOCK_SLACK_S) != c["orphan"]]


@pytest.mark.parametrize("case", ORPHANS["cases"], ids=lambda c: c["why"])
def test_orphan_window(case: dict[str, Any]) -> None:
    assert is_orphan(case["initiated"], since=ORPHANS["since"], until=ORPHANS["until"]) == case["orphan"]


def test_the_orphan_table_states_the_protocols_slack() -> None:
    assert "clock_slack_s (300)" in ORPHANS["about"] and protocol.ORPHAN_CLOCK_SLACK_S == 300


# -- each clause of each rule is pinned ------------------------------------------------------------------------------
@contextmanager
def replaced(target: Any, name: str, value: Any) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(target, name, value)
        yield


PROBE_CLAUSES: dict[str, tuple[Any, str, Any]] = {
    "published files answered from memory": (Knowledge, "is_published", lambda self, b, k: False),
    "made directories answered from memory": (Knowledge, "is_made", lambda self, b, k: False),
    "the next batch answered absent": (Knowledge, "is_next_batch", lambda self, b, k: False),
    "directories seen probed as directories": (Knowledge, "is_directory", lambda self, b, k: False),
    "only file names take one head request": (probes, "is_file_name", lambda name: True),
    "file names take one head request": (probes, "is_file_name", lambda name: False),
    "only paths below the root take the file rule": (probes, "is_below", lambda root, b, k: True),
}


@pytest.mark.parametrize("clause", PROBE_CLAUSES)
def test_every_clause_of_the_probe_rule_is_pinned(clause: str) -> None:
    assert probe_failures() == []
    with replaced(*PROBE_CLAUSES[clause]):
        assert probe_failures(), f"no golden case pins: {clause}"


class _ReadRefreshes(Knowledge):
    """A manager whose reads keep a file longer (an access-ordered cache), the other choice of order."""

    def is_published(self, bucket: str, key: str) -> bool:
        found = super().is_published(bucket, key)
        if found:
            with self._lock:
                self._published.move_to_end((bucket, key))
        return found


class _NoBudget(Knowledge):
    def __init__(self, capacity: int, budget: int) -> None:
        super().__init__(capacity, 1 << 40)


class _KeepsAnyContent(Knowledge):
    def published(self, bucket: str, key: str, content: bytes | None, put_if_absent: bool) -> None:
        super().published(bucket, key, content, put_if_absent)
        if put_if_absent and content is not None:
            with self._lock:
                self._published[(bucket, key)] = content


class _RemembersOverwrites(Knowledge):
    def published(self, bucket: str, key: str, content: bytes | None, put_if_absent: bool) -> None:
        super().published(bucket, key, content, True)


class _ForgetsByStringPrefix(Knowledge):
    def forget(self, bucket: str, key: str) -> None:
        with self._lock:
            for name in [n for n in self._published if n[0] == bucket and n[1].startswith(key)]:
                self._drop(name)


class _MadeAlone(Knowledge):
    """A manager that remembers the directory mkdirs made, not its parents."""

    def made(self, bucket: str, key: str) -> None:
        with self._lock:
            self._made[(bucket, key)] = None


class _UnmadeByDeletesBelow(Knowledge):
    """A manager whose delete of anything in a made directory forgets the directory too."""

    def forget(self, bucket: str, key: str) -> None:
        super().forget(bucket, key)
        with self._lock:
            for name in [n for n in self._made if n[0] == bucket and key.startswith(n[1] + "/")]:
                del self._made[name]


KNOWLEDGE_CLAUSES: dict[str, Callable[[int, int], Knowledge]] = {
    "a made directory's parents are made too": _MadeAlone,
    "a delete below a made directory keeps it": _UnmadeByDeletesBelow,
    "the order is the order of publishing, not of reading": _ReadRefreshes,
    "content is kept within the budget": _NoBudget,
    "only small log batches keep their bytes": _KeepsAnyContent,
    "overwrites are not remembered as published": _RemembersOverwrites,
    "forget is by path, not by string prefix": _ForgetsByStringPrefix,
}


@pytest.mark.parametrize("clause", KNOWLEDGE_CLAUSES)
def test_every_clause_of_knowledge_is_pinned(clause: str) -> None:
    assert all_knowledge_failures() == []
    assert all_knowledge_failures(KNOWLEDGE_CLAUSES[clause]), f"no golden case pins: {clause}"


ORPHAN_CLAUSES: dict[str, Callable[..., bool]] = {
    "the lower bound": lambda i, *, since, until, slack: i is not None and i <= until + slack,
    "the upper bound": lambda i, *, since, until, slack: i is not None and since - slack <= i,
    "the slack": lambda i, *, since, until, slack: i is not None and since <= i <= until,
    "an undated upload is left alone":
        lambda i, *, since, until, slack: i is None or since - slack <= i <= until + slack,
}


@pytest.mark.parametrize("clause", ORPHAN_CLAUSES)
def test_every_clause_of_the_orphan_window_is_pinned(clause: str) -> None:
    assert orphan_failures() == []
    assert orphan_failures(ORPHAN_CLAUSES[clause]), f"no golden case pins: {clause}"
