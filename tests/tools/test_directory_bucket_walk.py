"""verify's walk of a sink's data files on an S3 directory bucket, whose listing is in no lexicographic order: the
files are sorted before they are merged with the manifest (S3 Standard's listing is merged as it comes)."""

from __future__ import annotations

from checkpointfs.testing import EmbeddedS3
from checkpointfs.testing.embedded_s3 import DIRECTORY_BUCKET
from checkpointfs.tools.store import Location
from checkpointfs.tools.verify import VerifyReport, _sorted_listing


def test_a_directory_bucket_walk_is_sorted_before_the_merge(s3_env: EmbeddedS3) -> None:
    s3_env.profile = "directory-bucket"
    s3_env.create_bucket(DIRECTORY_BUCKET)
    names = [f"part-{n:05d}-c000.json" for n in range(30)]
    for name in names:
        s3_env.client().put_object(Bucket=DIRECTORY_BUCKET, Key=f"out/{name}", Body=b"{}\n")
    location = Location(s3_env.uri("out", bucket=DIRECTORY_BUCKET), endpoint_url=s3_env.endpoint_url)
    try:
        assert [item.rel for item in location.walk()] != names  # the store lists in no name order
        assert not location.walk_is_sorted
        listed = list(_sorted_listing(location, 8, VerifyReport(location.uri), lambda _: None))
    finally:
        location.close()
    assert listed == [(name, 3) for name in names]
    assert Location(s3_env.uri("out")).walk_is_sorted  # an S3 Standard bucket: merged as listed
