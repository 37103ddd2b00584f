"""Human annotation: queues, items, verdicts (issue 7). Filled in by the annotation work."""
