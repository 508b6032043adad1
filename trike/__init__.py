"""trike: a knowledge graph in one YAML file, guarded by an ontology, served to AI agents."""

from __future__ import annotations

from .db import TrikeDB
from .errors import (
    ConflictError,
    LoadError,
    NotFoundError,
    OntologyError,
    QueryError,
    StorageError,
    TrikeError,
)

__version__ = "0.1.0"

__all__ = [
    "TrikeDB",
    "TrikeError",
    "LoadError",
    "StorageError",
    "OntologyError",
    "ConflictError",
    "NotFoundError",
    "QueryError",
    "__version__",
]
