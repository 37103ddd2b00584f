"""Dataset exports: immutable snapshots with a manifest (issue 7). Filled in by the export work."""
