"""A PostgreSQL storage backend: the graph's YAML text in one row of a table.

```python
from trike import TrikeDB
from trike.storage_sql import PostgresStorage

db = TrikeDB(storage=PostgresStorage("postgresql://app@db.internal/kb", graph="platform"))
db.add("crm-sync-job", "INGESTS_TO", "RAW_CRM_CONTACTS")
```

Needs the `sql` extra (`pip install 'trike[sql]'`, i.e. psycopg 3). The table (default `trike_graphs`)
is created on first use and holds one row per graph:

    name text PRIMARY KEY, text text, version bigint, generation bigint, bytes bigint, updated_at timestamptz

- `write_text` replaces the text in one transaction (readers see the old or the new text, never a mix);
  `append_text` appends in one statement (a new fact is one appended line, as with a file).
- `version()` is one indexed `SELECT` of `(generation, bytes, version)`: `version` comes from a sequence
  and changes on every write; `generation` changes on every rewrite, so another process that sees the
  same generation and more bytes reads only the appended tail (`read_from`).
- `lock()` takes `pg_advisory_lock` on a 64-bit hash of table and graph name, so writers in different
  processes and machines take turns: `TrikeDB` holds it while it syncs, checks and persists, hence no
  write is lost. A killed process's session ends and its lock with it; a killed transaction is rolled
  back by PostgreSQL. Readers do not wait for writers (each read is one statement on a snapshot) unless
  `shared_locks=True`, which makes `lock(shared=True)` take `pg_advisory_lock_shared`.
- The server must use UTF-8 (`SHOW server_encoding`); with another encoding tail reads are off and
  every change is read whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
from collections.abc import Iterator
from typing import Any

from .errors import StorageError, TrikeError

__all__ = ["PostgresStorage"]

_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,50}$")


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise TrikeError("PostgresStorage needs psycopg 3: pip install 'trike[sql]' "
                         "(or pip install 'psycopg[binary]')") from None
    return psycopg


def _describe(dsn: str) -> str:
    """host:port/dbname of a DSN, without user or password (for messages)."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(dsn)
    except Exception:  # noqa: BLE001 (any unparsable DSN: show nothing of it)
        return "postgresql"
    host = str(info.get("host") or "localhost")
    if host.startswith("/"):
        host = f"[{host}]"
    port = info.get("port")
    return f"postgresql://{host}{':' + str(port) if port else ''}/{info.get('dbname') or ''}"


class PostgresStorage:
    """One graph stored in a PostgreSQL table. See the module docstring.

    `dsn`: a libpq connection string or `postgresql://` URL. `graph`: the row's name (several graphs can
    share a table). `table`: the table name (`schema.table` allowed). `lock_timeout`: seconds to wait
    for another writer before giving up (None: wait). `connect_timeout`: seconds to wait for the server.
    `shared_locks`: make readers wait for a writer's lock too (off: readers read a snapshot).
    """

    def __init__(self, dsn: str, graph: str = "default", *, table: str = "trike_graphs",
                 lock_timeout: float | None = None, connect_timeout: float = 10.0, shared_locks: bool = False):
        self._pg = _psycopg()
        if not isinstance(graph, str) or not graph:
            raise TrikeError("PostgresStorage: graph must be a non-empty name")
        parts = table.split(".")
        if len(parts) > 2 or not all(_IDENT.match(p) for p in parts):
            raise TrikeError(f"PostgresStorage: bad table name {table!r} (lower-case letters, digits, _; schema.table ok)")
        self.dsn = dsn
        self.graph = graph
        self.table = table
        self.lock_timeout = lock_timeout
        self.connect_timeout = connect_timeout
        self.shared_locks = shared_locks
        self.name = f"{_describe(dsn)}#{graph}"
        digest = hashlib.blake2b(f"trike\0{table}\0{graph}".encode(), digest_size=8).digest()
        self.lock_key = int.from_bytes(digest, "big", signed=True)
        sql = self._pg.sql
        self._t = sql.Identifier(*parts)
        self._seq = sql.Identifier(*parts[:-1], parts[-1] + "_version_seq")
        self._seq_name = ".".join(parts[:-1] + [parts[-1] + "_version_seq"])
        self._conn: Any = None
        self._mutex = threading.RLock()
        self._held = 0  # depth of lock() on this connection
        self._lock_lost = False  # the session holding the lock ended while lock() was held
        self._utf8 = True

    # ------------------------------------------------------------------ connection
    def _connection(self) -> Any:
        conn = self._conn
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        self._conn = None
        if self._held:
            self._lock_lost = True  # reads may go on with a new session; writes must not (see _check_lock)
        pg = self._pg
        try:
            conn = pg.connect(self.dsn, autocommit=True, connect_timeout=max(1, round(self.connect_timeout)))
        except pg.Error as exc:
            raise StorageError(f"{self.name}: cannot connect: {_first_line(exc)}") from None
        try:
            if self.lock_timeout is not None:
                conn.execute(f"SET lock_timeout = {int(self.lock_timeout * 1000)}")
            row = conn.execute("SHOW server_encoding").fetchone()
            self._utf8 = bool(row) and str(row[0]).upper() in ("UTF8", "UTF-8", "UNICODE")
            self._create(conn)
        except pg.Error as exc:
            conn.close()
            raise StorageError(f"{self.name}: cannot prepare the table {self.table}: {_first_line(exc)}") from None
        self._conn = conn
        return conn

    def _create(self, conn: Any) -> None:
        sql = self._pg.sql
        exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL",
                              (self.table, self._seq_name)).fetchone()
        if exists and exists[0]:
            return
        with conn.transaction():
            # one creator at a time (CREATE ... IF NOT EXISTS races between sessions)
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (self.lock_key ^ 0x7472696B65,))
            conn.execute(sql.SQL("CREATE SEQUENCE IF NOT EXISTS {}").format(self._seq))
            conn.execute(sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} ("
                " name text PRIMARY KEY,"
                " text text NOT NULL,"
                " version bigint NOT NULL,"
                " generation bigint NOT NULL,"
                " bytes bigint NOT NULL,"
                " updated_at timestamptz NOT NULL DEFAULT now())").format(self._t))

    def _run(self, what: str, fn: Any, *, retry: bool = True) -> Any:
        """Run `fn(conn)`; errors become StorageError naming the graph. A read is retried once on a
        fresh connection when the old one broke (never a write: it may have been committed)."""
        pg = self._pg
        with self._mutex:
            for attempt in (1, 2):
                conn = self._connection()
                try:
                    return fn(conn)
                except pg.errors.LockNotAvailable:
                    raise StorageError(f"{self.name}: another writer held the graph lock for more than "
                                       f"{self.lock_timeout:g} s") from None
                except pg.OperationalError as exc:
                    broken = conn.broken or conn.closed
                    if broken:
                        self._conn = None
                    if broken and retry and attempt == 1:
                        continue
                    raise StorageError(f"{self.name}: {what} failed: {_first_line(exc)}") from None
                except pg.Error as exc:
                    raise StorageError(f"{self.name}: {what} failed: {_first_line(exc)}") from None
        raise AssertionError  # pragma: no cover

    def _check_lock(self) -> None:
        if self._held and self._lock_lost:
            raise StorageError(f"{self.name}: the connection to the server was lost while holding the graph "
                               "lock; the write was not made (another writer may have written meanwhile)")

    def close(self) -> None:
        """Close the connection (releases any lock it holds)."""
        with self._mutex:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.close()
                self._conn = None

    def __enter__(self) -> PostgresStorage:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresStorage({self.name!r})"

    # ------------------------------------------------------------------ Storage protocol
    def read_text(self) -> str:
        sql = self._pg.sql

        def go(conn: Any) -> str:
            row = conn.execute(sql.SQL("SELECT text FROM {} WHERE name = %s").format(self._t),
                               (self.graph,)).fetchone()
            if row is None:
                raise StorageError(f"{self.name}: no graph stored yet")
            return row[0]

        return self._run("reading the graph", go)

    def read_from(self, offset: int) -> bytes:
        """The UTF-8 bytes of the text from `offset` on (only the tail travels)."""
        if not self._utf8:
            raise OSError("tail reads need a UTF-8 database")
        sql = self._pg.sql

        def go(conn: Any) -> bytes:
            row = conn.execute(sql.SQL("SELECT substring(convert_to(text, 'UTF8') FROM %s) FROM {} "
                                       "WHERE name = %s").format(self._t), (int(offset) + 1, self.graph)).fetchone()
            if row is None:
                raise OSError("the graph is gone")
            return bytes(row[0])

        try:
            return self._run("reading the graph's tail", go)
        except StorageError as exc:
            raise OSError(str(exc)) from None

    def exists(self) -> bool:
        sql = self._pg.sql
        return self._run("looking up the graph", lambda conn: conn.execute(
            sql.SQL("SELECT 1 FROM {} WHERE name = %s").format(self._t), (self.graph,)).fetchone() is not None)

    def version(self) -> object:
        """`(generation, bytes, version)`, or None when no graph is stored yet."""
        sql = self._pg.sql
        row = self._run("reading the graph's version", lambda conn: conn.execute(
            sql.SQL("SELECT generation, bytes, version FROM {} WHERE name = %s").format(self._t),
            (self.graph,)).fetchone())
        return None if row is None else (int(row[0]), int(row[1]), int(row[2]))

    def write_text(self, text: str) -> None:
        """Replace the whole text, atomically (one transaction)."""
        sql = self._pg.sql
        data = text.encode("utf-8")
        stmt = sql.SQL(
            "WITH v AS (SELECT nextval({seq}) AS n) "
            "INSERT INTO {t} (name, text, version, generation, bytes, updated_at) "
            "SELECT %s, %s, v.n, v.n, %s, now() FROM v "
            "ON CONFLICT (name) DO UPDATE SET text = EXCLUDED.text, version = EXCLUDED.version, "
            "generation = EXCLUDED.generation, bytes = EXCLUDED.bytes, updated_at = EXCLUDED.updated_at"
        ).format(seq=sql.Literal(self._seq_name), t=self._t)

        def go(conn: Any) -> None:
            self._check_lock()
            with conn.transaction():
                conn.execute(stmt, (self.graph, text, len(data)))
                self._before_commit()

        self._run("writing the graph", go, retry=False)

    def append_text(self, text: str) -> None:
        """Append to the text in one statement (keeps `generation`, so readers fetch only the tail)."""
        sql = self._pg.sql
        data = text.encode("utf-8")
        stmt = sql.SQL(
            "UPDATE {t} SET text = text || %s, bytes = bytes + %s, version = nextval({seq}), "
            "updated_at = now() WHERE name = %s"
        ).format(seq=sql.Literal(self._seq_name), t=self._t)

        def go(conn: Any) -> int:
            self._check_lock()
            with conn.transaction():
                n = conn.execute(stmt, (text, len(data), self.graph)).rowcount
                self._before_commit()
                return n

        if not self._run("appending to the graph", go, retry=False):
            self.write_text(text)

    @contextlib.contextmanager
    def lock(self, shared: bool = False) -> Iterator[None]:
        """An exclusive PostgreSQL advisory lock on this graph (writers take turns across processes and
        machines; threads sharing this object take turns too). `shared=True` (readers) takes nothing by
        default: each read is one statement on a consistent snapshot, so readers need not wait for a
        writer; with `shared_locks=True` it takes `pg_advisory_lock_shared` and waits."""
        if shared and not self.shared_locks:
            yield
            return
        take = "pg_advisory_lock_shared" if shared else "pg_advisory_lock"
        give = "pg_advisory_unlock_shared" if shared else "pg_advisory_unlock"
        with self._mutex:
            self._run("taking the graph lock", lambda conn: conn.execute(f"SELECT {take}(%s)", (self.lock_key,)))
            self._held += 1
            try:
                yield
            finally:
                self._held -= 1
                conn = self._conn
                if self._lock_lost:
                    if not self._held:
                        self._lock_lost = False  # the lock ended with its session: nothing to release
                elif conn is not None and not conn.broken and not conn.closed:
                    with contextlib.suppress(self._pg.Error):
                        conn.execute(f"SELECT {give}(%s)", (self.lock_key,))

    # ------------------------------------------------------------------ extras
    def _before_commit(self) -> None:
        """Called inside the write transaction, before COMMIT (a hook for crash tests)."""

    def delete(self) -> bool:
        """Remove this graph's row. True when there was one."""
        sql = self._pg.sql
        return bool(self._run("deleting the graph", lambda conn: conn.execute(
            sql.SQL("DELETE FROM {} WHERE name = %s").format(self._t), (self.graph,)).rowcount, retry=False))

    def list_graphs(self) -> list[dict]:
        """Every graph in the table: name, bytes, version, updated_at."""
        sql = self._pg.sql
        rows = self._run("listing graphs", lambda conn: conn.execute(
            sql.SQL("SELECT name, bytes, version, updated_at FROM {} ORDER BY name").format(self._t)).fetchall())
        return [{"name": r[0], "bytes": int(r[1]), "version": int(r[2]), "updated_at": r[3]} for r in rows]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
