"""The commit records of FileSink batch groups (``<output>/_checkpointfs/groups/<first>``).

When part files span several batches (``rotation_batches > 1``), a group of batches ``first..last`` commits as one
write of this record, which lists the group's files. The sink log then gets batch ``first`` with the files and empty
batches up to ``last``; after a crash between those writes, the record lets the sink finish them. Format: ``v1``,
``{"lastBatchId":<last>}``, then one SinkFileStatus JSON line per file.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..log.io import LineWriter, LogLines, field
from ..log.metadata_log import MetadataLog
from ..log.sink_log import SinkFileStatus, decode_sink_file_status

GROUPS_DIR = "_checkpointfs/groups"


@dataclass(frozen=True)
class GroupRecord:
    """A committed group: its last batch id and its files."""

    last_batch_id: int
    files: list[SinkFileStatus]


class GroupLog(MetadataLog[GroupRecord]):
    """Group commit records, one per group, named by the group's first batch id."""

    def write_batch(self, out: LineWriter, metadata: GroupRecord) -> None:
        out.write(f'v1\n{{"lastBatchId":{metadata.last_batch_id}}}')
        for status in metadata.files:
            out.write("\n")
            out.write(status.to_json())

    def read_batch(self, lines: LogLines) -> GroupRecord:
        lines.version(1)
        header = lines.next_line()
        if header is None:
            raise lines.corrupt("incomplete group record: the header line is missing")
        last = field(lines, lines.json_line(header), "lastBatchId", int)
        return GroupRecord(last, [decode_sink_file_status(lines, lines.json_line(line)) for line in lines])
