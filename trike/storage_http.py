"""A read-only storage backend for a graph served over HTTP(S).

`HttpStorage(url)` implements the `Storage` protocol (`read_text`, `write_text`, `exists`, `version`) for
a URL that returns the text of a trike YAML graph: a raw file (GitHub raw, an object store, any static
server) or a running `trike serve` (`/export?format=yaml`). `write_text` and `append_text` refuse.

- The first read fetches the URL (timeout `timeout` seconds). Later, `version()` asks the server again at
  most every `refresh` seconds, with `If-None-Match` / `If-Modified-Since`, so an unchanged graph costs
  one `304 Not Modified`. `refresh=0` asks on every read.
- The last good copy is kept on disk (`$TRIKE_CACHE_DIR/remote/`, default `~/.cache/trike/remote/`;
  `cache_dir=False` turns this off). When the server cannot be reached, a copy is used with a warning
  (`stale` is then true and `last_error` says why); without any copy the error names the URL.
- `token_env="NAME"` sends `Authorization: Bearer $NAME` (the token is read from the environment on each
  request and never written to the cache).

Only the standard library is used (`urllib`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
from pathlib import Path
from typing import Any

from .errors import StorageError

__all__ = ["HttpStorage", "default_cache_dir"]

USER_AGENT = "trike (workspace member fetch)"
ACCEPT = "application/yaml, application/x-yaml, text/yaml, text/x-yaml, text/plain;q=0.8, */*;q=0.1"
_NOT_YAML = {
    "text/html": "an HTML page, not a trike YAML graph (point at the raw file, or at "
                 "`/export?format=yaml` of a trike server)",
    "text/turtle": "Turtle, not a trike YAML graph (use `/export?format=yaml` of a trike server)",
    "application/n-triples": "N-Triples, not a trike YAML graph (use `/export?format=yaml`)",
    "application/ld+json": "JSON-LD, not a trike YAML graph (use `/export?format=yaml`)",
}


def default_cache_dir() -> Path:
    """$TRIKE_CACHE_DIR/remote, else $XDG_CACHE_HOME/trike/remote, else ~/.cache/trike/remote."""
    env = os.environ.get("TRIKE_CACHE_DIR")
    if env:
        base = Path(env).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "trike"
    return base / "remote"


def _redact(url: str) -> str:
    """The URL without a password (for messages and the cache metadata)."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    user = f"{parts.username}:***@" if parts.username else ""
    return urllib.parse.urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))


class HttpStorage:
    """A graph served over HTTP(S), read-only. See the module docstring."""

    def __init__(self, url: str, timeout: float = 10.0, *, refresh: float = 60.0,
                 headers: dict[str, str] | None = None, token_env: str | None = None,
                 cache_dir: str | os.PathLike | bool | None = None, max_bytes: int = 512 * 1024 * 1024):
        if not isinstance(url, str) or urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise StorageError(f"{url!r}: not an http:// or https:// URL")
        if not urllib.parse.urlsplit(url).hostname:
            raise StorageError(f"{url!r}: the URL has no host")
        self.url = url
        self.name = _redact(url)
        self.timeout = float(timeout)
        self.refresh = float(refresh)
        self.headers = dict(headers or {})
        self.token_env = token_env
        self.max_bytes = int(max_bytes)
        if cache_dir is False:
            self._cache: Path | None = None
        else:
            folder = default_cache_dir() if cache_dir in (None, True) else Path(cache_dir)  # type: ignore[arg-type]
            self._cache = folder / (hashlib.sha256(url.encode("utf-8")).hexdigest()[:32] + ".yaml")
        self._lock = threading.RLock()
        self._text: str | None = None
        self._digest: str | None = None
        self._etag: str | None = None
        self._modified: str | None = None
        self._checked = float("-inf")  # monotonic time of the last answer from the server (or attempt)
        self.fetched_at: _dt.datetime | None = None  # when the copy in use was fetched
        self.stale = False  # the copy in use could not be confirmed with the server
        self.last_error: str | None = None
        self.requests = 0  # requests sent (tests, diagnostics)
        self.not_modified = 0  # of which were answered 304

    # ------------------------------------------------------------------ Storage protocol
    def read_text(self) -> str:
        with self._lock:
            self._ensure()
            assert self._text is not None
            return self._text

    def exists(self) -> bool:
        """True once a copy is available. A graph that cannot be fetched raises `StorageError` (naming
        the URL) rather than reading as an empty graph."""
        with self._lock:
            self._ensure()
            return True

    def version(self) -> object:
        """The content digest of the copy in use; asks the server again when `refresh` seconds passed."""
        with self._lock:
            if self._text is None:
                self._ensure()
            elif time.monotonic() - self._checked >= self.refresh:
                self._revalidate()
            return self._digest

    def write_text(self, text: str) -> None:
        raise StorageError(f"{self.name}: a remote graph is read-only (write to the graph where it is served)")

    def append_text(self, text: str) -> None:
        self.write_text(text)

    # ------------------------------------------------------------------ extras
    def refresh_now(self) -> bool:
        """Ask the server now. True when the content changed."""
        with self._lock:
            before = self._digest
            if self._text is None:
                self._ensure()
            else:
                self._revalidate()
            return self._digest != before

    def status(self) -> dict[str, Any]:
        """Where the copy in use comes from: url, fetched_at, etag, stale, last_error, bytes."""
        with self._lock:
            return {
                "url": self.name,
                "fetched_at": self.fetched_at.isoformat(timespec="seconds") if self.fetched_at else None,
                "etag": self._etag,
                "last_modified": self._modified,
                "stale": self.stale,
                "last_error": self.last_error,
                "bytes": len(self._text.encode("utf-8")) if self._text is not None else None,
            }

    def __repr__(self) -> str:
        return f"HttpStorage({self.name!r})"

    # ------------------------------------------------------------------ fetching
    def _ensure(self) -> None:
        if self._text is not None:
            return
        cached = self._read_cache()
        if cached is not None:
            text, meta = cached
            self._etag = meta.get("etag")
            self._modified = meta.get("last_modified")
        try:
            self._fetch(conditional=cached is not None)
        except StorageError as exc:
            if cached is None:
                raise
            self._use(cached[0], None, None, from_cache=cached[1])
            self.stale = True
            self.last_error = str(exc)
            self._checked = time.monotonic()
            warnings.warn(f"{exc}; using the cached copy fetched {cached[1].get('fetched_at', '?')}",
                          stacklevel=4)
            return
        if self._text is None and cached is not None:  # 304 on the first request: the cache is current
            self._use(cached[0], self._etag, self._modified, from_cache=cached[1])

    def _revalidate(self) -> None:
        try:
            self._fetch(conditional=True)
        except StorageError as exc:
            self._checked = time.monotonic()  # do not hammer a server that is down: wait `refresh`
            if not self.stale or self.last_error != str(exc):
                warnings.warn(f"{exc}; keeping the copy fetched "
                              f"{self.fetched_at.isoformat(timespec='seconds') if self.fetched_at else '?'}",
                              stacklevel=4)
            self.stale = True
            self.last_error = str(exc)

    def _fetch(self, conditional: bool) -> None:
        headers = {"User-Agent": USER_AGENT, "Accept": ACCEPT, **self.headers}
        if self.token_env:
            token = os.environ.get(self.token_env)
            if not token:
                raise StorageError(f"{self.name}: the token variable ${self.token_env} is not set")
            headers["Authorization"] = f"Bearer {token}"
        if conditional:
            if self._etag:
                headers["If-None-Match"] = self._etag
            if self._modified:
                headers["If-Modified-Since"] = self._modified
        req = urllib.request.Request(self.url, headers=headers, method="GET")
        self.requests += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 (http/https only)
                raw = resp.read(self.max_bytes + 1)
                ctype = resp.headers.get_content_type() if resp.headers else ""
                charset = resp.headers.get_content_charset() if resp.headers else None
                etag = resp.headers.get("ETag")
                modified = resp.headers.get("Last-Modified")
        except urllib.error.HTTPError as exc:
            if exc.code == 304:
                self.not_modified += 1
                self._checked = time.monotonic()
                self.stale = False
                self.last_error = None
                return
            hint = ""
            if exc.code in (401, 403):
                hint = " (set `token_env:` for this graph in workspace.yaml if the server needs a token)"
            raise StorageError(f"{self.name}: cannot fetch the graph: HTTP {exc.code} {exc.reason}{hint}") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            text = getattr(reason, "strerror", None) or str(reason)
            if isinstance(reason, TimeoutError) or "timed out" in str(reason):
                text = f"no answer within {self.timeout:g} s"
            raise StorageError(f"{self.name}: cannot fetch the graph: {text}") from None
        except TimeoutError:
            raise StorageError(f"{self.name}: cannot fetch the graph: no answer within {self.timeout:g} s") from None
        except (OSError, ValueError) as exc:
            raise StorageError(f"{self.name}: cannot fetch the graph: {exc}") from None
        if len(raw) > self.max_bytes:
            raise StorageError(f"{self.name}: the graph is larger than {self.max_bytes} bytes")
        if ctype in _NOT_YAML:
            raise StorageError(f"{self.name}: the server sent {_NOT_YAML[ctype]}")
        try:
            text = raw.decode(charset or "utf-8")
        except (UnicodeDecodeError, LookupError):
            raise StorageError(f"{self.name}: the graph is not UTF-8 text") from None
        text = text.removeprefix("\ufeff")
        self._use(text, etag, modified)
        self._write_cache()

    def _use(self, text: str, etag: str | None, modified: str | None,
             from_cache: dict | None = None) -> None:
        self._text = text
        self._digest = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
        self._etag = etag
        self._modified = modified
        self._checked = time.monotonic()
        self.stale = False
        self.last_error = None
        when = (from_cache or {}).get("fetched_at")
        try:
            self.fetched_at = _dt.datetime.fromisoformat(when) if when else _dt.datetime.now(_dt.UTC)
        except ValueError:
            self.fetched_at = None

    # ------------------------------------------------------------------ the disk copy
    def _read_cache(self) -> tuple[str, dict] | None:
        if self._cache is None:
            return None
        try:
            text = self._cache.read_text(encoding="utf-8")
            meta = json.loads(self._cache.with_suffix(".json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(meta, dict) or meta.get("url") != self.name:
            return None
        return text, meta

    def _write_cache(self) -> None:
        if self._cache is None or self._text is None:
            return
        meta = {"url": self.name, "etag": self._etag, "last_modified": self._modified,
                "fetched_at": (self.fetched_at or _dt.datetime.now(_dt.UTC)).isoformat(timespec="seconds")}
        try:
            self._cache.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(self._cache, self._text)
            _atomic_write(self._cache.with_suffix(".json"), json.dumps(meta, indent=1))
        except OSError as exc:  # a cache we cannot write is not an error; the next run fetches again
            self.last_error = f"cannot write the cache {self._cache.parent}: {exc.strerror or exc}"


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
