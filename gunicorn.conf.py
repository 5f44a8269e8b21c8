"""gunicorn's settings for production: ASGI workers serving the whole site in one process each.

    gunicorn        # reads this file from the working directory (the repository root)

Each worker runs ``claimgraph_site.asgi:application``: the console, the JSON
API and MCP at /mcp/ (Streamable HTTP, stateless, so any worker answers any
call). gunicorn's own settings still apply on top: ``--bind`` (or ``PORT``;
default 127.0.0.1:8000), and ``WEB_CONCURRENCY`` or ``--workers``.
"""

import multiprocessing
import os

from claimgraph_site.lib.http_protocol import keepalive_seconds

wsgi_app = "claimgraph_site.asgi:application"
# uvicorn's worker with a deadline on each request's headers
# (CLAIMGRAPH_HEADER_TIMEOUT_SECONDS, default 20 s): claimgraph_site/lib/http_protocol.py.
worker_class = "claimgraph_site.lib.http_protocol.Worker"
# Under ASGI Django runs each request's synchronous view in a thread of that
# request's own (a ThreadSensitiveContext per request; MCP's calls do the same,
# api/mcp/http.py), so one worker serves many requests at once and a request
# waiting on a lock holds up no other. Python runs one thread at a time per
# process, though, so CPU work is spread over workers: two per core, as
# gunicorn's documentation suggests, plus one.
workers = int(os.environ.get("WEB_CONCURRENCY", 2 * multiprocessing.cpu_count() + 1))
# An idle keep-alive connection is closed after this many seconds.
keepalive = keepalive_seconds()
# Time for a worker to finish what it is answering after SIGTERM.
graceful_timeout = 30
