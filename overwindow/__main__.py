"""Command line: ``overwindow demo``, ``overwindow run VIEW...``, ``overwindow validate VIEW...``,
``overwindow keys``, ``overwindow produce`` (also ``python -m overwindow``).

``demo`` runs the main job on embedded defaults: two views over bundled samples replayed as
streams of files into one SQLite file (each plant's 7-day moving average and interquartile band,
with a PNG chart; each stock tick's change and 5-minute averages), a table of each printed, and the
time it took. ``run`` runs the views TOML files define (see overwindow.pipeline.view),
after checking them as ``validate`` does without starting Spark (overwindow.pipeline.validate);
``keys`` lists the view file's keys.
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


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("overwindow")
    except PackageNotFoundError:  # run from a source tree without installing
        return "unknown (not installed)"


KEYS_HELP = (
    "The view file's keys, their defaults and meanings: `overwindow keys`, or the docs' "
    "reference/view-keys.md."
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="overwindow", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"overwindow {_version()}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug", action="store_true", help="on a failure, show the full trace (and Spark's log)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo",
        parents=[common],
        help="run the two bundled demo views (plant output: 7-day average and IQR; stock ticks: "
        "change and 5-minute averages) and print the time they took",
    )
    demo.add_argument(
        "--out", default="overwindow-demo", help="folder for the replayed files, the view and the chart"
    )
    demo.add_argument("--quiet", action="store_true", help="no progress lines")
    run = sub.add_parser(
        "run",
        parents=[common],
        help="run the streaming views TOML files define",
        description="Check the view files (as `overwindow validate` does) and what they connect to, "
        "then run them in one Spark session until Ctrl-C (or, with --once, until what has arrived "
        "is processed).",
        epilog=KEYS_HELP,
    )
    run.add_argument("view", nargs="+", help="the view file(s) (TOML)")
    run.add_argument("--once", action="store_true", help="process what has arrived, then stop (availableNow)")
    run.add_argument(
        "--final",
        action="store_true",
        help="with --once: then end the input, so that emit on window close emits every row it still holds "
        "(as if the watermark passed them all; a later run that finds new input stops, saying so)",
    )
    run.add_argument("--quiet", action="store_true", help="no progress lines (same as --progress none)")
    run.add_argument(
        "--progress",
        choices=("line", "json", "none"),
        default="line",
        help="per micro-batch: a line (default), one JSON object per line for monitoring, or nothing",
    )
    _set_option(run)
    validate = sub.add_parser(
        "validate",
        parents=[common],
        help="check view files without starting Spark",
        description="Check everything about the views that can be checked without data and without "
        "starting Spark: keys, schema, columns, calls, watermark, paths, sink, environment, the "
        "checkpoint's view, and tables or checkpoints shared between the views given.",
        epilog=KEYS_HELP,
    )
    validate.add_argument("view", nargs="+", help="the view file(s) (TOML)")
    _set_option(validate)
    sub.add_parser("keys", help="list the view file's keys, their defaults and meanings")
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
    if args.command == "keys":
        from overwindow.pipeline.view_keys import key_reference

        print(key_reference())
        return 0
    try:
        return _command(args, parser)
    except KeyboardInterrupt:  # before the queries run (starting Spark, say): nothing to stop
        print("\nstopped.", file=sys.stderr)
        return 130
    except Exception as e:
        if args.debug:
            raise
        extra = EXTRAS.get((getattr(e, "name", None) or "").split(".")[0])
        if isinstance(e, ModuleNotFoundError) and extra is not None:
            print(
                f"overwindow: {args.command} needs {e.name}: pip install 'overwindow[{extra}]'",
                file=sys.stderr,
            )
            return 2
        from overwindow.pipeline.failures import ViewRunError

        for line in str(e).splitlines() or [type(e).__name__]:
            print(f"overwindow: {line}", file=sys.stderr)
        if isinstance(e, ViewRunError):
            return 1
        if isinstance(e, (ValueError, WindowSpecError)):
            return 2
        print("overwindow: (run with --debug for the trace)", file=sys.stderr)
        return 1


def _set_option(command) -> None:
    command.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override a key of the view file(s), e.g. --set sink.path=/tmp/v.sqlite",
    )


def _command(args, parser) -> int:
    # said first, not after a minute of Spark (views are read with PySpark's types too)
    for module in ("matplotlib", "pyspark") if args.command == "demo" else ("pyspark",):
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(f"No module named '{module}'", name=module)
    if args.command == "demo":
        from overwindow.pipeline.demo import run_demo

        return run_demo(args.out, args.quiet, args.debug)
    from overwindow.pipeline.view import ViewFileError, load_view

    if getattr(args, "final", False) and not args.once:
        parser.error("--final needs --once: the input ends after what has arrived is processed")
    overrides = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or "." not in key:
            parser.error(f"--set takes SECTION.KEY=VALUE, got {item!r}")
        overrides[key] = _value(value)
    views, problems = [], []
    for path in args.view:
        try:
            views.append(load_view(path, overrides))
        except ViewFileError as e:
            problems.append(str(e))
    if problems:
        raise ViewFileError("\n".join(problems))
    from overwindow.pipeline.validate import check_views, warn

    for view in views:
        for warning in view.warnings:
            warn(warning)
    if args.command == "validate":
        for c in check_views(views, warn=warn):
            print(f"{c.view.path}: ok: {describe_checked(c)}")
        return 0
    from overwindow.pipeline import job

    progress = "none" if args.quiet else args.progress
    options = dict(
        once=args.once,
        final=args.final,
        quiet=progress == "none",
        json_lines=progress == "json",
        debug=args.debug,
    )
    if len(views) == 1:
        return job.run_view(views[0], **options)
    return job.run_views(views, **options)


def describe_checked(c) -> str:
    """``3 columns in, 4 out (k, ts, x, s); emit on window close; sqlite table v in view.sqlite``."""
    v = c.view
    place = {
        "sqlite": f"table {v.sink.get('table')} in {v.sink.get('path')}",
        "postgres": f"table {v.sink.get('table')}",
    }
    where = place.get(v.sink["kind"], v.sink.get("path", ""))
    return (
        f"{len(c.schema)} columns in, {len(c.columns)} out ({', '.join(c.columns)}); "
        f"emit {v.emit.replace('_', ' ')}; {v.sink['kind']} {where}"
    ).rstrip()


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
