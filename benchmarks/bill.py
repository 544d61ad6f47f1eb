"""What a streaming query's store requests cost a month, at AWS S3 Standard's list prices (us-east-1, per 1,000
requests): PUT, COPY, POST and LIST $0.005; GET, HEAD and every other read $0.0004; DELETE and the abort of a
multipart upload are free. Storage and data transfer are not counted: checkpoint files are small and live briefly.

At S3 Express One Zone's list prices (directory buckets, us-east-1, since AWS's price cut of April 2025:
https://aws.amazon.com/s3/pricing/, and the worked examples in https://aws.amazon.com/s3/faqs/ under S3 Express One
Zone): PUT, COPY, POST and LIST $0.00113 per 1,000; GET and every other read $0.00003; DELETE free. Express also
charges per GB uploaded and retrieved ($0.0032 and $0.0006) and needs a ``CreateSession`` request per session
(minutes long), neither counted here: a checkpoint file is a few KB, and a session serves thousands of requests.

A month is 30 days; a query running one micro-batch every ``batch_interval_s`` seconds runs
``30 * 86400 / batch_interval_s`` batches a month (259,200 at 10 s). Operation names are S3's, as the embedded S3's
request log and the benchmarks' results give them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

SECONDS_PER_MONTH = 30 * 24 * 3600
"""A billing month of 30 days."""

PRICE_PER_1000_USD = {"write": 0.005, "read": 0.0004, "free": 0.0}
"""S3 Standard's list price per 1,000 requests of each class (us-east-1)."""
EXPRESS_PRICE_PER_1000_USD = {"write": 0.00113, "read": 0.00003, "free": 0.0}
"""S3 Express One Zone's list price per 1,000 requests of each class (us-east-1, from April 2025)."""
PRICE_LISTS = {"S3 Standard": PRICE_PER_1000_USD, "S3 Express One Zone": EXPRESS_PRICE_PER_1000_USD}
"""Each storage class's price list, by the name the docs give it."""

_WRITES = ("PutObject", "CopyObject", "UploadPart", "UploadPartCopy", "CreateMultipartUpload",
           "CompleteMultipartUpload", "ListObjectsV2", "ListObjects", "ListMultipartUploads", "ListParts",
           "DeleteObjects", "PutObjectTagging", "CreateBucket", "ListBuckets")
_READS = ("GetObject", "HeadObject", "HeadBucket", "GetObjectTagging", "GetBucketLocation")
_FREE = ("DeleteObject", "AbortMultipartUpload")
PRICE_CLASS: dict[str, str] = {**dict.fromkeys(_WRITES, "write"), **dict.fromkeys(_READS, "read"),
                               **dict.fromkeys(_FREE, "free")}
"""S3 operation -> its price class. DeleteObjects is a POST (priced as one); a DELETE request is free."""


@dataclass(frozen=True)
class MonthlyBill:
    """Requests a month and their cost, by price class, for one request mix and batch interval."""

    batches: float
    requests: dict[str, float]
    usd: dict[str, float]

    @property
    def total_usd(self) -> float:
        """The month's cost of the requests."""
        return sum(self.usd.values())

    @property
    def total_requests(self) -> float:
        """The month's requests, free ones included."""
        return sum(self.requests.values())


def monthly_bill(requests_per_batch: Mapping[str, float], batch_interval_s: float = 10.0,
                 prices: Mapping[str, float] = PRICE_PER_1000_USD) -> MonthlyBill:
    """The month's bill of a query that sends ``requests_per_batch`` (S3 operation -> mean requests per micro-batch)
    every ``batch_interval_s`` seconds, at ``prices`` (price class -> USD per 1,000; S3 Standard's by default);
    ValueError naming an operation without a price class."""
    if batch_interval_s <= 0:
        raise ValueError(f"batch interval must be positive, got {batch_interval_s}")
    unknown = sorted(op for op in requests_per_batch if op not in PRICE_CLASS)
    if unknown:
        raise ValueError(f"no S3 price class for operation(s) {', '.join(unknown)}: add them to PRICE_CLASS")
    batches = SECONDS_PER_MONTH / batch_interval_s
    requests = dict.fromkeys(PRICE_PER_1000_USD, 0.0)
    for operation, count in requests_per_batch.items():
        requests[PRICE_CLASS[operation]] += count * batches
    usd = {cls: n / 1000 * prices[cls] for cls, n in requests.items()}
    return MonthlyBill(batches, requests, usd)
