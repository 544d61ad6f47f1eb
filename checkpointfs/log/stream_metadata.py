"""The checkpoint's ``metadata`` file: one JSON object, ``{"id":"<uuid>"}``, no version line, no line end."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from .. import paths
from ..contract import CheckpointFileManager
from ..errors import CorruptLogError, FileAlreadyExistsError, PathNotFoundError
from .io import json_string

METADATA_FILE = "metadata"


@dataclass(frozen=True)
class StreamMetadata:
    """The id a streaming query keeps across restarts."""

    id: str

    @classmethod
    def new(cls) -> StreamMetadata:
        """Metadata with a fresh random id."""
        return cls(str(uuid.uuid4()))

    def to_json(self) -> str:
        """The file's content as Spark writes it."""
        return f'{{"id":{json_string(self.id)}}}'


def read_stream_metadata(manager: CheckpointFileManager, checkpoint_dir: str) -> StreamMetadata | None:
    """The ``metadata`` file of ``checkpoint_dir``, None when absent; CorruptLogError when unreadable."""
    path = paths.join(checkpoint_dir, METADATA_FILE)
    try:
        with manager.open(path) as stream:
            data = stream.read()
    except PathNotFoundError:
        return None
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise CorruptLogError(path, f"not a JSON object ({e}); the file may be empty, truncated or corrupted") from None
    except RecursionError:
        raise CorruptLogError(path, "JSON nested too deeply to be a checkpoint's metadata") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
        raise CorruptLogError(path, "expected a JSON object with a string field 'id'")
    return StreamMetadata(obj["id"])


def write_stream_metadata(manager: CheckpointFileManager, checkpoint_dir: str, metadata: StreamMetadata) -> bool:
    """Write the ``metadata`` file; False (and the existing file unchanged) when there is one already."""
    path = paths.join(checkpoint_dir, METADATA_FILE)
    try:
        with manager.create_atomic(path, overwrite_if_possible=False) as stream:
            stream.write(metadata.to_json().encode("utf-8"))
    except FileAlreadyExistsError:
        return False
    return True
