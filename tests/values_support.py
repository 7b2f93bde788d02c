"""Value equality for the tests that compare results with an oracle's."""

import math


def same(a, b, rel=1e-9, abs_tol=0.0) -> bool:
    """Whether two results agree: NULL only with NULL, NaN only with NaN, numbers within ``rel``
    (relative) or ``abs_tol``, lists and tuples item by item, anything else equal.

    >>> same(0.1 + 0.2, 0.3), same(float("nan"), None), same([1, None], (1, None))
    (True, False, True)
    """
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, rel, abs_tol) for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or abs(a - b) <= max(rel * max(abs(a), abs(b)), abs_tol)
    return a == b
