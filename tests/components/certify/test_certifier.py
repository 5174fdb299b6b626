"""The certifier on real template candidates: untouched ones certify (false-reject rate ≤ 0.02),
injected faults are hard failures with the right reason (recall ≥ 0.99 per fault type)."""

from __future__ import annotations

from collections import Counter

import pytest

from components.certify import REASONS, STATUSES, UNDETERMINED, Certificate, certify
from components.certify.faults import FAULTS, SNAPSHOT_FAULT, inject
from components.graph.sources.demo import DEMO_DOMAINS
from components.quizzer.candidate import QACandidate
from components.quizzer.final import run_final_program

_CERTS: dict[str, list[tuple[QACandidate, Certificate]]] = {}


def _certify(env, domain: str, cand: QACandidate, current: str | None = None) -> Certificate:
    e = env[domain]
    return certify(
        cand,
        schema=e["schema"],
        query_path=e["qp"],
        snapshot_fingerprint=e["fingerprint"],
        current_fingerprint=current or e["fingerprint"],
    )


def _untouched(env, domain: str):
    if domain not in _CERTS:
        _CERTS[domain] = [(c, _certify(env, domain, c)) for c in env[domain]["candidates"]]
    return _CERTS[domain]


def _certified(env, domain: str) -> list[QACandidate]:
    return [c for c, cert in _untouched(env, domain) if cert.certified]


@pytest.mark.parametrize("domain", DEMO_DOMAINS)
def test_untouched_candidates_certify(certify_env, domain: str) -> None:
    results = _untouched(certify_env, domain)
    ok = [(c, cert) for c, cert in results if c.ok]
    assert len(ok) >= len(results) - 1
    counts = Counter(cert.status for _, cert in ok)
    false_rejects = counts["hard_failure"] / len(ok)
    print(
        f"\n{domain}: {dict(counts)} partial reasons "
        f"{dict(Counter(r for _, cert in ok if cert.status == 'partial' for r in cert.reasons))}"
    )
    assert false_rejects <= 0.02, [(c.meta["template"], cert.to_json()) for c, cert in ok if not cert.certified]
    assert counts["strict"] > 0
    for _, cert in ok:
        assert cert.status in STATUSES
        assert [ch.name for ch in cert.checks] == [
            "format_provenance_safety",
            "schema_static",
            "reexecution",
            "grounding",
        ]
        if cert.status == "strict":
            assert cert.reasons == [] and all(ch.passed for ch in cert.checks)
        else:  # partial: checks 1–3 pass, grounding is undetermined for allow-listed reasons
            assert all(ch.passed for ch in cert.checks[:3])
            assert cert.checks[3].verdict == "undetermined" and cert.reasons


def test_quizzer_failures_are_hard_failures(certify_env) -> None:
    cand = certify_env["academic"]["candidates"][0]
    failed = QACandidate.from_record(cand.to_record()).fail("code_error", "boom")
    cert = _certify(certify_env, "academic", failed)
    assert (cert.status, cert.reasons, cert.checks) == ("hard_failure", ["quizzer_failure"], [])


def test_round_tripped_candidates_still_certify(certify_env) -> None:
    """The Parquet record form (JSON columns) certifies the same as the in-memory candidate."""
    for c, cert in _untouched(certify_env, "ecommerce")[:6]:
        again = _certify(certify_env, "ecommerce", QACandidate.from_record(c.to_record()))
        assert (again.status, again.reasons) == (cert.status, cert.reasons)


def test_reason_taxonomy_is_complete() -> None:
    for reason in (
        "execution_failure",
        "schema_error",
        "direction_error",
        "answer_evidence_mismatch",
        "incomplete_evidence",
        "truncation_misuse",
        "snapshot_drift",
        "unsafe_query",
        "forged_evidence",
        "dialect_divergence",
        "result_mismatch",
        "format_error",
        "quizzer_failure",
        "hard_coded_answer",
    ):
        assert reason in REASONS
    for fault in FAULTS.values():
        assert fault.expected <= set(REASONS if fault.outcome == "hard_failure" else UNDETERMINED)


@pytest.mark.parametrize("fault", sorted(f for f, spec in FAULTS.items() if not spec.sandboxed))
def test_injected_faults_are_hard_failures_with_the_right_reason(certify_env, fault: str) -> None:
    spec = FAULTS[fault]
    injected = hits = 0
    misses = []
    for domain in DEMO_DOMAINS:
        pool = _certified(certify_env, domain)
        for cand in pool:
            faulty = inject(fault, cand, pool, certify_env[domain]["schema"])
            if faulty is None:
                continue
            current = certify_env["drift"] if fault == SNAPSHOT_FAULT else None
            cert = _certify(certify_env, domain, faulty, current)
            injected += 1
            if cert.status == "hard_failure" and set(cert.reasons) <= spec.expected:
                hits += 1
            else:
                misses.append((domain, cand.meta["template"], cert.status, cert.reasons))
    recall = hits / injected if injected else 0.0
    print(f"\n{fault}: injected {injected}, recall {recall:.3f}")
    assert injected >= 5, f"too few candidates to inject {fault} into"
    assert recall >= 0.99, misses


def test_certify_many_equals_certify_one_by_one(certify_env) -> None:
    """The fast batch path (fork server, shared static analysis, grounding on worker threads)
    gives every candidate — untouched, faulty, quizzer failure, drifted — the same certificate
    as :func:`certify`, in input order."""
    e = certify_env["academic"]
    pool = _certified(certify_env, "academic")
    batch = list(e["candidates"])
    for fault in ("reversed_direction", "swapped_answer", "tampered_rows_rehashed", "foreign_evidence_untraced"):
        batch += [f for f in (inject(fault, c, pool, e["schema"]) for c in pool[:3]) if f is not None]
    batch.append(QACandidate.from_record(batch[0].to_record()).fail("code_error", "boom"))
    drifted = QACandidate.from_record(batch[1].to_record())
    drifted.meta["snapshot_fingerprint"] = certify_env["drift"]
    batch.append(drifted)
    for c in batch[:-1]:
        c.meta["snapshot_fingerprint"] = e["fingerprint"]
    from components.certify import certify_many

    done: list[int] = []
    many = certify_many(
        batch,
        schema=e["schema"],
        query_path=e["qp"],
        current_fingerprint=e["fingerprint"],
        workers=2,
        window=3,
        progress=done.append,
    )
    assert len(many) == len(batch) and sum(done) == len(batch)
    one = [
        certify(
            c,
            schema=e["schema"],
            query_path=e["qp"],
            current_fingerprint=e["fingerprint"],
            snapshot_fingerprint=c.meta.get("snapshot_fingerprint"),
        )
        for c in batch
    ]
    assert [(m.status, m.reasons) for m in many] == [(o.status, o.reasons) for o in one]
    assert many[-1].reasons == ["snapshot_drift"] and many[-2].reasons == ["quizzer_failure"]
    assert sum(m.status == "hard_failure" for m in many) >= 10
    assert sum(m.status == "strict" for m in many) >= 5


def test_grounding_replays_the_reexecuted_results(certify_env) -> None:
    """Check 4 answers the program's evidence queries from check 3's fresh results; a query the
    program runs beyond its evidence still goes to the database."""
    from components.certify.checks import ReplayQueryPath, check_grounding, check_reexecution

    e = certify_env["ecommerce"]
    cand = next(c for c, cert in _untouched(certify_env, "ecommerce") if cert.status == "strict")
    results: dict = {}
    assert check_reexecution(cand, e["qp"], e["fingerprint"], e["fingerprint"], results=results).passed
    assert len(results) == len(cand.evidence)
    replay = ReplayQueryPath(e["qp"], results)
    assert check_grounding(cand, replay, e["schema"]).passed
    assert replay.replayed == len(cand.evidence) and replay.forwarded == 0
    extra = QACandidate.from_record(cand.to_record())
    extra.final_program = "cypher('MATCH (n) RETURN count(n) AS n')\n" + extra.final_program
    extra.trace = []
    replay = ReplayQueryPath(e["qp"], results)
    check_grounding(extra, replay, e["schema"])
    assert replay.forwarded == 1


@pytest.mark.parametrize("fault", sorted(f for f, spec in FAULTS.items() if spec.sandboxed))
def test_sandboxed_faults_get_their_expected_outcome(certify_env, fault: str) -> None:
    """The kinds made by running a modified final program for real: hard-coded answers are hard
    failures (``hard_coded_answer``), an answer picked out of broader evidence or an arbitrary
    LIMIT subset is partial with its reason (never strict), a node-valued answer stays strict."""
    spec = FAULTS[fault]
    injected, misses = 0, []
    for domain in DEMO_DOMAINS:
        e = certify_env[domain]
        pool = [c for c, cert in _untouched(certify_env, domain) if cert.status == "strict"]

        def runner(program: str, episode: str, e=e):
            return run_final_program(e["qp"], e["schema"], program, episode_id=episode)

        for cand in pool:
            faulty = inject(fault, cand, pool, e["schema"], runner)
            if faulty is None:
                continue
            injected += 1
            # genuine traces: the recorded run is exactly what the evidence says
            assert faulty.trace[0]["code"] == faulty.final_program
            cert = _certify(certify_env, domain, faulty)
            if not spec.caught(cert.status, cert.reasons):
                misses.append((domain, cand.meta["template"], cert.status, cert.reasons))
    print(f"\n{fault}: injected {injected}, misses {len(misses)}")
    assert injected >= (1 if fault == "internal_key" else 5), f"too few candidates to inject {fault} into"
    assert not misses, misses
