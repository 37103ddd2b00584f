"""Tags and comments on traces: what a project's members note about a trace, shown on the trace
page and the traces list, filterable by tag, carried in exports and the API."""
