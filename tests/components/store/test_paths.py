"""The data root follows the project a command runs in — never the installed package."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.store.paths import data_root, project_file


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRAPHDOJO_DATA", raising=False)


def test_the_nearest_project_with_a_graphdojo_table_decides(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / "src" / "deep").mkdir(parents=True)
    (proj / "pyproject.toml").write_text('[project]\nname = "mine"\n\n[tool.graphdojo]\ndata_root = "store/here"\n')
    (proj / "src" / "pyproject.toml").write_text('[project]\nname = "inner, not a graphdojo project"\n')
    assert data_root(proj / "src" / "deep") == (proj / "store" / "here").resolve()
    assert project_file(proj / "src" / "deep")[0] == proj / "pyproject.toml"
    (proj / "pyproject.toml").write_text("[tool.graphdojo]\n")
    assert data_root(proj / "src") == (proj / "data").resolve()  # the default name, next to the file


def test_without_a_project_the_working_directory_has_the_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text("this is [not toml")  # unreadable: skipped
    assert data_root(tmp_path) == (tmp_path / "data").resolve()
    monkeypatch.chdir(tmp_path)
    assert data_root() == (tmp_path / "data").resolve()


def test_the_environment_wins_and_a_bad_setting_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.graphdojo]\ndata_root = 3\n")
    with pytest.raises(ValueError, match="data_root must be a non-empty string"):
        data_root(tmp_path)
    monkeypatch.setenv("GRAPHDOJO_DATA", str(tmp_path / "elsewhere"))
    assert data_root(tmp_path) == (tmp_path / "elsewhere").resolve()


def test_this_repository_keeps_its_data_in_data(monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(__file__).resolve().parents[3]
    monkeypatch.chdir(root / "components")
    assert data_root() == root / "data"
