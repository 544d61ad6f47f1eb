"""The project's own test servers, kept out of the library (and out of the wheel): MinIO, fake-gcs-server and Azurite
(installed with go and npm into ~/.cache/checkpointfs, ``make backends``), the recording proxy in front of them, the
Spark standalone cluster, and the store-check helper of the request-counting tests. Users' tests get the embedded S3
of :mod:`checkpointfs.testing`; these serve this repository's tests, harness and benchmarks."""
