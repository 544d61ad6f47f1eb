"""Credentials with fewer permissions on a test MinIO: the policies of docs/operations.md ("Permissions"), each
minus the actions one feature needs, as temporary credentials from MinIO's STS ``AssumeRole`` with an inline
session policy (the root user's rights intersected with the policy, as on AWS). No admin client is needed: boto3's
STS client speaks it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import boto3

__all__ = ["FULL", "POLICIES", "Credentials", "assume", "policy_document"]

FULL: tuple[str, ...] = ("s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:ListBucket",
                         "s3:ListBucketMultipartUploads", "s3:AbortMultipartUpload")
"""The actions a writer of checkpoints needs on S3 (protocol.json ``permissions``)."""

POLICIES: dict[str, tuple[str, ...]] = {
    "full": FULL,
    "no-list": tuple(a for a in FULL if a != "s3:ListBucket"),
    "no-delete": tuple(a for a in FULL if a != "s3:DeleteObject"),
    "no-put": tuple(a for a in FULL if a != "s3:PutObject"),
    "no-upload-cleanup": tuple(a for a in FULL if a not in ("s3:AbortMultipartUpload",
                                                             "s3:ListBucketMultipartUploads")),
}
"""The least-privilege cases: the full policy, and each without what one feature needs."""

_BUCKET_ACTIONS = frozenset({"s3:ListBucket", "s3:ListBucketMultipartUploads"})


def policy_document(bucket: str, actions: tuple[str, ...]) -> dict[str, Any]:
    """An IAM policy granting ``actions`` on ``bucket`` (bucket-level ones on the bucket, the rest on its objects)."""
    statements = []
    on_bucket = sorted(a for a in actions if a in _BUCKET_ACTIONS)
    on_objects = sorted(a for a in actions if a not in _BUCKET_ACTIONS)
    if on_bucket:
        statements.append({"Effect": "Allow", "Action": on_bucket, "Resource": [f"arn:aws:s3:::{bucket}"]})
    if on_objects:
        statements.append({"Effect": "Allow", "Action": on_objects, "Resource": [f"arn:aws:s3:::{bucket}/*"]})
    return {"Version": "2012-10-17", "Statement": statements}


@dataclass(frozen=True)
class Credentials:
    """Temporary credentials of one policy."""

    access_key: str
    secret_key: str
    session_token: str

    def manager_options(self, endpoint_url: str, region: str) -> dict[str, Any]:
        """Keywords for :class:`~checkpointfs.DirectWriteManager`."""
        return {"endpoint_url": endpoint_url, "region": region, "aws_access_key_id": self.access_key,
                "aws_secret_access_key": self.secret_key, "aws_session_token": self.session_token}

    def hadoop_conf(self) -> dict[str, str]:
        """The S3A settings for these credentials (with the endpoint's own settings beside them)."""
        return {"fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider",
                "fs.s3a.access.key": self.access_key, "fs.s3a.secret.key": self.secret_key,
                "fs.s3a.session.token": self.session_token}


def assume(server: Any, actions: tuple[str, ...], bucket: str | None = None) -> Credentials:
    """Credentials on ``server`` (a MinioServer) allowed ``actions`` on ``bucket`` (its first) and nothing else."""
    sts = boto3.client("sts", endpoint_url=server.endpoint_url, region_name=server.region,
                       aws_access_key_id=server.access_key, aws_secret_access_key=server.secret_key)
    policy = json.dumps(policy_document(bucket or server.buckets[0], actions))
    answer = sts.assume_role(RoleArn="arn:aws:iam::000000000000:role/checkpointfs-test",
                             RoleSessionName="checkpointfs-least-privilege", Policy=policy, DurationSeconds=3600)
    c = answer["Credentials"]
    return Credentials(c["AccessKeyId"], c["SecretAccessKey"], c["SessionToken"])
