"""Settling a create whose request failed: the protocol's :func:`~checkpointfs.protocol.settle` applied to a store
error, reading the object's write id back only where the protocol needs whose write it holds."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from .. import events, protocol
from ..errors import CheckpointFsError, PathNotFoundError
from ..metrics import record
from .base import ObjectPath, ObjectStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Settled:
    """What a failed create turned out to be: the protocol's outcome, whose write the object held when that was
    read (None when not needed), and why it could not be read (``""`` when it could)."""

    outcome: protocol.Outcome
    owner: protocol.Owner | None
    unreadable: str


@dataclass(frozen=True)
class Sent:
    """What a write sent, to be recognised by where the store keeps no write id: the checksum the store keeps
    (:meth:`ObjectStore.checksum`; ``""``: none sent) and the size."""

    checksum: str
    size: int


def owner_of(store: ObjectStore, where: ObjectPath, write_id: str, sent: Sent | None = None
             ) -> tuple[protocol.Owner, str]:
    """Whose write the object at ``where`` holds now (:func:`checkpointfs.protocol.owner_of_object`: by its write id,
    or where the store kept none, by its checksum and size against ``sent``), and why it could not be told (``""``
    if it could)."""
    try:
        meta = store.head(where)
    except PathNotFoundError:
        return "absent", ""
    except CheckpointFsError as e:
        return "unreadable", e.cause
    sent = sent or Sent("", 0)
    owner = protocol.owner_of_object("present", object_write_id=meta.write_id, object_checksum=meta.checksum,
                                     object_size=meta.size, write_id=write_id, sent_checksum=sent.checksum,
                                     sent_size=sent.size)
    return owner, ""


def settle_failed_create(error: CheckpointFsError, store: ObjectStore, where: ObjectPath, write_id: str, *,
                         overwrite: bool, sent: Sent | None = None) -> Settled | None:
    """The outcome of a create of ``where`` with ``write_id`` (which ``sent``, when known) that failed with ``error``,
    or None when the error is not a store's answer the protocol classifies (the caller re-raises it as it is). An
    outcome decided by reading the object back (success or conflict) is a settled ambiguity: counted
    (``ambiguousSettled``) and logged."""
    final = error.answer_class
    if final is None:
        return None
    owner: protocol.Owner | None = None
    unreadable = ""
    if protocol.needs_owner(final, overwrite=overwrite, maybe_applied=error.maybe_applied):
        owner, unreadable = owner_of(store, where, write_id, sent)
    outcome = protocol.settle(final, overwrite=overwrite, maybe_applied=error.maybe_applied, owner=owner)
    if owner is not None and outcome in ("success", "conflict"):
        record("ambiguousSettled")
        context = events.file_context(where.uri, write_id)
        log.warning("ambiguous answer settled by the write id: %s, after an attempt that may have been applied; "
                    "the object %s, so the create %s %s", error.cause,
                    {"ours": "carries this write's id", "other": "carries another writer's id",
                     "absent": "is absent", "unreadable": "is unreadable"}[owner],
                    "succeeded" if outcome == "success" else "lost to another writer", context,
                    extra=context.extra())
    return Settled(outcome, owner, unreadable)
