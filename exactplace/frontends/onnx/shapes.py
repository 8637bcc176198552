"""Static shapes for the ONNX importer: every tensor a node reads or writes gets an element type and a shape.

``onnx.shape_inference.infer_shapes`` (with data propagation) runs once the graph inputs'
symbolic or unknown dimensions are fixed (:func:`fix_input_dims`) and small tensors computed from
constants alone, the shape arithmetic exporters emit, are evaluated ahead
(:func:`fold_small_constants`). :class:`Types` then answers each tensor's type and shape, and
refuses, naming the node and the tensor, a missing or symbolic shape, an unknown element type,
``STRING``, or a sequence or map. Sizes are computed from the declared shapes, never allocated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exactplace.core.errors import InputFormatError
from exactplace.frontends.onnx.model import BITS, EXTERNAL, prod, subgraphs

__all__ = ["Types", "fix_input_dims", "fold_small_constants"]

_STRING = 8
#: Largest tensor (elements) computed ahead of shape inference: shape arithmetic is a few integers.
_FOLD_LIMIT = 1024
_RANDOM = ("Random", "Bernoulli", "Multinomial")  # never computed ahead: each run draws anew
#: Most elements one tensor may declare. Sizes are computed arithmetically, never allocated, but FLOPs and
#: bytes must stay finite floats: products of a few such tensors stay far below float's 1.8e308.
_MAX_ELEMENTS = 2**128


class Types:
    """Element type and shape of every tensor the inferred graph knows, with errors naming the node.

    ``why`` is called for the reason shape inference left a tensor without a shape (or returns "").
    """

    def __init__(self, graph: Any, why: Any) -> None:
        self.info: dict[str, tuple[str, Any]] = {}
        self.why = why
        for value in [*graph.input, *graph.value_info, *graph.output]:
            kind = value.type.WhichOneof("value")
            self.info[value.name] = (kind or "none", value.type.tensor_type if kind == "tensor_type" else None)
        for tensor in graph.initializer:
            self.info[tensor.name] = ("initializer", tensor)

    def _missing(self, what: str, detail: str = "") -> InputFormatError:
        reason = self.why()
        return InputFormatError(f"{what} after shape inference{detail}" + (f": {reason}" if reason else "."))

    def dtype_shape(self, name: str, where: str) -> tuple[int, list[int]]:
        """``(element type, dims)`` of tensor ``name``; ``where`` names it in errors ("ONNX node 'a' (Add): input")."""
        if name not in self.info:
            raise self._missing(f"{where} {name!r} has no type or shape")
        kind, value = self.info[name]
        if kind == "initializer":
            dims = list(value.dims)
            if any(d < 0 for d in dims):
                raise InputFormatError(f"{where} {name!r} (an initializer) has a negative dimension: {dims}.")
            return self._sized(value.data_type, name, where), self._bounded(dims, name, where)
        if kind != "tensor_type":
            shown = {"sequence_type": "a sequence", "map_type": "a map", "optional_type": "an optional",
                     "sparse_tensor_type": "a sparse tensor"}.get(kind, "of no type")
            raise InputFormatError(f"{where} {name!r} is {shown}, not a dense tensor; only tensors are read.")
        if not value.HasField("shape"):
            raise self._missing(f"{where} {name!r} has no shape")
        dims = []
        for axis, dim in enumerate(value.shape.dim):
            if dim.WhichOneof("value") != "dim_value":
                shown = repr(dim.dim_param) if dim.dim_param else "unknown"
                raise self._missing(f"{where} {name!r} has no static shape", f" (dimension {axis} is {shown})")
            if dim.dim_value < 0:
                raise InputFormatError(f"{where} {name!r} has a negative dimension: {dim.dim_value}.")
            dims.append(int(dim.dim_value))
        return self._sized(value.elem_type, name, where), self._bounded(dims, name, where)

    @staticmethod
    def _bounded(dims: list[int], name: str, where: str) -> list[int]:
        """``dims``, or InputFormatError when they declare more than :data:`_MAX_ELEMENTS` elements (a size
        no machine holds, whose FLOPs and bytes would overflow a float)."""
        if prod(dims) > _MAX_ELEMENTS:
            raise InputFormatError(f"{where} {name!r} declares shape {dims}: more than 2**128 elements, a size "
                                   "no device holds.")
        return dims

    @staticmethod
    def _sized(elem: int, name: str, where: str) -> int:
        if elem == _STRING:
            raise InputFormatError(f"{where} {name!r} has element type STRING, which has no fixed size.")
        if elem not in BITS:
            raise InputFormatError(f"{where} {name!r} has unknown element type {elem}.")
        return elem

    def shape(self, name: str, where: str) -> list[int]:
        return self.dtype_shape(name, where)[1]

    def nbytes(self, name: str, where: str) -> int:
        elem, dims = self.dtype_shape(name, where)
        return (prod(dims) * BITS[elem] + 7) // 8


def fix_input_dims(model: Any, dims: Mapping[str, int]) -> None:
    """Give every symbolic or unknown dimension of a graph input a value (``dims``, else 1), in place."""
    weights = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        if value.name in weights or value.type.WhichOneof("value") != "tensor_type":
            continue
        tensor = value.type.tensor_type
        if not tensor.HasField("shape"):
            raise InputFormatError(f"ONNX graph input {value.name!r} has no shape; give it one in the model.")
        for dim in tensor.shape.dim:
            if dim.WhichOneof("value") != "dim_value":
                size = dims.get(dim.dim_param, 1) if dim.dim_param else 1
                dim.Clear()
                dim.dim_value = size


def fold_small_constants(onnx: Any, model: Any) -> Any:
    """A copy of ``model`` for shape inference only, where every node that computes small tensors (at most
    :data:`_FOLD_LIMIT` elements each) from small constants alone is evaluated (``onnx.reference``) and
    replaced by initializers holding its outputs: shape arithmetic on constants (``Mod``, ``Div``, ``Cast``
    of a few integers) that shape inference does not propagate then yields static shapes downstream.
    Weights are never computed; a node that cannot be evaluated is left as it is."""
    import numpy as np
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator

    values: dict[str, Any] = {}
    for tensor in model.graph.initializer:
        if prod(list(tensor.dims)) <= _FOLD_LIMIT and tensor.data_location != EXTERNAL:
            try:
                values[tensor.name] = numpy_helper.to_array(tensor)
            except Exception:
                continue
    folded: list[int] = []
    tried: set[int] = set()
    progress = True
    while progress:
        progress = False
        for i, node in enumerate(model.graph.node):
            read = [t for t in node.input if t]
            if i in tried or subgraphs(node) or node.op_type.startswith(_RANDOM) or not all(t in values for t in read):
                continue
            tried.add(i)
            outputs = [t for t in node.output if t]
            graph = onnx.helper.make_graph([node], "fold", [], [onnx.ValueInfoProto(name=t) for t in outputs],
                                           [numpy_helper.from_array(np.asarray(values[t]), t) for t in read])
            tiny = onnx.helper.make_model(graph, opset_imports=model.opset_import, ir_version=model.ir_version)
            if not _small_outputs(onnx, tiny, node.op_type):
                continue  # never allocate what a constant shape declares (a ConstantOfShape of [10**12, 10**12])
            try:
                results = ReferenceEvaluator(tiny).run(None, {})
            except Exception:
                continue
            if not all(isinstance(r, np.ndarray) and r.size <= _FOLD_LIMIT for r in results):
                continue
            values.update(zip(outputs, results))
            folded.append(i)
            progress = True
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    if folded:
        gone = set(folded)
        kept = [n for i, n in enumerate(model.graph.node) if i not in gone]
        del copy.graph.node[:]
        copy.graph.node.extend(kept)
        for i in folded:
            for tensor in model.graph.node[i].output:
                if tensor:
                    copy.graph.initializer.append(numpy_helper.from_array(np.asarray(values[tensor]), tensor))
    return copy


#: Operators whose output size shape inference cannot know from constants, yet which never write more
#: elements than a small multiple of what they read: computed ahead even without an inferred shape.
_DATA_BOUNDED = frozenset({"NonZero", "Unique", "Compress", "TopK"})


def _small_outputs(onnx: Any, tiny: Any, op_type: str) -> bool:
    """Whether every output of the one-node model ``tiny`` has a static shape of at most :data:`_FOLD_LIMIT`
    elements by shape inference (or the operator is in :data:`_DATA_BOUNDED`): what may be computed ahead."""
    try:
        shaped = onnx.shape_inference.infer_shapes(tiny, data_prop=True)
    except Exception:  # onnx refuses the node: it is not computed ahead, and the type check reports it
        return False
    for value in shaped.graph.output:
        tensor = value.type.tensor_type if value.type.WhichOneof("value") == "tensor_type" else None
        dims = list(tensor.shape.dim) if tensor is not None and tensor.HasField("shape") else None
        if dims is None or any(d.WhichOneof("value") != "dim_value" for d in dims):
            if op_type not in _DATA_BOUNDED:
                return False
        elif prod([d.dim_value for d in dims]) > _FOLD_LIMIT:
            return False
    return True
