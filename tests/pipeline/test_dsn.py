"""PostgreSQL connection strings never leak (issue 18, item 3): one libpq cannot read (a password
with %, @ or a space) was echoed three times on stderr. Now validate reads it and run also connects,
both before Spark starts, and no message holds any piece of the password: checked on random
passwords, and against the real PostgreSQL server the tests start."""

import textwrap
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overwindow.__main__ import main
from overwindow.pipeline import dsn
from overwindow.pipeline.validate import preflight
from overwindow.pipeline.view import ViewFileError, load_view

# pieces of passwords: upper case and digits, so they cannot occur in libpq's own words
PIECE = st.text("ABCDEFGHJKLMNPQRSTUVWXYZ23456789", min_size=4, max_size=8).filter(
    lambda p: any(c.isalpha() for c in p)
)
SPECIAL = st.sampled_from(["%", "@", " ", "%S", "%4", ":", "/", "'", "=", "#", "?"])


@st.composite
def passwords(draw):
    pieces = draw(st.lists(PIECE, min_size=1, max_size=3))
    out = pieces[0]
    for piece in pieces[1:]:
        out += draw(SPECIAL) + piece
    return out + draw(st.sampled_from(["", "%", "@", " x"])), pieces


def _forms(password, server="127.0.0.1:1"):
    host, port = server.split(":")
    return [
        f"postgresql://ow:{password}@{server}/postgres",  # raw in a URI: what people write
        f"postgresql://ow:{quote(password, safe='')}@{server}/postgres",  # encoded: readable
        f"host={host} port={port} user=ow password={password} dbname=postgres",  # raw key=value
    ]


@settings(max_examples=200, deadline=None)
@given(secret=passwords())
def test_no_message_holds_a_piece_of_the_password(secret):
    password, pieces = secret
    for text in _forms(password):
        try:
            dsn.parse(text)
            dsn.try_connect(text, timeout=1)  # nothing listens on port 1
        except dsn.DsnError as e:
            message = str(e)
        else:
            pytest.fail("port 1 answered")
        for piece in pieces:
            assert piece not in message, (text, message)


def _view(tmp_path, env="OW_TEST_DSN"):
    (tmp_path / "events").mkdir(exist_ok=True)
    path = tmp_path / "view.toml"
    path.write_text(
        textwrap.dedent(f"""
        [source]
        format = "files"
        path = "events"
        schema = "k STRING, ts TIMESTAMP, x DOUBLE"

        [view]
        partition_by = ["k"]
        calls = ["sum(x) OVER (ORDER BY ts ROWS 2 PRECEDING) AS s"]
        emit = "on_update"

        [sink]
        kind = "postgres"
        table = "v"
        dsn_env = "{env}"
        checkpoint = "chk"
        """)
    )
    return str(path)


SECRET = "Sup3r%S3cret@PW x"


def _server(postgres_dsn):
    settings = dict(part.split("=") for part in postgres_dsn.split())
    return f"{settings['host']}:{settings['port']}"


def test_an_unreadable_connection_string_is_refused_by_validate_and_run_without_a_trace(
    tmp_path, monkeypatch, capsys, postgres_dsn
):
    import pyspark.java_gateway

    monkeypatch.setattr(pyspark.java_gateway, "launch_gateway", lambda *a, **k: pytest.fail("a JVM started"))
    view = _view(tmp_path)
    server = _server(postgres_dsn)
    for text in (_forms(SECRET, server)[0], _forms(SECRET, server)[2]):
        monkeypatch.setenv("OW_TEST_DSN", text)
        for command in ("validate", "run"):
            assert main([command, view]) == 2
            captured = capsys.readouterr()
            printed = captured.out + captured.err
            assert (
                "[sink] dsn_env (line 15): the connection string in OW_TEST_DSN: libpq cannot read" in printed
            )
            for piece in ("Sup3r", "S3cret", "PW x", SECRET):
                assert piece not in printed, printed


def test_run_connects_before_spark_starts(tmp_path, monkeypatch, postgres_dsn):
    """A readable string with such a password reaches the real server; a refused connection is named."""
    import psycopg

    with psycopg.connect(postgres_dsn, autocommit=True) as con:
        con.execute("DROP ROLE IF EXISTS ow")
        con.execute("CREATE ROLE ow LOGIN PASSWORD 'Sup3r%S3cret@PW x'")
    view = load_view(_view(tmp_path))
    monkeypatch.setenv("OW_TEST_DSN", _forms(SECRET, _server(postgres_dsn))[1])
    preflight([view])  # connects
    monkeypatch.setenv("OW_TEST_DSN", _forms(SECRET, "127.0.0.1:1")[1])
    with pytest.raises(ViewFileError) as e:
        preflight([view])
    assert "[sink] dsn_env (line 15): PostgreSQL from OW_TEST_DSN: cannot connect: " in str(e.value)
    assert "Connection refused" in str(e.value)
    for piece in ("Sup3r", "S3cret", "PW", quote(SECRET, safe="")):
        assert piece not in str(e.value)


def test_redact_blanks_every_piece():
    text = _forms(SECRET)[0]
    leaked = f"error near {SECRET!r}, S3cret@PW x, {quote(SECRET, safe='')} in {text}"
    redacted = dsn.redact(leaked, text)
    assert redacted.startswith("error near '***', ***@***, *** in ***")
    for piece in ("Sup3r", "S3cret", "PW x", "PW%20x"):
        assert piece not in redacted
