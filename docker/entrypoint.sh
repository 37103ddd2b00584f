#!/bin/sh
# Container entrypoint: `web` migrates then serves, `worker` waits for the migrations then runs
# Celery; anything else is run as given (e.g. `python manage.py createsuperuser`).
set -eu

case "${1:-web}" in
  web)
    # Only the web service migrates, so two processes never race on the same migration.
    python manage.py migrate --noinput
    # gthread workers, timeouts and the trusted proxy addresses: docker/gunicorn.conf.py.
    exec gunicorn auditor.wsgi:application -c /app/docker/gunicorn.conf.py
    ;;
  worker)
    # A task that ran against an unmigrated database would fail; wait for web's migrate.
    until python manage.py migrate --check >/dev/null 2>&1; do
      echo "worker: waiting for database migrations" >&2
      sleep 3
    done
    # WORKER_QUEUES: `sandbox` for the service that executes code candidates (compose.yml).
    exec celery -A auditor worker -Q "${WORKER_QUEUES:-ingest,audit,export}" -l info \
      --concurrency "${WORKER_CONCURRENCY:-2}"
    ;;
  *)
    exec "$@"
    ;;
esac
