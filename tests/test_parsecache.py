"""The parse cache: big files open from a pickled parse, appended lines are read as a tail, any other
change is a miss, and a broken cache entry is ignored."""

from __future__ import annotations

import pytest

from trike import TrikeDB, parsecache
from trike.yamlfile import GraphData, dump


@pytest.fixture
def big(tmp_path, monkeypatch):
    monkeypatch.setattr(parsecache, "MIN_BYTES", 2_000)  # small files count as big here
    p = tmp_path / "g.yaml"
    triples = [(f"n{i}", "NEXT", f"n{i + 1}", {"w": i} if i % 3 == 0 else None) for i in range(200)]
    p.write_text(dump(GraphData(nodes={"n0": {"type": "start"}}, triples=triples)))
    return p


def _entries(tmp_path_factory):
    return list((tmp_path_factory.getbasetemp() / "trike-cache" / "parsed").glob("*.pickle"))


def test_second_open_uses_the_cache(big, monkeypatch):
    first = TrikeDB(big)
    calls = []
    real = parsecache.yamlfile.parse
    monkeypatch.setattr(parsecache.yamlfile, "parse", lambda *a, **k: calls.append(1) or real(*a, **k))
    second = TrikeDB(big)
    assert calls == []  # no parse: the cached result was used
    assert second.facts() == first.facts() and second.content_hash() == first.content_hash()


def test_appended_lines_are_read_as_a_tail(big, monkeypatch):
    TrikeDB(big)
    TrikeDB(big).add("late", "NEXT", "comer", note="x")
    calls = []
    real = parsecache.yamlfile.parse
    monkeypatch.setattr(parsecache.yamlfile, "parse", lambda *a, **k: calls.append(1) or real(*a, **k))
    db = TrikeDB(big)
    assert calls == []
    assert db.match("late")[0] == {"s": "late", "p": "NEXT", "o": "comer", "note": "x"}
    assert len(db.facts()) == 201


def test_an_edit_in_the_middle_is_a_miss(big):
    TrikeDB(big)
    big.write_text(big.read_text().replace("{s: n5, p: NEXT, o: n6}", "{s: n5, p: NEXT, o: elsewhere}"))
    db = TrikeDB(big)
    assert db.match("n5")[0]["o"] == "elsewhere"
    assert db.match("n7")[0]["o"] == "n8"


def test_a_broken_cache_entry_is_ignored(big, tmp_path_factory):
    TrikeDB(big)
    for entry in _entries(tmp_path_factory):
        entry.write_bytes(b"not a pickle")
    assert len(TrikeDB(big).facts()) == 200


def test_the_cache_can_be_turned_off(big, monkeypatch):
    monkeypatch.setenv("TRIKE_PARSE_CACHE", "0")
    TrikeDB(big)
    calls = []
    real = parsecache.yamlfile.parse
    monkeypatch.setattr(parsecache.yamlfile, "parse", lambda *a, **k: calls.append(1) or real(*a, **k))
    TrikeDB(big)
    assert calls == [1]
