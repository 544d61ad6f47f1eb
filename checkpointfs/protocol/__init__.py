"""The write protocol's facts, read from ``protocol.json`` (the one place they are stated; the JVM shim compiles the
same file into ``io.checkpointfs.spark.Protocol``), and the two pure decisions every store's writer makes with them:

- :func:`classify`: which class a store's answer to a failed request falls in (``conflict``, ``retry``, ``settle``,
  ``unavailable``, ``refuse``, ``not-found``, ``upload-gone``), with whether it is retried and whether the request
  may have been applied;
- :func:`settle`: what a failed commit means, given the class of its last answer, whether any attempt may have been
  applied, and, when :func:`needs_owner` asks for it, whose write id the object carries now.

``tests/protocol/golden_settle.json`` holds store answers and the outcomes both languages must reach.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

__all__ = [
    "AZURE_WRITE_ID_KEY",
    "CLASSES",
    "CONTENT_BUDGET_BYTES",
    "DIRECTORY_BUCKET_SUFFIX",
    "KNOWLEDGE_CAPACITY",
    "MAX_CONTENT_BYTES",
    "ORPHAN_CLOCK_SLACK_S",
    "PART_SIZE_BYTES",
    "PARTS_IN_FLIGHT",
    "WRITE_ID_KEY",
    "Answer",
    "AnswerClass",
    "Outcome",
    "Owner",
    "Rules",
    "classify",
    "is_file_name",
    "is_log_batch_name",
    "is_throttle",
    "load",
    "hidden_attempts_maybe_applied",
    "needs_owner",
    "settle",
    "told_apart",
]


def load() -> dict[str, Any]:
    """The parsed ``protocol.json`` shipped with the package."""
    text = resources.files(__package__).joinpath("protocol.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


_DATA = load()

WRITE_ID_KEY: str = _DATA["write_id"]["metadata_key"]
"""User-metadata key (``x-amz-meta-checkpointfs-write-id`` on S3) holding the id of the create that wrote an object."""
AZURE_WRITE_ID_KEY: str = _DATA["write_id"]["azure_metadata_key"]
"""The same key on Azure Blob Storage (``x-ms-meta-checkpointfs_write_id``), whose metadata names must be C#
identifiers: no hyphen."""

KNOWLEDGE_CAPACITY: int = _DATA["knowledge"]["capacity"]
"""Files and directories a manager remembers, per kind."""
MAX_CONTENT_BYTES: int = _DATA["knowledge"]["max_content_bytes"]
"""Published log-batch files up to this size are kept in memory, so that reading them back sends no request."""
CONTENT_BUDGET_BYTES: int = _DATA["knowledge"]["content_budget_bytes"]
"""Bytes a manager keeps in memory, at most."""

PART_SIZE_BYTES: int = _DATA["multipart"]["part_size_bytes"]
"""Default part size: files up to it are one PutObject; larger ones stream as parts of this size."""
PARTS_IN_FLIGHT: int = _DATA["multipart"]["parts_in_flight"]
"""Default parts of one file uploaded at once."""

ORPHAN_CLOCK_SLACK_S: float = float(_DATA["orphan_uploads"]["clock_slack_s"])
"""Slack around a stream's lifetime when matching open uploads of its key that a lost answer left behind."""

DIRECTORY_BUCKET_SUFFIX: str = _DATA["s3_directory_bucket"]["name_suffix"]
"""How an S3 directory bucket's name ends (S3 Express One Zone: ``<base>--<zone id>--x-s3``), as AWS's SDKs tell one."""

_NAMES = _DATA["file_names"]
_LOG_BATCH = re.compile(_NAMES["log_batch"])
_STATE_FILE = re.compile(_NAMES["state_file"])
_EXACT_NAMES: frozenset[str] = frozenset(_NAMES["exact"])
_CHECKSUM_SUFFIX: str = _NAMES["checksum_suffix"]


def is_file_name(name: str) -> bool:
    """Whether Spark gives ``name`` only to files: log batches (``12``, ``12.compact``), state store files
    (``12.delta``, ``12.snapshot``, ``12.zip``, ``12_<id>.zip``, ``12.changelog``), ``metadata``, ``*.crc``."""
    return (bool(_LOG_BATCH.fullmatch(name)) or bool(_STATE_FILE.fullmatch(name)) or name in _EXACT_NAMES
            or (len(name) > len(_CHECKSUM_SUFFIX) and name.lower().endswith(_CHECKSUM_SUFFIX)))


def is_log_batch_name(name: str) -> bool:
    """Whether ``name`` is a metadata-log batch file's (``12``, ``12.compact``): the only files whose bytes a manager
    keeps after publishing them (Spark reads them back; a state store does not)."""
    return bool(_LOG_BATCH.fullmatch(name))


# -- classifying answers ---------------------------------------------------------------------------------------------
ClassName = Literal["conflict", "retry", "settle", "unavailable", "refuse", "not-found", "upload-gone"]
Transport = Literal["connect", "timeout", "truncated", "reset"]


@dataclass(frozen=True)
class Answer:
    """A store's answer to a failed request, in the table's terms: the HTTP ``status`` (0: none came), the error
    ``code`` (``""``: none), the ``transport`` failure kind when no answer came, and the names of the client's
    exception classes (the class and its superclasses), for rules that name them: ``python_classes`` for a Python
    client's, ``jvm_classes`` (qualified, as Java's ``Class.getName`` gives them) for a JVM one's."""

    status: int = 0
    code: str = ""
    transport: Transport | None = None
    python_classes: tuple[str, ...] = ()
    jvm_classes: tuple[str, ...] = ()


def _jvm_names_match(names: frozenset[str], class_names: tuple[str, ...]) -> bool:
    """Whether one of ``class_names`` (qualified) is named in ``names``: by its qualified name, or by its simple
    name (``UnknownStoreException`` names ``org.apache.hadoop.fs.s3a.UnknownStoreException``)."""
    return any(name in names or re.split(r"[.$]", name)[-1] in names for name in class_names)


@dataclass(frozen=True)
class AnswerClass:
    """One class of the table: whether such a failure is retried, whether the request may have been applied, and the
    ``checkpointfs.errors`` type it becomes once it is final (``error``, possibly refined by the rule)."""

    name: ClassName
    retried: bool
    may_have_applied: bool
    error: str


@dataclass(frozen=True)
class _Rule:
    codes: frozenset[str]
    statuses: frozenset[int]
    transports: frozenset[str]
    python_classes: frozenset[str]
    jvm_classes: frozenset[str]
    answer_class: AnswerClass

    def matches(self, answer: Answer) -> bool:
        return (answer.code in self.codes or answer.status in self.statuses
                or (answer.transport is not None and answer.transport in self.transports)
                or any(name in self.python_classes for name in answer.python_classes)
                or _jvm_names_match(self.jvm_classes, answer.jvm_classes))


class Rules:
    """The answer table of ``protocol.json`` (its ``answers`` section), ready to classify."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.classes: dict[str, AnswerClass] = {
            name: AnswerClass(name, bool(c["retried"]), bool(c["may_have_applied"]), str(c["error"]))
            for name, c in answers["classes"].items() if name != "about"}
        self._rules: list[_Rule] = []
        for rule in answers["rules"]:
            base = self.classes[rule["class"]]
            answer_class = AnswerClass(base.name, base.retried, base.may_have_applied, rule.get("error", base.error))
            self._rules.append(_Rule(frozenset(rule.get("codes", ())), frozenset(rule.get("statuses", ())),
                                     frozenset(rule.get("transports", ())), frozenset(rule.get("python_classes", ())),
                                     frozenset(rule.get("jvm_classes", ())), answer_class))
        transports = {kind: names for kind, names in answers["transports"].items() if kind != "about"}
        self.transport_classes: dict[str, tuple[str, ...]] = {
            kind: tuple(names["python"]) for kind, names in transports.items()}
        self.jvm_transport_classes: dict[str, frozenset[str]] = {
            kind: frozenset(names["jvm"]) for kind, names in transports.items()}
        self._default_4xx = self.classes[answers["default_4xx"]]
        self._default_5xx = self.classes[answers["default_5xx"]]
        self._default_unanswered = self.classes[answers["default_unanswered"]]

    def match(self, answer: Answer) -> AnswerClass | None:
        """The class of the first rule that matches ``answer``; None when no rule names it (no default)."""
        for rule in self._rules:
            if rule.matches(answer):
                return rule.answer_class
        return None

    def classify(self, answer: Answer) -> AnswerClass:
        """The class of ``answer``: the first rule that matches, else the default for its status range."""
        matched = self.match(answer)
        if matched is not None:
            return matched
        if 400 <= answer.status < 500:
            return self._default_4xx
        if answer.status >= 500:
            return self._default_5xx
        return self._default_unanswered

    def transport_of(self, class_names: tuple[str, ...]) -> Transport | None:
        """The transport failure kind a Python exception stands for, from the names of its class and superclasses."""
        for kind, names in self.transport_classes.items():
            if any(name in names for name in class_names):
                return kind  # type: ignore[return-value]
        return None

    def jvm_transport_of(self, class_names: tuple[str, ...]) -> Transport | None:
        """The transport failure kind a Java exception stands for, from the qualified names of its class and
        superclasses (matched by qualified or simple name)."""
        for kind, names in self.jvm_transport_classes.items():
            if _jvm_names_match(names, class_names):
                return kind  # type: ignore[return-value]
        return None

    def jvm_answer(self, class_names: tuple[str, ...], status: int = 0, code: str = "") -> Answer:
        """The :class:`Answer` a Java exception stands for: its class names (qualified, the class and its
        superclasses), the HTTP ``status`` it carries (0: none), and the transport kind those names stand for."""
        return Answer(status=status, code=code, transport=self.jvm_transport_of(class_names),
                      jvm_classes=class_names)


RULES = Rules(_DATA["answers"])
"""The table as shipped."""
CLASSES = RULES.classes
"""The answer classes by name."""

_THROTTLE_RULE = next(rule for rule in _DATA["answers"]["rules"] if "SlowDown" in rule.get("codes", ()))
_THROTTLE_CODES: frozenset[str] = frozenset(_THROTTLE_RULE["codes"])
_THROTTLE_STATUSES: frozenset[int] = frozenset(_THROTTLE_RULE.get("statuses", ()))


def is_throttle(answer: Answer) -> bool:
    """Whether ``answer`` asked the client to slow down (503 SlowDown, 429, and the other codes of the table's rule
    that names SlowDown): what the metric ``throttled`` counts."""
    return answer.code in _THROTTLE_CODES or answer.status in _THROTTLE_STATUSES


def classify(answer: Answer) -> AnswerClass:
    """The class of a store's ``answer`` in the shipped table."""
    return RULES.classify(answer)


# -- settling a failed commit ----------------------------------------------------------------------------------------
Owner = Literal["ours", "other", "absent", "unreadable"]
"""Whose write id the object carries when read back: this write's, another's (or none: an object without one is
another writer's), no object, or the read itself failed."""
Outcome = Literal["success", "conflict", "unknown", "error"]
"""What a failed commit means: it landed after all; the key is another writer's (FileAlreadyExistsError); it may or
may not become visible (WriteOutcomeUnknownError); or the last answer's own error (nothing of this write applied)."""


Found = Literal["present", "absent", "unreadable"]
"""What reading the object back found: an object, none, or the read failed."""


def owner_of_object(found: Found, *, object_write_id: str, object_checksum: str, object_size: int, write_id: str,
                    sent_checksum: str, sent_size: int) -> Owner:
    """Whose write the object read back holds. Its write id decides where the store kept one (user metadata): ours
    when it is ``write_id``. Where the store keeps none (a directory bucket without user metadata, some S3-compatible
    stores), the checksum the store kept, sent with the write (``x-amz-checksum-*``), and the size decide: ours when
    both are what this writer sent, another's when either differs. With neither a write id nor a checksum to compare
    (none kept, or none sent, as with a multipart upload), the object is another writer's, as an object without this
    write's id always was. Checksums are compared as the store names them (``sha256:<base64>``): one of another
    algorithm differs. A checksum tells bytes, not writers: another writer's byte-identical object reads as ours."""
    if found != "present":
        return found
    if not told_apart(object_write_id=object_write_id, object_checksum=object_checksum,
                      sent_checksum=sent_checksum):
        return "other"
    if object_write_id:
        return "ours" if object_write_id == write_id else "other"
    return "ours" if object_checksum == sent_checksum and object_size == sent_size else "other"


def told_apart(*, object_write_id: str, object_checksum: str, sent_checksum: str) -> bool:
    """Whether an object read back can be told this writer's or another's at all: the store kept a write id, or it
    kept a checksum and this writer sent one. Where it cannot, :func:`owner_of_object` calls it another writer's;
    the shim's close-then-delete cancel, after a close that succeeded, deletes it (the close's success is the only
    evidence there is)."""
    return bool(object_write_id) or bool(object_checksum and sent_checksum)


def needs_owner(final: AnswerClass, *, overwrite: bool, maybe_applied: bool) -> bool:
    """Whether :func:`settle` needs the object's write id read back: whenever an attempt may have been applied (the
    last answer's class and ``overwrite`` do not spare the read: any final failure can follow an attempt that landed).
    A caller that cannot see its client's attempts (the shim behind S3A) passes ``maybe_applied`` for every class
    a retried or conflicting answer can hide an attempt behind: see :func:`hidden_attempts_maybe_applied`."""
    del final, overwrite
    return maybe_applied


def hidden_attempts_maybe_applied(final: AnswerClass) -> bool:
    """For a writer whose client retries out of its sight (S3A and the AWS SDK under the shim): whether an attempt
    may have been applied, judged from the last answer alone. Anything but a definitive refusal or a 404 may
    follow a retried attempt that landed; a conflict or a vanished upload may be that attempt's own trace."""
    return final.name not in ("refuse", "not-found")


def settle(final: AnswerClass, *, overwrite: bool, maybe_applied: bool, owner: Owner | None) -> Outcome:
    """The outcome of a commit whose last attempt failed with an answer of class ``final``.

    ``maybe_applied``: some attempt (this one or an earlier one) may have been applied. ``owner``: the write id read
    back when :func:`needs_owner` said so (None when it was not read). A put-if-absent conflict is the store's
    answer at the write's linearization point, so it stands even when the key reads as absent afterwards: another
    writer's file, deleted since, must never be resurrected by a re-send."""
    if not maybe_applied:
        return "conflict" if final.name == "conflict" and not overwrite else "error"
    if owner is None:
        raise ValueError(f"settle() of a {final.name!r} answer after an attempt that may have been applied needs the "
                         "owner read back")
    if owner == "ours":
        return "success"
    if owner == "unreadable":
        return "unknown"
    if owner == "other" and not overwrite:
        return "conflict"
    if final.name == "conflict" and not overwrite:
        return "conflict"
    return "unknown"
