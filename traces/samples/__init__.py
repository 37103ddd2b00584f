"""Generators of realistic sample data (demo traces, test fixtures). Not importers: nothing here
reads a user's file; these write files for the importers to read."""
