"""A PDF through a GROBID server (``--grobid URL``): the file is POSTed to
``URL/api/processFulltextDocument`` (multipart field ``input``, GROBID's
REST API) and the TEI it answers is read by the TEI reader. GROBID is
optional: without ``--grobid`` PDFs are read by ``readers.pdf``.

Every request has one deadline, ``timeout`` seconds (``--grobid-timeout``)
for connecting, sending and the whole answer: a watchdog shuts the socket
at the deadline, so a server that accepts and never answers, or answers a
byte at a time, costs at most that long (a socket timeout alone bounds each
read, not the answer). An answer is read up to :data:`MAX_TEI_BYTES`. A
server that refuses the connection, cannot be reached, runs past the
deadline, answers with an error status, with too much, or with something
that is not TEI is a ReaderError naming the file, the URL and what happened.
"""
import http.client
import socket
import tempfile
import threading
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Optional

from ..common import ReaderError
from ..fulltext import Paper

ENDPOINT = "api/processFulltextDocument"
TIMEOUT = 300.0  # seconds for one paper, answer included; GROBID takes a few seconds a paper
MAX_TEI_BYTES = 20 * 1024 * 1024  # a long paper's TEI is under 2 MB
_CHUNK = 1 << 16


class _Deadline:
    """Shuts the connection's socket when the deadline passes (a blocked
    connect, send or read then returns at once)."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float):
        self.conn = conn
        self.end = time.monotonic() + seconds
        self.expired = False
        self.timer = threading.Timer(seconds, self._expire)
        self.timer.daemon = True

    def _expire(self) -> None:
        self.expired = True
        sock = self.conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def left(self) -> float:
        return max(0.001, self.end - time.monotonic())

    def __enter__(self) -> "_Deadline":
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.timer.cancel()
        self.conn.close()


def _body(path: Path, boundary: str) -> bytes:
    return b"".join([
        f"--{boundary}\r\n".encode(),
        # a fixed file name: the input's may be long, hold quotes or line breaks, or not be UTF-8
        b'Content-Disposition: form-data; name="input"; filename="paper.pdf"\r\n',
        b"Content-Type: application/pdf\r\n\r\n",
        path.read_bytes(),
        f"\r\n--{boundary}\r\n".encode(),
        b'Content-Disposition: form-data; name="consolidateHeader"\r\n\r\n0',
        f"\r\n--{boundary}--\r\n".encode(),
    ])


def _connection(endpoint: str, timeout: float) -> http.client.HTTPConnection:
    parts = urllib.parse.urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("is not an http(s) URL")
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    return cls(parts.hostname, parts.port, timeout=timeout)


def _read_answer(response: http.client.HTTPResponse, deadline: _Deadline, max_bytes: int) -> Optional[bytes]:
    """The body, or None when it is longer than ``max_bytes``."""
    length = response.getheader("Content-Length")
    if length and length.isdigit() and int(length) > max_bytes:
        return None
    chunks, size = [], 0
    while True:
        chunk = response.read1(_CHUNK)
        if not chunk or deadline.expired:
            break
        size += len(chunk)
        if size > max_bytes:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def grobid_tei(path: Path, url: str, *, timeout: float = TIMEOUT, max_bytes: int = MAX_TEI_BYTES) -> bytes:
    """The TEI GROBID answers for the PDF at ``path``, within ``timeout``
    seconds in all (see the module docstring)."""
    path = Path(path)
    endpoint = url.rstrip("/") + "/" + ENDPOINT
    if not timeout or timeout <= 0:
        raise ReaderError(path, None, f"the GROBID timeout must be more than 0 seconds, got {timeout}")
    boundary = uuid.uuid4().hex
    body = _body(path, boundary)
    try:
        conn = _connection(endpoint, timeout)
        parts = urllib.parse.urlsplit(endpoint)
        # no colon before what happened: ReadStats counts skips by the text before the first one
        where = f"GROBID (host {parts.hostname}, port {parts.port or (443 if parts.scheme == 'https' else 80)})"
    except ValueError as exc:
        raise ReaderError(path, None, f"GROBID URL {url!r} {exc}") from None
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    with _Deadline(conn, timeout) as deadline:
        try:
            conn.request("POST", target, body=body, headers={
                "Content-Type": f"multipart/form-data; boundary={boundary}", "Accept": "application/xml"})
            response = conn.getresponse()
            if response.status >= 400:
                raise ReaderError(path, None, f"{where} answered HTTP {response.status} {response.reason} "
                                              f"to POST {parts.path}")
            tei = _read_answer(response, deadline, max_bytes)
        except ConnectionRefusedError:
            raise ReaderError(path, None, f"{where} refused the connection (is the server running?)") from None
        except (OSError, http.client.HTTPException) as exc:
            if deadline.expired or isinstance(exc, (socket.timeout, TimeoutError)):
                raise ReaderError(path, None, f"{where} timed out after {timeout:g} s (--grobid-timeout)") from None
            raise ReaderError(path, None, f"{where} not reachable: {exc or type(exc).__name__}") from None
        if deadline.expired:
            raise ReaderError(path, None, f"{where} timed out after {timeout:g} s (--grobid-timeout)")
        if tei is None:
            raise ReaderError(path, None, f"{where} answered more than {max_bytes / 2 ** 20:g} MB (no paper's TEI is "
                                          "that large)")
    return tei


def parse_grobid_tei(path: Path, tei: bytes, url: str) -> Paper:
    """The paper of GROBID's TEI answer for the PDF at ``path`` (its id the
    PDF's; the TEI goes through a temporary file whose name does not depend
    on the PDF's, which may be as long as a file name can be)."""
    from ..fulltext import doc_id_from_path
    from ..tei import parse_tei

    with tempfile.TemporaryDirectory(prefix="grobid-") as tmp:
        tei_path = Path(tmp) / "paper.tei.xml"
        tei_path.write_bytes(tei)
        try:
            paper = parse_tei(tei_path)
        except ReaderError as exc:
            raise ReaderError(path, None, f"GROBID answered no usable TEI ({exc.reason})") from None
    paper.doc_id = doc_id_from_path(path)
    return paper


def parse_pdf_with_grobid(path: Path, url: str, *, timeout: float = TIMEOUT) -> Paper:
    return parse_grobid_tei(path, grobid_tei(path, url, timeout=timeout), url)
