"""A local HTTP server on 127.0.0.1 for the download tests: nothing they do reaches the internet."""

import contextlib
import http.server
import threading


@contextlib.contextmanager
def serving(handler, monkeypatch):
    """Serve ``handler`` (a ``BaseHTTPRequestHandler`` class) on a free port; yield the base URL,
    e.g. ``http://127.0.0.1:43567``. Proxies are bypassed for it."""
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True  # a handler still sending to a client that gave up does not hold shutdown
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
