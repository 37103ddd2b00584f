"""What auditor and traces both need and neither owns: the lifecycle of background jobs (an
abstract model, claim, heartbeat, enqueue-or-defer, finding stale work), one retrying Celery task
decorator, and rendering a page or its htmx fragment. Imports neither app (checked by
import-linter, see pyproject.toml)."""
