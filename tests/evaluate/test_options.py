"""The user's --scenarios file: clear errors naming file, field and expectation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quaere.evaluate.options import ScenariosFileError, load_scenarios_file


def write(tmp_path: Path, content: object) -> Path:
    path = tmp_path / "scenarios.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_valid_file_loads(tmp_path: Path) -> None:
    scenarios = load_scenarios_file(write(tmp_path, [{"id": "a", "params": {"rows": 2, "cols": 3}}]))
    assert [s.id for s in scenarios] == ["a"] and scenarios[0].params == {"rows": 2, "cols": 3}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[{", "not valid JSON"),
        ({"id": "a"}, "non-empty JSON list"),
        ([], "non-empty JSON list"),
        ([{"params": {}}], "field '0.id' is required"),
        ([{"id": "a", "params": {"rows": 1}}, {"id": "b", "params": {"rows": [1]}}], "field '1.params.rows"),
        ([{"id": "a", "params": {}, "extra": 1}], "field '0.extra' is not a known field"),
        ([{"id": "a", "params": {}}, {"id": "a", "params": {}}], "field '1.id' repeats the id 'a'"),
    ],
)
def test_malformed_files_name_file_and_field(tmp_path: Path, content: object, expected: str) -> None:
    path = write(tmp_path, content)
    with pytest.raises(ScenariosFileError) as raised:
        load_scenarios_file(path)
    assert str(path) in str(raised.value) and expected in str(raised.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ScenariosFileError, match="no such file"):
        load_scenarios_file(tmp_path / "nope.json")
