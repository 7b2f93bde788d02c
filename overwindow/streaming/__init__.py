"""Streaming state machines: pure Python, no Spark.

``step(state, rows, watermark) -> (state, output, wakeup)``.
"""
