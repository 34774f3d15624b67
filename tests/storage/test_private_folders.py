"""kioku's own folders are private from the start and fixed quietly (issue 35, item 1): the
model cache once made ``<data>/kioku`` and its parents with the umask (0755), after which
every start and every CLI call warned about a folder kioku had made itself."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from kioku.storage.private_files import (
    kiokus_data_directory,
    make_directories,
    private_directory,
    private_sqlite_file,
)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_made_folders_and_their_parents_are_0700(tmp_path: Path, umask_022: None) -> None:
    made = make_directories(tmp_path / "share" / "kioku" / "models")
    assert made == [
        tmp_path / "share",
        tmp_path / "share" / "kioku",
        tmp_path / "share" / "kioku" / "models",
    ]
    assert [mode(folder) for folder in made] == [0o700, 0o700, 0o700]
    assert make_directories(tmp_path / "share" / "kioku") == []  # existing: left as it is


def test_the_default_data_folder_is_fixed_without_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    own = kiokus_data_directory()
    assert own == tmp_path / "data" / "kioku"
    own.mkdir(parents=True, mode=0o755)
    os.chmod(own, 0o755)  # as the model cache used to leave it
    with caplog.at_level(logging.INFO, logger="kioku.storage.private_files"):
        private_sqlite_file(own / "kioku.db")
        private_sqlite_file(own / "kioku.db")  # the next start: nothing to say
    assert mode(own) == 0o700
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len([r for r in caplog.records if "now 700" in r.getMessage()]) == 1


def test_an_operators_folder_is_warned_about_and_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    theirs = tmp_path / "srv"
    theirs.mkdir(mode=0o755)
    os.chmod(theirs, 0o755)
    with caplog.at_level(logging.INFO, logger="kioku.storage.private_files"):
        private_directory(theirs)
    assert mode(theirs) == 0o755
    assert any(r.levelno == logging.WARNING and "others can list it" in r.getMessage()
               for r in caplog.records)  # fmt: skip
