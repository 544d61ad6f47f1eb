"""Test helpers for checkpointfs and its users: an embedded S3 with request counting and fault injection."""

from .embedded_s3 import EmbeddedS3
from .faults import Fault, FaultPlan
from .requests import Request, RequestLog
from .s3_process import EmbeddedS3Process

__all__ = ["EmbeddedS3", "EmbeddedS3Process", "Fault", "FaultPlan", "Request", "RequestLog"]
