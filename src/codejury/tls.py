"""One TLS context per process for every HTTP client codejury builds.

An HTTP client builds its own ``ssl.SSLContext`` when it is created, reading the whole CA store again: 24 ms of
CPU on this project's 2-core machine, for each model's SDK client, forge transport, routing document and template
fetch of a review, and again for every review a service process runs. The context is the same each time (the
CA store httpx2 would have read, ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` included), and an ``SSLContext`` may be
shared by clients on any thread or event loop, so it is built once, when the first client needs it.
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The context httpx2 would build for a client with ``verify=True`` (read once per process)."""
    import httpx2

    return httpx2.create_ssl_context()
