"""Streaming state machines: pure Python, no Spark (docs/design/design.md, "Streaming").

``contract`` says what a machine's ``step(state, rows, watermark)`` returns, ``machines`` which
machine runs a spec; ``window_close`` and ``on_update`` (over ``chunked`` state, optionally) are the
machines; ``state`` encodes their state; ``driver`` runs them in memory the way Spark hosts them.
"""
