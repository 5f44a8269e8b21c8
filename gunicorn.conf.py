"""gunicorn's settings for production: ASGI workers serving the whole site in one process each.

    gunicorn        # reads this file from the working directory (the repository root)

Each worker runs ``claimgraph_site.asgi:application``: the console, the JSON
API and MCP at /mcp/ (Streamable HTTP, stateless, so any worker answers any
call). gunicorn's own settings still apply on top: ``--bind`` (or ``PORT``;
default 127.0.0.1:8000), and ``WEB_CONCURRENCY`` or ``--workers``.
"""

import multiprocessing
import os

wsgi_app = "claimgraph_site.asgi:application"
worker_class = "uvicorn_worker.UvicornWorker"
# Under ASGI Django runs its synchronous views (every view here) one at a time
# in each worker's thread for sync code, so requests are served in parallel
# by workers: two per core, as gunicorn's documentation suggests, plus one.
workers = int(os.environ.get("WEB_CONCURRENCY", 2 * multiprocessing.cpu_count() + 1))
keepalive = 30
# Time for a worker to finish what it is answering after SIGTERM.
graceful_timeout = 30
