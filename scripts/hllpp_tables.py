"""Write overwindow/data/hllpp_bias.csv: the empirical tables HyperLogLog++ corrects its raw
estimate with (per precision p = 4 .. 18, the raw estimates measured at known cardinalities and the
bias measured at each), as the installed Spark holds them, so that approx_count_distinct's answers
are Spark's where Spark subtracts that bias. Read from the static initializer of Spark's
HyperLogLogPlusPlusHelper in the installed spark-catalyst jar (javap prints each double so that it
reads back exactly); no Spark is started. Run once per Spark upgrade:

    .venv/bin/python scripts/hllpp_tables.py

tests/spark/test_parity_approximate.py checks the file against the running Spark's tables.
"""

from __future__ import annotations

import csv
import glob
import os
import re
import subprocess
import sys
import tempfile
import zipfile

HELPER = "org/apache/spark/sql/catalyst/util/HyperLogLogPlusPlusHelper$.class"
_PUSH = re.compile(r"^\s*\d+: (iconst_(\d)|bipush\s+(-?\d+)|sipush\s+(-?\d+))$")
_DOUBLE = re.compile(r"^\s*\d+: ldc2_w\s+#\d+\s+// double (\S+)d$")


def double_arrays(javap_text: str) -> list[list[float]]:
    """The DOUBLE arrays the initializer fills after its first array of arrays, in order: each
    ``newarray double`` of the pushed size, filled by (index, constant, dastore)."""
    arrays: list[list[float]] = []
    outer = False
    pushed = value = None
    for line in javap_text.splitlines():
        m = _PUSH.match(line)
        if m:
            pushed = int(next(g for g in m.groups()[1:] if g is not None))
            continue
        m = _DOUBLE.match(line)
        if m:
            value = float(m.group(1))
            continue
        if "anewarray" in line and '"[D"' in line:
            outer = True
        elif line.rstrip().endswith("newarray       double") and outer:
            arrays.append([float("nan")] * pushed)
        elif line.rstrip().endswith("dastore") and outer and arrays:
            arrays[-1][pushed] = value
        elif line.strip().endswith("return"):
            outer = False
    return arrays


def main() -> int:
    import pyspark

    jar = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "spark-catalyst_*.jar"))[0]
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(jar) as z:
            z.extract(HELPER, tmp)
        command = ["javap", "-c", "-constants", os.path.join(tmp, HELPER)]
        text = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    arrays = double_arrays(text)
    assert len(arrays) == 30, len(arrays)  # 15 precisions of raw estimates, then 15 of biases
    raw, bias = arrays[:15], arrays[15:]
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "overwindow", "data", "hllpp_bias.csv")
    with open(path, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["precision", "raw_estimate", "bias"])
        for p, (estimates, biases) in enumerate(zip(raw, bias), start=4):
            assert len(estimates) == len(biases) and all(e == e for e in estimates + biases), p
            out.writerows([p, repr(e), repr(b)] for e, b in zip(estimates, biases))
    print(f"wrote {os.path.normpath(path)} from {os.path.basename(jar)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
