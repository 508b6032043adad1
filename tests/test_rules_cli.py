"""CLI: trike declare / infer / validate, `trike check` exit codes, starter ontologies."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from trike import TrikeDB
from trike.cli import main
from trike.templates import list_templates

CLEAN = """ontology:
  predicates:
    PART_OF: {transitive: true}
    OWNED_BY: {range: team, functional: true}
    is_a: {}
  classes:
    raw_table: {subclass_of: table}
nodes:
  t1: {type: raw_table}
  t2: {type: table}
  team-a: {type: team}
shapes:
- {every: table, has: OWNED_BY, max: 1}
triples:
- {s: t1, p: OWNED_BY, o: team-a}
- {s: t2, p: OWNED_BY, o: team-a}
- {s: a, p: PART_OF, o: b}
- {s: t1, p: is_a, o: table, inferred: true}
"""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def clean(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text(CLEAN, encoding="utf-8")
    return path


def test_check_clean_file_exits_0(clean, capsys):
    code, out, err = run(capsys, "check", str(clean), "--inferred-fresh")
    assert (code, out) == (0, "")
    assert "ok" in err


def test_check_reports_each_problem_as_file_colon_problem(clean, capsys):
    text = CLEAN.replace("- {s: t2, p: OWNED_BY, o: team-a}\n", "") + \
        "- {s: x, p: UNDECLARED, o: y}\n- {s: t1, p: OWNED_BY, o: team-b}\n"
    clean.write_text(text, encoding="utf-8")
    code, out, _ = run(capsys, "check", str(clean))
    lines = out.splitlines()
    assert code == 1
    assert all(line.startswith(f"{clean}: ") for line in lines)
    joined = "\n".join(lines)
    assert "unknown predicate 'UNDECLARED'" in joined          # the gate over hand edits
    assert "functional predicate has two values" in joined     # the gate over hand edits
    assert "t2 has no OWNED_BY" in joined                       # the shapes in the file
    assert "t1 has 2 OWNED_BY" in joined


def test_check_inferred_fresh_fails_on_stale_materialization(clean, capsys):
    db = TrikeDB(clean)
    db.add("b", "PART_OF", "c")
    code, out, _ = run(capsys, "check", str(clean), "--inferred-fresh")
    assert code == 1
    assert "inference is stale" in out and "a  PART_OF  c" in out
    assert run(capsys, "infer", str(clean), "--apply")[0] == 0
    assert run(capsys, "check", str(clean), "--inferred-fresh")[0] == 0
    db.remove("b", "PART_OF", "c")
    code, out, _ = run(capsys, "check", str(clean), "--inferred-fresh")
    assert code == 1 and "no longer follows" in out


def test_check_bad_input_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("triples:\n- {s: a, p: [unclosed\n", encoding="utf-8")
    assert run(capsys, "check", str(bad))[0] == 2
    assert run(capsys, "check", str(tmp_path / "missing.yaml"))[0] == 2
    ok = tmp_path / "ok.yaml"
    ok.write_text("triples:\n- {s: a, p: P, o: b}\n", encoding="utf-8")
    assert run(capsys, "check", str(ok), "--shapes", str(tmp_path / "nope.ttl"))[0] == 2


def test_check_with_turtle_shapes_file(clean, tmp_path, capsys):
    ttl = tmp_path / "s.ttl"
    ttl.write_text("t:S a sh:NodeShape ; sh:targetClass t:team ; sh:property [ sh:path t:email ; "
                   "sh:minCount 1 ] .\n", encoding="utf-8")
    code, out, _ = run(capsys, "check", str(clean), "--shapes", str(ttl))
    assert code == 1 and out.strip() == f"{clean}: team-a has no email [shape: S]"


def test_infer_prints_and_applies(clean, capsys):
    TrikeDB(clean).add("b", "PART_OF", "c")
    code, out, err = run(capsys, "infer", str(clean))
    assert code == 0 and out == "+ a  PART_OF  c  {inferred: true}\n"
    assert "--apply" in err
    code, out, err = run(capsys, "infer", str(clean), "--apply")
    assert code == 0 and "wrote 1" in err
    assert "- {s: a, p: PART_OF, o: c, inferred: true}" in clean.read_text(encoding="utf-8")
    code, out, err = run(capsys, "infer", str(clean), "--apply", "--json")
    assert json.loads(out) == {"applied": True, "added": [], "removed": []}


def test_declare_command(clean, capsys):
    code, out, _ = run(capsys, "declare", str(clean), "NEAR", "symmetric")
    assert code == 0 and out.strip() == "NEAR  {symmetric: true}"
    code, out, _ = run(capsys, "declare", str(clean), "view", "subclass_of:table", "--json")
    assert json.loads(out)["kind"] == "class"
    assert TrikeDB(clean).ontology()["classes"]["view"] == {"subclass_of": "table"}
    code, _, err = run(capsys, "declare", str(clean), "NEAR", "reflexive")
    assert code == 2 and "unknown declaration" in err


def test_validate_command(clean, tmp_path, capsys):
    assert run(capsys, "validate", str(clean))[0] == 0
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("shapes:\n- {every: team, has: email}\n", encoding="utf-8")
    code, out, _ = run(capsys, "validate", str(clean), str(shapes))
    assert code == 1 and out.startswith(f"{clean}: team-a has no email")
    code, out, _ = run(capsys, "validate", str(clean), str(shapes), "--json")
    assert json.loads(out)[0]["node"] == "team-a"
    nothing = tmp_path / "plain.yaml"
    nothing.write_text("triples:\n- {s: a, p: P, o: b}\n", encoding="utf-8")
    assert run(capsys, "validate", str(nothing))[0] == 2


def test_console_script_exit_codes(clean, tmp_path):
    """A separate process, as CI and pre-commit run it."""
    entry = [sys.executable, "-c", "import sys; from trike.cli import main; sys.exit(main())"]
    cmd = [*entry, "check", str(clean), "--inferred-fresh"]
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    broken = tmp_path / "broken.yaml"
    broken.write_text(CLEAN.replace("- {s: t2, p: OWNED_BY, o: team-a}\n", ""), encoding="utf-8")
    r = subprocess.run([*entry, "check", str(broken)], capture_output=True, text=True)
    assert r.returncode == 1 and "t2 has no OWNED_BY" in r.stdout


# ------------------------------------------------------------------------------------------ ontologies

STARTERS = ("data-lineage", "service-ownership", "company-rules")


def test_starter_ontologies_are_listed_with_a_description():
    templates = list_templates()
    for name in STARTERS:
        assert templates.get(name), name


@pytest.mark.parametrize("name", STARTERS)
def test_starter_ontology_inits_and_checks_clean(name, tmp_path, capsys):
    path = tmp_path / "g.yaml"
    assert run(capsys, "init", str(path), "--template", name)[0] == 0
    db = TrikeDB(path)
    onto = db.ontology()
    assert onto["enforced"] and onto["predicates"] and onto["classes"]
    assert db.section("shapes")
    assert run(capsys, "check", str(path), "--inferred-fresh")[0] == 0


def test_data_lineage_upstream_closure(tmp_path, capsys):
    path = tmp_path / "g.yaml"
    run(capsys, "init", str(path), "--template", "data-lineage")
    db = TrikeDB(path)
    for n, t in (("crm", "source_system"), ("raw_crm", "raw_table"), ("crm_clean", "table"),
                 ("sales", "dashboard"), ("load_crm", "job"), ("data-team", "team")):
        db.set_node(n, type=t)
    db.add("load_crm", "READS_FROM", "crm")
    db.add("load_crm", "WRITES_TO", "raw_crm")
    db.add("crm_clean", "DERIVED_FROM", "raw_crm")
    db.add("sales", "SHOWS", "crm_clean")
    for n in ("raw_crm", "crm_clean"):
        db.add(n, "OWNED_BY", "data-team")
    db.infer(apply=True)
    upstream = {f["o"] for f in db.match("sales", "DEPENDS_ON")}
    assert upstream == {"crm_clean", "raw_crm", "load_crm", "crm"}
    assert {f["s"] for f in db.match(p="OWNS")} == {"data-team"}
    assert run(capsys, "check", str(path), "--inferred-fresh")[0] == 0


def test_prov_o_mapping_query_from_the_docs(tmp_path):
    """The CONSTRUCT in docs/rules.md turns lineage facts into PROV-O and labels into SKOS."""
    from pathlib import Path

    docs = (Path(__file__).resolve().parent.parent / "docs" / "rules.md").read_text(encoding="utf-8")
    query = docs.split("```sparql\nCONSTRUCT {\n  ?d prov:wasDerivedFrom", 1)[1].split("```", 1)[0]
    query = "CONSTRUCT {\n  ?d prov:wasDerivedFrom" + query
    db = TrikeDB(tmp_path / "g.yaml")
    db.add("crm_clean", "DERIVED_FROM", "raw_crm")
    db.add("load_crm", "WRITES_TO", "raw_crm")
    db.add("raw_crm", "OWNED_BY", "data-team")
    db.set_node("raw_crm", description="CRM contacts as loaded")
    got = {(t["s"], t["p"].rsplit("#", 1)[-1], t["o"]) for t in db.sparql(query)}
    assert ("crm_clean", "wasDerivedFrom", "raw_crm") in got
    assert ("raw_crm", "wasGeneratedBy", "load_crm") in got
    assert ("raw_crm", "wasAttributedTo", "data-team") in got
    assert ("raw_crm", "prefLabel", "raw_crm") in got
    assert ("raw_crm", "definition", "CRM contacts as loaded") in got
    # the fact-level query: a `prov` attribute and an inferred fact
    query = docs.split("Fact-level provenance sits on the reified statements:", 1)[1]
    query = query.split("```sparql\n", 1)[1].split("```", 1)[0]
    db.declare("OWNS", "inverse_of:OWNED_BY")
    db.add("crm_clean", "DERIVED_FROM", "raw_crm", prov="etl-spec.md")
    db.infer(apply=True)
    got = {(t["p"].rsplit("#", 1)[-1], t["o"]) for t in db.sparql(query)}
    assert got == {("wasDerivedFrom", "etl-spec.md"), ("wasGeneratedBy", "owl-rl-inference")}
