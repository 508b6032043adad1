"""`trike ui`: the graph as one self-contained HTML page that people open, share and review.

>>> from trike import TrikeDB
>>> from trike.ui import to_html, page_hash
>>> page = to_html(TrikeDB("graph.yaml"), "docs/index.html")   # or db.to_html("docs/index.html")
>>> page_hash(page) == TrikeDB("graph.yaml").content_hash()     # False once the YAML changed
True
"""

from __future__ import annotations

from .html import build_payload, page_hash, page_is_current, render, to_html

__all__ = ["to_html", "page_hash", "page_is_current", "render", "build_payload"]
