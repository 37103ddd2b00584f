"""The trace page: the event timeline and, per audit run, the policies' decisions.

What the page shows is built here as plain data: events made readable (`events`), actor vs
guarded trajectories aligned step by step (`alignment`), and one panel per policy built from its
decision record (`panels`, a registry the view and the templates read). `views` only loads rows
and renders.

Pure functions outside `views`, no Django and no database. Everything must tolerate partial
input — a decision record written by an older policy version, a trace without labels — and say
what is missing rather than fail, since the page is where people look when something is odd.

Trace content is hostile. Nothing here produces markup: strings stay strings and Django's
autoescape makes them inert. Control characters (ANSI escapes above all) are made visible with
`text.visible`, so a terminal colour code reads as ``␛[31m`` instead of vanishing.
"""
