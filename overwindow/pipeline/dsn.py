"""PostgreSQL connection strings, read and tried before Spark starts, and kept out of every message.

A connection string comes from an environment variable (``[sink] dsn_env``), never from the view
file. libpq's own messages quote the part they could not read, which for a password with ``%``,
``@`` or a space is the password itself: ``parse`` and ``try_connect`` raise ``DsnError`` with
libpq's words but every quoted fragment and every piece of the password blanked, and ``redact``
does the same to any other text (a failure after Spark started).

>>> redact("FATAL: password authentication failed for Sup3r%S3cret", "postgresql://u:Sup3r%S3cret@h/db")
'FATAL: password authentication failed for ***'
>>> try:
...     parse("postgresql://u:Sup3r%S3cret@h/db")
... except DsnError as e:
...     print(str(e).split(";")[0])
libpq cannot read it (invalid percent-encoded token: "***")
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

HINT = (
    "in a URI write %, @, :, / and spaces in the password as %25, %40, %3A, %2F, %20, or use the "
    "key=value form with password='...'"
)
# libpq's connection keywords: a quoted fragment that is one of them is not a secret
_KEYWORDS = {
    "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "connect_timeout",
    "sslmode", "application_name", "options", "service", "target_session_attrs", "=", ":", "/",
}  # fmt: skip


class DsnError(ValueError):
    """A connection string that cannot be used; the message holds no part of it."""


def secrets(dsn: str) -> list[str]:
    """Every text that may be (a piece of) the password in ``dsn``, longest first."""
    found = {dsn}
    try:
        from psycopg.conninfo import conninfo_to_dict

        password = conninfo_to_dict(dsn).get("password")
        if password:
            found.add(str(password))
    except Exception:  # unreadable: the pieces below still cover it
        pass
    uri = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://(.*)@", dsn, re.S)  # greedy: to the last @
    if uri:
        password = uri.group(1).partition(":")[2]
        found.update([password, unquote(password), quote(unquote(password), safe="")])
        found.update([*password.split("@"), *re.split(r"[%@ :/]", password)])
    pair = re.search(r"password\s*=\s*('(?:[^'\\]|\\.)*'?|\S+)", dsn)
    if pair:
        value = pair.group(1).strip("'")
        rest = dsn[pair.end() :].split()
        found.update([value, *value.split(), *(rest[:1] if rest and "=" not in rest[0] else [])])
    return sorted((s for s in found if len(s) >= 3), key=len, reverse=True)


def redact(text: str, dsn: str | None) -> str:
    """``text`` with every piece of ``dsn``'s password (and the whole string) replaced by ``***``."""
    if not dsn:
        return text
    for secret in secrets(dsn):
        text = text.replace(secret, "***")
    return text


def _libpq_words(message: str, dsn: str, blank_quoted: bool) -> str:
    """libpq's message, first line, redacted; ``blank_quoted``: quoted fragments other than
    keywords blanked too (a parse error quotes the text it could not read)."""
    line = message.strip().splitlines()[0] if message.strip() else "no reason given"
    if blank_quoted:
        line = re.sub(r'"([^"]*)"', lambda m: m.group() if m.group(1) in _KEYWORDS else '"***"', line)
    return redact(line, dsn)


def parse(dsn: str) -> dict:
    """The connection settings of ``dsn``, as libpq reads them (psycopg's ``conninfo_to_dict``)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        settings = conninfo_to_dict(dsn)
    except Exception as e:
        raise DsnError(f"libpq cannot read it ({_libpq_words(str(e), dsn, True)}); {HINT}") from None
    reason = _ambiguous(dsn)
    if reason:  # libpq would read pieces of the password as host, port or database, and say so
        raise DsnError(f"{reason}; {HINT}")
    return settings


def _ambiguous(dsn: str) -> str | None:
    """Why a URI's password would not be read as the password (None: it would, or no URI)."""
    uri = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://(.*)$", dsn, re.S)
    if uri is None or "@" not in uri.group(1):
        return None
    rest = uri.group(1)
    userinfo = rest[: rest.rindex("@")]
    if "@" in userinfo:
        return "it holds more than one @ before the host"
    if re.search(r"[/?\s]", userinfo):
        return "the part before the host holds a /, ? or space"
    if re.search(r"%(?![0-9A-Fa-f]{2})", userinfo):
        return "the part before the host holds a % that does not start a %XX code"
    return None


def try_connect(dsn: str, timeout: int = 10) -> None:
    """Connect once and close: the server is there and takes the credentials."""
    import psycopg

    parse(dsn)
    try:
        psycopg.connect(dsn, connect_timeout=timeout).close()
    except Exception as e:
        raise DsnError(f"cannot connect: {_libpq_words(str(e), dsn, False)}") from None
