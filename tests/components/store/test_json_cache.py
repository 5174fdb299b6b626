"""Results computed once per key: the check and evaluation caches (components/store/json_cache.py)
and the certified table's cached checks (components/certify/quality.py)."""

from __future__ import annotations

from pathlib import Path

from components.certify.quality import CHECK_CACHE, cached_check
from components.store.json_cache import cache_key, cached_result, read_cached, write_cached


def _counter() -> tuple[list[int], object]:
    calls: list[int] = []

    def compute() -> dict:
        calls.append(1)
        return {"passed": True, "n": len(calls), "path": Path("/x")}  # a non-JSON value becomes a string

    return calls, compute


def test_a_result_is_computed_once_per_key_and_reads_back_the_same(tmp_path: Path) -> None:
    calls, compute = _counter()
    first, hit1 = cached_result(tmp_path, "k", compute)
    second, hit2 = cached_result(tmp_path, "k", compute)
    assert (hit1, hit2) == (False, True) and len(calls) == 1
    assert first == second == {"passed": True, "n": 1, "path": "/x"}
    _, hit3 = cached_result(tmp_path, "other", compute)
    assert not hit3 and len(calls) == 2
    assert not list(tmp_path.glob(".*.tmp"))  # written aside, then renamed


def test_a_broken_or_unwritable_cache_is_a_miss_never_an_error(tmp_path: Path) -> None:
    (tmp_path / "k.json").write_text("{not json")
    assert read_cached(tmp_path, "k") is None
    calls, compute = _counter()
    result, hit = cached_result(tmp_path, "k", compute)
    assert not hit and result["n"] == 1 and read_cached(tmp_path, "k") == result  # repaired
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert write_cached(blocker / "sub", "k", {"a": 1}) is False  # a file where the folder should be
    result, hit = cached_result(blocker / "sub", "k", compute)
    assert not hit and result["n"] == 2
    assert read_cached(None, "k") is None and write_cached(None, "k", {}) is False


def test_keys_change_with_any_part() -> None:
    assert cache_key("a", ["x", "y"]) == cache_key("a", ["x", "y"])
    assert len({cache_key("a", ["x", "y"]), cache_key("a", ["y", "x"]), cache_key("b", ["x", "y"])}) == 3


def test_a_check_is_recomputed_when_its_inputs_or_question_file_change(tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"question": "a"}\n')
    calls, compute = _counter()

    def check(fingerprint: str) -> dict:
        return cached_check(
            "no_leakage", compute, data_root=tmp_path, domain="d", inputs=[fingerprint], files=[str(questions), None]
        )

    assert check("f1")["cached"] is False and check("f1")["cached"] is True and len(calls) == 1
    assert check("f2")["cached"] is False and len(calls) == 2  # another table
    questions.write_text('{"question": "b"}\n')
    assert check("f1")["cached"] is False and len(calls) == 3  # the same path, new content
    assert len(list((tmp_path / CHECK_CACHE / "d").glob("no_leakage-*.json"))) == 3
