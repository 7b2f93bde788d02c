"""Writes the bundled sample data; deterministic (seeded): rerunning it writes the same files.

- overwindow/data/plant_daily.csv: the plant output of DuckDB's window article (Boston and
  Worcester, 2019-01-02 .. 2019-01-13) extended through 2019-12-31 with a seeded weekly pattern and
  noise around each plant's level.
- overwindow/data/stock_ticks.csv: a synthetic trading day (2024-03-15, 13:30-20:00 UTC) of trades
  in five symbols, in feed order: irregular arrivals, random-walk prices in cents, round-lot
  volumes, unique trade ids in event-time order, and a few ticks delayed by seconds, so event times
  mostly increase but not always (as in a real feed). The tickers are real, the prices are not.
"""

import csv
import datetime as dt
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "overwindow", "data")

# symbol: (opening price, mean seconds between its trades)
SYMBOLS = {
    "AAPL": (172.62, 24.0),
    "MSFT": (416.42, 30.0),
    "NVDA": (878.37, 18.0),
    "AMZN": (177.90, 34.0),
    "GOOG": (142.17, 40.0),
}
OPEN = dt.datetime(2024, 3, 15, 13, 30, tzinfo=dt.timezone.utc)
SESSION_SECONDS = 6.5 * 3600
DAILY_VOLATILITY = 0.02
LATE_SHARE = 0.01  # ticks the feed delivers late
LATE_SECONDS = (2.0, 20.0)  # by this much


def write_plants():
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


def write_ticks():
    # Its own generator, so the plant file never changes when the ticks do.
    rng = np.random.default_rng(20240315)
    trades = []  # (event seconds after the open, symbol, price, volume)
    for symbol, (price, mean_gap) in SYMBOLS.items():
        times = np.cumsum(rng.exponential(mean_gap, size=int(2 * SESSION_SECONDS / mean_gap)))
        times = np.round(times[times < SESSION_SECONDS], 3)  # a feed in milliseconds
        # Geometric random walk whose variance per second adds up to the daily volatility.
        steps = rng.normal(0, DAILY_VOLATILITY / np.sqrt(SESSION_SECONDS), size=len(times))
        prices = price * np.exp(np.cumsum(steps * np.sqrt(np.diff(times, prepend=0.0))))
        lots = rng.geometric(0.35, size=len(times))
        odd = rng.random(len(times)) < 0.1  # odd lots: fewer than 100 shares
        volumes = np.where(odd, rng.integers(1, 100, size=len(times)), 100 * lots)
        trades += [(float(t), symbol, round(float(p), 2), int(v)) for t, p, v in zip(times, prices, volumes)]
    trades.sort(key=lambda r: (r[0], r[1]))  # the exchange numbers trades as they happen
    delays = np.where(
        rng.random(len(trades)) < LATE_SHARE,
        rng.uniform(*LATE_SECONDS, size=len(trades)),
        rng.uniform(0.0, 0.2, size=len(trades)),
    )
    feed = sorted(range(len(trades)), key=lambda i: trades[i][0] + delays[i])
    with open(os.path.join(DATA, "stock_ticks.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["symbol", "ts", "trade_id", "price", "volume"])
        for i in feed:
            seconds, symbol, price, volume = trades[i]
            ts = (
                (OPEN + dt.timedelta(seconds=seconds))
                .isoformat(timespec="milliseconds")
                .replace("+00:00", "Z")
            )
            w.writerow([symbol, ts, 1_000_001 + i, f"{price:.2f}", volume])


def main():
    write_plants()
    write_ticks()


if __name__ == "__main__":
    main()
