"""taskboard: a durable task board in the repository (`tasks`)."""

__version__ = "0.1.0"
