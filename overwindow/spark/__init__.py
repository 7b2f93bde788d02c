"""The Spark adapter: hosts the streaming machines in ``applyInPandasWithState``."""
