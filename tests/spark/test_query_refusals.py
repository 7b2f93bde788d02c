"""What ``overwindow.sql`` does not run of a windows-over-GROUP BY query is refused when the query is
read, before Spark starts, in SQL words and naming the clause as written: GROUPING SETS, ROLLUP,
CUBE, ``WITH ROLLUP`` and HAVING without GROUP BY (never a parser's raw error or a query that runs as
a plain GROUP BY); HAVING after GROUP BY is read. No Spark session: ``parse_query`` reads the text
with sqlglot."""

import re

import pytest

from overwindow.errors import WindowSpecError
from overwindow.spark.query import parse_query

HEAD = "SELECT day, k, sum(a) AS t, avg(sum(a)) OVER (ORDER BY day ROWS 6 PRECEDING) AS m FROM source "


@pytest.mark.parametrize(
    "tail, words",
    [
        ("HAVING sum(a) > 10", "HAVING without GROUP BY (one group of every row) is not supported yet"),
        (
            "GROUP BY GROUPING SETS ((day), (day, k))",
            "GROUP BY GROUPING SETS ((day), (day, k)) is not supported yet",
        ),
        ("GROUP BY ROLLUP (day, k)", "GROUP BY ROLLUP (day, k) is not supported yet"),
        ("GROUP BY CUBE (day, k)", "GROUP BY CUBE (day, k) is not supported yet"),
        ("GROUP BY day, k WITH ROLLUP", "GROUP BY day, k WITH ROLLUP is not supported yet"),
    ],
)
def test_group_by_forms_it_does_not_run_are_refused_in_sql_words(tail, words):
    with pytest.raises(WindowSpecError, match=re.escape(words) + ", in 'SELECT day"):
        parse_query(HEAD + tail)


def test_having_after_group_by_is_read():
    query = parse_query(HEAD + "GROUP BY day, k HAVING count(*) > 2 AND t > 0")
    assert query.group_by == ("day", "k") and query.having == "COUNT(*) > 2 AND t > 0"
