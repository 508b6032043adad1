"""The file format: canonical form, round trips, typed values, hand-written files, bad input."""

from __future__ import annotations

import datetime as dt
import os

import pytest
import yaml

from trike import LoadError, StorageError, TrikeDB
from trike.values import emit, resolve_plain
from trike.yamlfile import dump, parse


def test_canonical_round_trip_is_byte_identical(tmp_path):
    p = tmp_path / "g.yaml"
    db = TrikeDB(p)
    db.set_node("crm-sync-job", type="job", schedule="hourly", retries=3, ratio=0.5)
    db.add("salesflow-crm", "PROVIDES", "crm-sync-job")
    db.add("crm-sync-job", "INGESTS_TO", "RAW_CRM_CONTACTS", since=dt.date(2026, 4, 1), prov="memo #1284")
    db.add("担当A", "担当", "データ基盤チーム", note="日本語のメモ: コロン付き")
    text = p.read_text(encoding="utf-8")
    again = dump(parse(text))
    assert again == text
    # and loading + saving through the API without changes rewrites nothing
    db2 = TrikeDB(p)
    db2.set_node("crm-sync-job", type="job")  # unchanged value: no write
    assert p.read_text(encoding="utf-8") == text


def test_saved_layout_is_one_line_per_node_and_triple(tmp_path):
    p = tmp_path / "g.yaml"
    db = TrikeDB(p, ontology={"predicates": {"KNOWS": "person -> person"}})
    db.set_node("alice", type="person")
    db.add("alice", "KNOWS", "bob", since=2020)
    lines = p.read_text().splitlines()
    assert lines == [
        "ontology:",
        "  predicates:",
        "    KNOWS: person -> person",
        "nodes:",
        "  alice: {type: person}",
        "triples:",
        "- {s: alice, p: KNOWS, o: bob, since: 2020}",
    ]


@pytest.mark.parametrize("value", [
    "plain", "with space", "123", "1.5", "true", "null", "yes", "~", "2026-04-01", "a: b", "#hash",
    "x #y", "- dash", "[list]", "{map}", "'quote'", '"dq"', "back\\slash", "multi\nline", "tab\there",
    " lead", "trail ", "日本語", "全角　スペース", "emoji 🎉", "", "0x1F", "1_000", ".inf", "<<", "=",
    "\u2028sep", "\x85nel", "%percent", "@at", "`tick`", "*star", "&amp", "!bang", "|pipe", ">gt", "?q",
    "a,b", "a]b", "a}b", "dash-in-middle", "-5", "+1", "2026-04", "12:30:00", "on", "Off", "NO",
])
def test_strings_survive_our_writer_and_pyyaml(value):
    line = "- {s: a, p: b, o: x, v: " + emit(value) + "}\n"
    text = "triples:\n" + line
    assert parse(text).triples[0][3]["v"] == value
    assert yaml.safe_load(text)["triples"][0]["v"] == value


@pytest.mark.parametrize("value", [
    0, -7, 10**20, 1.5, -0.25, 1e16, 1e-7, float("inf"), True, False, dt.date(2026, 4, 1),
    dt.datetime(2026, 4, 1, 10, 30, 0), dt.datetime(2026, 4, 1, 10, 30, tzinfo=dt.timezone(dt.timedelta(hours=9))),
    [1, "a", dt.date(2024, 1, 2)], {"k": "v", "n": 2},
])
def test_typed_values_round_trip(value, tmp_path):
    p = tmp_path / "g.yaml"
    db = TrikeDB(p)
    db.add("a", "b", "c", v=value)
    db2 = TrikeDB(p)
    got = db2.match("a", "b", "c")[0]["v"]
    assert got == value and type(got) is type(value)
    assert yaml.safe_load(p.read_text())["triples"][0]["v"] == value


def test_dates_stay_dates_through_rdf_and_hash(tmp_path):
    p = tmp_path / "g.yaml"
    db = TrikeDB(p)
    db.set_node("ProductA", released=dt.date(2024, 1, 12))
    db.add("ProductA", "baud_rate", 9600, valid_from=dt.date(2024, 9, 2))
    rows = db.sparql("SELECT ?d WHERE { t:ProductA t:released ?d }")
    assert rows == [{"d": dt.date(2024, 1, 12)}]
    rows = db.sparql("SELECT ?v ?f WHERE { ?st rdf:subject t:ProductA ; t:valid_from ?f ; rdf:object ?v }")
    assert rows == [{"v": 9600, "f": dt.date(2024, 9, 2)}]
    h1 = db.content_hash()
    # the same content with the date written as a string is different content
    other = tmp_path / "h.yaml"
    other.write_text(p.read_text().replace("released: 2024-01-12", "released: '2024-01-12'"))
    assert TrikeDB(other).content_hash() != h1


def test_hand_written_block_style_with_comments_loads(tmp_path):
    p = tmp_path / "hand.yaml"
    p.write_text(
        """# our pipeline graph
triples:
  - s: a          # block style
    p: FEEDS
    o: b
    since: 2026-01-05
  - {s: b, p: FEEDS, o: c}
nodes:
  a:
    type: table
    owner: data team
  b:
custom_section:
  keep: [1, 2, 3]
ontology:
  predicates:
    FEEDS: {description: table -> table}
""",
        encoding="utf-8",
    )
    db = TrikeDB(p)
    assert db.match("a", "FEEDS", "b", as_of="all")[0]["since"] == dt.date(2026, 1, 5)
    assert db.get_node("a")["props"] == {"type": "table", "owner": "data team"}
    assert db.section("custom_section") == {"keep": [1, 2, 3]}
    h = db.content_hash()
    db.add("c", "FEEDS", "d")  # not canonical: a rewrite
    text = p.read_text()
    assert text.index("ontology:") < text.index("nodes:") < text.index("custom_section:") < text.index("triples:")
    assert "custom_section:\n  keep: [1, 2, 3]" in text
    db2 = TrikeDB(p)
    assert db2.section("custom_section") == {"keep": [1, 2, 3]}
    assert len(db2.facts()) == 3
    db2.remove("c", "FEEDS", "d")
    assert db2.content_hash() == h  # formatting and order do not change the hash


def test_content_hash_ignores_order_and_format(tmp_path):
    a = tmp_path / "a.yaml"
    b = tmp_path / "b.yaml"
    a.write_text("nodes:\n  x: {type: t, n: 1}\ntriples:\n- {s: x, p: P, o: y}\n- {s: y, p: P, o: z, w: 2}\n")
    b.write_text("triples:\n- s: y\n  p: P\n  o: z\n  w: 2\n- {o: y, p: P, s: x}\nnodes:\n  x:\n    n: 1\n    type: t\n")
    assert TrikeDB(a).content_hash() == TrikeDB(b).content_hash()
    b.write_text(b.read_text().replace("w: 2", "w: 3"))
    assert TrikeDB(a).content_hash() != TrikeDB(b).content_hash()


def test_malformed_yaml_names_file_and_line(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("nodes:\n  a: {type: x}\ntriples:\n- {s: a, p: P, o: b}\n- {s: a, p: [unclosed, o: c}\n")
    with pytest.raises(LoadError) as err:
        TrikeDB(p)
    msg = str(err.value)
    assert "bad.yaml" in msg and ":5" in msg and "malformed YAML" in msg


def test_triple_missing_s_is_named(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("triples:\n- {s: a, p: P, o: b}\n- {p: P, o: b}\n")
    with pytest.raises(LoadError, match=r"bad.yaml:3: .*missing s"):
        TrikeDB(p)


def test_non_mapping_node_is_named(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("nodes:\n  a: just a string\ntriples: []\n")
    with pytest.raises(LoadError, match=r"node 'a' must be a mapping"):
        TrikeDB(p)


def test_top_level_must_be_mapping(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("- a\n- b\n")
    with pytest.raises(LoadError, match="top level"):
        TrikeDB(p)


def test_unreadable_file(tmp_path):
    p = tmp_path / "g.yaml"
    p.write_bytes(b"triples:\n- {s: \xff\xfe, p: P, o: b}\n")
    with pytest.raises(StorageError, match="not UTF-8"):
        TrikeDB(p)
    d = tmp_path / "dir.yaml"
    d.mkdir()
    with pytest.raises(StorageError, match="directory"):
        TrikeDB(d)
    if os.geteuid() != 0:  # root reads anything
        q = tmp_path / "locked.yaml"
        q.write_text("triples: []\n")
        q.chmod(0)
        with pytest.raises(StorageError, match="cannot read"):
            TrikeDB(q)


def test_alias_bomb_is_refused(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    p = tmp_path / "bomb.yaml"
    p.write_text("bomb:\n" + "\n".join("  " + line for line in lines) + "\ntriples: []\n")
    with pytest.raises(LoadError, match="alias"):
        TrikeDB(p)
    # small, honest aliases still work
    ok = tmp_path / "ok.yaml"
    ok.write_text("defaults: &d {team: data}\nnodes:\n  a: *d\ntriples: []\n")
    assert TrikeDB(ok).get_node("a")["props"] == {"team": "data"}


def test_nothing_is_overwritten_after_a_failed_load(tmp_path):
    p = tmp_path / "g.yaml"
    original = "triples:\n- {s: a, p: P, o: b}\n- {s: oops\n"
    p.write_text(original + "- {s: c, p: P, o: d}\n")
    with pytest.raises(LoadError):
        TrikeDB(p)
    assert p.read_text() == original + "- {s: c, p: P, o: d}\n"


def test_interrupted_append_is_detected_and_repaired(tmp_path):
    p = tmp_path / "g.yaml"
    db = TrikeDB(p)
    db.add("a", "P", "b")
    db.add("b", "P", "c")
    with open(p, "a") as fh:
        fh.write("- {s: c, p: P, o: d, note: half writ")  # killed mid-write
    with pytest.warns(UserWarning, match="incomplete last line"):
        db2 = TrikeDB(p)
    assert db2.load_warnings and "g.yaml:5" in db2.load_warnings[0]
    assert [(f["s"], f["o"]) for f in db2.facts()] == [("a", "b"), ("b", "c")]
    db2.add("x", "P", "y")  # the next write repairs the file
    text = p.read_text()
    assert "half writ" not in text
    assert yaml.safe_load(text)["triples"][-1] == {"s": "x", "p": "P", "o": "y"}


def test_resolve_plain_matches_pyyaml():
    for text in ["1", "1.5", "true", "No", "null", "2026-04-01", "2026-04", "abc", "0o17", "1_000", ".NaN"]:
        want = yaml.safe_load(f"v: {text}")["v"]
        got = resolve_plain(text)
        assert got == want or (got != got and want != want)
        assert type(got) is type(want)
