"""A tiny OAuth 2.1 / OpenID Connect identity provider for tests, served on loopback.

It publishes discovery metadata (`/.well-known/openid-configuration` and
`/.well-known/oauth-authorization-server`) and a JWKS (`/jwks.json`), holds RSA and EC signing keys,
mints access tokens (including deliberately broken ones), and rotates keys. It never issues tokens over
HTTP: tests mint them directly, as a real IdP would after a login.

Also here: `ServeProcess`, which runs `trike serve` in a subprocess on a free loopback port (the harness
of tests/test_serve*.py and benchmarks/serve.py).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class SigningKey:
    """A private key, its `kid`, its algorithm and its public JWK."""

    def __init__(self, kind: str, kid: str | None = None):
        self.kind = kind
        if kind == "RSA":
            self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            self.alg = "RS256"
        elif kind == "EC":
            self.private = ec.generate_private_key(ec.SECP256R1())
            self.alg = "ES256"
        else:
            raise ValueError(kind)
        self.kid = kid or f"{kind.lower()}-{uuid.uuid4().hex[:8]}"

    @property
    def public_jwk(self) -> dict[str, Any]:
        algo = jwt.algorithms.RSAAlgorithm if self.kind == "RSA" else jwt.algorithms.ECAlgorithm
        jwk = json.loads(algo.to_jwk(self.private.public_key()))
        jwk.update({"kid": self.kid, "use": "sig", "alg": self.alg})
        return jwk

    @property
    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


class TestIdP:
    """Start with `idp = TestIdP().start()`; stop with `idp.stop()` (or use it as a context manager)."""

    __test__ = False  # not a pytest test class

    def __init__(self, host: str = "127.0.0.1", path: str = ""):
        self.rsa = SigningKey("RSA", "rsa-1")
        self.ec = SigningKey("EC", "ec-1")
        self.published: list[SigningKey] = [self.rsa, self.ec]
        self.jwks_fetches = 0
        self.discovery_fetches = 0
        self._lock = threading.Lock()
        self._host = host
        self._path = path.rstrip("/")
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- server ----------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the IdP first"
        return f"http://{self._host}:{self._server.server_address[1]}"

    @property
    def issuer(self) -> str:
        return self.url + self._path

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "jwks_uri": self.url + "/jwks.json",
            "authorization_endpoint": self.issuer + "/authorize",
            "token_endpoint": self.issuer + "/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "id_token_signing_alg_values_supported": ["RS256", "ES256"],
            "subject_types_supported": ["public"],
            "scopes_supported": ["openid", "trike:read", "trike:write"],
        }

    def jwks(self) -> dict[str, Any]:
        with self._lock:
            return {"keys": [k.public_jwk for k in self.published]}

    def start(self) -> TestIdP:
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?")[0]
                if path == "/jwks.json":
                    with idp._lock:
                        idp.jwks_fetches += 1
                    body: dict[str, Any] | None = idp.jwks()
                elif path in (
                    "/.well-known/openid-configuration" + idp._path,
                    "/.well-known/oauth-authorization-server" + idp._path,
                    idp._path + "/.well-known/openid-configuration",
                ):
                    with idp._lock:
                        idp.discovery_fetches += 1
                    body = idp.metadata()
                else:
                    body = None
                data = json.dumps(body if body is not None else {"error": "not found"}).encode()
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self._server = ThreadingHTTPServer((self._host, 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> TestIdP:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- keys ------------------------------------------------------------------------------------

    def new_key(self, kind: str = "RSA") -> SigningKey:
        """A key the IdP holds but has not published yet."""
        return SigningKey(kind)

    def publish(self, key: SigningKey) -> None:
        with self._lock:
            self.published.append(key)

    def retire(self, key: SigningKey) -> None:
        with self._lock:
            self.published = [k for k in self.published if k.kid != key.kid]

    def rotate(self, kind: str = "RSA") -> SigningKey:
        """Publish a fresh key of `kind` and retire the current one of that kind; returns the new key."""
        new = SigningKey(kind)
        old = self.rsa if kind == "RSA" else self.ec
        with self._lock:
            self.published = [k for k in self.published if k.kid != old.kid] + [new]
        if kind == "RSA":
            self.rsa = new
        else:
            self.ec = new
        return new

    # -- tokens ----------------------------------------------------------------------------------

    def claims(self, audience: str | list[str], **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": "alice",
            "aud": audience,
            "iat": now,
            "nbf": now,
            "exp": now + 600,
            "scope": "trike:read trike:write",
            "client_id": "test-client",
            "jti": uuid.uuid4().hex,
        }
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def mint(self, audience: str | list[str], *, key: SigningKey | None = None,
             headers: dict[str, Any] | None = None, **claims: Any) -> str:
        """A token signed by `key` (default: the current RSA key). Pass a claim as None to omit it."""
        key = key or self.rsa
        hdr = {"kid": key.kid, "typ": "at+jwt"}
        hdr.update(headers or {})
        return jwt.encode(self.claims(audience, **claims), key.private, algorithm=key.alg, headers=hdr)

    def mint_unsigned(self, audience: str, **claims: Any) -> str:
        """`alg: none`: a token with no signature at all."""
        header = {"alg": "none", "typ": "JWT"}
        payload = self.claims(audience, **claims)
        return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(payload).encode())}."

    def mint_hs256_with_public_key(self, audience: str, key: SigningKey | None = None, **claims: Any) -> str:
        """The algorithm-confusion attack: HMAC-SHA256 keyed with the (public) PEM of an RSA key."""
        key = key or self.rsa
        header = {"alg": "HS256", "typ": "JWT", "kid": key.kid}
        signing_input = (
            f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(self.claims(audience, **claims)).encode())}"
        )
        signature = hmac.new(key.public_pem, signing_input.encode(), hashlib.sha256).digest()
        return f"{signing_input}.{_b64(signature)}"

    @staticmethod
    def tamper(token: str) -> str:
        """The same token with its payload changed (the signature no longer matches)."""
        header, payload, signature = token.split(".")
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        claims["sub"] = "mallory"
        return f"{header}.{_b64(json.dumps(claims).encode())}.{signature}"

    @staticmethod
    def tamper_signature(token: str) -> str:
        """The same token with one bit of its signature flipped."""
        header, payload, signature = token.split(".")
        raw = bytearray(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)))
        raw[len(raw) // 2] ^= 0x01
        return f"{header}.{payload}.{_b64(bytes(raw))}"


# --------------------------------------------------------------------------------------------------
# `trike serve` in a subprocess (the server under test, on a free loopback port)
# --------------------------------------------------------------------------------------------------

SERVE_MAIN = "import sys; from trike.cli import main; sys.exit(main())"


class ServeProcess:
    """`trike serve GRAPH ARGS...` on `--port 0`; `url` is read from its startup line."""

    __test__ = False

    def __init__(self, graph: str | os.PathLike, *args: str, env: dict[str, str] | None = None):
        self.graph = str(graph)
        self.args = list(args)
        self.env = env
        self.proc: subprocess.Popen[str] | None = None
        self.lines: list[str] = []
        self.url = ""

    def start(self, timeout: float = 60.0) -> ServeProcess:
        env = dict(os.environ)
        env.pop("TRIKE_TOKEN", None)
        env.update(self.env or {})
        cmd = [sys.executable, "-c", SERVE_MAIN, "serve", self.graph, "--port", "0", *self.args]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, env=env)
        ready = threading.Event()

        def pump() -> None:
            assert self.proc is not None and self.proc.stderr is not None
            for line in self.proc.stderr:
                self.lines.append(line)
                m = re.search(r"listening on (http://\S+?)\s", line)
                if m and not self.url:
                    self.url = m.group(1)
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        ready.wait(timeout)
        if not self.url:
            self.stop()
            raise RuntimeError("trike serve did not start:\n" + "".join(self.lines))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:  # the lifespan (MCP session managers) runs before serving
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("trike serve did not answer /healthz:\n" + "".join(self.lines))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def __enter__(self) -> ServeProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_serve(graph: str | os.PathLike, *args: str, timeout: float = 30.0,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`trike serve` expected to exit at once (a refused configuration)."""
    full_env = dict(os.environ)
    full_env.pop("TRIKE_TOKEN", None)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", SERVE_MAIN, "serve", str(graph), *args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL, env=full_env)
