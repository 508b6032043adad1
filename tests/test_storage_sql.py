"""PostgresStorage against a real PostgreSQL server.

The server: $TRIKE_TEST_PG_DSN when set, else a throwaway one started by scripts/start-postgres.sh for this
session (Debian's `postgresql` package) and stopped at the end. Without PostgreSQL binaries or psycopg
these tests are skipped with the reason, and fail under CI (CI=true).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from trike import StorageError, TrikeDB

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "start-postgres.sh"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"PostgreSQL tests cannot run under CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pg_dsn():
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed: pip install 'psycopg[binary]' (the `sql` extra)")
    dsn = os.environ.get("TRIKE_TEST_PG_DSN")
    if dsn:
        yield dsn
        return
    if shutil.which("bash") is None:
        _unavailable("bash is needed to run scripts/start-postgres.sh")
    folder = tempfile.mkdtemp(prefix="trike-pg-")
    os.rmdir(folder)  # the script makes it (and owns it)
    proc = subprocess.run(["bash", str(SCRIPT), folder], capture_output=True, text=True, timeout=120)
    if proc.returncode == 3:
        _unavailable("PostgreSQL server binaries not found (apt-get install postgresql): " + proc.stderr.strip())
    if proc.returncode != 0:
        pytest.fail(f"scripts/start-postgres.sh failed ({proc.returncode}):\n{proc.stderr}")
    dsn = proc.stdout.strip().splitlines()[-1]
    try:
        yield dsn
    finally:
        subprocess.run(["bash", str(SCRIPT), "--stop", folder], capture_output=True, text=True, timeout=120)


@pytest.fixture
def graph_name() -> str:
    return "t-" + uuid.uuid4().hex[:12]


def storage(dsn: str, graph: str, **kw):
    from trike.storage_sql import PostgresStorage

    return PostgresStorage(dsn, graph, **kw)


# ------------------------------------------------------------------------------------------ basics

def test_round_trip_text_version_and_isolation(pg_dsn, graph_name):
    st = storage(pg_dsn, graph_name)
    assert st.exists() is False and st.version() is None
    with pytest.raises(StorageError, match="no graph stored yet"):
        st.read_text()
    text = "nodes:\n  担当A: {type: team}\ntriples:\n- {s: job, p: OWNED_BY, o: 担当A, note: \"a 'quote' and \\\\\"}\n"
    st.write_text(text)
    assert st.exists() and st.read_text() == text
    v1 = st.version()
    st.append_text("- {s: x, p: R, o: y}\n")
    v2 = st.version()
    assert st.read_text() == text + "- {s: x, p: R, o: y}\n"
    assert v2 != v1 and v2[0] == v1[0] and v2[1] == len((text + "- {s: x, p: R, o: y}\n").encode())
    st.write_text("nodes: {}\n")
    v3 = st.version()
    assert v3[0] != v1[0] and v3[2] > v2[2]  # a rewrite starts a new generation
    assert st.read_from(len(b"nodes: ")) == b"{}\n"
    other = storage(pg_dsn, graph_name + "-other")  # same table, another graph: separate rows
    assert not other.exists()
    other.write_text("nodes: {}\ntriples: []\n")
    assert st.read_text() == "nodes: {}\n"
    names = [g["name"] for g in st.list_graphs()]
    assert graph_name in names and graph_name + "-other" in names
    assert other.delete() and not other.exists()
    st.close()
    other.close()


def test_trikedb_on_postgres_equals_trikedb_on_a_file(pg_dsn, graph_name, tmp_path):
    ops = [
        ("add", ("crm-sync-job", "INGESTS_TO", "RAW_CRM_CONTACTS"), {"schedule": "hourly"}),
        ("add", ("RAW_CRM_CONTACTS", "OWNED_BY", "データ基盤"), {"valid_from": "2024-05-01", "prov": "memo"}),
        ("node", ("RAW_CRM_CONTACTS",), {"type": "table", "pii": True, "rows": 12000}),
        ("add", ("RAW_CRM_CONTACTS", "retention_days", 30), {}),
        ("remove", (), {"s": "crm-sync-job"}),
        ("add", ("STG", "FEEDS", "MART"), {"confidence": 0.9}),
    ]
    pg = TrikeDB(storage=storage(pg_dsn, graph_name))
    local = TrikeDB(tmp_path / "g.yaml")
    for db in (pg, local):
        for op, args, kw in ops:
            {"add": db.add, "node": db.set_node, "remove": db.remove}[op](*args, **kw)
    reopened = TrikeDB(storage=storage(pg_dsn, graph_name))
    assert reopened.content_hash() == local.content_hash() == pg.content_hash()
    assert reopened.facts() == local.facts()
    assert reopened.get_node("RAW_CRM_CONTACTS")["props"] == {"type": "table", "pii": True, "rows": 12000}
    assert reopened.sparql("ASK { t:STG t:FEEDS t:MART }") is True


def test_another_trikedb_picks_up_changes_reading_only_the_tail(pg_dsn, graph_name):
    from trike.storage_sql import PostgresStorage

    class Counting(PostgresStorage):
        whole = 0
        tails = 0

        def read_text(self) -> str:
            self.whole += 1
            return super().read_text()

        def read_from(self, offset: int) -> bytes:
            self.tails += 1
            return super().read_from(offset)

    writer = TrikeDB(storage=storage(pg_dsn, graph_name))
    writer.add("a", "NEXT", "b")
    st = Counting(pg_dsn, graph_name)
    reader = TrikeDB(storage=st)
    assert reader.match("a") == [{"s": "a", "p": "NEXT", "o": "b"}] and st.whole == 1
    rev = reader.revision
    writer.add("b", "NEXT", "c", note="日本語")  # an append: the reader fetches the new line only
    assert reader.match("b") == [{"s": "b", "p": "NEXT", "o": "c", "note": "日本語"}]
    assert (st.whole, st.tails) == (1, 1) and reader.revision > rev
    assert reader.match("b") and (st.whole, st.tails) == (1, 1)  # nothing changed: no read at all
    writer.remove(s="a")  # a rewrite: the reader reads the whole text again
    assert reader.match("a") == [] and st.whole == 2
    writer.set_node("c", type="end")
    assert reader.get_node("c")["props"] == {"type": "end"}


def test_unreachable_server_is_a_clear_error():
    import socket

    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed: pip install 'psycopg[binary]' (the `sql` extra)")

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    st = storage(f"postgresql://someone:secret@127.0.0.1:{port}/kb", "g", connect_timeout=2)
    with pytest.raises(StorageError) as err:
        st.version()
    msg = str(err.value)
    assert f"postgresql://127.0.0.1:{port}/kb#g" in msg and "cannot connect" in msg and "secret" not in msg
    from trike.errors import TrikeError

    with pytest.raises(TrikeError, match="bad table name"):
        storage("postgresql://x@127.0.0.1/kb", "g", table="graphs; DROP TABLE x")


def test_a_read_reconnects_after_the_connection_was_cut(pg_dsn, graph_name):
    import psycopg

    st = storage(pg_dsn, graph_name)
    db = TrikeDB(storage=st)
    db.add("a", "R", "b")
    pid = st._conn.info.backend_pid
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    time.sleep(0.1)
    assert st.read_text().endswith("- {s: a, p: R, o: b}\n")  # a new connection, transparently
    assert st._conn.info.backend_pid != pid
    db.add("b", "R", "c")
    assert len(TrikeDB(storage=storage(pg_dsn, graph_name)).facts()) == 2
    # cut while a writer holds the lock: that write fails (it never runs unlocked), the next one works
    with pytest.raises(StorageError, match="lost while holding the graph lock|failed"):
        with db.batch():
            db.add("c", "R", "d")
            with psycopg.connect(pg_dsn, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (st._conn.info.backend_pid,))
            time.sleep(0.1)
    assert db.match("c") == []
    db.add("d", "R", "e")
    assert {f["s"] for f in TrikeDB(storage=storage(pg_dsn, graph_name)).facts()} == {"a", "b", "d"}


# ------------------------------------------------------------------------------------------ processes

WRITER = textwrap.dedent(
    """
    import sys
    from trike import TrikeDB
    from trike.storage_sql import PostgresStorage
    dsn, graph, tag, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    db = TrikeDB(storage=PostgresStorage(dsn, graph))
    print("ready", flush=True)
    sys.stdin.readline()                          # start together
    for i in range(n):
        db.add(f"{tag}-{i}", "NEXT", f"{tag}-{i + 1}", by=tag)
        if i % 10 == 3:
            db.set_node(f"{tag}-{i}", seen=i)     # a full rewrite now and then
    print("done", flush=True)
    """
)


def test_two_processes_writing_concurrently_lose_nothing(pg_dsn, graph_name):
    n = 60
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, pg_dsn, graph_name, tag, str(n)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ENV)
             for tag in ("left", "right")]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "done"
    db = TrikeDB(storage=storage(pg_dsn, graph_name))
    for tag in ("left", "right"):
        mine = db.match(p="NEXT", by=tag)
        assert len(mine) == n, f"{tag}: {n - len(mine)} writes lost"
        assert {f["s"] for f in mine} == {f"{tag}-{i}" for i in range(n)}
        assert all(db.get_node(f"{tag}-{i}")["props"] == {"seen": i} for i in range(3, n, 10))
    assert db.check() == []


DYING = textwrap.dedent(
    """
    import os, signal, sys
    from trike import TrikeDB
    from trike.storage_sql import PostgresStorage

    class Dying(PostgresStorage):
        def _before_commit(self):                 # inside the write transaction, before COMMIT
            print("in transaction", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

    dsn, graph, how = sys.argv[1], sys.argv[2], sys.argv[3]
    db = TrikeDB(storage=Dying(dsn, graph))
    if how == "rewrite":
        db.set_node("a", colour="red")
    else:
        db.add("z", "R", "w")
    """
)

HOLDER = textwrap.dedent(
    """
    import sys, time
    from trike import TrikeDB
    from trike.storage_sql import PostgresStorage
    db = TrikeDB(storage=PostgresStorage(sys.argv[1], sys.argv[2]))
    with db.batch():
        db.add("half", "R", "done")
        print("holding the lock", flush=True)
        time.sleep(60)
    """
)


def test_a_killed_writer_leaves_the_graph_and_the_lock_intact(pg_dsn, graph_name):
    db = TrikeDB(storage=storage(pg_dsn, graph_name, lock_timeout=10))
    db.add("a", "R", "b")
    before = db.storage.read_text()
    for how in ("rewrite", "append"):  # killed between the UPDATE and the COMMIT
        proc = subprocess.run([sys.executable, "-c", DYING, pg_dsn, graph_name, how],
                              capture_output=True, text=True, env=ENV, timeout=60)
        assert proc.returncode == -signal.SIGKILL and "in transaction" in proc.stdout, proc.stderr
        assert db.storage.read_text() == before  # rolled back by the server
        assert db.get_node("a")["props"] == {} and db.match("z") == []
    # a process killed while it holds the graph lock (in the middle of a batch)
    impatient = TrikeDB(storage=storage(pg_dsn, graph_name, lock_timeout=0.3))
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, pg_dsn, graph_name],
                            stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        assert proc.stdout.readline().strip() == "holding the lock"
        assert TrikeDB(storage=storage(pg_dsn, graph_name)).match("a")  # readers do not wait...
        with pytest.raises(StorageError, match="lock"):  # ...unless asked to
            TrikeDB(storage=storage(pg_dsn, graph_name, shared_locks=True, lock_timeout=0.3))
        with pytest.raises(StorageError, match="another writer held the graph lock"):
            impatient.add("c", "R", "d")
        assert impatient.match("c") == []
    finally:
        proc.kill()
        proc.wait()
    t0 = time.monotonic()
    db.add("c", "R", "d")  # the lock died with the session
    assert time.monotonic() - t0 < 5
    fresh = TrikeDB(storage=storage(pg_dsn, graph_name))
    assert {(f["s"], f["o"]) for f in fresh.facts()} == {("a", "b"), ("c", "d")}


def test_threads_sharing_one_storage_take_turns(pg_dsn, graph_name):
    st = storage(pg_dsn, graph_name)
    dbs = [TrikeDB(storage=st), TrikeDB(storage=st)]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(25):
                dbs[k].add(f"t{k}-{i}", "R", "x")
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert len(TrikeDB(storage=storage(pg_dsn, graph_name)).match(p="R")) == 50
