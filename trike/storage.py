"""Storage backends. A backend stores the text of one graph file.

The interface is small: `read_text`, `write_text` (atomic), `exists`, `version` (changes whenever the
content may have changed). `append_text`, `read_from` and `lock` are optional extras that make single
writes O(1) and serialize writers across processes; `LocalFileStorage` has all of them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

from .errors import StorageError


@runtime_checkable
class Storage(Protocol):
    def read_text(self) -> str: ...

    def write_text(self, text: str) -> None: ...

    def exists(self) -> bool: ...

    def version(self) -> object: ...


class MemoryStorage:
    """Keeps the text in memory (tests, scratch graphs)."""

    def __init__(self, text: str | None = None):
        self._text = text
        self._version = 0
        self._lock = threading.RLock()
        self.name = "<memory>"

    def read_text(self) -> str:
        if self._text is None:
            raise StorageError("no graph stored yet")
        return self._text

    def write_text(self, text: str) -> None:
        self._text = text
        self._version += 1

    def append_text(self, text: str) -> None:
        self._text = (self._text or "") + text
        self._version += 1

    def exists(self) -> bool:
        return self._text is not None

    def version(self) -> object:
        return self._version

    @contextlib.contextmanager
    def lock(self, shared: bool = False) -> Iterator[None]:
        with self._lock:
            yield


class LocalFileStorage:
    """A local file. Rewrites go through a temporary file, fsync and rename; appends are fsync'd;
    `lock()` takes an `flock` on a sidecar `.NAME.lock` file so that processes take turns."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.name = str(self.path)
        self._lock_path = self.path.with_name("." + self.path.name + ".lock")

    def read_text(self) -> str:
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            raise StorageError(f"{self.path}: no such file") from None
        except IsADirectoryError:
            raise StorageError(f"{self.path}: is a directory, not a graph file") from None
        except OSError as exc:
            raise StorageError(f"{self.path}: cannot read: {exc.strerror or exc}") from None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise StorageError(f"{self.path}:{line}: not UTF-8 text ({exc.reason})") from None

    def read_from(self, offset: int) -> bytes:
        with open(self.path, "rb") as fh:
            fh.seek(offset)
            return fh.read()

    def write_text(self, text: str) -> None:
        data = text.encode("utf-8")
        directory = self.path.parent
        if not directory.is_dir():
            raise StorageError(f"{self.path}: the folder {directory} does not exist (create it first)")
        fd, tmp = tempfile.mkstemp(prefix="." + self.path.name + ".", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            try:
                mode = self.path.stat().st_mode & 0o7777
                os.chmod(tmp, mode)
            except FileNotFoundError:
                os.chmod(tmp, 0o644)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _fsync_dir(directory)

    def append_text(self, text: str) -> None:
        with open(self.path, "ab") as fh:
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())

    def exists(self) -> bool:
        return self.path.exists()

    def version(self) -> object:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    @contextlib.contextmanager
    def lock(self, shared: bool = False) -> Iterator[None]:
        import fcntl

        try:
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if exc.errno in (errno.EROFS, errno.EACCES) and shared:
                yield  # a read-only folder: nobody can write, so readers need no lock
                return
            if exc.errno == errno.ENOENT:
                raise StorageError(
                    f"{self.path}: the folder {self.path.parent} does not exist (create it first)") from None
            raise StorageError(f"{self._lock_path}: cannot create the lock file: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
            yield
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
