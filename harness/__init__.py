"""The project's own evidence tooling, kept out of the library (and out of the wheel): the demo of ``make demo``,
the Spark driver processes and their helpers, and the reliability campaign of ``make campaign``."""
