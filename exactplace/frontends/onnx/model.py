"""The ONNX protobuf basics the importer shares: loading onnx, parsing a model, walking its subgraphs.

``onnx`` is imported by :func:`load_onnx`, inside the functions that need it, so that
``import exactplace`` never loads it; a missing ``onnx`` raises :class:`SolverUnavailableError`.
"""

from __future__ import annotations

import math
from typing import Any

from exactplace.core.errors import InputFormatError, SolverUnavailableError

__all__ = ["BITS", "EXTERNAL", "first_line", "load_onnx", "outer_names", "parse_model", "prod", "subgraphs"]

#: Bits per element of each ONNX element type (TensorProto.DataType); STRING (8) has no fixed size.
BITS = {1: 32, 2: 8, 3: 8, 4: 16, 5: 16, 6: 32, 7: 64, 9: 8, 10: 16, 11: 64, 12: 32, 13: 64, 14: 64, 15: 128,
        16: 16, 17: 8, 18: 8, 19: 8, 20: 8, 21: 4, 22: 4, 23: 4, 24: 8, 25: 2, 26: 2, 27: 6, 28: 6}

_GRAPH, _GRAPHS = 5, 10  # AttributeProto.GRAPH, AttributeProto.GRAPHS
EXTERNAL = 1  # TensorProto.EXTERNAL


def load_onnx() -> Any:
    """The ``onnx`` module, or :class:`SolverUnavailableError` when it is not installed."""
    try:
        import onnx
    except ImportError:
        raise SolverUnavailableError("Reading ONNX models needs the onnx package: pip install 'exactplace[onnx]'.") \
            from None
    return onnx


def prod(values: list[int]) -> int:
    """The product of ``values``, an exact integer (1 for none)."""
    return math.prod(values)


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message (its type's name when it has none)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def parse_model(data: bytes, source: str = "The ONNX model", *, also: str = "") -> Any:
    """The ``onnx.ModelProto`` in ``data``, or :class:`InputFormatError` saying why it is none.

    ``source`` names the input in the message ("Workload file 'm.onnx'"); ``also`` is put before "not a
    valid ONNX protobuf" (what else the bytes are not, when the format was guessed).
    """
    onnx = load_onnx()
    try:
        model = onnx.ModelProto.FromString(bytes(data))
    except Exception as error:  # DecodeError, or RuntimeWarning-as-error from the C++ parser
        raise InputFormatError(f"{source} is {also}not a valid ONNX protobuf ({first_line(error)}).") from None
    if not model.HasField("graph"):
        raise InputFormatError(f"{source} is {also}not a valid ONNX protobuf (it has no graph).")
    if not model.graph.node:
        raise InputFormatError(f"{source}: the ONNX graph has no nodes.")
    return model


def subgraphs(node: Any) -> list[Any]:
    """The bodies (``GraphProto``) a node holds in its attributes: ``If``, ``Loop``, ``Scan``."""
    found = []
    for attribute in node.attribute:
        if attribute.type == _GRAPH:
            found.append(attribute.g)
        elif attribute.type == _GRAPHS:
            found.extend(attribute.graphs)
    return found


def outer_names(graph: Any) -> set[str]:
    """Tensors a (sub)graph's nodes read but the graph does not define: they come from outside it."""
    local = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    local |= {o for node in graph.node for o in node.output}
    used: set[str] = set()
    for node in graph.node:
        used.update(node.input)
        for body in subgraphs(node):
            used |= outer_names(body)
    return used - local - {""}
