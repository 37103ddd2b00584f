"""Builders of v1 traces shared by the tests and bench/: `events` (small hand-made traces for
the policies: an `Events` appender, the account tools, TwinCheck's lock/unlock, pushback,
elicited claims), `v1` (trace headers and JSONL upload bodies), `synthetic` (the deterministic
mix of the four kinds the benches time)."""
