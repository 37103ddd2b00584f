"""Dataset exports (SPEC §6 "Export", §9): immutable, versioned snapshots of a project's
traces, decisions and annotations in JSONL, CSV or Parquet. `services` creates, builds and
resumes them; `snapshot` reads what a snapshot holds in bounded memory; `writers` has one module
per format; `selectors` reads exports back scoped to the caller. docs/exports.md has the layout.
"""
