"""The settings that reach a local S3 endpoint (the embedded S3, a MinIO server) from checkpointfs and from S3A."""

from __future__ import annotations

from typing import Any


def manager_options(endpoint_url: str, region: str, access_key: str, secret_key: str) -> dict[str, Any]:
    """Keyword options for :class:`~checkpointfs.DirectWriteManager` or ``manager_for`` to reach the endpoint."""
    return {"endpoint_url": endpoint_url, "region": region,
            "aws_access_key_id": access_key, "aws_secret_access_key": secret_key}


def hadoop_conf(endpoint_url: str, region: str, access_key: str, secret_key: str) -> dict[str, str]:
    """The ``fs.s3a.*`` settings for Hadoop's S3A (Spark: prefix each with ``spark.hadoop.``): path-style access over
    plain HTTP with static credentials."""
    return {
        "fs.s3a.endpoint": endpoint_url,
        "fs.s3a.endpoint.region": region,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "fs.s3a.access.key": access_key,
        "fs.s3a.secret.key": secret_key,
    }
