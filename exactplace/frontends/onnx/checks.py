"""The checks an ONNX model must pass at the boundary, so that one that is not valid ONNX is refused.

onnx's checker (``onnx.checker.check_model``) and strict shape inference with type checks
(``infer_shapes(check_type=True, strict_mode=True, data_prop=True)``, the checks of
``full_check=True``) must pass, and ``Conv``/``ConvTranspose`` channels must agree with their
weights (onnx does not compare them). Both see a copy of the model in topological order, its
nodes named by position (:func:`probe_copy`); the model's own order is kept for the workload. An
opset or IR version newer than the installed onnx knows is refused. External data must name a
file in the model's folder (no absolute path, no ``..``, no link out of it) long enough for the
tensor's declared shape; its bytes are never read except by ``profile=True``. Each refusal is one
line naming the node (its name, else ``f"{op_type}_{position}"``) and the tensor or field at fault.
"""

from __future__ import annotations

import heapq
import os
import re
from collections.abc import Mapping
from pathlib import Path, PureWindowsPath
from typing import Any

from exactplace.core.errors import InputFormatError
from exactplace.frontends.onnx.model import BITS, EXTERNAL, outer_names, prod, subgraphs
from exactplace.frontends.onnx.shapes import Types

__all__ = ["check_acyclic", "check_external", "check_strings", "check_versions", "error_reason",
           "operand_mismatch", "probe_copy", "type_check"]

_TENSOR, _TENSORS = 4, 9  # AttributeProto.TENSOR, AttributeProto.TENSORS
#: Name given to main-graph node ``i`` in the copies onnx's checker and shape inference see, so that their
#: messages identify the node exactly; messages are rewritten to the model's own names before they are shown.
_PROBE = "__exactplace_node_{}__"
_PROBED = re.compile(_PROBE.format(r"(\d+)"))
#: onnx's prefix naming the node an inference error is about: "(op_type:Conv, node name: c): ".
_AT_NODE = re.compile(r"\(op_type:[^,()]*(?:, node name: [^()]*)?\):\s*")


def check_strings(graph: Any) -> None:
    """Refuse names that are not UTF-8 (protobuf hands them over as bytes), naming the node and field."""
    for position, node in enumerate(graph.node):
        for field in ("name", "op_type", "domain", "input", "output"):
            value = getattr(node, field)
            if any(isinstance(v, bytes) for v in (value if field in ("input", "output") else [value])):
                shown = repr(node.name) if isinstance(node.name, str) and node.name else f"at position {position}"
                raise InputFormatError(f"ONNX node {shown}: field {field} is not UTF-8 text.")
    for field in ("input", "output", "value_info", "initializer"):
        for value in getattr(graph, field):
            if isinstance(value.name, bytes):
                raise InputFormatError(f"ONNX graph {field} {value.name!r}: its name is not UTF-8 text.")


def check_versions(onnx: Any, model: Any, source: str) -> None:
    """Refuse a model without an IR version (shape inference reads nothing of it) or newer than the installed
    onnx knows (its operators would be read by older rules)."""
    known = onnx.defs.onnx_opset_version()
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version > known:
            raise InputFormatError(f"{source} uses ONNX opset {opset.version}, newer than onnx {onnx.__version__} "
                                   f"knows (at most {known}); upgrade onnx: pip install -U onnx.")
    if model.ir_version < 1:
        raise InputFormatError(f"{source} has no ONNX IR version (its ir_version is unset); every ONNX model "
                               "states one: re-export it, or set model.ir_version.")
    if model.ir_version > onnx.IR_VERSION:
        raise InputFormatError(f"{source} has ONNX IR version {model.ir_version}, newer than onnx "
                               f"{onnx.__version__} knows (at most {onnx.IR_VERSION}); upgrade onnx: "
                               "pip install -U onnx.")


def error_reason(error: BaseException, names: list[str]) -> tuple[int | None, str]:
    """``(node, reason)`` from an error of onnx's checker or shape inference on a :func:`probe_copy` copy: the
    position of the main-graph node it is about (None when it names none) and its first line, in the model's
    own node names, without onnx's location prefix when the node is known."""
    text = str(error)
    found = _PROBED.search(text)
    text = _PROBED.sub(lambda m: names[int(m.group(1))] if int(m.group(1)) < len(names) else m.group(0), text)
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("==>")]
    line = (lines[0] if lines else type(error).__name__).replace("[ShapeInferenceError] Inference error(s): ", "")
    if found is not None and int(found.group(1)) < len(names):
        return int(found.group(1)), _AT_NODE.sub("", line, count=1).strip()
    return None, line


def _tensors(graph: Any) -> list[Any]:
    """Every TensorProto of ``graph`` and its bodies: initializers and tensor attributes (``Constant``)."""
    found = list(graph.initializer)
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == _TENSOR:
                found.append(attribute.t)
            elif attribute.type == _TENSORS:
                found.extend(attribute.tensors)
        for body in subgraphs(node):
            found.extend(_tensors(body))
    return found


def check_external(model: Any, path: str | os.PathLike | None, source: str) -> None:
    """Refuse external data that cannot be the tensor's: no file named, a path that is absolute or leaves the
    model's folder, and, when the model's ``path`` is known, a file that is missing or too short for the
    tensor's declared shape. The data itself is never read (sizes come from the declared shapes)."""
    folder = Path(os.fspath(path)).parent if path is not None else None
    for tensor in _tensors(model.graph):
        if tensor.data_location != EXTERNAL:
            continue
        info = {entry.key: entry.value for entry in tensor.external_data}
        location = info.get("location", "")
        where = f"{source}: tensor {tensor.name!r} keeps its data in an external file"
        if not location:
            raise InputFormatError(f"{where} but names none (no 'location' entry).")
        if os.path.isabs(location) or PureWindowsPath(location).is_absolute() or ".." in Path(location).parts:
            raise InputFormatError(f"{where}, {location!r}, outside the model's folder; ONNX external data must "
                                   "lie in the model's folder.")
        try:
            offset, length = int(info.get("offset", 0)), int(info["length"]) if "length" in info else None
        except ValueError:
            raise InputFormatError(f"{where}, {location!r}, whose offset {info.get('offset', '0')!r} or length "
                                   f"{info.get('length', '')!r} is not a whole number of bytes.") from None
        if offset < 0 or (length is not None and length < 0):
            raise InputFormatError(f"{where}, {location!r}, at a negative offset or length.")
        if folder is None:
            continue
        file = folder / location
        try:
            inside = file.resolve().is_relative_to(folder.resolve())
            size = file.stat().st_size if file.is_file() else None
        except OSError as error:
            raise InputFormatError(f"{where}, {location!r}, which cannot be read: {error.strerror or error}.") \
                from None
        if not inside:
            raise InputFormatError(f"{where}, {location!r}, which links outside the model's folder "
                                   f"{str(folder)!r}.")
        if size is None:
            raise InputFormatError(f"{where}, {location!r}, which is not a file in the model's folder "
                                   f"{str(folder)!r}.")
        needed = (prod(list(tensor.dims)) * BITS[tensor.data_type] + 7) // 8 if tensor.data_type in BITS else 0
        if length is not None and length < needed:
            raise InputFormatError(f"{where}, {location!r}, of length {length} bytes; its declared shape "
                                   f"{list(tensor.dims)} needs {needed}.")
        if offset + max(needed, length or 0) > size:
            raise InputFormatError(f"{where}, {location!r}, of {size} bytes: too short for the "
                                   f"{max(needed, length or 0)} bytes its shape {list(tensor.dims)} needs from offset "
                                   f"{offset}.")


def _topological(nodes: list[Any]) -> list[int]:
    """Positions of ``nodes`` in a topological order, the model's own order where it allows (the model's
    order itself when the graph has a cycle: that is refused later, naming the cycle)."""
    producer: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for tensor in node.output:
            producer.setdefault(tensor, i)
    needs: list[set[int]] = []
    for i, node in enumerate(nodes):
        read = set(node.input) | {t for body in subgraphs(node) for t in outer_names(body)}
        needs.append({producer[t] for t in read if t in producer and producer[t] != i})
    users: dict[int, list[int]] = {}
    for i, before in enumerate(needs):
        for j in before:
            users.setdefault(j, []).append(i)
    waiting = [len(before) for before in needs]
    ready = [i for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for j in users.get(i, []):
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, j)
    return order if len(order) == len(nodes) else list(range(len(nodes)))


def probe_copy(onnx: Any, model: Any) -> Any:
    """A copy of ``model`` for onnx's checker and shape inference: nodes in topological order (both require
    it; ONNX models are usually so already) and named by position (:data:`_PROBE`)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    ordered = []
    for i in _topological(list(model.graph.node)):
        node = onnx.NodeProto()
        node.CopyFrom(model.graph.node[i])
        node.name = _PROBE.format(i)
        ordered.append(node)
    del copy.graph.node[:]
    copy.graph.node.extend(ordered)
    return copy


def _checkable(onnx: Any, model: Any, types: Types) -> Any:
    """A copy of ``model`` for onnx's checker: external initializers become graph inputs of their type and
    shape (the checker looks for external files from the working folder, and :func:`check_external` has
    checked them already), and graph outputs without a shape get the one shape inference gave them (the
    checker requires one; exporters often leave it out)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    for value in graph.output:
        if value.type.WhichOneof("value") in (None, "tensor_type") and not value.type.tensor_type.HasField("shape"):
            try:
                elem, dims = types.dtype_shape(value.name, "")
            except InputFormatError:
                continue
            value.type.CopyFrom(onnx.helper.make_tensor_type_proto(elem, dims))
    external = [t for t in graph.initializer if t.data_location == EXTERNAL]
    if external:
        declared = {v.name for v in graph.input}
        kept = [t for t in graph.initializer if t.data_location != EXTERNAL]
        del graph.initializer[:]
        graph.initializer.extend(kept)
        graph.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                           for t in external if t.name not in declared)
    return copy


def type_check(onnx: Any, error: BaseException | None, probe: Any, nodes: list[Any], names: list[str],
                types: Types, source: str) -> None:
    """Refuse a model that strict shape inference (with type checks) or onnx's checker refuses, in one line
    naming the node, the tensors it reads and writes (with the shapes inference gave them) and onnx's reason.

    ``error`` is what strict inference raised (None if nothing); the checker reads ``probe``, the
    :func:`probe_copy` copy of the model.
    """
    if error is None:
        try:
            onnx.checker.check_model(_checkable(onnx, probe, types))
        except Exception as failure:
            error = failure
    if error is None:
        return
    position, reason = error_reason(error, names)
    if position is None:
        raise InputFormatError(f"{source} does not pass onnx's model check: {reason}")
    node = nodes[position]

    def shown(tensors: list[str]) -> str:
        parts = []
        for tensor in (t for t in tensors if t):
            try:
                parts.append(f"{tensor!r} {types.shape(tensor, '')}")
            except InputFormatError:
                parts.append(f"{tensor!r} (shape unknown)")
        return ", ".join(parts) or "nothing"

    raise InputFormatError(f"{source}: ONNX node {names[position]!r} ({node.op_type}) does not type-check: "
                           f"{reason.rstrip('.')} (it reads {shown(list(node.input))}; writes "
                           f"{shown(list(node.output))}).")


def operand_mismatch(op_type: str, tensors: list[str], shapes: list[list[int] | None],
                      attributes: Mapping[str, Any]) -> str:
    """Why the operand shapes of a ``Conv`` or ``ConvTranspose`` do not fit each other (onnx's shape
    inference does not compare channels), or "" when they do or the operator is another."""
    if op_type not in ("Conv", "ConvTranspose") or len(shapes) < 2 or shapes[0] is None or shapes[1] is None:
        return ""
    x, w = shapes[0], shapes[1]
    if len(x) < 2 or len(w) < 2 or len(x) != len(w):
        return f"input {tensors[0]!r} {x} and weight {tensors[1]!r} {w} must have the same rank, at least 3"
    group = attributes.get("group", 1)
    if not isinstance(group, int) or group < 1:
        return f"group is {group!r}, not a positive integer"
    if op_type == "Conv":
        if x[1] != w[1] * group:
            return (f"input {tensors[0]!r} {x} has {x[1]} channels, weight {tensors[1]!r} {w} reads "
                    f"{w[1]} x {group} (group)")
        outputs = w[0]
        if w[0] % group:
            return f"weight {tensors[1]!r} {w} has {w[0]} output channels, not a multiple of group {group}"
    else:
        if x[1] != w[0]:
            return f"input {tensors[0]!r} {x} has {x[1]} channels, weight {tensors[1]!r} {w} reads {w[0]}"
        outputs = w[1] * group
    if len(shapes) > 2 and shapes[2] is not None and shapes[2] != [outputs]:
        return f"bias {tensors[2]!r} has shape {shapes[2]}, the operator writes {outputs} channels"
    return ""


def check_acyclic(pairs: list[tuple[int, int]], names: list[str], source: str) -> None:
    import networkx as nx

    digraph = nx.DiGraph(pairs)
    try:
        cycle = [u for u, _ in nx.find_cycle(digraph)]
    except nx.NetworkXNoCycle:
        return
    shown = " -> ".join(repr(names[u]) for u in [*cycle, cycle[0]])
    raise InputFormatError(f"{source}: the ONNX graph has a cycle: {shown}.")
