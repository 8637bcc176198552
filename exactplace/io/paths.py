"""Output paths: checked before any work, written whole or not at all, never clobbering an input.

The checks raise ParameterError naming the user's path and the option (``flag``) that gave it:
an output that is one of the inputs, a directory given as the file, a regular file in the place
of a directory, a missing or read-only directory, a name too long for the file system.
:func:`check_output` and :func:`check_output_dir` are the command line's (``--out``: its folder
must exist; ``-`` is standard output); :func:`check_target` and :func:`check_folder` are for
files whose folders the run makes (reports, baselines). :func:`write_file` writes a temporary file
beside the target, fsync'ed and renamed over it, so a full disk or Ctrl-C leaves the old file or
the new one whole; a device or a named pipe (``/dev/null``, a FIFO) is written where it is. An
error while writing names the user's file, never the temporary one.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from exactplace.core.errors import ParameterError

__all__ = ["NAME_MAX", "STDIO", "check_folder", "check_output", "check_output_dir", "check_target",
           "nearest_existing", "same_file", "write_file", "write_output"]

#: The file name that means standard input (for inputs) or standard output (for ``--out``).
STDIO = "-"
#: The longest file name most file systems take, in bytes.
NAME_MAX = 255


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """True when both paths name the same existing file (links resolved), or the same path."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def nearest_existing(path: str | os.PathLike) -> str:
    """``path`` made absolute, or its nearest ancestor that exists (a file, a directory or a link).

    >>> nearest_existing("/no/such/folder/here") == "/"
    True
    """
    current = os.path.abspath(path)
    while not os.path.lexists(current) and current != os.path.dirname(current):
        current = os.path.dirname(current)
    return current


def check_output(path: str | None, inputs: Iterable[str | os.PathLike], flag: str = "--out") -> None:
    """Raise ParameterError when ``path`` cannot be written safely; None means no output.

    Called before any work: the empty name, an input file, a directory, a missing or
    read-only directory are all reported at once instead of after a long solve.

    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "plan.json")
    >>> check_output(target, inputs=[])
    >>> check_output(target, inputs=[target])
    Traceback (most recent call last):
    ...
    exactplace.core.errors.ParameterError: --out 'plan.json' is also an input; choose another file (it would be lost).
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
        blocker = nearest_existing(folder)
        if os.path.lexists(blocker) and not os.path.isdir(blocker):
            raise ParameterError(f"{flag} {path!r}: {blocker!r} is a file, not a directory.")
        raise ParameterError(f"{flag} {path!r}: the directory {folder!r} does not exist.")
    _check_writable(folder, f"{flag} {path!r}")
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
        if parents:
            existing = nearest_existing(existing)
    if not os.path.isdir(existing):
        why = "is not a directory" if os.path.lexists(existing) else "does not exist"
        raise ParameterError(f"{flag} {path!r}: the directory {existing!r} {why}.")
    _check_writable(existing, f"{flag} {path!r}")


def check_target(path: Path, flag: str, inputs: Iterable[Path]) -> None:
    """Before any work: the file ``path`` can be written (its folder exists or can be made, and is writable; it
    is not a directory, nor a read-only file, nor longer than :data:`NAME_MAX` bytes) and is none of the
    ``inputs`` (it would be lost)."""
    for source in inputs:
        if same_file(path, source):
            also = "" if str(source) == str(path) else f" ({str(source)!r})"
            raise ParameterError(f"{flag}: {str(path)!r} is also an input{also}; it would be lost.")
    if os.path.isdir(path):
        raise ParameterError(f"{flag}: {str(path)!r} is a directory; it would be written as a file.")
    if os.path.lexists(path) and not os.access(path, os.W_OK):
        raise ParameterError(f"{flag}: {str(path)!r} is not writable.")
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(folder):
        _check_writable(folder, f"{flag}: {str(path)!r}")
    else:
        check_folder(Path(folder), flag, shown=str(path))
    if len(os.fsencode(path.name)) > NAME_MAX:
        raise ParameterError(f"{flag}: {str(path)!r}: the file name is longer than {NAME_MAX} bytes.")


def check_folder(directory: Path, flag: str, shown: str | None = None) -> None:
    """Before any work: ``directory`` is one, or can be made (with its parents) under a writable directory.

    ``shown``: the path the user gave, named in the error (default ``directory``).
    """
    shown = str(directory) if shown is None else shown
    if os.path.lexists(directory) and not os.path.isdir(directory):
        where = "" if shown == str(directory) else f": {str(directory)!r}"
        raise ParameterError(f"{flag} {shown!r}{where} is not a directory.")
    existing = nearest_existing(directory)
    if not os.path.isdir(existing):
        raise ParameterError(f"{flag} {shown!r}: {existing!r} is not a directory, so nothing can be made under it.")
    _check_writable(existing, f"{flag} {shown!r}")


def write_output(path: str, text: str | bytes, *, replace: bool = True) -> bool:
    """Write ``text`` (or bytes: a picture) to ``path`` atomically (``-``: standard output); returns whether it was
    written.

    ``replace=False`` only creates a new file: when ``path`` exists it is left as it is and
    False is returned. Raises OSError (disk full, permissions) with the target untouched.

    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "plan.json")
    >>> write_output(target, '{"ok": true}\\n')
    True
    >>> open(target).read()
    '{"ok": true}\\n'
    >>> write_output(target, "partial", replace=False)  # an existing file is kept
    False
    """
    if path == STDIO:
        _write_stdout(text.encode("utf-8") if isinstance(text, str) else text)
        return True
    return write_file(path, text, replace=replace)


def write_file(path: str | os.PathLike, data: str | bytes, *, replace: bool = True) -> bool:
    """Write ``data`` (text as UTF-8) to the file ``path``, whole or not at all; returns whether it was written.

    A temporary file beside ``path`` is written, flushed, fsync'ed and renamed over it; a device or a
    named pipe is written where it is, never replaced by a regular file. ``replace=False`` leaves an
    existing file as it is (and returns False). An OSError names ``path``, never the temporary file.
    """
    content = data.encode("utf-8") if isinstance(data, str) else data
    mode = _mode(path)
    if mode is not None and _written_directly(mode):  # /dev/null, a FIFO: never renamed over
        try:
            with open(path, "wb") as stream:
                stream.write(content)
        except OSError as error:  # name the file: a write error alone does not (/dev/full: "No space left")
            raise OSError(error.errno, error.strerror, str(path)) from None
        return True
    if not replace and os.path.lexists(path):
        return False
    folder = os.path.dirname(os.path.abspath(path))
    temporary = None
    try:
        # The temporary name is cut short so that a long (but valid) file name leaves room for it.
        handle, temporary = tempfile.mkstemp(prefix=f".{Path(path).name[:64]}.", suffix=".tmp", dir=folder)
        with os.fdopen(handle, "wb") as stream:
            stream.write(content)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it private; give it a new file's usual mode
        os.replace(temporary, path)
    except BaseException as error:  # disk full, Ctrl-C...: the target is untouched, the temporary file removed
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
        if isinstance(error, OSError):  # name the user's file, never the temporary one
            raise OSError(error.errno, error.strerror or str(error), str(path)) from None
        raise
    return True


def _check_writable(folder: str, what: str) -> None:
    """ParameterError (``what``: the option and the path given) when files cannot be made in ``folder``."""
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ParameterError(f"{what}: the directory {folder!r} is not writable.")


def _name_max(folder: str) -> int:
    """The longest file name (bytes) the file system of ``folder`` takes; :data:`NAME_MAX` when it does not say."""
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return NAME_MAX


def _mode(path: str | os.PathLike) -> int | None:
    """The file mode of what ``path`` names (links followed), None when nothing is there."""
    try:
        return os.stat(path).st_mode
    except OSError:
        return None


def _written_directly(mode: int) -> bool:
    """Neither a regular file nor a directory (a device, a named pipe): written to where it is, never replaced."""
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


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
