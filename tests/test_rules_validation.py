"""Validation: friendly shapes and SHACL Turtle over the RDF projection, one entry per violation."""

from __future__ import annotations

import datetime as dt

import pytest

from trike import TrikeDB, TrikeError


@pytest.fixture
def db(tmp_path):
    return TrikeDB(tmp_path / "g.yaml")


def build_200(db: TrikeDB) -> set[tuple]:
    """A graph of exactly 200 facts with planted gaps; returns {(node, path, constraint)} planted."""
    planted: set[tuple] = set()
    with db.batch():
        db.declare("Slack契約", "subclass_of:SaaS契約")
        for t in range(5):
            db.set_node(f"team-{t}", type="team")
        for p in range(5):
            db.set_node(f"person-{p}", type="person")
        for c in range(20):
            name = f"contract-{c}"
            db.set_node(name, type="Slack契約" if c % 2 else "SaaS契約")
            if c in (3, 8, 15):
                planted.add((name, "契約単位", "minCount"))
            else:
                db.add(name, "契約単位", "per_user" if c % 3 else "flat")
            db.add(name, "OWNED_BY", f"team-{c % 5}")
        for j in range(30):
            name = f"job-{j}"
            schedule = "weekly" if j in (4, 21) else ("hourly" if j % 2 else "daily")
            if j in (4, 21):
                planted.add((name, "schedule", "in"))
            db.set_node(name, type="job", schedule=schedule)
            db.add(name, "WRITES_TO", f"table-{j}")
            db.add(name, "READS_FROM", f"table-{(j + 1) % 40}")
        for t in range(40):
            name = f"table-{t}"
            db.set_node(name, type="table", rows=t * 10)
            if t == 7:
                planted.add((name, "OWNED_BY", "minCount"))
            elif t == 11:
                db.add(name, "OWNED_BY", "team-1")
                db.add(name, "OWNED_BY", "team-2")  # two owners
                planted.add((name, "OWNED_BY", "maxCount"))
            elif t == 12:
                db.add(name, "OWNED_BY", "person-3")  # not a team
                planted.add((name, "OWNED_BY", "class"))
            else:
                db.add(name, "OWNED_BY", f"team-{t % 5}")
        # a closed (past) second owner is not a violation of max: 1
        db.add("table-20", "OWNED_BY", "team-4", valid_to=dt.date(2020, 1, 1))
        n = 0
        while len(db.facts()) < 200:
            db.add(f"doc-{n}", "MENTIONS", f"table-{n % 40}")
            n += 1
    assert len(db.facts()) == 200
    return planted


SHAPES = [
    {"every": "SaaS契約", "has": "契約単位"},
    {"every": "table", "has": "OWNED_BY", "max": 1, "class": "team"},
    {"every": "job", "has": "schedule", "in": ["hourly", "daily"]},
    {"every": "job", "has": ["WRITES_TO", "READS_FROM"]},
    {"every": "table", "has": "rows", "datatype": "integer"},
    {"every": "team", "has": "^OWNED_BY"},
]


def found(results: list[dict]) -> set[tuple]:
    return {(r["node"], r["path"], r["constraint"]) for r in results}


def test_finds_exactly_the_planted_gaps_in_200_facts(db):
    planted = build_200(db)
    results = db.validate(SHAPES)
    assert found(results) == planted
    assert len(results) == len(planted)  # one entry per violation


def test_shapes_written_in_the_file_and_turtle_agree(db, tmp_path):
    planted = build_200(db)
    db.set_section("shapes", SHAPES)
    assert found(db.validate()) == planted
    turtle = """
    t:ContractShape a sh:NodeShape ; sh:targetClass t:SaaS契約 ;
        sh:property [ sh:path t:契約単位 ; sh:minCount 1 ] .
    t:TableShape a sh:NodeShape ; sh:targetClass t:table ;
        sh:property [ sh:path t:OWNED_BY ; sh:minCount 1 ; sh:maxCount 1 ; sh:class t:team ] .
    t:JobShape a sh:NodeShape ; sh:targetClass t:job ;
        sh:property [ sh:path t:schedule ; sh:in ( "hourly" "daily" ) ] .
    """
    assert found(db.validate(turtle)) == planted
    ttl = tmp_path / "shapes.ttl"
    ttl.write_text(turtle, encoding="utf-8")
    assert found(db.validate(str(ttl))) == planted
    yml = tmp_path / "shapes.yaml"
    yml.write_text("shapes:\n" + "".join(
        f"- {{every: {s['every']}, has: {s['has']}}}\n" for s in SHAPES[:1]), encoding="utf-8")
    assert found(db.validate(yml)) == {p for p in planted if p[1] == "契約単位"}


def test_one_entry_per_node_including_subclass_instances(db):
    db.set_node("Notion契約", type="SaaS契約")
    db.set_node("Slack契約A", type="Slack契約")
    db.set_node("Zoom契約", type="SaaS契約", 契約単位="per_user")
    assert db.validate([{"every": "SaaS契約", "has": "契約単位"}]) != []
    assert {r["node"] for r in db.validate([{"every": "SaaS契約", "has": "契約単位"}])} == {"Notion契約"}
    db.declare("Slack契約", "subclass_of:SaaS契約")
    results = db.validate([{"every": "SaaS契約", "has": "契約単位"}])
    assert [(r["node"], r["property"], r["shape"]) for r in results] == [
        ("Notion契約", "契約単位", "every SaaS契約 has 契約単位"),
        ("Slack契約A", "契約単位", "every SaaS契約 has 契約単位"),
    ]


def test_message_reads_like_a_sentence(db):
    db.set_node("Notion契約", type="SaaS契約")
    [r] = db.validate([{"every": "SaaS契約", "has": "契約単位"}])
    assert r["node"] == "Notion契約"
    assert r["path"] == r["property"] == "契約単位"
    assert r["shape"] == "every SaaS契約 has 契約単位"
    assert r["constraint"] == "minCount"
    assert r["message"].startswith("Notion契約 has no 契約単位")
    assert "every SaaS契約 has 契約単位" in r["message"]


def test_subclass_instances_and_is_a_memberships_are_targeted(db):
    db.declare("Slack契約", "subclass_of:SaaS契約")
    db.set_node("slack", type="Slack契約")
    db.add("zoom", "is_a", "SaaS契約")
    db.set_node("notion", type="SaaS契約", 契約単位="per_user")
    assert {r["node"] for r in db.validate([{"every": "SaaS契約", "has": "契約単位"}])} == {"slack", "zoom"}


def test_each_constraint_message(db):
    db.set_node("job1", type="job", schedule="weekly", rows="many", url="ftp://x")
    db.set_node("bob", type="person")
    db.set_node("team-x", type="team")
    db.add("t1", "OWNED_BY", "bob")
    db.add("t1", "OWNED_BY", "team-x")
    db.set_node("t1", type="table")
    shapes = [
        {"every": "job", "has": "schedule", "in": ["hourly", "daily"]},
        {"every": "job", "has": "rows", "datatype": "integer"},
        {"every": "job", "has": "url", "pattern": "^https?://"},
        {"every": "table", "has": "OWNED_BY", "max": 1, "class": "team"},
        {"every": "team", "has": "^MEMBER_OF"},
        {"every": "person", "has": "email", "message": "{node} needs an e-mail address"},
    ]
    msgs = sorted(r["message"].split(" [shape:")[0] for r in db.validate(shapes))
    assert msgs == sorted([
        "job1 schedule is weekly, not one of hourly, daily",
        "job1 rows is 'many', not an integer",
        "job1 url 'ftp://x' does not match ^https?://",
        "t1 has 2 OWNED_BY: bob, team-x (at most 1 allowed)",
        "t1 OWNED_BY bob, which is not a team",
        "nothing is MEMBER_OF team-x",
        "bob needs an e-mail address",
    ])


def test_in_accepts_node_names_and_numbers(db):
    db.add("svc", "TIER", "gold")
    db.set_node("svc", type="service", level=2)
    db.set_node("svc2", type="service", level=5)
    db.add("svc2", "TIER", "gold")
    res = db.validate([{"every": "service", "has": "TIER", "in": ["gold", "silver"]},
                       {"every": "service", "has": "level", "in": [1, 2, 3]}])
    assert found(res) == {("svc2", "level", "in")}


def test_optional_property_checked_only_when_present(db):
    db.set_node("a", type="job")
    db.set_node("b", type="job", schedule="weekly")
    res = db.validate([{"every": "job", "has": "schedule", "min": 0, "in": ["daily"]}])
    assert found(res) == {("b", "schedule", "in")}


def test_subjects_of_target(db):
    db.add("job1", "INGESTS_TO", "t1")
    db.set_node("job2", schedule="daily")
    db.add("job2", "INGESTS_TO", "t2")
    res = db.validate([{"subjects_of": "INGESTS_TO", "has": "schedule"}])
    assert found(res) == {("job1", "schedule", "minCount")}


def test_raw_shacl_gets_readable_messages(db):
    db.set_node("t1", type="table", rows=-5)
    turtle = ("t:S a sh:NodeShape ; sh:targetClass t:table ; rdfs:label \"tables\" ;"
              " sh:property [ sh:path t:rows ; sh:minInclusive 0 ] .")
    [r] = db.validate(turtle)
    assert r["node"] == "t1" and r["path"] == "rows" and r["shape"] == "tables"
    assert r["message"].startswith("t1 rows -5 breaks minInclusive 0")


def test_no_shapes_and_bad_shapes_are_errors(db, tmp_path):
    db.add("a", "P", "b")
    with pytest.raises(TrikeError, match="no shapes"):
        db.validate()
    with pytest.raises(TrikeError, match="no such shapes file"):
        db.validate(str(tmp_path / "missing.ttl"))
    with pytest.raises(TrikeError, match="cannot read the SHACL shapes"):
        db.validate("t:S a sh:NodeShape ; sh:targetClass")
    with pytest.raises(TrikeError, match="unknown key 'hass'"):
        db.validate([{"every": "job", "hass": "x"}])
    with pytest.raises(TrikeError, match="`has: PROPERTY` is missing"):
        db.validate([{"every": "job"}])
    with pytest.raises(TrikeError, match="exactly one of"):
        db.validate([{"has": "x"}])
    with pytest.raises(TrikeError, match="whole number"):
        db.validate([{"every": "job", "has": "x", "max": -1}])
    with pytest.raises(TrikeError, match="unknown datatype"):
        db.validate([{"every": "job", "has": "x", "datatype": "colour"}])


def test_clean_graph_has_no_violations(db):
    db.set_node("j", type="job", schedule="daily")
    assert db.validate([{"every": "job", "has": "schedule", "in": ["daily"]}]) == []
