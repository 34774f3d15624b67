"""Files and folders only their owner can read: the SQLite database (and its -wal, -shm and
-journal), the vector index cache. Memories, key hashes and tokens' hashes live in them.

kioku creates its files 0600 and its folders 0700 whatever the process umask (parents
included: the model cache's ``<data>/kioku/models`` once made ``<data>/kioku`` with the umask),
and tightens a file or folder of its own that it finds readable by others, saying what it
changed once. Its own folders are the default data folder (``platformdirs``'
``user_data_dir("kioku")``, e.g. ``~/.local/share/kioku``) and those below it. A folder it did
not create (the one a ``KIOKU_DATABASE_URL`` points into) is the operator's: kioku warns about
it but leaves its mode alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

from platformdirs import user_data_dir

log = logging.getLogger(__name__)

FILE_MODE = 0o600
DIR_MODE = 0o700
_OPEN_TO_OTHERS = stat.S_IRWXG | stat.S_IRWXO
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def private_opener(path: str, flags: int) -> int:
    """An ``opener`` for ``open()``: a new file is created 0600 (the umask can only narrow)."""
    return os.open(path, flags, FILE_MODE)


def _mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return None


def tighten(path: Path, mode: int = FILE_MODE, level: int = logging.WARNING) -> None:
    """If ``path`` exists and group or others have any access, make it ``mode`` (and say so)."""
    current = _mode(path)
    if current is not None and current & _OPEN_TO_OTHERS:
        os.chmod(path, mode)
        log.log(level, "%s was mode %o (readable by others); now %o", path, current, mode)


def kiokus_data_directory() -> Path:
    """The default data folder: kioku's own, made by kioku (database, model cache)."""
    return Path(user_data_dir("kioku"))


def make_directories(path: Path) -> list[Path]:
    """Create ``path`` and its missing parents, each 0700 whatever the umask (``mkdir(parents=
    True)`` gives the parents the umask's mode); the folders made, outermost first."""
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it first
            folder.mkdir(mode=DIR_MODE)
        os.chmod(folder, DIR_MODE)
    return missing[::-1]


def private_directory(path: Path, *, owned: bool = False) -> None:
    """Create ``path`` and its missing parents 0700. An existing ``path`` is tightened when
    ``owned`` (a folder only kioku uses), else only warned about when others can read it."""
    if path in make_directories(path):
        return
    if owned or path == kiokus_data_directory():
        tighten(path, DIR_MODE, logging.INFO)  # kioku's own: fixed, nothing to warn about
    elif (current := _mode(path)) is not None and current & (stat.S_IRWXO):
        log.warning("%s (holding kioku's database) is mode %o: others can list it", path, current)


def private_sqlite_file(path: Path) -> None:
    """Make sure the database file exists 0600 before SQLite opens it (SQLite then creates its
    -wal, -shm and -journal with the database file's mode), and tighten existing ones."""
    private_directory(path.parent)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE))
    for candidate in (path, *(path.with_name(path.name + side) for side in SQLITE_SIDE_FILES)):
        tighten(candidate)
