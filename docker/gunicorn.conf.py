"""gunicorn settings of the web tier (docker/entrypoint.sh; tests/site/test_web_server.py
runs the same file). Each value can be overridden by the environment variable named.

Slow clients: with sync workers one client trickling an upload at 1 byte/s holds a whole
worker, and a handful of them take the login page down. gthread workers serve each
connection on a thread of a pool, and an idle keep-alive connection waits in the poller, not on a
thread; in docker/compose.yml nginx sits in front and buffers whole request bodies before a
worker sees them, so a slow upload costs nginx a buffer, not a thread here.
"""

import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
worker_class = "gthread"
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
threads = int(os.environ.get("GUNICORN_THREADS", "8"))
# Connections held open per worker (threads serve them; keep-alive ones wait in the poller).
worker_connections = int(os.environ.get("GUNICORN_WORKER_CONNECTIONS", "200"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "30"))
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "5"))
# Request line and headers: bounded, so a client cannot make a worker hold megabytes of headers.
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190
accesslog = "-"
# Only the proxy in front may say a request came over HTTPS (X-Forwarded-Proto). Never "*" with
# the port reachable by clients: any client could then claim HTTPS. docker/compose.yml publishes
# nginx only and names its network here.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
