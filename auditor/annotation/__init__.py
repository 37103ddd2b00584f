"""Human annotation (SPEC §5.5, §6 "Annotation"): queues of an audit run's results,
items claimed with a lease, verdicts (blind A/B for pairs), agreement, adjudication, and final
verdicts flowing back into the run's transitions. docs/annotation.md has the whole picture."""
