"""Audit runs: create a run, fan its traces out to workers in chunks, audit each trace with the
policies library, summarise; the project dashboard, the run page and the comparison of two runs."""
