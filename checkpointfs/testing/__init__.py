"""Test helpers for checkpointfs and its users: an embedded S3 with request counting and fault injection."""

from .embedded_s3 import EmbeddedS3
from .faults import Fault, FaultPlan
from .requests import Request, RequestLog

__all__ = ["EmbeddedS3", "Fault", "FaultPlan", "Request", "RequestLog"]
