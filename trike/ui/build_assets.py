"""Rebuild the vendored browser assets of `trike ui` from pinned npm packages.

Run by a maintainer (never at run time): ``python -m trike.ui.build_assets``. It needs ``node`` and ``npm``
and the npm registry. It installs the exact versions locked in ``trike/ui/npm/package-lock.json`` into a
temporary folder (``npm ci --ignore-scripts``), then writes into ``trike/ui/assets/``:

* ``force-graph.min.js``   the standalone UMD build shipped by the ``force-graph`` package (global ``ForceGraph``);
* ``oxigraph.js``          Oxigraph's ``web.js`` bundled by esbuild into an IIFE (global ``oxigraph``);
* ``oxigraph_bg.wasm.gz``  Oxigraph's WebAssembly module, gzip-compressed (deterministic, mtime 0);
* ``versions.json``        package versions, licences and sha256 of every asset;
* ``LICENSES.md``          versions, licences and the licence texts of everything that ends up in a page.

The generated page inlines these files, so ``trike ui`` works offline with no npm at run time.
To upgrade: edit ``trike/ui/npm/package.json``, run ``npm install --package-lock-only`` in that folder,
then run this script and commit ``trike/ui/npm`` and ``trike/ui/assets``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
NPM_DIR = HERE / "npm"
ASSETS = HERE / "assets"
BUILD_ONLY = ("esbuild", "@esbuild/")  # tools used at build time, not shipped in the page
LICENSE_FILES = ("LICENSE", "LICENSE.md", "LICENSE.txt", "LICENCE", "license", "LICENSE-MIT", "COPYING")
MIT_TEXT = """Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
associated documentation files (the "Software"), to deal in the Software without restriction, including
without limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do so, subject to the following
conditions:

The above copyright notice and this permission notice shall be included in all copies or substantial portions
of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED
TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL
THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF
CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER
DEALINGS IN THE SOFTWARE."""
# packages whose npm tarball carries no licence file: the notice of their repository (used under MIT)
NOTICES = {
    "oxigraph": "Oxigraph is dual-licensed MIT OR Apache-2.0; it is used here under the MIT licence "
    "(LICENSE-MIT of the Oxigraph repository):\n\nCopyright (c) 2018 RUDF developers\n\n" + MIT_TEXT,
}


def _run(cmd: list[str], cwd: Path) -> None:
    print("+", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, cwd=cwd, check=True)


def _packages(node_modules: Path) -> list[dict]:
    found = []
    for pj in sorted(node_modules.glob("*/package.json")) + sorted(node_modules.glob("@*/*/package.json")):
        meta = json.loads(pj.read_text(encoding="utf-8"))
        name = meta.get("name", pj.parent.name)
        if name.startswith(BUILD_ONLY):
            continue
        text = ""
        for candidate in LICENSE_FILES:
            f = pj.parent / candidate
            if f.is_file():
                text = f.read_text(encoding="utf-8", errors="replace").strip()
                break
        text = text or NOTICES.get(name, "")
        found.append({
            "name": name,
            "version": meta.get("version", "?"),
            "license": meta.get("license") or "see text",
            "homepage": meta.get("homepage") or "",
            "license_text": text,
        })
    return found


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build(out: Path = ASSETS) -> None:
    """Install the locked npm packages in a temporary folder and write the assets into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="trike-ui-build-") as tmp:
        work = Path(tmp)
        for name in ("package.json", "package-lock.json", "entry-oxigraph.js"):
            shutil.copy2(NPM_DIR / name, work / name)
        _run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], work)
        nm = work / "node_modules"
        _run([str(nm / ".bin" / "esbuild"), "entry-oxigraph.js", "--bundle", "--format=iife",
              "--global-name=oxigraph", "--minify", "--target=es2020", "--legal-comments=inline",
              "--log-level=error", "--outfile=oxigraph.js"], work)
        shutil.copyfile(work / "oxigraph.js", out / "oxigraph.js")
        shutil.copyfile(nm / "force-graph" / "dist" / "force-graph.min.js", out / "force-graph.min.js")
        wasm = (nm / "oxigraph" / "web_bg.wasm").read_bytes()
        (out / "oxigraph_bg.wasm.gz").write_bytes(gzip.compress(wasm, compresslevel=9, mtime=0))

        packages = _packages(nm)
        lock = json.loads((work / "package-lock.json").read_text(encoding="utf-8"))
        direct = lock["packages"][""]["dependencies"]
        esbuild_version = json.loads((nm / "esbuild" / "package.json").read_text())["version"]

    assets = ["force-graph.min.js", "oxigraph.js", "oxigraph_bg.wasm.gz"]
    versions = {
        "direct": {name: next(p["version"] for p in packages if p["name"] == name) for name in direct},
        "bundler": {"esbuild": esbuild_version},
        "packages": {p["name"]: {"version": p["version"], "license": p["license"]} for p in packages},
        "sha256": {a: _sha256(out / a) for a in assets},
    }
    (out / "versions.json").write_text(json.dumps(versions, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    lines = [
        "# Third-party code inlined into pages generated by `trike ui`",
        "",
        "Built by `python -m trike.ui.build_assets` from the npm packages locked in `trike/ui/npm/package-lock.json`",
        f"(bundler: esbuild {esbuild_version}, build time only, not shipped).",
        "",
        "| asset | from package | version | licence |",
        "|---|---|---|---|",
        f"| `force-graph.min.js` | force-graph (standalone build, bundles the packages below) "
        f"| {versions['direct']['force-graph']} | MIT |",
        f"| `oxigraph.js`, `oxigraph_bg.wasm.gz` | oxigraph | {versions['direct']['oxigraph']} | MIT OR Apache-2.0 |",
        "",
        "## Every package in the build (name, version, licence)",
        "",
        "| package | version | licence |",
        "|---|---|---|",
    ]
    lines += [f"| {p['name']} | {p['version']} | {p['license']} |" for p in packages]
    lines += ["", "## Licence texts", ""]
    for p in packages:
        lines += [f"### {p['name']} {p['version']} ({p['license']})", ""]
        if p["license_text"]:
            lines += ["```", p["license_text"], "```", ""]
        else:
            lines += [f"No licence file in the package; declared licence: {p['license']}. {p['homepage']}", ""]
    (out / "LICENSES.md").write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {', '.join(assets)}, versions.json, LICENSES.md to {out}", file=sys.stderr)


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else ASSETS)
