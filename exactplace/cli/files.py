"""Files the command line writes: checked before any work, written atomically, never clobbering an input.

Every command that writes a file goes through :func:`check_output` (before solving, so a bad path
costs nothing) and :func:`write_output` (after), so none can lose a user's file: ``--out ''`` is an
error, ``--out -`` means standard output, an output that is one of the inputs (or the file standard
input reads) is refused, and ``replace=False`` writes only a *new* file (for plans that are not
complete, e.g. after Ctrl-C). The checks and the atomic writer are the library's
(:mod:`exactplace.io.paths`), shared with the nightly job's reports.
"""

from exactplace.io.paths import STDIO, check_output, check_output_dir, same_file, write_output

__all__ = ["STDIO", "check_output", "check_output_dir", "same_file", "write_output"]
