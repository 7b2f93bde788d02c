"""Command line: ``overwindow demo``, ``overwindow run VIEW``, ``overwindow produce``
(also ``python -m overwindow``).

``demo`` runs the main job on embedded defaults: the bundled plant output replayed as a stream of
files, a 7-day moving average and interquartile band per plant kept in an SQLite file, a table
printed and a PNG chart written. ``run`` runs the view a TOML file defines (see overwindow.pipeline.view).
``produce`` replays a bundled sample as JSON messages on a Kafka topic (see overwindow.pipeline.producer):
``overwindow produce --bootstrap-servers localhost:9092 --topic ticks --rate 50 --loop``.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

from overwindow.errors import WindowSpecError
from overwindow.pipeline.producer import SAMPLES

# the extra (pyproject.toml) that installs each optional module the commands import
EXTRAS = {"pyspark": "spark", "matplotlib": "chart", "psycopg": "postgres", "confluent_kafka": "kafka"}


def _value(text: str):
    """A --set value: TOML scalars (numbers, booleans, "strings"), else the text itself."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="overwindow", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the bundled demo view (plant output, 7-day average and IQR)")
    demo.add_argument(
        "--out", default="overwindow-demo", help="folder for the replayed files, the view and the chart"
    )
    demo.add_argument("--quiet", action="store_true", help="no progress lines")
    run = sub.add_parser("run", help="run the streaming view a TOML file defines")
    run.add_argument("view", help="the view file (TOML)")
    run.add_argument("--once", action="store_true", help="process what has arrived, then stop (availableNow)")
    run.add_argument("--quiet", action="store_true", help="no progress lines")
    run.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override a key of the view file, e.g. --set sink.path=/tmp/v.sqlite",
    )
    produce = sub.add_parser("produce", help="replay a bundled sample as JSON messages on a Kafka topic")
    produce.add_argument("--bootstrap-servers", required=True, metavar="HOST:PORT", help="the Kafka brokers")
    produce.add_argument("--topic", required=True, help="created with --partitions partitions if missing")
    produce.add_argument(
        "--data",
        default="stock_ticks",
        choices=sorted(SAMPLES),
        help="the bundled sample (key: symbol or plant)",
    )
    produce.add_argument("--partitions", type=int, default=3, help="partitions of a new topic (default 3)")
    produce.add_argument(
        "--rate",
        type=float,
        metavar="R",
        help="at most R messages a second (default: as fast as Kafka takes them)",
    )
    produce.add_argument(
        "--loop",
        action="store_true",
        help="replay until Ctrl-C, each pass later by the days the file covers, with new ids, "
        "starting after the passes already on the topic",
    )
    args = parser.parse_args(argv)
    if args.command == "produce":
        return _produce(args)
    try:
        if args.command == "demo":
            if importlib.util.find_spec("matplotlib") is None:  # before a minute of Spark, not after
                raise ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib")
            from overwindow.pipeline.demo import run_demo

            return run_demo(args.out, args.quiet)
        from overwindow.pipeline.job import run_view
        from overwindow.pipeline.view import load_view

        overrides = {}
        for item in args.set:
            key, sep, value = item.partition("=")
            if not sep or "." not in key:
                parser.error(f"--set takes SECTION.KEY=VALUE, got {item!r}")
            overrides[key] = _value(value)
        return run_view(load_view(args.view, overrides), once=args.once, quiet=args.quiet)
    except (ValueError, WindowSpecError) as e:
        print(f"overwindow: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:
        extra = EXTRAS.get((e.name or "").split(".")[0])
        if extra is None:
            raise
        print(
            f"overwindow: {args.command} needs {e.name}: pip install 'overwindow[{extra}]'", file=sys.stderr
        )
        return 2


def _produce(args) -> int:
    from overwindow.pipeline.producer import produce

    def report(line):
        print(f"overwindow produce: {line}", flush=True)

    try:
        sent = produce(
            args.bootstrap_servers,
            args.topic,
            args.data,
            args.partitions,
            args.rate,
            passes=None if args.loop else 1,
            resume=args.loop,
            report=report,
        )
    except ImportError as e:
        print(f"overwindow: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"overwindow: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nstopped.", flush=True)
        return 0
    report(f"{sent} messages delivered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
