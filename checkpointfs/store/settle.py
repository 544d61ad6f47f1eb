"""Settling a create whose request failed: the protocol's :func:`~checkpointfs.protocol.settle` applied to a store
error, reading the object's write id back only where the protocol needs whose write it holds."""

from __future__ import annotations

from dataclasses import dataclass

from .. import protocol
from ..errors import CheckpointFsError, PathNotFoundError
from .base import ObjectPath, ObjectStore


@dataclass(frozen=True)
class Settled:
    """What a failed create turned out to be: the protocol's outcome, whose write the object held when that was
    read (None when not needed), and why it could not be read (``""`` when it could)."""

    outcome: protocol.Outcome
    owner: protocol.Owner | None
    unreadable: str


def owner_of(store: ObjectStore, where: ObjectPath, write_id: str) -> tuple[protocol.Owner, str]:
    """Whose write id the object at ``where`` carries now (``ours`` when it is ``write_id``), and why it could not be
    read (``""`` if it was)."""
    try:
        meta = store.head(where)
    except PathNotFoundError:
        return "absent", ""
    except CheckpointFsError as e:
        return "unreadable", e.cause
    return ("ours" if meta.write_id == write_id else "other"), ""


def settle_failed_create(error: CheckpointFsError, store: ObjectStore, where: ObjectPath, write_id: str, *,
                         overwrite: bool) -> Settled | None:
    """The outcome of a create of ``where`` with ``write_id`` that failed with ``error``, or None when the error is
    not a store's answer the protocol classifies (the caller re-raises it as it is)."""
    final = error.answer_class
    if final is None:
        return None
    owner: protocol.Owner | None = None
    unreadable = ""
    if protocol.needs_owner(final, overwrite=overwrite, maybe_applied=error.maybe_applied):
        owner, unreadable = owner_of(store, where, write_id)
    outcome = protocol.settle(final, overwrite=overwrite, maybe_applied=error.maybe_applied, owner=owner)
    return Settled(outcome, owner, unreadable)
