"""Files the command line writes: checked before any work, written atomically, never clobbering an input.

Every command that writes a file goes through :func:`check_output` (before solving, so a
bad path costs nothing) and :func:`write_output` (after), so none can lose a user's file:

* ``--out ''`` is an error; ``--out -`` means standard output;
* an output that is one of the inputs is an error, found before any work;
* a missing directory, a directory given as the file (``out/`` too, existing or not), a
  regular file in the place of a directory (``notes.txt/plan.json``), a directory without
  write permission or a name too long for the file system is an error, found before any work;
* an error while writing names the user's file, never the temporary one;
* the file is written to a temporary file in the same directory, flushed, fsync'ed and
  renamed over the target, so a full disk or a Ctrl-C leaves either the old file or the
  complete new one, never a truncated one;
* ``replace=False`` writes only a *new* file: an existing one is left untouched (for
  plans that are not complete, e.g. after Ctrl-C);
* a device or a named pipe (``/dev/null``, ``/dev/stdout``, a FIFO) is written to directly,
  never replaced by a regular file (a rename would, run as root); a socket is refused;
* an input read from standard input that is the output file itself (``solve - --out f < f``)
  is found by identity (device and inode) and refused.

Examples
--------
>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> target = os.path.join(folder, "plan.json")
>>> check_output(target, inputs=[])
>>> write_output(target, '{"ok": true}\\n')
True
>>> open(target).read()
'{"ok": true}\\n'
>>> write_output(target, "partial", replace=False)  # an existing file is kept
False
>>> check_output(target, inputs=[target])
Traceback (most recent call last):
...
exactplace.core.errors.ParameterError: --out 'plan.json' is also an input; choose another file (it would be lost).
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from exactplace.core.errors import ParameterError

__all__ = ["STDIO", "check_output", "check_output_dir", "same_file", "write_output"]

#: The file name that means standard input (for inputs) or standard output (for ``--out``).
STDIO = "-"


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """True when both paths name the same existing file (links resolved), or the same path."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_output(path: str | None, inputs: Iterable[str | os.PathLike], flag: str = "--out") -> None:
    """Raise ParameterError when ``path`` cannot be written safely; None means no output.

    Called before any work: the empty name, an input file, a directory, a missing or
    read-only directory are all reported at once instead of after a long solve.
    """
    if path is None or path == STDIO:
        return
    if path == "":
        raise ParameterError(f"{flag} '' names no file; give a file name, or - for standard output.")
    shown = Path(path).name or path
    for source in inputs:
        if source != STDIO and same_file(path, source):
            raise ParameterError(f"{flag} {shown!r} is also an input; choose another file (it would be lost).")
        if source == STDIO and _is_stdin(path):
            raise ParameterError(f"{flag} {shown!r} is the file standard input reads; choose another file "
                                 "(it would be lost).")
    mode = _mode(path)
    if mode is not None and stat.S_ISSOCK(mode):
        raise ParameterError(f"{flag} {path!r} is a socket; give a file name.")
    if mode is not None and _written_directly(mode):
        return
    if os.path.isdir(path):
        raise ParameterError(f"{flag} {path!r} is a directory; give a file name inside it.")
    if os.path.basename(path) in ("", ".", ".."):  # "out/", "out/.": abspath would drop the ending
        raise ParameterError(f"{flag} {path!r} names a directory, not a file; give a file name.")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        blocker = _not_a_directory(folder)
        if blocker is not None:
            raise ParameterError(f"{flag} {path!r}: {blocker!r} is a file, not a directory.")
        raise ParameterError(f"{flag} {path!r}: the directory {folder!r} does not exist.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ParameterError(f"{flag} {path!r}: the directory {folder!r} is not writable.")
    if len(os.fsencode(Path(path).name)) > _name_max(folder):
        raise ParameterError(f"{flag} {path!r}: the file name is longer than the file system allows "
                             f"({_name_max(folder)} bytes).")


def check_output_dir(path: str, flag: str, *, parents: bool = False) -> None:
    """Raise ParameterError when the directory ``path`` cannot receive files: called before any work.

    ``path`` is a directory, or can be created in a writable directory (``parents``: with its
    missing parents, under the nearest one that exists). The empty name, a regular file (or a
    path under one), a missing parent and a read-only directory are refused, naming ``path``.
    """
    if path == "":
        raise ParameterError(f"{flag} '' names no directory; give one (. for this one).")
    if os.path.lexists(path) and not os.path.isdir(path):
        raise ParameterError(f"{flag} {path!r} is not a directory.")
    existing = os.path.abspath(path)
    if not os.path.isdir(existing):
        existing = os.path.dirname(existing)
        while parents and not os.path.lexists(existing) and existing != os.path.dirname(existing):
            existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        why = "is not a directory" if os.path.lexists(existing) else "does not exist"
        raise ParameterError(f"{flag} {path!r}: the directory {existing!r} {why}.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ParameterError(f"{flag} {path!r}: the directory {existing!r} is not writable.")


def write_output(path: str, text: str | bytes, *, replace: bool = True) -> bool:
    """Write ``text`` (or bytes: a picture) to ``path`` atomically (``-``: standard output); returns whether it was
    written.

    ``replace=False`` only creates a new file: when ``path`` exists it is left as it is and
    False is returned. Raises OSError (disk full, permissions) with the target untouched.
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    if path == STDIO:
        _write_stdout(data)
        return True
    mode = _mode(path)
    if mode is not None and _written_directly(mode):  # /dev/null, a FIFO: never renamed over
        try:
            with open(path, "wb") as stream:
                stream.write(data)
        except OSError as error:  # name the file: a write error alone does not (/dev/full: "No space left")
            raise OSError(error.errno, error.strerror, path) from None
        return True
    if not replace and os.path.lexists(path):
        return False
    folder = os.path.dirname(os.path.abspath(path))
    temporary = None
    try:
        # The temporary name is cut short so that a long (but valid) file name leaves room for it.
        handle, temporary = tempfile.mkstemp(prefix=f".{Path(path).name[:64]}.", suffix=".tmp", dir=folder)
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it private; give it a new file's usual mode
        os.replace(temporary, path)
    except BaseException as error:  # disk full, Ctrl-C...: the target is untouched, the temporary file removed
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
        if isinstance(error, OSError):  # name the user's file, never the temporary one
            raise OSError(error.errno, error.strerror or str(error), path) from None
        raise
    return True


def _not_a_directory(folder: str) -> str | None:
    """The nearest existing ancestor of ``folder`` (itself included) when it is not a directory (a regular
    file in the way, as in ``notes.txt/plan.json``), else None."""
    current = folder
    while not os.path.lexists(current):
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
    return None if os.path.isdir(current) else current


def _name_max(folder: str) -> int:
    """The longest file name (bytes) the file system of ``folder`` takes; 255 when it does not say."""
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return 255


def _mode(path: str) -> int | None:
    """The file mode of what ``path`` names (links followed), None when nothing is there."""
    try:
        return os.stat(path).st_mode
    except OSError:
        return None


def _written_directly(mode: int) -> bool:
    """A device or a named pipe: written to where it is, never replaced."""
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode)


def _is_stdin(path: str) -> bool:
    """True when standard input is the very file ``path`` names (same device and inode)."""
    try:
        given, existing = os.fstat(sys.stdin.fileno()), os.stat(path)
    except (OSError, ValueError, AttributeError):  # no stdin (closed, replaced), or no such file yet
        return False
    return stat.S_ISREG(given.st_mode) and (given.st_dev, given.st_ino) == (existing.st_dev, existing.st_ino)


def _write_stdout(data: bytes) -> None:
    """All of ``data`` to standard output, raising BrokenPipeError when the reader is gone.

    Written with ``os.write`` until every byte is out: through ``sys.stdout`` a large write to a
    pipe whose reader closed (``| head -1``) can end in a short write that nothing reports,
    and the command would exit 0 instead of 141 (as a Unix tool does).
    """
    sys.stdout.flush()
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (redirected to a buffer): it takes it whole
        sys.stdout.write(data.decode("utf-8"))
        sys.stdout.flush()
        return
    rest = memoryview(data)
    while rest:
        rest = rest[os.write(descriptor, rest):]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
