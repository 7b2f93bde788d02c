"""The main job: a streaming materialized view (source -> overWindow -> sink) with progress."""
