"""Starter ontologies for `trike init --template NAME` (the files in the repo's `ontologies/` folder,
shipped inside the package)."""

from __future__ import annotations

from pathlib import Path

from ..errors import TrikeError

_HERE = Path(__file__).resolve().parent


def _folders() -> list[Path]:
    return [_HERE, _HERE.parent.parent / "ontologies"]


def list_templates() -> dict[str, str]:
    """name -> first comment line (the description)."""
    out: dict[str, str] = {}
    for folder in _folders():
        if not folder.is_dir():
            continue
        for f in sorted(folder.glob("*.yaml")):
            if f.stem in out:
                continue
            desc = ""
            for line in f.read_text(encoding="utf-8").splitlines():
                if line.startswith("#"):
                    desc = line.lstrip("# ").strip()
                    break
            out[f.stem] = desc
    return out


def template_path(name: str) -> Path:
    for folder in _folders():
        p = folder / f"{name}.yaml"
        if p.is_file():
            return p
    known = ", ".join(list_templates()) or "(none)"
    raise TrikeError(f"unknown template {name!r}; available: {known}")
