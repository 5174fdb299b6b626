"""The ``graphdojo`` command line: single steps outside Dagster, JSON out, and the pipeline.

Every step command prints JSON on stdout (one object per line for batches) and exits 0 on
success. ``demo`` and ``materialize`` run the pipeline and print progress for people on stderr
(``--json`` adds one JSON line per domain on stdout). On failure a command prints one line
``{"ok": false, "error": {"code": ..., "message": ...}}`` on stderr and exits 1 (2 for usage
errors, as argparse does).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from components.graph.errors import GraphError
from components.graph.jsonl import JsonlFileError
from components.llm.base import LLMError

__all__ = ["main"]


#: characters that JSON leaves unescaped but line readers (``str.splitlines``) treat as line ends
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _emit(obj: Any) -> None:
    """One JSON object on one line, whatever its strings hold."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, default=str).translate(_LINE_BREAKS) + "\n")
    sys.stdout.flush()


class _Parser(argparse.ArgumentParser):
    """Usage errors are one JSON line on stderr (exit 2), like every other failure."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(
            json.dumps({"ok": False, "error": {"code": "usage_error", "message": f"{self.prog}: {message}"}}) + "\n"
        )
        raise SystemExit(2)


def _number(kind: type, *, low: float, strict: bool = False, high: float | None = None) -> Callable[[str], Any]:
    """An argparse type: a finite ``kind`` above ``low`` (strictly, with ``strict``), at most ``high``."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not math.isfinite(value) or value < low or (strict and value == low):
            raise argparse.ArgumentTypeError(f"must be a finite number {'>' if strict else '>='} {low:g}, not {text}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:g}, not {text}")
        return value

    parse.__name__ = kind.__name__
    return parse


_SECONDS = _number(float, low=0, strict=True)
#: a sandbox cell's longest wall-clock limit: components.tools.sandbox.MAX_TIMEOUT_S (one hour; a
#: test keeps the two equal — the CLI does not import the sandbox until a sandbox command runs)
_MAX_CELL_SECONDS = 3600.0
_CELL_SECONDS = _number(float, low=0, strict=True, high=_MAX_CELL_SECONDS)
_COUNT = _number(int, low=1)
_SIZE = _number(int, low=0)


class CliError(Exception):
    def __init__(self, message: str, code: str = "usage_error") -> None:
        super().__init__(message)
        self.code = code


# -- graph ---------------------------------------------------------------------------------
def _cmd_graph_import(args: argparse.Namespace) -> int:
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.graph.sources import read_source

    options: dict[str, Any] = {}
    if args.seed is not None:
        options["seed"] = args.seed
    if args.scale is not None:
        options["scale"] = args.scale
    data = read_source(args.format, args.src, **options)
    stats = load_graph(data, args.db, overwrite=args.overwrite)
    with LadybugBackend(args.db) as backend:
        fp = backend.fingerprint()
    _emit(
        {
            "ok": True,
            "nodes": stats.nodes,
            "relationships": stats.relationships,
            "fingerprint": fp,
            "db": str(Path(args.db)),
        }
    )
    return 0


def _open(db: str) -> Any:
    from components.graph import open_backend

    return open_backend(db)


def _cmd_graph_schema(args: argparse.Namespace) -> int:
    backend = _open(args.db)
    try:
        schema = backend.schema()
        if args.text:
            sys.stdout.write(schema.to_text() + "\n")
        else:
            _emit(schema.to_json())
    finally:
        backend.close()
    return 0


def _read_batch(path: str) -> list[tuple[int, dict[str, Any] | None, str | None]]:
    """Parse a JSONL batch: ``(line number, item or None, error or None)`` per non-blank line
    (strict JSON: :func:`components.graph.jsonl.read_jsonl`)."""
    from components.graph.jsonl import read_jsonl

    out = []
    for lineno, item, error in read_jsonl(path):
        if error:
            out.append((lineno, None, error["message"]))
        elif not isinstance(item, dict) or not isinstance(item.get("query"), str):
            out.append((lineno, None, f"line {lineno}: expected an object with a string 'query'"))
        elif not isinstance(item.get("params", {}), dict):
            out.append((lineno, None, f"line {lineno}: 'params' must be an object"))
        else:
            out.append((lineno, item, None))
    return out


def _cmd_graph_query(args: argparse.Namespace) -> int:
    from components.cypher.query_path import ReadOnlyQueryPath

    backend = _open(args.db)
    try:
        path = ReadOnlyQueryPath(backend, schema=backend.schema())
        if args.query is not None:
            params = json.loads(args.params) if args.params else {}
            if not isinstance(params, dict):
                raise CliError("--params must be a JSON object")
            res = path.run(args.query, params, limit=args.limit)
            _emit(
                {
                    "ok": True,
                    "columns": list(res.columns),
                    "rows": [list(r) for r in res.rows],
                    "truncated": res.truncated,
                }
            )
            return 0
        failed = 0
        for lineno, item, err in _read_batch(args.file):
            if item is None:
                failed += 1
                _emit({"id": None, "line": lineno, "ok": False, "error": {"code": "bad_input", "message": err}})
                continue
            try:
                res = path.run(item["query"], item.get("params") or {}, limit=args.limit)
                _emit(
                    {
                        "id": item.get("id"),
                        "ok": True,
                        "columns": list(res.columns),
                        "rows": [list(r) for r in res.rows],
                        "truncated": res.truncated,
                    }
                )
            except GraphError as exc:
                failed += 1
                _emit({"id": item.get("id"), "ok": False, "error": exc.to_dict()})
        return 1 if failed else 0
    finally:
        backend.close()


def _optional_schema(db: str | None) -> Any:
    """The schema of ``--db`` when given (the deriver names unlabelled endpoints from it), else None."""
    if not db:
        return None
    backend = _open(db)
    try:
        return backend.schema()
    finally:
        backend.close()


def _cmd_cypher_features(args: argparse.Namespace) -> int:
    from components.cypher.features import features_json

    schema = _optional_schema(args.db)
    if args.query is not None:
        out = features_json(args.query, schema)
        _emit(out)
        return 0 if out.get("ok") else 1
    failed = 0
    for lineno, item, err in _read_batch(args.file):
        if item is None:
            failed += 1
            _emit({"id": None, "line": lineno, "ok": False, "code": "bad_input", "message": err})
            continue
        out = features_json(item["query"], schema)
        failed += not out.get("ok")
        _emit({"id": item.get("id"), **out})
    return 1 if failed else 0


def _cmd_rubric_score(args: argparse.Namespace) -> int:
    from components.rubric.batch import score_files

    schema = _optional_schema(args.db)
    failed = 0
    for row in score_files(args.gold, args.pred, schema):
        failed += not row["ok"]
        _emit(row)
    return 1 if failed else 0


def _cmd_certify(args: argparse.Namespace) -> int:
    """Certify a JSONL of candidates with the same builder as the ``certified_dataset`` asset
    (:func:`~components.certify.dataset.run_certification`): one output line per input line."""
    from components.certify.batch import CandidateFileError, read_candidate_lines
    from components.certify.dataset import CertifyConfig, run_certification
    from components.quizzer.run import TqdmProgress

    try:
        lines = read_candidate_lines(args.candidates)
    except CandidateFileError as exc:
        raise CliError(str(exc), exc.code) from None
    config = CertifyConfig(
        judge=args.judge,
        judge_options={"model_dir": args.model} if args.model else {},
        judge_stages=tuple(args.judge_stages),
        eval_questions=args.eval_questions,
        fault_sample=0,
        admit_partial_without_judge=args.admit_partial_without_judge,
    )
    good = [ln for ln in lines if ln.candidate is not None]
    bars = TqdmProgress("certification")  # on a terminal's stderr only: stdout stays one JSON line per input
    try:
        run = run_certification(
            [ln.candidate for ln in good],
            args.db,
            config,  # type: ignore[misc]
            snapshot_claim=args.snapshot_fingerprint,
            claim_current=True,
            progress=bars,
        )
    finally:
        bars.close()
    rows = {ln.line: row for ln, row in zip(good, run.rows, strict=True)}
    for ln in lines:
        if ln.candidate is None:
            _emit({"id": ln.id, "line": ln.line, "ok": False, "error": ln.error})
            continue
        row = rows[ln.line]
        judge = json.loads(row["judge_json"])
        _emit(
            {
                "id": row["id"],
                "line": ln.line,
                "ok": True,
                "status": row["status"],
                "reasons": row["reasons"],
                "verdict": None if row["verdict"] in ("skipped", "not_judged") else row["verdict"],
                "leaked": row["leaked"],
                "admitted": row["admitted"],
                "certificate": json.loads(row["certificate_json"]),
                "judge": judge,
            }
        )
    return 1 if any(ln.candidate is None for ln in lines) else 0


# -- tools -----------------------------------------------------------------------------------
def _cmd_sandbox_run(args: argparse.Namespace) -> int:
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.tools.sandbox import SandboxEpisode, SandboxLimits

    code = Path(args.code).read_text(encoding="utf-8")
    backend = _open(args.db)
    try:
        schema = backend.schema()
        limits = SandboxLimits(cell_timeout_s=args.timeout)
        with SandboxEpisode(ReadOnlyQueryPath(backend, schema=schema), schema=schema, limits=limits) as ep:
            res = ep.run(code)
            out = res.to_json()
            out["traced"] = [t.to_json() for t in ep.registry.values()]
            out["evidence"] = [t.to_json() for t in ep.evidence_results()]
            out["isolation"] = ep.isolation
    finally:
        backend.close()
    _emit(out)
    return 0 if res.ok else 1


def _cmd_tools_call(args: argparse.Namespace) -> int:
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.tools.graph_cot import GraphCoT
    from components.tools.protocol import parse_call

    parsed = parse_call(args.call)
    if isinstance(parsed, str):
        raise CliError(f"not a Graph-CoT call: {parsed}")
    function, call_args = parsed
    backend = _open(args.db)
    try:
        index = None
        if function == "RetrieveNode":
            from components.tools.retriever import NodeIndex, shared_embedder

            index = NodeIndex.open(backend, shared_embedder(), progress=sys.stderr.isatty())
        api = GraphCoT(
            backend, index=index, query_path=ReadOnlyQueryPath(backend, schema=backend.schema()), top_k=args.top_k
        )
        call = api.call(function, call_args)
    finally:
        backend.close()
    _emit({"ok": call.ok, **call.to_dict()})
    return 0 if call.ok else 1


def _cmd_quiz(args: argparse.Namespace) -> int:
    from components.quizzer.run import QuizConfig, TqdmProgress, run_quiz, summarize

    llm: dict[str, Any] = {}
    if args.max_new_tokens is not None:
        llm["max_new_tokens"] = args.max_new_tokens
    if args.max_turns is not None:
        llm["max_turns"] = args.max_turns
    options: dict[str, Any] = json.loads(args.backend_options) if args.backend_options else {}
    if args.model:
        options["model_dir"] = args.model
    config = QuizConfig(
        template_n=args.n if args.kind == "template" else 0,
        llm_n=args.n if args.kind == "llm" else 0,
        seed=args.seed,
        backend=args.backend,
        backend_options=options,
        llm=llm,
    )
    bars = TqdmProgress()
    try:
        run = run_quiz(args.db, config, progress=bars)
    finally:
        bars.close()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for cand in run.candidates:
            fh.write(json.dumps(cand.to_record(), ensure_ascii=False, default=str) + "\n")
    tmp.replace(out)
    summary = summarize(run.candidates, run.wall_s)
    summary["valid"] = summary.pop("ok")
    _emit({"ok": True, "out": str(out), **summary})
    return 0


# -- pipeline ------------------------------------------------------------------------------
def _profile_file(name: str) -> Path:
    """The domain file of a ``demo --profile`` (``orchestration/domains/profiles/<name>.yaml``)."""
    folder = Path(__file__).resolve().parent / "domains" / "profiles"
    path = folder / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in folder.glob("*.yaml"))) or "none"
        raise CliError(f"unknown profile {name!r}; known: {known}")
    return path


def _use_domain_file(path: str | None) -> None:
    """``--domain-file``: load that domain YAML besides the configured ones and make its domain
    the default of this command (``GRAPHDOJO_DOMAIN_FILES`` / ``GRAPHDOJO_DOMAIN``)."""
    if not path:
        return
    from orchestration.domains import load_domain_file

    cfg = load_domain_file(Path(path))
    os.environ["GRAPHDOJO_DOMAIN_FILES"] = str(Path(path).resolve())
    os.environ["GRAPHDOJO_DOMAIN"] = cfg.name


def _selected(args: argparse.Namespace, domains: dict[str, Any], cross: list[str]) -> list[str]:
    from orchestration.domains import default_domain

    if args.domain:
        if args.domain not in domains and args.domain not in cross:
            raise CliError(f"unknown domain {args.domain!r}; configured: {sorted(domains)} (and {cross})")
        return [args.domain]
    first = default_domain(domains)
    if args.all_domains:
        return [first, cross[0], *sorted(d for d in domains if d != first), *cross[1:]]
    return [first]


def _cmd_materialize(args: argparse.Namespace) -> int:
    """Materialize domains' assets in-process on the persistent instance (visible in the UI),
    with one progress line per asset and a summary on stderr (:mod:`orchestration.pipeline`).

    ``demo`` runs the default domain; ``demo --all`` every configured domain, the default one
    first, then the GRIT tasks, GRAIN and its evaluation (``grit``), the other domains, and the
    transfer matrix (``transfer``). ``--json``: one JSON line per domain on stdout.

    Launched as several processes (``accelerate launch … -m orchestration.cli materialize``,
    docs/scale.md), every process runs the selection, but only the main one records the run in
    the persistent Dagster instance, lands artifacts and catalog rows and prints the JSON lines;
    the others run on an ephemeral instance (each process keeps its own event log)."""
    from components.store import data_root
    from components.store.ranks import is_main_process

    root = data_root()
    from orchestration.pipeline import dagster_home, run_selection, step_names, summary_lines

    dagster_home(root)
    if getattr(args, "preset", None):
        os.environ["GRAPHDOJO_PRESET"] = args.preset
    if getattr(args, "profile", None):
        if args.domain_file:
            raise CliError("--profile and --domain-file both name a domain file: give one")
        args.domain_file = str(_profile_file(args.profile))
    _use_domain_file(args.domain_file)
    import dagster as dg

    from assets.evaluation import TRANSFER_PREFIX
    from assets.generation import GRIT_PREFIX
    from assets.resources import ArtifactStore
    from orchestration.definitions import build_definitions
    from orchestration.domains import load_domains
    from orchestration.sensors import pipeline_job_name

    domains = load_domains()
    defs = build_definitions(domains, data_root=str(root))
    names = _selected(args, domains, [GRIT_PREFIX] + ([TRANSFER_PREFIX] if len(domains) > 1 else []))
    steps, store, failed = step_names(defs.resolve_all_asset_keys()), ArtifactStore(data_root=str(root)), 0
    main = is_main_process()
    with dg.DagsterInstance.get() if main else dg.DagsterInstance.ephemeral() as instance:
        for domain in names:
            if args.asset:
                job = dg.define_asset_job(
                    f"{domain}_cli", selection=dg.AssetSelection.assets(*(dg.AssetKey([domain, a]) for a in args.asset))
                )
                job_def = dg.Definitions.merge(defs, dg.Definitions(jobs=[job])).resolve_job_def(job.name)
            else:
                job_def = defs.resolve_job_def(pipeline_job_name(domain))
            sys.stderr.write(f"{domain}: materializing ({job_def.name}; data in {root})\n")
            outcome = run_selection(job_def, instance, steps, root, verbose=args.verbose)
            sys.stderr.write("\n".join(summary_lines(domain, outcome, instance, store)) + "\n")
            failed += not outcome.ok
            if args.json and main:
                line = {
                    "ok": outcome.ok,
                    "domain": domain,
                    "run_id": outcome.run_id,
                    "materialized": outcome.materialized,
                    "checks": outcome.checks,
                    "log": str(outcome.log_file),
                }
                _emit({**line, "errors": outcome.errors} if outcome.errors else line)
    return 1 if failed else 0


def _cmd_eval(args: argparse.Namespace) -> int:
    """One-off evaluation of one model on a domain's test split (or a question file)."""
    import time

    from components.evaluation.agents import EvalConfig
    from components.evaluation.gold_cypher import load_question_file, resolve_gold
    from components.evaluation.questions import split_questions
    from components.evaluation.report import main_table, write_report
    from components.evaluation.run import KINDS, SystemSpec, evaluate_systems, judge_dir
    from components.store import Catalog, data_root

    if args.kind not in KINDS:
        raise CliError(f"unknown --kind {args.kind!r}; known: {', '.join(KINDS)}")
    if not (Path(args.checkpoint) / "config.json").is_file():
        raise CliError(f"{args.checkpoint}: not a Hugging Face model folder (no config.json)")
    root = data_root()
    catalog = Catalog(root / "catalog.duckdb")
    db = args.db
    if db is None:
        snap = catalog.latest("graph_snapshot", args.domain)
        if snap is None:
            raise CliError(f"no graph_snapshot for {args.domain!r}: materialize it first, or pass --db")
        db = snap.path
    skipped: list[dict] = []
    if args.questions:
        gold = resolve_gold(load_question_file(args.questions), str(db))
        rows, skipped = gold.rows, gold.skipped
        if not rows:
            raise CliError(f"{args.questions}: no scorable question ({gold.summary()['skipped_by_reason']})")
    else:
        curr = catalog.latest("curriculum_splits", args.domain)
        if curr is None or not curr.path:
            raise CliError(f"no curriculum_splits for {args.domain!r}: materialize it first, or pass --questions")
        cert = next((r for fp in curr.parents if (r := catalog.get("certified_dataset", args.domain, fp))), None)
        rows = split_questions(curr.path, cert.path if cert is not None and cert.path else None)
    config = EvalConfig(
        samples=args.samples,
        seed=args.seed,
        max_questions=args.max_questions,
        max_turns=args.max_turns,
        max_new_tokens=args.max_new_tokens,
        judge_model=args.judge,
    )
    report = evaluate_systems(
        [SystemSpec(Path(args.checkpoint).name, args.kind, str(args.checkpoint))],
        rows,
        db,
        config,
        judge_model_dir=judge_dir(config, root),
    )
    report["questions_source"] = str(args.questions) if args.questions else "the test split"
    report["questions_skipped"] = skipped
    out = Path(args.out) if args.out else root / "eval_reports" / args.domain / f"cli-{time.strftime('%Y%m%d-%H%M%S')}"
    paths = write_report(report, out, f"graphdojo evaluation — {args.domain} — {Path(args.checkpoint).name}")
    _emit(
        {
            "ok": True,
            "domain": args.domain,
            "questions": len(report["order"]),
            "questions_skipped": [{k: s.get(k) for k in ("id", "line", "reason")} for s in skipped],
            "report": paths["html"],
            "summary": main_table(report)[0],
        }
    )
    return 0


def _cmd_domains(args: argparse.Namespace) -> int:
    from orchestration.domains import load_domains

    for cfg in load_domains().values():
        _emit(
            {"name": cfg.name, "default": cfg.default, "source": cfg.source.to_json(), "description": cfg.description}
        )
    return 0


# -- parser --------------------------------------------------------------------------------
def _run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--domain-file",
        default=None,
        metavar="PATH",
        help="a domain YAML from anywhere (your own graph); its domain is the one run unless --domain says otherwise",
    )
    p.add_argument(
        "--verbose", action="store_true", help="Dagster's full event log on the console (always in <data>/logs/)"
    )
    p.add_argument(
        "--json", action="store_true", help="one JSON line per domain on stdout (ok, run id, assets, checks)"
    )


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="graphdojo", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    g = sub.add_parser("graph", help="import, inspect and query graphs").add_subparsers(
        dest="graph_command", required=True, parser_class=_Parser
    )
    imp = g.add_parser("import", help="import a graph into a new Ladybug database folder")
    imp.add_argument("--format", required=True, choices=["generator", "grbench-json", "csv", "cypher-script"])
    imp.add_argument("src", help="generator domain name, or path to the source file/folder")
    imp.add_argument("--db", required=True, help="database folder to create")
    imp.add_argument("--seed", type=_SIZE, default=None, help="generator seed")
    imp.add_argument("--scale", type=_COUNT, default=None, help="generator size (see docs/graph.md)")
    imp.add_argument("--overwrite", action="store_true", help="replace an existing database")
    imp.set_defaults(func=_cmd_graph_import)

    sch = g.add_parser("schema", help="print the schema (JSON, or --text for the prompt form)")
    sch.add_argument("--db", required=True, help="Ladybug folder or bolt:// / neo4j:// URI")
    sch.add_argument("--text", action="store_true")
    sch.set_defaults(func=_cmd_graph_schema)

    q = g.add_parser("query", help="run read-only Cypher (Neo4j dialect)")
    q.add_argument("--db", required=True, help="Ladybug folder or bolt:// / neo4j:// URI")
    src = q.add_mutually_exclusive_group(required=True)
    src.add_argument("--query", help="one query")
    src.add_argument("--file", help='JSON lines {"id", "query", "params"}')
    q.add_argument("--params", help="JSON object of parameters (with --query)")
    q.add_argument("--limit", type=_SIZE, default=None, help="max rows per query (sets 'truncated')")
    q.set_defaults(func=_cmd_graph_query)

    cy = sub.add_parser("cypher", help="Cypher analysis").add_subparsers(
        dest="cypher_command", required=True, parser_class=_Parser
    )
    cf = cy.add_parser("features", help="derive a query's normalised structure (patterns, returns, ops, families)")
    cfs = cf.add_mutually_exclusive_group(required=True)
    cfs.add_argument("--query")
    cfs.add_argument("--file", help='JSON lines {"id", "query"}')
    cf.add_argument("--db", default=None, help="optional graph: resolves unlabelled endpoints from its schema")
    cf.set_defaults(func=_cmd_cypher_features)

    ru = sub.add_parser("rubric", help="evidence rubric").add_subparsers(
        dest="rubric_command", required=True, parser_class=_Parser
    )
    rs = ru.add_parser("score", help="S_pair / S_align / S_aggregate / S_evidence of predicted vs gold marked queries")
    rs.add_argument("--gold", required=True, help='JSON lines {"id", "queries": [...]} (or evidence / evidence_json)')
    rs.add_argument("--pred", required=True, help="the same format; items pair by id (else by line)")
    rs.add_argument("--db", default=None, help="optional graph: resolves unlabelled endpoints from its schema")
    rs.set_defaults(func=_cmd_rubric_score)

    ce = sub.add_parser("certify", help="certify a JSONL of candidates (one JSON line per candidate)")
    ce.add_argument("--db", required=True, help="Ladybug folder or bolt:// / neo4j:// URI")
    ce.add_argument("--candidates", required=True, help="JSONL of candidate records (see docs/certification.md)")
    ce.add_argument("--judge", choices=["off", "on"], default="off", help="run the semantic judge (local model)")
    ce.add_argument(
        "--model",
        default=None,
        help="judge model: a name (qwen2.5-coder-1.5b, …) or folder (default: qwen2.5-coder-0.5b)",
    )
    ce.add_argument(
        "--judge-stages",
        nargs="+",
        choices=["rederive", "review"],
        default=["rederive", "review"],
        help="the judge's stages, in order: rederive (its own query must give the same answer), "
        "review (the two-stage review of the program and evidence); default both",
    )
    ce.add_argument(
        "--snapshot-fingerprint",
        default=None,
        help="fingerprint of the graph the candidates were made on "
        "(default: each record's meta, else the current graph)",
    )
    ce.add_argument(
        "--eval-questions",
        default=None,
        help="JSONL evaluation set for the leakage filter (candidates naming its entities are not admitted)",
    )
    ce.add_argument(
        "--admit-partial-without-judge",
        action="store_true",
        help="with --judge off, admit partial items too (default: strict only)",
    )
    ce.set_defaults(func=_cmd_certify)

    sb = sub.add_parser("sandbox", help="the Python + Cypher sandbox").add_subparsers(
        dest="sandbox_command", required=True, parser_class=_Parser
    )
    sbr = sb.add_parser("run", help="run a Python file in a fresh sandbox episode")
    sbr.add_argument("--db", required=True, help="Ladybug folder or bolt:// / neo4j:// URI")
    sbr.add_argument("--code", required=True, help="Python file to run")
    sbr.add_argument(
        "--timeout",
        type=_CELL_SECONDS,
        default=10.0,
        help=f"the cell's wall-clock seconds, > 0 and at most {_MAX_CELL_SECONDS:g} (one hour; more, NaN or "
        "infinity is a usage error, not clamped); default 10",
    )
    sbr.set_defaults(func=_cmd_sandbox_run)

    tl = sub.add_parser("tools", help="the Graph-CoT function API").add_subparsers(
        dest="tools_command", required=True, parser_class=_Parser
    )
    tc = tl.add_parser("call", help="run one call, e.g. 'NeighbourCheck[paper_3, CITES]'")
    tc.add_argument("--db", required=True, help="Ladybug folder or bolt:// / neo4j:// URI")
    tc.add_argument(
        "call", help="RetrieveNode[text] | NodeFeature[id, feature] | NeighbourCheck[id, type] | NodeDegree[id, type]"
    )
    tc.add_argument("--top-k", type=_COUNT, default=1, help="RetrieveNode: how many ids (default 1)")
    tc.set_defaults(func=_cmd_tools_call)

    qz = sub.add_parser("quiz", help="generate QA candidates with a quizzer (JSON lines out)")
    qz.add_argument("--db", required=True, help="Ladybug folder or bolt:// / neo4j:// URI")
    qz.add_argument("--kind", required=True, choices=["template", "llm"])
    qz.add_argument("-n", type=_COUNT, required=True, help="number of candidates")
    qz.add_argument("--out", required=True, help="output JSONL file (one candidate record per line)")
    qz.add_argument("--seed", type=_SIZE, default=0)
    qz.add_argument("--backend", default="transformers", choices=["transformers", "openai", "vllm"])
    qz.add_argument("--model", default=None, help="local HF model folder (default: SmolLM2-135M-Instruct)")
    qz.add_argument(
        "--backend-options", default=None, help='JSON, e.g. {"base_url": "http://127.0.0.1:8000", "model": "m"}'
    )
    qz.add_argument("--max-new-tokens", type=_COUNT, default=None)
    qz.add_argument("--max-turns", type=_COUNT, default=None)
    qz.set_defaults(func=_cmd_quiz)

    demo = sub.add_parser(
        "demo", help="materialize every asset of the default domain (--all: every domain, GRIT, transfer)"
    )
    demo.add_argument("--domain", default=None, help="only this configured domain (or grit: the GRIT tasks and GRAIN)")
    demo.add_argument(
        "--all",
        dest="all_domains",
        action="store_true",
        help="every domain, the default one first, then GRIT / GRAIN, the others and the transfer matrix",
    )
    demo.add_argument(
        "--preset",
        default=None,
        help="train every domain with this preset (GRAPHDOJO_PRESET): cpu-tiny, cpu-demo (the real SmolLM2) or gpu",
    )
    demo.add_argument(
        "--profile",
        default=None,
        help="a packaged domain profile instead of the default domain, e.g. real: the LLM Quizzer and the judge "
        "with Qwen2.5-Coder (orchestration/domains/profiles/)",
    )
    _run_options(demo)
    demo.set_defaults(func=_cmd_materialize, asset=[])

    ev = sub.add_parser("eval", help="evaluate one checkpoint on a domain's test split or a question file")
    ev.add_argument("--checkpoint", required=True, help="a Hugging Face model folder")
    ev.add_argument("--domain", required=True, help="the domain whose graph (and test split) to use")
    ev.add_argument(
        "--questions",
        default=None,
        help="JSONL or CSV questions with gold answers or gold Cypher (question + answer | cypher; GRBench qid/level)",
    )
    ev.add_argument("--db", default=None, help="graph location (default: the domain's latest snapshot)")
    ev.add_argument("--kind", default="python_cypher", help="python_cypher | graph_cot | graphrag")
    ev.add_argument("--samples", type=_COUNT, default=3, help="sampled answers per question (CIs over them)")
    ev.add_argument("--seed", type=_SIZE, default=0, help="the run's base seed")
    ev.add_argument("--max-questions", type=_COUNT, default=12)
    ev.add_argument("--max-turns", type=_COUNT, default=3)
    ev.add_argument("--max-new-tokens", type=_COUNT, default=96)
    ev.add_argument("--judge", default=None, help="judge model: a name (smollm2-135m, qwen2.5-coder-0.5b, …) or folder")
    ev.add_argument("--out", default=None, help="report folder (default: data/eval_reports/<domain>/cli-<time>)")
    ev.set_defaults(func=_cmd_eval)

    mat = sub.add_parser("materialize", help="materialize a domain's assets (all, or --asset ...)")
    mat.add_argument("--domain", default=None, help="default: the default domain")
    mat.add_argument(
        "--asset", action="append", default=[], help="asset name without the domain prefix, e.g. graph_snapshot"
    )
    _run_options(mat)
    mat.set_defaults(func=_cmd_materialize, all_domains=False)

    doms = sub.add_parser("domains", help="list configured domains")
    doms.set_defaults(func=_cmd_domains)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except GraphError as exc:
        err = exc.to_dict()
    except CliError as exc:
        err = {"code": exc.code, "message": str(exc)}
    except JsonlFileError as exc:
        err = {"code": exc.code, "message": str(exc)}
    except LLMError as exc:
        err = {"code": "llm_error", "message": " ".join(str(exc).split())}
    except json.JSONDecodeError as exc:
        err = {"code": "bad_input", "message": f"invalid JSON: {exc}"}
    except OSError as exc:
        err = {"code": "io_error", "message": " ".join(str(exc).split())}
    except ValueError as exc:
        err = {"code": "bad_input", "message": " ".join(str(exc).split())}
    sys.stderr.write(json.dumps({"ok": False, "error": err}) + "\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
