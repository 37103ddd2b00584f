"""The traces list of a project: filters over trace fields and audit results, full-text search,
keyset pagination."""
