"""The one strict JSONL reader every user-supplied JSONL file goes through."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.graph.jsonl import MAX_DEPTH, JsonlFileError, loads, read_jsonl


def test_strict_json() -> None:
    assert loads('{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
    for bad, why in [
        ('{"a": 1, "a": 2}', "duplicate key"),
        ('{"x": NaN}', "NaN"),
        ("[Infinity]", "Infinity"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested deeper"),
        ("[" * 200000 + "]" * 200000, "nested deeper"),
        (b"\xff\xfe", "not UTF-8"),
        ("{oops", "not JSON"),
    ]:
        with pytest.raises(ValueError, match=why):
            loads(bad)
    # brackets inside strings do not count as nesting
    assert loads('{"s": "' + "[" * 500 + '"}') == {"s": "[" * 500}


def test_lines_errors_and_files(tmp_path: Path) -> None:
    f = tmp_path / "a.jsonl"
    f.write_bytes(b'\xef\xbb\xbf{"id": 1}\n\n  \n{"id": 1, "id": 2}\nnot json\n[1]\n')
    got = list(read_jsonl(f))
    assert [g[0] for g in got] == [1, 4, 5, 6]
    assert got[0][1] == {"id": 1} and got[3][1] == [1]
    assert [g[2]["code"] for g in got if g[2]] == ["bad_json", "bad_json"]
    assert got[1][2]["message"].startswith("line 4: duplicate key")
    for path, code in [(tmp_path / "none.jsonl", "file_not_found"), (tmp_path, "file_unreadable")]:
        with pytest.raises(JsonlFileError) as err:
            list(read_jsonl(path))
        assert err.value.code == code
    (tmp_path / "blank.jsonl").write_text("\n \n\t\n")
    with pytest.raises(JsonlFileError) as err:
        list(read_jsonl(tmp_path / "blank.jsonl"))
    assert err.value.code == "empty_file"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400))
def test_arbitrary_bytes_never_raise(tmp_path: Path, data: bytes) -> None:
    f = tmp_path / "x.jsonl"
    f.write_bytes(data)
    try:
        rows = list(read_jsonl(f))
    except JsonlFileError as exc:
        assert exc.code == "empty_file"
        return
    assert all((value is None) == (error is not None) for _, value, error in rows)
