"""Errors raised by trike. Every message names the problem (and the file/line where there is one)."""

from __future__ import annotations


class TrikeError(Exception):
    """Base class of every error trike raises on purpose."""


class LoadError(TrikeError):
    """A graph file could not be read or parsed (names the file, line and problem)."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
        self.path = path
        self.line = line
        self.problem = message


class StorageError(TrikeError):
    """The storage backend failed (unreadable file, permission, ...)."""


class OntologyError(TrikeError):
    """A write was refused by the ontology gate."""

    def __init__(self, message: str, allowed: list[str] | None = None):
        super().__init__(message)
        self.allowed = list(allowed or [])


class ConflictError(OntologyError):
    """A second value for a functional predicate."""

    def __init__(self, message: str, existing: object = None):
        super().__init__(message)
        self.existing = existing


class NotFoundError(TrikeError, KeyError):
    """A node (or other named thing) does not exist."""

    def __str__(self) -> str:  # KeyError quotes its message; we do not want that
        return str(self.args[0]) if self.args else "not found"


class QueryError(TrikeError, ValueError):
    """A bad SPARQL query or triple pattern."""
