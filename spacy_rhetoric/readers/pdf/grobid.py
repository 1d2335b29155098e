"""A PDF through a GROBID server (``--grobid URL``): the file is POSTed to
``URL/api/processFulltextDocument`` (multipart field ``input``, GROBID's
REST API) and the TEI it answers is read by the TEI reader. GROBID is
optional: without ``--grobid`` PDFs are read by ``readers.pdf``.

A server that cannot be reached, answers with an error status or with
something that is not TEI is a ReaderError naming the file and the URL.
"""
import tempfile
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from ..common import ReaderError
from ..fulltext import Paper

ENDPOINT = "api/processFulltextDocument"
TIMEOUT = 300  # seconds; GROBID takes a few seconds a paper


def grobid_tei(path: Path, url: str, *, timeout: float = TIMEOUT) -> bytes:
    """The TEI GROBID answers for the PDF at ``path``."""
    path = Path(path)
    boundary = uuid.uuid4().hex
    body = b"".join([
        f"--{boundary}\r\n".encode(),
        f'Content-Disposition: form-data; name="input"; filename="{path.name}"\r\n'.encode(),
        b"Content-Type: application/pdf\r\n\r\n",
        path.read_bytes(),
        f"\r\n--{boundary}\r\n".encode(),
        b'Content-Disposition: form-data; name="consolidateHeader"\r\n\r\n0',
        f"\r\n--{boundary}--\r\n".encode(),
    ])
    endpoint = url.rstrip("/") + "/" + ENDPOINT
    request = urllib.request.Request(endpoint, data=body, method="POST", headers={
        "Content-Type": f"multipart/form-data; boundary={boundary}", "Accept": "application/xml"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        raise ReaderError(path, None, f"GROBID at {endpoint} answered HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ReaderError(path, None, f"GROBID at {endpoint} not reachable: {reason}") from None


def parse_pdf_with_grobid(path: Path, url: str) -> Paper:
    from ..tei import parse_tei

    tei = grobid_tei(path, url)
    with tempfile.TemporaryDirectory(prefix="grobid-") as tmp:
        tei_path = Path(tmp) / (Path(path).stem + ".tei.xml")
        tei_path.write_bytes(tei)
        try:
            paper = parse_tei(tei_path)
        except ReaderError as exc:
            raise ReaderError(path, None, f"GROBID at {url} answered no usable TEI: {exc.reason}") from None
    return paper
