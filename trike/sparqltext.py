"""A small SPARQL lexer: the keywords of a query or update, found without being fooled by strings,
IRIs, comments, prefixed names or variables. Used to refuse federated `SERVICE` (which would make the
engine fetch arbitrary URLs) and, in the MCP and HTTP layers, UPDATE on read-only endpoints."""

from __future__ import annotations

import re

from .errors import QueryError

# A small SPARQL lexer: enough to find the keywords of a query without being fooled by strings,
# IRIs, comments, prefixed names or variables. Everything it skips (strings, IRIs, comments) is
# skipped by a SPARQL parser too, so a SERVICE keyword cannot hide from it.
_PN_CHARS_BASE = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c-\u200d" \
                 "\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff"
_PN_CHARS_U = _PN_CHARS_BASE + "_"
_PN_CHARS = _PN_CHARS_U + "\\-0-9\u00b7\u0300-\u036f\u203f-\u2040"
_PLX = r"(?:%[0-9A-Fa-f]{2}|\\[_~.\-!$&'()*+,;=/?#@%])"
_PN_PREFIX = f"[{_PN_CHARS_BASE}](?:[{_PN_CHARS}.]*[{_PN_CHARS}])?"
_PN_LOCAL = (f"(?:[{_PN_CHARS_U}:0-9]|{_PLX})"
             f"(?:(?:[{_PN_CHARS}.:]|{_PLX})*(?:[{_PN_CHARS}:]|{_PLX}))?")
_TOKEN_RE = (
    r"""
    (?P<ws>\s+)
  | (?P<comment>\#[^\n\r]*)
  | (?P<string>'''(?:[^'\\]|\\.|'(?!''))*(?:'''|\Z)
             |\"\"\"(?:[^"\\]|\\.|"(?!""))*(?:\"\"\"|\Z)
             |'(?:[^'\\\n\r]|\\.)*(?:'|\Z|(?=[\n\r]))
             |"(?:[^"\\\n\r]|\\.)*(?:"|\Z|(?=[\n\r])))
  | (?P<iri><(?:[^<>"{}|^`\\\x00-\x20]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*>)
  | (?P<var>[?$][""" + _PN_CHARS_U + r"""0-9][""" + _PN_CHARS_U + r"""0-9\u00b7\u0300-\u036f\u203f-\u2040]*)
  | (?P<bnode>_:[""" + _PN_CHARS_U + r"""0-9](?:[""" + _PN_CHARS + r""".]*[""" + _PN_CHARS + r"""])?)
  | (?P<pname>(?:""" + _PN_PREFIX + r""")?:(?:""" + _PN_LOCAL + r""")?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<other>.)
    """
)
_token: re.Pattern[str] | None = None

_QUERY_FORMS = {"SELECT", "CONSTRUCT", "ASK", "DESCRIBE"}
_UPDATE_WORDS = {"INSERT", "DELETE", "LOAD", "CLEAR", "CREATE", "DROP", "COPY", "MOVE", "ADD"}


def sparql_words(text: str) -> list[str]:
    """The bare words (keywords, function names) of a SPARQL text, upper-cased, in order."""
    global _token
    if _token is None:  # compiled on first use: keeps `import trike.mcp_server` cheap
        _token = re.compile(_TOKEN_RE, re.VERBOSE | re.DOTALL)
    words: list[str] = []
    for m in _token.finditer(text):
        if m.lastgroup == "word":
            words.append(m.group().upper())
    return words


_UCHAR = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")


def decode_uchar(m: re.Match[str]) -> str:
    code = int(m.group(1) or m.group(2), 16)
    return chr(code) if code < 0x110000 and not 0xD800 <= code < 0xE000 else m.group(0)



def keywords(text: str) -> list[str]:
    """The keywords of `text`, also read with \\uXXXX escapes decoded (SPARQL allows them anywhere)."""
    words = sparql_words(text)
    decoded = _UCHAR.sub(decode_uchar, text)
    if decoded != text:
        words = words + sparql_words(decoded)
    return words


def refuse_service(text: str) -> None:
    """Raise QueryError when the query uses SERVICE (a federated query fetching another endpoint)."""
    if "SERVICE" in keywords(text):
        raise QueryError(
            "SERVICE (federated query) is refused: trike only queries its own graph and never fetches "
            "other endpoints. Remove the SERVICE clause."
        )
