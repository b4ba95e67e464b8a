"""The local price store: every cloud offer gpucost has seen, with the time it was seen (SQLite in the
user's data directory; never in the package). ``gpucost prices update`` adds observations; the engines
read the newest observation of each offer (:func:`latest`) next to the bundled snapshot, and
``gpucost prices history`` shows how a card's price moved.

The path is ``$GPUCOST_PRICE_STORE`` when set, else ``prices.sqlite3`` in platformdirs' user data folder.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path

import pandas as pd

from gpucost.offers import Offer

COLUMNS = ("provider", "provider_kind", "instance", "gpu_name", "gpu_id", "gpu_count", "region", "market", "spot",
           "price_per_gpu_hour", "currency", "observed_at", "source")
_SCHEMA = """CREATE TABLE IF NOT EXISTS observations (
    provider TEXT NOT NULL, provider_kind TEXT NOT NULL, instance TEXT NOT NULL, gpu_name TEXT NOT NULL,
    gpu_id TEXT, gpu_count REAL NOT NULL, region TEXT NOT NULL, market TEXT NOT NULL, spot INTEGER NOT NULL,
    price_per_gpu_hour REAL NOT NULL, currency TEXT NOT NULL, observed_at TEXT NOT NULL, source TEXT NOT NULL,
    UNIQUE (provider, instance, region, spot, observed_at))"""


def store_path() -> Path:
    env = os.environ.get("GPUCOST_PRICE_STORE", "").strip()
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("gpucost", appauthor=False)) / "prices.sqlite3"


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute(_SCHEMA)
    return con


def record(offers: Iterable[Offer], path: Path | None = None) -> int:
    """Add observations (an identical one — same offer, same time — is kept once); returns rows added."""
    path = path or store_path()
    rows = [tuple(int(getattr(o, c)) if c == "spot" else getattr(o, c) for c in COLUMNS) for o in offers]
    with closing(_connect(path)) as con, con:
        before = con.total_changes
        con.executemany(f"INSERT OR IGNORE INTO observations ({', '.join(COLUMNS)}) VALUES "
                        f"({', '.join('?' * len(COLUMNS))})", rows)
        return con.total_changes - before


def _read(sql: str, params: tuple, path: Path | None) -> pd.DataFrame:
    path = path or store_path()
    if not path.is_file():
        return pd.DataFrame(columns=list(COLUMNS))
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
        df = pd.read_sql_query(sql, con, params=params)
    df["spot"] = df["spot"].astype(bool)
    return df


def latest(path: Path | None = None) -> pd.DataFrame:
    """The newest observation of every offer (provider, instance, region, spot) that maps to a card."""
    return _read("""SELECT o.* FROM observations o JOIN (
                        SELECT provider, instance, region, spot, MAX(observed_at) AS t FROM observations
                        WHERE gpu_id IS NOT NULL GROUP BY provider, instance, region, spot) n
                    ON o.provider = n.provider AND o.instance = n.instance AND o.region = n.region
                       AND o.spot = n.spot AND o.observed_at = n.t
                    WHERE o.gpu_id IS NOT NULL""", (), path)


def history(gpu_id: str, path: Path | None = None) -> pd.DataFrame:
    """Every observation of one card, oldest first."""
    return _read("SELECT * FROM observations WHERE gpu_id = ? ORDER BY observed_at, price_per_gpu_hour",
                 (gpu_id,), path)


def stamp(path: Path | None = None) -> tuple[str, float, int]:
    """What identifies the store's content for caches: (path, modification time, size)."""
    path = path or store_path()
    try:
        st = path.stat()
    except OSError:
        return (str(path), 0.0, 0)
    return (str(path), st.st_mtime, st.st_size)


__all__ = ["store_path", "record", "latest", "history", "stamp", "COLUMNS"]
