"""The graphdojo CLI: JSON out, one-line JSON errors, exit codes, read-only everywhere."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from components.graph.ladybug import LadybugBackend
from orchestration.cli import main

MOVIES = """
CREATE (TheMatrix:Movie {title:'The Matrix', released:1999, tagline:'Welcome to the Real World'})
CREATE (Keanu:Person {name:'Keanu Reeves', born:1964})
CREATE (Carrie:Person {name:'Carrie-Anne Moss', born:1967})
CREATE (Keanu)-[:ACTED_IN {roles:['Neo']}]->(TheMatrix), (Carrie)-[:ACTED_IN {roles:['Trinity']}]->(TheMatrix);
"""


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict], str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines() if line.strip()], err


@pytest.fixture(scope="module")
def academic_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("cli") / "academic"
    assert (
        main(["graph", "import", "--format", "generator", "academic", "--db", str(db), "--scale", "300", "--seed", "1"])
        == 0
    )
    return db


def test_import_generator_prints_counts_and_fingerprint(academic_db: Path, capsys) -> None:
    capsys.readouterr()
    code, (out,), _ = _run(
        capsys,
        "graph",
        "import",
        "--format",
        "generator",
        "academic",
        "--db",
        str(academic_db),
        "--scale",
        "300",
        "--seed",
        "1",
        "--overwrite",
    )
    assert code == 0 and out["ok"] is True
    with LadybugBackend(academic_db) as b:
        assert out["fingerprint"] == b.fingerprint()
        assert (out["nodes"], out["relationships"]) == (b.schema().node_count, b.schema().rel_count)


def test_import_cypher_script_and_query_it(tmp_path: Path, capsys) -> None:
    script = tmp_path / "movies.cypher"
    script.write_text(MOVIES)
    code, (out,), _ = _run(
        capsys, "graph", "import", "--format", "cypher-script", str(script), "--db", str(tmp_path / "db")
    )
    assert code == 0 and (out["nodes"], out["relationships"]) == (3, 2)
    code, (res,), _ = _run(
        capsys,
        "graph",
        "query",
        "--db",
        str(tmp_path / "db"),
        "--query",
        "MATCH (p:Person)-[r:ACTED_IN]->(m:Movie {title: $t}) RETURN p.name AS name, r.roles AS roles ORDER BY name",
        "--params",
        '{"t": "The Matrix"}',
    )
    assert code == 0
    assert res["rows"] == [["Carrie-Anne Moss", ["Trinity"]], ["Keanu Reeves", ["Neo"]]]


def test_schema_json_and_text(academic_db: Path, capsys) -> None:
    code, (schema,), _ = _run(capsys, "graph", "schema", "--db", str(academic_db))
    assert code == 0
    triples = {(t["source"], r["type"], t["target"]) for r in schema["relationship_types"] for t in r["triples"]}
    assert ("Author", "WROTE", "Paper") in triples and ("Paper", "CITES", "Paper") in triples
    assert main(["graph", "schema", "--db", str(academic_db), "--text"]) == 0
    assert "-[:PUBLISHED_IN]->(:Venue)" in capsys.readouterr().out


def test_batch_query_file_reports_each_line(academic_db: Path, tmp_path: Path, capsys) -> None:
    with LadybugBackend(academic_db) as b:
        before = b.fingerprint()
    lines = [
        {"id": "count", "query": "MATCH (p:Paper) RETURN count(p) AS n"},
        {"id": "param", "query": "MATCH (v:Venue) WHERE v.id = $v RETURN v.id AS id", "params": {"v": "venue_0"}},
        {"id": "write", "query": "MATCH (p:Paper) DETACH DELETE p"},
        {"id": "file", "query": "LOAD FROM '/etc/passwd' (file_format='csv') RETURN *"},
        {"id": "label", "query": "MATCH (x:Nope) RETURN x"},
        {"id": "syntax", "query": "MATCH (p:Paper RETURN p"},
    ]
    f = tmp_path / "q.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    code, out, _ = _run(capsys, "graph", "query", "--db", str(academic_db), "--file", str(f), "--limit", "5")
    assert code == 1
    by_id = {o["id"]: o for o in out}
    assert by_id["count"]["ok"] and by_id["count"]["rows"][0][0] > 0
    assert by_id["param"]["rows"] == [["venue_0"]]
    assert by_id["write"]["error"]["code"] == "unsafe_query"
    assert by_id["file"]["error"]["code"] in {"unsafe_query", "syntax_error"}
    assert by_id["label"]["error"]["code"] == "schema_error"
    assert by_id["syntax"]["error"]["code"] == "syntax_error"
    assert out[-1]["ok"] is False and out[-1]["line"] == 7
    with LadybugBackend(academic_db) as b:
        assert b.fingerprint() == before


@pytest.mark.parametrize(
    "argv",
    [
        ["graph", "schema", "--db", "/nonexistent/db"],
        ["graph", "import", "--format", "csv", "/nonexistent/csv", "--db", "/tmp/never"],
        ["graph", "query", "--db", "/nonexistent/db", "--query", "RETURN 1"],
    ],
)
def test_failures_are_one_json_line_on_stderr(argv, capsys) -> None:
    code, out, err = _run(capsys, *argv)
    assert code == 1 and out == []
    (line,) = err.strip().splitlines()
    payload = json.loads(line)
    assert payload["ok"] is False and payload["error"]["code"] and payload["error"]["message"]


def test_console_entry_point(academic_db: Path) -> None:
    exe = Path(sys.executable).with_name("graphdojo")
    proc = subprocess.run(
        [str(exe), "graph", "query", "--db", str(academic_db), "--query", "MATCH (a:Author) RETURN count(a) AS n"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["columns"] == ["n"]


# The parent of the CLI as a subreaper (prctl PR_SET_CHILD_SUBREAPER): whatever the CLI leaves
# behind — a kernel or an episode it did not reap — is re-parented here, and listed.
_REAPER = r"""
import ctypes, json, os, subprocess, sys, time
assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
codes = [subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
         for argv in json.loads(sys.argv[1])]
time.sleep(0.5)
left = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    except OSError:
        continue
    if fields.get("PPid", "").strip() == str(os.getpid()):
        left.append([int(pid), fields["Name"].strip(), fields["State"].strip()])
print(json.dumps({"codes": codes, "left": left}))
"""


def test_sandbox_run_reaps_its_kernel_on_success_and_on_error(academic_db: Path, tmp_path: Path) -> None:
    """After ``graphdojo sandbox run`` exits, nothing it started is left — not even an exited,
    unreaped (zombie) episode process re-parented to whoever started the CLI."""
    exe = str(Path(sys.executable).with_name("graphdojo"))
    (tmp_path / "ok.py").write_text("print(cypher('MATCH (a:Author) RETURN count(a) AS n').rows)\n")
    (tmp_path / "loop.py").write_text("while True:\n    pass\n")
    runs = [
        [exe, "sandbox", "run", "--db", str(academic_db), "--code", str(tmp_path / name), "--timeout", "1"]
        for name in ("ok.py", "loop.py")
    ]
    proc = subprocess.run(
        [sys.executable, "-c", _REAPER, json.dumps(runs)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout) == {"codes": [0, 1], "left": []}


def test_sandbox_run_caps_a_huge_print(academic_db: Path, tmp_path: Path) -> None:
    from components.tools.sandbox import SandboxLimits

    (tmp_path / "big.py").write_text("print('x' * 300_000_000)\n")
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("graphdojo")), "sandbox", "run", "--db", str(academic_db)]
        + ["--code", str(tmp_path / "big.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    cap = SandboxLimits().output_bytes
    assert out["ok"] and out["stdout_truncated"] and out["stdout_limit"] == cap
    assert out["stdout"] == "x" * cap


@pytest.mark.parametrize("timeout", ["1e10", "nan", "3600.5"])
def test_sandbox_run_refuses_a_timeout_past_the_maximum(academic_db: Path, tmp_path: Path, timeout: str) -> None:
    """A timeout the parent's waits cannot take is a one-line JSON usage error, never a traceback."""
    (tmp_path / "one.py").write_text("print(1)\n")
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("graphdojo")), "sandbox", "run", "--db", str(academic_db)]
        + ["--code", str(tmp_path / "one.py"), "--timeout", timeout],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    (line,) = proc.stderr.splitlines()
    err = json.loads(line)["error"]
    assert err["code"] == "usage_error" and "--timeout" in err["message"]


def test_the_cli_timeout_maximum_is_the_sandbox_maximum() -> None:
    from components.tools.sandbox import MAX_TIMEOUT_S
    from orchestration import cli

    assert cli._MAX_CELL_SECONDS == MAX_TIMEOUT_S


def test_quiz_template_writes_jsonl_records(academic_db: Path, tmp_path: Path, capsys) -> None:
    from components.quizzer.candidate import QACandidate

    out = tmp_path / "cands.jsonl"
    code, (summary,), _ = _run(
        capsys, "quiz", "--db", str(academic_db), "--kind", "template", "-n", "4", "--out", str(out), "--seed", "2"
    )
    assert code == 0 and summary["ok"] is True and summary["total"] == 4
    records = [json.loads(line) for line in out.read_text().splitlines()]
    cands = [QACandidate.from_record(r) for r in records]
    assert len(cands) == 4 and summary["valid"] == sum(c.ok for c in cands)
    assert all(c.quizzer == "template" and c.question for c in cands)


def test_quiz_with_a_missing_model_folder_is_a_clear_error(academic_db: Path, tmp_path: Path, capsys) -> None:
    code, out, err = _run(
        capsys,
        "quiz",
        "--db",
        str(academic_db),
        "--kind",
        "llm",
        "-n",
        "1",
        "--out",
        str(tmp_path / "x.jsonl"),
        "--model",
        str(tmp_path / "no-model"),
    )
    assert code == 1 and out == []
    payload = json.loads(err.strip().splitlines()[-1])
    assert str(tmp_path / "no-model") in payload["error"]["message"]


def test_cypher_features_single_and_batch(tmp_path: Path, capsys) -> None:
    code, (one,), _ = _run(
        capsys, "cypher", "features", "--query", "MATCH (x:Paper)<-[:WROTE]-(a:Author) RETURN count(a) AS n"
    )
    assert code == 0 and one["ok"] and one["patterns"] == [["Author", "WROTE", "Paper", 1, 1, True]]
    assert one["return_family"] == "aggregation"
    f = tmp_path / "q.jsonl"
    f.write_text(
        json.dumps({"id": 1, "query": "MATCH (p:Paper) RETURN p.title"})
        + "\n"
        + json.dumps({"id": 2, "query": "MATCH (p"})
        + "\n"
    )
    code, out, _ = _run(capsys, "cypher", "features", "--file", str(f))
    assert code == 1 and [o["ok"] for o in out] == [True, False] and out[1]["code"] == "syntax_error"


def test_certify_candidates_from_the_quiz_cli(academic_db: Path, tmp_path: Path, capsys) -> None:
    cands = tmp_path / "cands.jsonl"
    assert (
        main(["quiz", "--db", str(academic_db), "--kind", "template", "-n", "5", "--out", str(cands), "--seed", "1"])
        == 0
    )
    capsys.readouterr()
    code, out, _ = _run(capsys, "certify", "--db", str(academic_db), "--candidates", str(cands))
    assert code == 0 and len(out) == 5
    assert all(o["status"] in {"strict", "partial"} and o["admitted"] and o["verdict"] is None for o in out)
    # the same candidates against a different snapshot fingerprint: a hard failure of its own kind
    code, out, _ = _run(
        capsys, "certify", "--db", str(academic_db), "--candidates", str(cands), "--snapshot-fingerprint", "0" * 32
    )
    assert {o["status"] for o in out} == {"hard_failure"} and {tuple(o["reasons"]) for o in out} == {
        ("snapshot_drift",)
    }
    with cands.open("a") as fh:
        fh.write("{not a record\n")
    code, out, _ = _run(capsys, "certify", "--db", str(academic_db), "--candidates", str(cands))
    assert code == 1 and out[-1]["ok"] is False and out[-1]["line"] == 6


def test_certify_admits_by_the_one_rule(academic_db: Path, tmp_path: Path, capsys) -> None:
    """``graphdojo certify`` admits as the asset does: with the judge off only strict items unless
    --admit-partial-without-judge; leaked items never (the leakage filter runs with
    --eval-questions); a missing file is one documented error line."""
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend
    from components.quizzer.external import candidate_from_program

    cands = tmp_path / "cands.jsonl"
    assert (
        main(["quiz", "--db", str(academic_db), "--kind", "template", "-n", "3", "--out", str(cands), "--seed", "2"])
        == 0
    )
    with LadybugBackend(academic_db) as b:
        qp = ReadOnlyQueryPath(b, schema=b.schema())
        # a valid answer picked out of a listing by Python: partial (selected_from_broader_evidence)
        program = (
            "import json\nr = cypher('MATCH (v:Venue) RETURN v.name AS name ORDER BY name')\n"
            "answer = [row[0] for row in r.rows][1]\nmark_evidence(r)\nprint(json.dumps(answer))\n"
        )
        partial = candidate_from_program(
            qp, b.schema(), "ext-partial", "Which venue comes second by name?", "entity", program
        )
    with cands.open("a") as fh:
        fh.write(json.dumps(partial.to_record()) + "\n")
    capsys.readouterr()
    code, out, _ = _run(capsys, "certify", "--db", str(academic_db), "--candidates", str(cands))
    assert code == 0 and out[-1]["status"] == "partial" and out[-1]["reasons"] == ["selected_from_broader_evidence"]
    assert [o["admitted"] for o in out] == [o["status"] == "strict" for o in out] and not out[-1]["admitted"]
    code, out, _ = _run(
        capsys, "certify", "--db", str(academic_db), "--candidates", str(cands), "--admit-partial-without-judge"
    )
    assert out[-1]["admitted"] is True
    first = json.loads(cands.read_text().splitlines()[0])
    entity = json.loads(first["start_node_json"])["id"]
    ev = tmp_path / "eval.jsonl"
    ev.write_text(json.dumps({"qid": "e1", "question": "held out", "answer": "x", "entities": [entity]}) + "\n")
    code, out, _ = _run(
        capsys, "certify", "--db", str(academic_db), "--candidates", str(cands), "--eval-questions", str(ev)
    )
    assert out[0]["leaked"] is True and out[0]["admitted"] is False
    code, out, err = _run(capsys, "certify", "--db", str(academic_db), "--candidates", str(tmp_path / "none.jsonl"))
    assert code == 1 and out == [] and json.loads(err)["error"]["code"] == "file_not_found"


def test_certify_with_the_judge_on_a_tiny_model(academic_db: Path, tmp_path: Path, capsys) -> None:
    from components.llm.models import tiny_random_model

    model = tiny_random_model(tmp_path / "tiny", seed=0)
    cands = tmp_path / "cands.jsonl"
    assert main(["quiz", "--db", str(academic_db), "--kind", "template", "-n", "2", "--out", str(cands)]) == 0
    capsys.readouterr()
    code, out, _ = _run(
        capsys, "certify", "--db", str(academic_db), "--candidates", str(cands), "--judge", "on", "--model", str(model)
    )
    assert code == 0 and len(out) == 2
    for o in out:  # re-derivation first: a random model writes no query, so no review is asked
        assert o["verdict"] in {"reject", "uncertain"} and not o["admitted"]
        assert o["judge"]["rederive"] in {"reject", "uncertain"} and len(o["judge"]["rederivation"]["derivations"]) == 3
        assert o["judge"]["stage1"] == "skipped"
    code, out, _ = _run(
        capsys, "certify", "--db", str(academic_db), "--candidates", str(cands), "--judge", "on", "--model", str(model),
        "--judge-stages", "review",
    )  # fmt: skip
    assert code == 0 and len(out) == 2
    for o in out:
        assert o["verdict"] in {"accept", "reject", "uncertain"}
        assert o["admitted"] == (o["verdict"] == "accept")
        assert o["judge"]["stage1"] in {"accept", "reject", "uncertain"} and o["judge"]["rederive"] == "off"


def test_an_external_qa_record_with_only_the_documented_fields_certifies(
    academic_db: Path, tmp_path: Path, capsys
) -> None:
    cands = tmp_path / "cands.jsonl"
    assert (
        main(["quiz", "--db", str(academic_db), "--kind", "template", "-n", "3", "--out", str(cands), "--seed", "4"])
        == 0
    )
    keep = ("id", "question", "answer", "answer_type", "evidence_json", "final_program")
    external = tmp_path / "external.jsonl"
    external.write_text(
        "".join(json.dumps({k: rec[k] for k in keep}) + "\n" for rec in map(json.loads, cands.read_text().splitlines()))
    )
    capsys.readouterr()
    code, out, _ = _run(capsys, "certify", "--db", str(academic_db), "--candidates", str(external))
    assert code == 0 and len(out) == 3
    assert all(o["status"] in {"strict", "partial"} for o in out), out
    stripped = tmp_path / "no_id.jsonl"
    stripped.write_text(
        json.dumps({k: v for k, v in json.loads(external.read_text().splitlines()[0]).items() if k != "id"}) + "\n"
    )
    code, out, _ = _run(capsys, "certify", "--db", str(academic_db), "--candidates", str(stripped))
    assert code == 1 and "needs an 'id'" in out[0]["error"]["message"]


def test_rubric_score_pairs_items_and_reports_every_problem(academic_db: Path, tmp_path: Path, capsys) -> None:
    q = "MATCH (a:Author {name: $n})-[:WROTE]->(p:Paper) RETURN count(p) AS n"
    gold, pred = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    gold.write_text(
        "\n".join(
            json.dumps(x)
            for x in [
                {"id": "a", "queries": [q], "answer": "3"},
                {"id": "b", "evidence_json": json.dumps([{"id": "b:q1", "query": q}])},
                {"id": "c", "queries": [q]},
            ]
        )
        + "\n"
    )
    pred.write_text(
        "\n".join(
            [
                json.dumps({"id": "b", "evidence": [{"query": "MATCH (v:Venue) RETURN v.name"}]}),
                json.dumps(
                    {
                        "id": "a",
                        "queries": ["MATCH (x:Paper)<-[:WROTE]-(y:Author) WHERE y.name = $n RETURN count(x)"],
                        "answer": "4",
                    }
                ),
                json.dumps({"id": "z", "queries": []}),
                "{broken",
            ]
        )
        + "\n"
    )
    capsys.readouterr()
    code, rows, _ = _run(capsys, "rubric", "score", "--gold", str(gold), "--pred", str(pred), "--db", str(academic_db))
    assert code == 1
    by = {(r["id"], r.get("code")): r for r in rows}
    a = by[("a", None)]
    assert a["s_evidence"] == a["s_align"] == a["s_aggregate"] == 1.0 and a["answer"]["em"] == 0.0
    b = by[("b", None)]
    assert 0.0 <= b["s_evidence"] < 0.5 and b["m"] == 1 and b["n"] == 1 and len(b["s_pair"]["matrix"]) == 1
    assert ("c", "missing_prediction") in by and ("z", "no_gold") in by
    assert any(r.get("code") == "bad_input" and r["side"] == "pred" for r in rows)


def test_bad_inputs_are_one_json_line_each(academic_db: Path, tmp_path: Path, capsys) -> None:
    """Numeric flags are validated, usage errors are JSON, batch files are read strictly, and a
    duplicated id in a rubric file is reported instead of dropping an item."""
    for argv in (
        ["sandbox", "run", "--db", str(academic_db), "--code", "x.py", "--timeout", "inf"],
        ["sandbox", "run", "--db", str(academic_db), "--code", "x.py", "--timeout", "-1"],
        ["sandbox", "run", "--db", str(academic_db), "--code", "x.py", "--timeout", "1e10"],
        ["graph", "query", "--db", str(academic_db), "--query", "RETURN 1", "--limit", "-5"],
        ["quiz", "--db", str(academic_db), "-n", "0", "--kind", "template", "--out", "x.jsonl"],
        ["no-such-command"],
    ):
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        out, err = capsys.readouterr()
        assert exit_.value.code == 2 and out == ""
        assert json.loads(err)["error"]["code"] == "usage_error"
    batch = tmp_path / "q.jsonl"
    batch.write_text(
        '{"id": 1, "query": "RETURN 1 AS one"}\n' + "[" * 5000 + "]" * 5000 + "\n"
        '{"id": 3, "id": 4, "query": "RETURN 1"}\n'
    )
    code, out, _ = _run(capsys, "graph", "query", "--db", str(academic_db), "--file", str(batch))
    assert code == 1 and [o["ok"] for o in out] == [True, False, False]
    assert "nested deeper" in out[1]["error"]["message"] and "duplicate key" in out[2]["error"]["message"]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    code, out, err = _run(capsys, "graph", "query", "--db", str(academic_db), "--file", str(empty))
    assert code == 1 and out == [] and json.loads(err)["error"]["code"] == "empty_file"
    gold, pred = tmp_path / "g.jsonl", tmp_path / "p.jsonl"
    q = "MATCH (a:Author) RETURN count(a) AS n"
    gold.write_text(json.dumps({"id": "a", "queries": [q]}) + "\n" + json.dumps({"id": "a", "queries": [q]}) + "\n")
    pred.write_text(json.dumps({"id": "a", "queries": [q]}) + "\n")
    code, out, _ = _run(capsys, "rubric", "score", "--gold", str(gold), "--pred", str(pred))
    assert code == 1 and any("duplicate id" in (o.get("message") or "") for o in out)
    assert sum(o["ok"] for o in out) == 1


def test_demo_profiles_are_packaged_domain_files(capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestration.cli import _profile_file
    from orchestration.domains import load_domain_file

    real = load_domain_file(_profile_file("real"))
    assert real.name == "academic_real" and real.quiz.model == "qwen2.5-coder-1.5b" and real.quiz.llm_n >= 40
    assert Path(real.certify.eval_questions).is_file()  # relative paths resolve inside the package
    monkeypatch.setenv("GRAPHDOJO_DATA", str(tmp_path))
    code, out, err = _run(capsys, "demo", "--profile", "nope")
    assert code == 1 and "unknown profile 'nope'; known: real" in err
    code, out, err = _run(capsys, "demo", "--profile", "real", "--domain-file", str(_profile_file("real")))
    assert code == 1 and "give one" in err
