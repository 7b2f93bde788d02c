"""docker-compose.yml holds together without a Docker engine: the commands parse with overwindow's
own command line and reach the producer and the view job with what they need (neither runs: no
Kafka, no Spark), the view file loads, and names agree across the stack: files the image copies,
environment variables the code reads, the Kafka address, the topic, the key, the Spark version."""

import inspect
import json
import os
import re
import sys
import time
from urllib.parse import urlsplit

import pytest
from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

yaml = pytest.importorskip("yaml")

from overwindow.__main__ import main  # noqa: E402
from overwindow.pipeline import job, producer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPOSE = yaml.safe_load(open(os.path.join(ROOT, "docker-compose.yml")))
SERVICES = COMPOSE["services"]
BUILT = {name: s for name, s in SERVICES.items() if "build" in s}


def resolved(text):
    """Compose's ${VAR:-default} with nothing set: the default."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", str(text))


def environment(service):
    return {k: resolved(v) for k, v in SERVICES[service].get("environment", {}).items()}


def dockerfile(service):
    build = SERVICES[service]["build"]
    return os.path.join(ROOT, build["context"], build["dockerfile"])


def instructions(path):
    """A Dockerfile's instructions as (KEYWORD, argument text), continuation lines joined."""
    text = re.sub(r"\\\n", " ", open(path).read())
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1])
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def recorder(calls, name, real):
    """A stand-in for ``real`` that records its arguments by name in ``calls[name]``."""
    signature = inspect.signature(real)

    def record(*args, **kwargs):
        calls[name] = signature.bind(*args, **kwargs).arguments
        return 0

    return record


READER = "changes-reader"  # the second consumer: a Python script, run for real below
REAL = {"produce": producer.produce, "run_view": job.run_view}


@pytest.fixture
def calls(monkeypatch):
    """Runs the built services' commands through overwindow's command line with the producer and
    the view job replaced; returns what they were called with, as {service: {function: arguments
    by name}}."""
    calls = {}
    monkeypatch.chdir(ROOT)  # the image's WORKDIR holds the repository's layout (checked below)
    for service_name, service in BUILT.items():
        if service_name == READER:
            continue
        calls[service_name] = {}
        for module, name in ((producer, "produce"), (job, "run_view")):
            monkeypatch.setattr(module, name, recorder(calls[service_name], name, REAL[name]))
        program, *args = service["command"]
        assert program == "overwindow"
        assert main(args) == 0
    return calls


@pytest.fixture
def produced(calls):
    return calls["producer"]["produce"]


@pytest.fixture
def view(calls):
    return calls["view"]["run_view"]["view"]


@pytest.fixture
def changes_view(calls):
    return calls["changes-view"]["run_view"]["view"]


def test_the_stack_has_its_six_services_on_pinned_images():
    assert set(SERVICES) == {"kafka", "postgres", "producer", "view", "changes-view", READER}
    assert set(BUILT) == {"producer", "view", "changes-view", READER}
    for name, service in SERVICES.items():
        _, _, tag = service["image"].partition(":")
        assert tag and tag != "latest", f"{name}: pin the image {service['image']!r}"
        if name not in BUILT:
            assert re.search(r"\d", tag), f"{name}: {service['image']!r} is not a version"


def test_the_image_is_pinned_copies_what_exists_and_has_java():
    steps = instructions(dockerfile("view"))
    base = next(arg for keyword, arg in steps if keyword == "FROM")
    assert re.fullmatch(r"python:3\.\d+-slim-\w+", base.strip())
    for keyword, arg in steps:
        if keyword == "COPY":
            *sources, _ = arg.split()
            for source in sources:
                assert os.path.exists(os.path.join(ROOT, SERVICES["view"]["build"]["context"], source)), (
                    source
                )
    assert any(keyword == "ENV" and "JAVA_HOME=" in arg for keyword, arg in steps)
    assert any(keyword == "RUN" and "openjdk-17-jre-headless" in arg for keyword, arg in steps)
    pyproject = tomllib.load(open(os.path.join(ROOT, "pyproject.toml"), "rb"))
    install = next(arg for keyword, arg in steps if keyword == "RUN" and "pip install" in arg)
    extras = set(re.search(r"\.\[([\w,]+)\]", install).group(1).split(","))
    assert extras == {"spark", "postgres", "kafka"}
    assert extras <= set(pyproject["project"]["optional-dependencies"])
    assert "overwindow" in pyproject["project"]["scripts"]


def test_the_built_services_share_one_image():
    assert len({(s["image"], dockerfile(name)) for name, s in BUILT.items()}) == 1


def test_the_view_command_loads_a_kafka_view_into_postgres(view):
    assert view.source["format"] == "kafka" and view.sink["kind"] == "postgres"
    steps = instructions(dockerfile("view"))
    copied = {os.path.normpath(arg.split()[-1]) for keyword, arg in steps if keyword == "COPY"}
    assert os.path.normpath(view.path).split(os.sep)[0] in copied, "the image does not contain the view file"


def test_the_producer_feeds_the_topic_and_key_the_view_reads(produced, view):
    assert produced["topic"] == view.source["topic"]
    # Loops, after the passes already on the topic: the live view keeps updating, also after a restart.
    assert produced["passes"] is None and produced["resume"]
    sample = producer.SAMPLES[produced["sample"]]
    # Kafka keeps order per key, so the view's partition must be the message key.
    assert view.partition_by == [sample.key]
    columns = [part.split()[0] for part in view.source["schema"].split(",")]
    header = producer.read_sample(sample)[0]
    assert columns == list(header), "the view's schema must name the JSON record's keys"


def test_kafka_advertises_the_address_its_clients_use(produced, view):
    env = environment("kafka")
    advertised = {urlsplit(url).netloc for url in env["KAFKA_ADVERTISED_LISTENERS"].split(",")}
    assert view.source["bootstrap_servers"] in advertised
    assert produced["bootstrap_servers"] in advertised
    host, port = view.source["bootstrap_servers"].split(":")
    assert host in SERVICES and int(port) in {urlsplit(url).port for url in env["KAFKA_LISTENERS"].split(",")}


def test_the_view_job_gets_the_environment_the_code_reads(view):
    env = environment("view")
    assert view.sink["dsn_env"] in env
    dsn = urlsplit(env[view.sink["dsn_env"]])
    database = environment("postgres")
    assert dsn.hostname == "postgres" and dsn.username == database["POSTGRES_USER"]
    assert dsn.password == database["POSTGRES_PASSWORD"] and dsn.path == "/" + database["POSTGRES_DB"]
    source = "".join(
        open(os.path.join(d, f)).read()
        for d, _, files in os.walk(os.path.join(ROOT, "overwindow"))
        for f in files
        if f.endswith(".py")
    )
    for name in env:
        assert name.startswith("OVERWINDOW_") and f'"{name}"' in source, f"{name}: no code reads it"


def test_the_spark_connector_matches_the_images_pyspark():
    group, artifact, version = environment("view")["OVERWINDOW_SPARK_PACKAGES"].split(":")
    assert (group, artifact) == (
        "org.apache.spark",
        "spark-sql-kafka-0-10_2.13",
    )  # Spark 4 is Scala 2.13 only
    steps = instructions(dockerfile("view"))
    pinned = next(
        arg.split("=", 1)[1]
        for keyword, arg in steps
        if keyword == "ARG" and arg.startswith("SPARK_VERSION=")
    )
    assert version == pinned
    assert any(keyword == "RUN" and '"pyspark==${SPARK_VERSION}"' in arg for keyword, arg in steps)
    pyproject = tomllib.load(open(os.path.join(ROOT, "pyproject.toml"), "rb"))
    spark_extra = pyproject["project"]["optional-dependencies"]["spark"]  # PySpark is an extra
    pyspark = next(Requirement(r) for r in spark_extra if r.startswith("pyspark"))
    assert pyspark.specifier.contains(version)


def test_services_wait_for_healthy_dependencies_and_keep_state_in_volumes(view):
    for name, service in SERVICES.items():
        for target, condition in service.get("depends_on", {}).items():
            if condition["condition"] == "service_healthy":
                assert "healthcheck" in SERVICES[target], (
                    f"{name} waits for {target}, which has no healthcheck"
                )
    assert SERVICES["producer"]["depends_on"]["kafka"]["condition"] == "service_healthy"
    assert {t for t, c in SERVICES["view"]["depends_on"].items() if c["condition"] == "service_healthy"} == {
        "kafka",
        "postgres",
    }
    mounts = [volume.split(":") for volume in SERVICES["view"]["volumes"]]
    assert any(
        view.checkpoint.startswith(target.rstrip("/") + "/") and source in COMPOSE["volumes"]
        for source, target in mounts
    ), "the checkpoint must live in a volume"


def test_the_changes_view_writes_the_topic_its_reader_reads(changes_view, view):
    """The second view reads the producer's topic and writes an upsert changelog (the format the
    reader applies), keyed by its row key; the reader runs from the image, whose deploy/ it copies."""
    assert changes_view.source == view.source
    assert changes_view.emit == "on_update" and changes_view.sink["kind"] == "kafka"
    assert changes_view.sink.get("format", "upsert") == "upsert"
    program, script, *args = SERVICES[READER]["command"]
    options = dict(zip(args[::2], args[1::2]))
    assert program == "python" and os.path.exists(os.path.join(ROOT, script))
    assert options == {
        "--bootstrap-servers": changes_view.sink["bootstrap_servers"],
        "--topic": changes_view.sink["topic"],
    }
    assert view.checkpoint != changes_view.checkpoint


def test_the_changes_reader_replays_a_changelog_by_key(kafka_bootstrap):
    """The reader's command, as the compose file gives it but pointed at the tests' broker, over a
    changelog the Kafka sink wrote (three batches: upserts, updates, deletes): its last line's table
    is the sink's view, each change printed once."""
    import subprocess

    import pyarrow as pa

    from overwindow.pipeline.kafka_sink import KafkaSink

    topic = f"changes-{os.getpid()}-{int(time.time())}"
    sink = KafkaSink({"bootstrap.servers": kafka_bootstrap}, topic, ["id"], True, "v")
    batches = [
        {"id": [1, 2, 3], "s": [1.0, 2.0, 3.0], "_change": ["upsert"] * 3},
        {"id": [2, 3], "s": [2.5, None], "_change": ["upsert", "delete"]},
        {"id": [4, 1], "s": [4.0, None], "_change": ["upsert", "delete"]},
    ]
    for b, batch in enumerate(batches):
        sink.apply(pa.table(batch), b, "q")
    program, script, *args = SERVICES[READER]["command"]
    args[args.index("--bootstrap-servers") + 1] = kafka_bootstrap
    args[args.index("--topic") + 1] = topic
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, script), *args, "--idle", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    changes = [json.loads(line) for line in done.stdout.splitlines()]
    table = {}
    for change in changes:
        if change["op"] == "delete":
            table.pop(change["key"]["id"])
        else:
            table[change["key"]["id"]] = change["row"]
        assert change["rows"] == len(table)
    assert sorted(c["op"] for c in changes) == ["delete"] * 2 + ["upsert"] * 5
    assert table == {2: {"id": 2, "s": 2.5}, 4: {"id": 4, "s": 4.0}}
