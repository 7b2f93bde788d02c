"""Writes overwindow/data/plant_daily.csv: the plant output of DuckDB's window article (Boston and
Worcester, 2019-01-02 .. 2019-01-13) extended through 2019-12-31 with a seeded weekly pattern and
noise around each plant's level. Deterministic: rerunning it writes the same file."""

import csv
import datetime as dt
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "overwindow", "data")


def main():
    with open(os.path.join(DATA, "plant_generation.csv")) as f:
        real = list(csv.DictReader(f))
    rng = np.random.default_rng(2019)
    rows = [(r["plant"], r["date"], float(r["mwh"])) for r in real]
    for plant in ("Boston", "Worcester"):
        known = [m for p, _, m in rows if p == plant]
        level, spread = float(np.mean(known)), float(np.std(known))
        day = dt.date(2019, 1, 14)
        while day <= dt.date(2019, 12, 31):
            season = 1 + 0.12 * np.cos(2 * np.pi * (day.timetuple().tm_yday - 20) / 365)
            weekly = 0.96 if day.weekday() >= 5 else 1.0
            mwh = level * season * weekly + rng.normal(0, spread)
            rows.append((plant, day.isoformat(), round(float(mwh))))
            day += dt.timedelta(days=1)
    rows.sort(key=lambda r: (r[1], r[0]))
    with open(os.path.join(DATA, "plant_daily.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["plant", "date", "mwh"])
        w.writerows(rows)


if __name__ == "__main__":
    main()
