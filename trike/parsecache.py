"""A cache of parsed graph files, like Python's `.pyc`: big files open several times faster.

The YAML file stays the only source of truth. For a file of at least `MIN_BYTES`, the parsed result is
pickled to `$TRIKE_CACHE_DIR/parsed/` (default `~/.cache/trike/parsed/`), one entry per file path,
together with the length and a BLAKE2 digest of the text it was parsed from. A later load uses the entry
only when the file still starts with exactly that text; lines appended since (the usual way a graph
grows) are read as a tail. Anything else (an edit in the middle, a rewrite, another trike version) is a
miss: the file is parsed again and the entry replaced. `TRIKE_PARSE_CACHE=0` turns the cache off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
from pathlib import Path

from . import yamlfile

MIN_BYTES = 2_000_000
FORMAT = 1


def _cache_dir() -> Path:
    base = os.environ.get("TRIKE_CACHE_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "trike"
    return root / "parsed"


def _entry(path: Path) -> Path:
    from . import __version__

    key = hashlib.blake2b(f"{FORMAT}\0{__version__}\0{path.resolve()}".encode(), digest_size=16).hexdigest()
    return _cache_dir() / f"{key}.pickle"


def _digest(raw: bytes) -> str:
    return hashlib.blake2b(raw, digest_size=20).hexdigest()


def parse_file_text(text: str, path: str | os.PathLike | None) -> yamlfile.GraphData:
    """`yamlfile.parse(text)`, through the cache when the text is big and comes from a file."""
    if path is None or len(text) < MIN_BYTES or os.environ.get("TRIKE_PARSE_CACHE", "1") == "0":
        return yamlfile.parse(text, None if path is None else str(path))
    p = Path(path)
    raw = text.encode("utf-8")
    entry = _entry(p)
    cached = _read(entry)
    if cached is not None:
        size, digest, data = cached
        if len(raw) >= size and _digest(raw[:size]) == digest:
            tail = raw[size:]
            facts = yamlfile.parse_tail(tail.decode("utf-8"), str(p)) if tail else []
            if facts is not None:
                data.triples.extend(facts)
                data.size = len(text)
                if len(tail) > size // 10:
                    _write(entry, raw, data)  # refresh once the tail has grown
                return data
    data = yamlfile.parse(text, str(p))
    if not data.warnings:
        _write(entry, raw, data)
    return data


def _read(entry: Path) -> tuple[int, str, yamlfile.GraphData] | None:
    try:
        with open(entry, "rb") as fh:
            blob = pickle.load(fh)  # our own file, in the user's private cache folder
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, ValueError, TypeError):
        return None
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        return None
    data = blob.get("data")
    if not isinstance(data, yamlfile.GraphData):
        return None
    return blob["size"], blob["digest"], data


def _write(entry: Path, raw: bytes, data: yamlfile.GraphData) -> None:
    """Best effort: a cache that cannot be written is simply not used."""
    with contextlib.suppress(OSError, pickle.PicklingError, TypeError, RecursionError):
        entry.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        blob = {"format": FORMAT, "size": len(raw), "digest": _digest(raw), "data": data}
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-", suffix=".pickle")
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(blob, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.chmod(tmp, 0o600)
            os.replace(tmp, entry)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
