"""The SQL text of window calls checked token by token, before sqlglot reads it into a tree.
sqlglot's reader is lenient where Spark's parser is not (``PARTITION BY a, ORDER BY b``, ``ROWS
BETWEEN 1 PRECEDING``, ``first_value(x, 'true')``, ``percentile_cont(x, 0.5)``, ``sum(x,)``): such
text is refused here, in Spark's terms, naming the token (``check_over_clauses``, with a
recursive-descent reader of each ``OVER (...)``); the spellings Spark takes and sqlglot's reader
refuses (``first_value(x, true)``, ``lag()``) are rewritten to ones it reads
(``flagged_value_functions``). O(tokens).

>>> t = "sum(x) OVER (PARTITION BY k, ORDER BY t) AS s"
>>> check_over_clauses(sqlglot.tokenize(t, read=DIALECT), t)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
overwindow.errors.WindowSpecError: syntax error at or near 'ORDER BY': expected an expression after ...
"""

from __future__ import annotations

import sqlglot

from overwindow.errors import WindowSpecError
from overwindow.logical.expr import DIALECT, INTERVAL_UNITS
from overwindow.logical.intervals import unit_words


def groups_without_order_by(text: str) -> bool:
    """Whether ``text`` has the word GROUPS and no ORDER BY (False where it cannot be tokenized)."""
    try:
        tokens = sqlglot.tokenize(text, read=DIALECT)
    except sqlglot.errors.TokenError:
        return False
    names = {t.token_type.name for t in tokens}
    return "GROUPS" in {t.text.upper() for t in tokens} and "ORDER_BY" not in names


_UNITS = {"ROWS", "RANGE", "GROUPS"}
_SIDES = {"PRECEDING", "FOLLOWING"}


def check_over_clauses(tokens: list, text: str) -> None:
    """Every ``OVER (...)`` read by the grammar Spark parses, strictly: ``[PARTITION BY e, ...]
    [ORDER BY e [ASC | DESC] [NULLS FIRST | LAST], ...] [ROWS | RANGE | GROUPS frame [EXCLUDE ...]]``.
    sqlglot's reader is lenient where Spark's is not (``PARTITION BY a, ORDER BY b`` reads as if the
    comma were not there, ``ROWS BETWEEN 1 PRECEDING`` as a frame ending at CURRENT ROW); such text is
    refused here, naming the token. O(tokens)."""
    for i, tok in enumerate(tokens):
        if tok.token_type.name == "OVER" and (i + 1 == len(tokens) or tokens[i + 1].text.upper() == "AS"):
            raise WindowSpecError(
                f"OVER needs a window specification in parentheses, OVER (...), in {text!r}"
            )
        if (
            tok.token_type.name == "OVER"
            and i + 1 < len(tokens)
            and tokens[i + 1].token_type.name == "L_PAREN"
        ):
            _Spec(tokens, i + 2, text).read()
        if tok.token_type.name == "L_PAREN" and i > 0 and tokens[i - 1].text.upper() in _FLAG_ARGUMENT:
            _check_flag_argument(tokens, i, text)
        if tok.token_type.name == "L_PAREN" and i > 0 and tokens[i - 1].text.upper() in _WITHIN_GROUP:
            _check_within_group(tokens, i, text)
        if tok.token_type.name == "COMMA" and i > 0 and tokens[i - 1].token_type.name in ("COMMA", "L_PAREN"):
            raise WindowSpecError(f"nothing before the comma at {tok.start + 1} in {text!r}")
        if tok.token_type.name == "COMMA" and (
            i + 1 == len(tokens) or tokens[i + 1].token_type.name == "R_PAREN"
        ):
            raise WindowSpecError(f"nothing after the comma at {tok.start + 1} in {text!r}")
        if (
            tok.token_type.name == "INTERVAL"
            and i + 1 < len(tokens)
            and tokens[i + 1].token_type.name == "STRING"
        ):
            unit = tokens[i + 2].text.upper() if i + 2 < len(tokens) else ""
            if unit.rstrip("S") not in INTERVAL_UNITS:
                # INTERVAL '1 day 3 hours': sqlglot keeps only the first number and unit of such a
                # string ('1 day xyz' reads as 1 day); read every word, as Spark does
                unit_words(tokens[i + 1].text)


def flagged_value_functions(text: str, tokens: list) -> str:
    """``text`` with ``first_value(x, flag)`` / ``last_value(x, flag)`` (Spark's ignore-nulls flag,
    which sqlglot's reader refuses) spelled ``first(x, flag)`` / ``last(x, flag)``, and ``lag()`` /
    ``lead()`` spelled ``lag(NULL)`` / ``lead(NULL)``: the same calls.

    >>> t = "first_value(x, true) OVER (ORDER BY t) AS f"
    >>> flagged_value_functions(t, sqlglot.tokenize(t, read=DIALECT))
    'first(x, true) OVER (ORDER BY t) AS f'
    """
    cuts = []
    for i, tok in enumerate(tokens[:-1]):
        name = tok.text.upper()
        if (
            name in ("LAG", "LEAD")
            and i + 2 < len(tokens)
            and tokens[i + 1].token_type.name == "L_PAREN"
            and tokens[i + 2].token_type.name == "R_PAREN"
        ):
            # Spark's lag() and lead() are lag(NULL) and lead(NULL), which sqlglot reads
            cuts.append((tokens[i + 2].start, tokens[i + 2].start, "NULL"))
        if name in ("FIRST_VALUE", "LAST_VALUE") and tokens[i + 1].token_type.name == "L_PAREN":
            depth = 0
            for later in tokens[i + 1 :]:
                kind = later.token_type.name
                depth += (kind == "L_PAREN") - (kind == "R_PAREN")
                if depth == 0:
                    break
                if depth == 1 and kind == "COMMA":
                    cuts.append((tok.start, tok.end + 1, name.split("_")[0].lower()))
                    break
    for start, end, spelling in reversed(cuts):
        text = text[:start] + spelling + text[end:]
    return text


# functions whose last argument sqlglot reads loosely (drops it, or takes any value): (position of
# the argument, what it must be); Spark wants a BOOLEAN literal (ignore nulls), or refuses it
_FLAG_ARGUMENT = {
    "FIRST": 1,
    "LAST": 1,
    "FIRST_VALUE": 1,
    "LAST_VALUE": 1,
    "ANY_VALUE": 1,
    "NTH_VALUE": 2,
    "PERCENTILE": 2,
}


def _arguments(tokens: list, at: int) -> tuple[list[list], int]:
    """(the top-level arguments, as token lists, of the call whose opening parenthesis is
    ``tokens[at]``; the position of its closing parenthesis). O(tokens of the call)."""
    args, depth, current = [], 0, []
    for j in range(at + 1, len(tokens)):
        kind = tokens[j].token_type.name
        if depth == 0 and kind in ("COMMA", "R_PAREN"):
            args.append(current)
            current = []
            if kind == "R_PAREN":
                return args, j
            continue
        depth += kind == "L_PAREN"
        depth -= kind == "R_PAREN"
        current.append(tokens[j])
    return args, len(tokens)


_WITHIN_GROUP = {"PERCENTILE_CONT", "PERCENTILE_DISC"}


def _check_within_group(tokens: list, at: int, text: str) -> None:
    """Spark reads ``percentile_cont`` and ``percentile_disc`` only as ``f(fraction) WITHIN GROUP
    (ORDER BY x)``: one argument (WRONG_NUM_ARGS), and WITHIN GROUP after it
    (WITHIN_GROUP_MISSING); sqlglot's reader also takes ``f(x, fraction)``."""
    name = tokens[at - 1].text.lower()
    args, end = _arguments(tokens, at)
    if len(args) != 1:
        raise WindowSpecError(
            f"{name}() takes one argument, the fraction, then WITHIN GROUP (ORDER BY x), got "
            f"{len(args)} (percentile(x, p) and quantile_cont(x, p) take the column), in {text!r}"
        )
    if end + 1 >= len(tokens) or tokens[end + 1].text.upper() != "WITHIN":
        raise WindowSpecError(f"{name}(...) needs WITHIN GROUP (ORDER BY x) after it, in {text!r}")


def _check_flag_argument(tokens: list, at: int, text: str) -> None:
    """The arguments of the call whose opening parenthesis is ``tokens[at]``: an ignore-nulls flag
    must be the literal TRUE or FALSE (Spark: "The second argument in first should be a boolean
    literal"); percentile's frequency argument is taken only as the constant 1 (each row once: the
    percentile without frequencies; any other frequency moves the positions the percentile
    interpolates between, so it is refused)."""
    name = tokens[at - 1].text.lower()
    args, _ = _arguments(tokens, at)
    position = _FLAG_ARGUMENT[name.upper()]
    if len(args) <= position:
        return
    if name == "percentile":
        # as written: the string '1' is no INTEGRAL frequency (Spark refuses it)
        frequency = text[args[position][0].start : args[position][-1].end + 1]
        if len(args) > position + 1 or frequency != "1":
            raise WindowSpecError(
                f"percentile(x, p, frequency) is supported with the frequency 1 only (each row "
                f"once; another weighs the rows, which overwindow does not), got {frequency!r}, "
                f"in {text!r}"
            )
        return
    if len(args) > position + 1:  # Spark: WRONG_NUM_ARGS (sqlglot drops the extra arguments)
        raise WindowSpecError(
            f"{name}() takes at most {position + 1} arguments, got {len(args)}, in {text!r}"
        )
    flag = args[position]
    if len(flag) != 1 or flag[0].token_type.name not in ("TRUE", "FALSE"):  # not the string 'true'
        raise WindowSpecError(
            f"the ignore-nulls argument of {name}() must be the literal TRUE or FALSE, got "
            f"{' '.join(t.text for t in flag)!r}, in {text!r}"
        )


class _Spec:
    """A recursive-descent reader of one window specification's tokens (after its opening paren)."""

    def __init__(self, tokens, at: int, text: str):
        self.tokens, self.at, self.text = tokens, at, text

    def word(self, k: int = 0) -> str:
        """The token ``k`` ahead in upper case ('' past the end; quoted identifiers are no keywords)."""
        if self.at + k >= len(self.tokens):
            return ""
        tok = self.tokens[self.at + k]
        if tok.token_type.name in ("L_PAREN", "R_PAREN", "COMMA", "ORDER_BY", "PARTITION_BY"):
            return tok.token_type.name
        return "" if tok.token_type.name in ("IDENTIFIER", "STRING") else tok.text.upper()

    def fail(self, expected: str):
        got = self.tokens[self.at].text if self.at < len(self.tokens) else "end of input"
        raise WindowSpecError(f"syntax error at or near '{got}': expected {expected}, in {self.text!r}")

    def expect(self, *words: str) -> str:
        w = self.word()
        if w not in words:
            self.fail(" or ".join(words))
        self.at += 1
        return w

    def expression(self, stops: set, what: str) -> None:
        """One or more tokens, parentheses balanced, up to a stop word at depth 0."""
        start, depth = self.at, 0
        while self.at < len(self.tokens):
            w = self.word()
            if depth == 0 and (w in stops or w in ("COMMA", "R_PAREN") or self.session_clause(stops)):
                break
            depth += w == "L_PAREN"
            depth -= w == "R_PAREN"
            self.at += 1
        if self.at == start:
            self.fail(what)

    def session_clause(self, stops: set) -> bool:
        """Whether ``SESSION WITH`` starts here where a frame may (a column named session is no
        clause)."""
        return bool(stops & _UNITS) and self.word() == "SESSION" and self.word(1) == "WITH"

    def read(self) -> None:
        frame_or_end = _UNITS | {"R_PAREN"}
        if self.word() == "PARTITION_BY":
            self.at += 1
            self.expressions({"ORDER_BY"} | _UNITS, "an expression after PARTITION BY")
        ordered = self.word() == "ORDER_BY"
        if ordered:
            self.at += 1
            while True:
                self.expression({"ASC", "DESC", "NULLS"} | _UNITS, "an expression after ORDER BY")
                if self.word() in ("ASC", "DESC"):
                    self.at += 1
                if self.word() == "NULLS":
                    self.at += 1
                    self.expect("FIRST", "LAST")
                if self.word() != "COMMA":
                    break
                self.at += 1
        if self.session_clause(_UNITS) and not ordered:
            raise WindowSpecError(
                f"SESSION WITH GAP needs ORDER BY: sessions chain rows by their ORDER BY values, in "
                f"{self.text!r}"
            )
        if self.session_clause(_UNITS):
            self.at += 1
            self.expect("WITH")
            self.expect("GAP")
            self.expression(_UNITS, "a gap after SESSION WITH GAP")
            if self.word() in _UNITS:
                raise WindowSpecError(
                    f"SESSION WITH GAP takes no {self.word()} bounds: a row's frame is its whole "
                    f"session, in {self.text!r}"
                )
        elif self.word() in _UNITS:
            self.at += 1
            if self.word() == "BETWEEN":
                self.at += 1
                self.bound({"AND"})
                self.expect("AND")
                self.bound(set())
            else:
                self.bound(set())
            if self.word() == "EXCLUDE":
                self.at += 1
                w = self.expect("CURRENT", "GROUP", "TIES", "NO")
                if w == "CURRENT":
                    self.expect("ROW")
                elif w == "NO":
                    self.expect("OTHERS")
        if self.word() != "R_PAREN":
            self.fail(
                "PARTITION BY, ORDER BY, a frame, SESSION WITH GAP or ')'"
                if self.word() not in frame_or_end
                else "')'"
            )

    def expressions(self, stops: set, what: str) -> None:
        while True:
            self.expression(stops, what)
            if self.word() != "COMMA":
                return
            self.at += 1

    def bound(self, stops: set) -> None:
        if self.word() == "UNBOUNDED":
            self.at += 1
            self.expect(*_SIDES)
        elif self.word() == "CURRENT":
            self.at += 1
            self.expect("ROW")
        else:
            self.expression(_SIDES | stops, "a frame bound")
            self.expect(*_SIDES)
