"""A run's model backend in the app: the shared call cache and per-run usage in the database
(`models`, `store`), a run's model settings from the form / CLI (`settings`), and the
`policies.llm.run.LLMRun` a worker builds from them (`backend`)."""
