#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")
    # No cyclic garbage collection during Django's start: see auditor/gcstart.py.
    from auditor.gcstart import off_for_start

    off_for_start()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
