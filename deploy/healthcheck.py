"""The coordinator image's health check: exit 0 when the coordinator in this container answers
``/healthz`` on its port (8400, or the one given), over https or, behind a reverse proxy that
ends TLS (``--insecure-http``), plain http; else exit 1, saying why on stderr.

The standard library only: the image has no curl. Run as ``python3 healthcheck.py [PORT]``.
"""

import http.client
import json
import ssl
import sys

TIMEOUT = 3.0


def answers(port: int) -> str | None:
    """``None`` when the coordinator on ``port`` says it is ok, else what went wrong."""
    # A probe of this container's own loopback: the certificate is the coordinator's own,
    # self-signed, and members check its pin; here only whether it answers matters.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    problems = []
    for connection in (
        http.client.HTTPSConnection("127.0.0.1", port, timeout=TIMEOUT, context=context),
        http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT),
    ):
        try:
            connection.request("GET", "/healthz")
            answer = connection.getresponse()
            body = json.loads(answer.read()) if answer.status == 200 else None
            if isinstance(body, dict) and body.get("status") == "ok":
                return None
            problems.append(f"HTTP {answer.status}: {body!r}"[:200])
        except (OSError, ValueError, http.client.HTTPException) as exc:
            problems.append(str(exc) or type(exc).__name__)
        finally:
            connection.close()
    return "; ".join(problems)


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8400
    problem = answers(port)
    if problem is not None:
        sys.exit(f"no answer from /healthz on port {port}: {problem}")
