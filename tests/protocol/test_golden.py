"""The golden cases of the write protocol against Python's table and settle function; the shim's Scala suite
(jvm-shim/src/test/scala/io/checkpointfs/spark/ProtocolGoldenSuite.scala) runs the same file against its own."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from checkpointfs import errors, protocol
from checkpointfs.protocol import Answer, Rules

GOLDEN = json.loads((Path(__file__).parent / "golden_settle.json").read_text())


def answer_of(case: dict[str, Any]) -> Answer:
    fields = case["answer"]
    return Answer(status=int(fields.get("status", 0)), code=str(fields.get("code", "")),
                  transport=fields.get("transport"))


def jvm_answer_of(case: dict[str, Any], rules: Rules = protocol.RULES) -> Answer:
    fields = case["answer"]
    return rules.jvm_answer(tuple(fields["jvm_classes"]), status=int(fields.get("status", 0)))


def failures(rules: Rules) -> list[str]:
    """The golden cases ``rules`` gets wrong, described."""
    wrong = []
    answers = [(case, answer_of(case)) for case in GOLDEN["classify"]]
    answers += [(case, jvm_answer_of(case, rules)) for case in GOLDEN["classify_jvm"]]
    for case, answer in answers:
        got = rules.classify(answer)
        expected = (case["class"], case["retried"], case["may_have_applied"], case["error"])
        if (got.name, got.retried, got.may_have_applied, got.error) != expected:
            wrong.append(f"{case['answer']}: {got} != {expected}")
    for case in GOLDEN["settle"]:
        final = rules.classes[case["class"]]
        outcome = protocol.settle(final, overwrite=case["overwrite"], maybe_applied=case["maybe_applied"],
                                  owner=case["owner"])
        if outcome != case["outcome"]:
            wrong.append(f"settle {case}: {outcome}")
    return wrong


@pytest.mark.parametrize("case", GOLDEN["classify"], ids=lambda c: json.dumps(c["answer"], sort_keys=True))
def test_classify(case: dict[str, Any]) -> None:
    got = protocol.classify(answer_of(case))
    assert (got.name, got.retried, got.may_have_applied, got.error) == (
        case["class"], case["retried"], case["may_have_applied"], case["error"])


@pytest.mark.parametrize("case", GOLDEN["classify_jvm"], ids=lambda c: c["why"])
def test_classify_jvm(case: dict[str, Any]) -> None:
    got = protocol.classify(jvm_answer_of(case))
    assert (got.name, got.retried, got.may_have_applied, got.error) == (
        case["class"], case["retried"], case["may_have_applied"], case["error"])


def test_every_error_names_a_checkpointfs_error_type() -> None:
    data = protocol.load()["answers"]
    for rule in data["rules"]:
        assert errors.error_type(protocol.RULES.classes[rule["class"]].error) is not None
        if "error" in rule:
            assert issubclass(getattr(errors, rule["error"]), errors.CheckpointFsError)
    for answer_class in protocol.CLASSES.values():
        assert issubclass(errors.error_type(answer_class.error), errors.CheckpointFsError)


@pytest.mark.parametrize("case", GOLDEN["settle"], ids=lambda c: c["why"])
def test_settle(case: dict[str, Any]) -> None:
    final = protocol.CLASSES[case["class"]]
    assert protocol.needs_owner(final, overwrite=case["overwrite"], maybe_applied=case["maybe_applied"]) == (
        case["owner"] is not None)
    assert protocol.settle(final, overwrite=case["overwrite"], maybe_applied=case["maybe_applied"],
                           owner=case["owner"]) == case["outcome"]


@pytest.mark.parametrize("case", GOLDEN["hidden_attempts"], ids=lambda c: c["class"])
def test_hidden_attempts(case: dict[str, Any]) -> None:
    assert protocol.hidden_attempts_maybe_applied(protocol.CLASSES[case["class"]]) is case["maybe_applied"]


def test_shipped_table_passes_every_case() -> None:
    assert failures(protocol.RULES) == []


def test_every_rule_and_class_is_pinned_by_a_golden_case() -> None:
    """A change to any one rule's class or to any class's properties fails a golden case: none of the table is
    unchecked (the shim's suite makes the same check of its compiled table)."""
    data = protocol.load()["answers"]
    classes = [name for name in data["classes"] if name != "about"]
    unpinned = []
    for index, rule in enumerate(data["rules"]):
        for other in classes:
            if other == rule["class"]:
                continue
            changed = copy.deepcopy(data)
            changed["rules"][index]["class"] = other
            changed["rules"][index].pop("error", None)
            if not failures(Rules(changed)):
                unpinned.append(f"rule {index} ({rule['class']} -> {other})")
    for name in classes:
        for field in ("retried", "may_have_applied"):
            changed = copy.deepcopy(data)
            changed["classes"][name][field] = not changed["classes"][name][field]
            if not failures(Rules(changed)):
                unpinned.append(f"class {name}.{field}")
    assert unpinned == []


def test_settle_refuses_to_guess_without_the_owner() -> None:
    with pytest.raises(ValueError, match="needs the owner"):
        protocol.settle(protocol.CLASSES["settle"], overwrite=False, maybe_applied=True, owner=None)


def test_facts_are_read_from_the_data_file() -> None:
    data = protocol.load()
    assert protocol.WRITE_ID_KEY == data["write_id"]["metadata_key"]
    assert protocol.PART_SIZE_BYTES == data["multipart"]["part_size_bytes"]
    assert protocol.PARTS_IN_FLIGHT == data["multipart"]["parts_in_flight"]
    assert protocol.ORPHAN_CLOCK_SLACK_S == data["orphan_uploads"]["clock_slack_s"]
    assert protocol.KNOWLEDGE_CAPACITY == data["knowledge"]["capacity"]
    assert protocol.DIRECTORY_BUCKET_SUFFIX == data["s3_directory_bucket"]["name_suffix"]
    assert protocol.is_file_name("12.compact") and protocol.is_file_name("3_ab-1.zip")
    assert protocol.is_file_name("metadata") and protocol.is_file_name(".1.delta.crc")
    assert not protocol.is_file_name("offsets") and not protocol.is_file_name(".crc")


@pytest.mark.parametrize("case", GOLDEN["owner"], ids=lambda c: c["why"])
def test_owner_of_object(case: dict[str, Any]) -> None:
    kept, sent = case["object"], case["sent"]
    assert protocol.owner_of_object(case["found"], object_write_id=kept["write_id"],
                                    object_checksum=kept["checksum"], object_size=kept["size"],
                                    write_id=sent["write_id"], sent_checksum=sent["checksum"],
                                    sent_size=sent["size"]) == case["owner"]


def test_owner_cases_cover_every_owner_and_both_kinds_of_evidence() -> None:
    """The owner table decides by write id and by checksum, and reaches each owner by checksum."""
    by_checksum = {c["owner"] for c in GOLDEN["owner"] if c["found"] == "present" and not c["object"]["write_id"]}
    assert by_checksum == {"ours", "other"}
    assert {c["owner"] for c in GOLDEN["owner"]} == {"ours", "other", "absent", "unreadable"}


@pytest.mark.parametrize("case", GOLDEN["cancel"], ids=lambda c: c["why"])
def test_cancel_recognises_its_object_by_the_owner_table(case: dict[str, Any]) -> None:
    """The shim's close-then-delete cancel recognises its own object by the same owner table as settling (the
    shim's suite checks whether it deletes); here, the owner and whether anything tells the object apart."""
    kept, sent = case["object"], case["sent"]
    assert protocol.owner_of_object(case["found"], object_write_id=kept["write_id"],
                                    object_checksum=kept["checksum"], object_size=kept["size"],
                                    write_id=sent["write_id"], sent_checksum=sent["checksum"],
                                    sent_size=sent["size"]) == case["owner"]
    assert protocol.told_apart(object_write_id=kept["write_id"], object_checksum=kept["checksum"],
                               sent_checksum=sent["checksum"]) is case["told_apart"]


def test_cancel_cases_delete_by_checksum_and_leave_by_checksum() -> None:
    """The cancel table reaches both verdicts by checksum, where no write id was kept, after a close that succeeded
    and after one that failed, and deletes an object nothing tells apart only after a close that succeeded."""
    by_checksum = {(c["closed"], c["deletes"]) for c in GOLDEN["cancel"]
                   if c["found"] == "present" and not c["object"]["write_id"] and c["told_apart"]}
    assert by_checksum == {(True, True), (True, False), (False, True), (False, False)}
    untold = {(c["closed"], c["deletes"]) for c in GOLDEN["cancel"] if c["found"] == "present" and not c["told_apart"]}
    assert untold == {(True, True), (False, False)}
