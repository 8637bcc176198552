"""The ``exactplace`` command line (a stable contract for scripts)."""
