"""The project's own evidence tooling, kept out of the library (and out of the wheel): the demo of ``make demo``,
the Spark driver processes and their helpers, the reliability campaign of ``make campaign``, and the test
servers of the suite (:mod:`harness.servers`: MinIO, fake-gcs-server, Azurite, the recording proxy, a Spark cluster)."""
