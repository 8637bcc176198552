"""PyTorch on demand: import it with a clear error when it is missing, move nested tensors, and run
CPU operations on one thread each. Shared by the torch importer and the replay.

torch is imported inside the functions: ``import exactplace`` never loads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["attribute", "move_to", "one_thread_per_op", "require_torch"]


def require_torch() -> Any:
    """Import torch, or raise :class:`~exactplace.core.errors.SolverUnavailableError` saying how to get it.

    >>> require_torch().__name__ in ("torch",)  # doctest: +SKIP
    True
    """
    try:
        import torch
    except ImportError:
        from exactplace.core.errors import SolverUnavailableError

        raise SolverUnavailableError(
            "Replay and from_torch need PyTorch: pip install 'exactplace[torch]'."
        ) from None
    return torch


def attribute(module: Any, qualified: str) -> Any:
    """The attribute an fx ``get_attr`` or ``call_module`` target names, dotted path included.

    ``getattr`` alone reads one level: a graph traced from a model whose forward reads
    ``self.transformer.wte.weight`` has the target ``"transformer.wte.weight"``.

    >>> from types import SimpleNamespace
    >>> attribute(SimpleNamespace(block=SimpleNamespace(lin="w")), "block.lin")
    'w'
    """
    value = module
    for part in qualified.split("."):
        value = getattr(value, part)
    return value


def move_to(value: Any, device: str) -> Any:
    """``value`` with every tensor in it (nested in tuples, lists and dicts) moved to ``device``."""
    torch = require_torch()
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, tuple):
        return tuple(move_to(v, device) for v in value)
    if isinstance(value, list):
        return [move_to(v, device) for v in value]
    if isinstance(value, dict):
        return {k: move_to(v, device) for k, v in value.items()}
    return value


@contextmanager
def one_thread_per_op() -> Iterator[None]:
    """Run torch CPU operations on one thread each, restoring the setting afterwards.

    The model's CPU device is one core, and a virtual device is one worker thread; torch's own
    intra-op threads would make every op wait for helper threads that a loaded machine wakes late.
    """
    torch = require_torch()
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
