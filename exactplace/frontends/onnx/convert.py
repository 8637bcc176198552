"""The ONNX importer's conversion: an ONNX model to the dnn-partitioning dictionary.

:func:`onnx_to_dict` checks its parameters and the model, infers every tensor's static shape,
and maps nodes, tensors and weights to workload nodes, edges, memory, synchronisation and times
(its docstring states each mapping choice).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from exactplace.core.errors import InputFormatError, check_param
from exactplace.frontends.onnx.checks import (
    check_acyclic,
    check_external,
    check_strings,
    check_versions,
    error_reason,
    operand_mismatch,
    probe_copy,
    type_check,
)
from exactplace.frontends.onnx.flops import node_flops
from exactplace.frontends.onnx.model import load_onnx, outer_names, parse_model, subgraphs
from exactplace.frontends.onnx.profile import profile_node_times
from exactplace.frontends.onnx.shapes import Types, fix_input_dims, fold_small_constants

__all__ = ["ACCELERATOR_RATE", "CPU_RATE", "onnx_to_dict"]

#: Default accelerator rate, FLOP/s (10 TFLOP/s).
ACCELERATOR_RATE = 1e13
#: Default CPU rate, FLOP/s (100 GFLOP/s).
CPU_RATE = 1e11
#: Largest dimension a ``dims`` value may give: ONNX dimensions are int64.
_MAX_DIM = 2**63 - 1


def onnx_to_dict(
    data: bytes | Any, *, source: str = "The ONNX model", path: str | os.PathLike | None = None,
    bandwidth: float = math.inf, accelerators: int = 4, memory: float = math.inf, cpus: int = 0,
    accelerator_rate: float = ACCELERATOR_RATE, cpu_rate: float = CPU_RATE, dims: Mapping[str, int] | None = None,
    profile: bool = False, runs: int = 3,
) -> dict[str, Any]:
    """Convert an ONNX model (bytes or a ``ModelProto``) to the dnn-partitioning dictionary.

    Parameters
    ----------
    data : bytes or onnx.ModelProto
        The model.
    source : str
        Names the model in error messages ("Workload file 'm.onnx'").
    path : str or os.PathLike, optional
        The model's file: external data is checked beside it, and ``profile=True`` reads it.
    bandwidth : float, default inf
        Bytes per second of a transfer (edge costs and parameter synchronisation); inf: free.
    accelerators, memory, cpus : int, float, int
        The cluster: ``accelerators=4``, ``memory=inf``, ``cpus=0`` unless given, as for PipeDream profiles.
    accelerator_rate, cpu_rate : float
        FLOP/s of the FLOP model (defaults :data:`ACCELERATOR_RATE`, 10 TFLOP/s, sustained FP32 of a
        data-centre GPU, and :data:`CPU_RATE`, 100 GFLOP/s, a vectorised CPU socket); set both to your hardware.
    dims : mapping of str to int, optional
        Values of the graph inputs' named dimensions (``{"batch": 8}``); every other symbolic or unknown
        one is 1 (batch size 1, the inference default).
    profile : bool, default False
        Measure each node's time with onnxruntime instead of the FLOP model.
    runs : int, default 3
        Timed runs of ``profile=True``.

    Notes
    -----
    The mapping, each choice deliberate:

    * Nodes: every ONNX node of the main graph becomes one node, in the model's order (ids 0, 1, ...), named
      by its ONNX node name (``f"{op_type}_{position}"`` when the model leaves the name empty; names are
      kept as they are, also when two nodes share one). ``Constant`` nodes are dropped: they hold a
      weight, not a computation, and are treated as initializers. Graph inputs and initializers are not
      nodes. Every node may run on an accelerator; the graph is an inference (forward) graph.
    * Shapes: ``onnx.shape_inference.infer_shapes`` (with data propagation, so shapes computed by
      ``Shape``/``Reshape`` chains become static) after fixing the graph inputs' symbolic or unknown
      dimensions (``dims``). Before inference, nodes that compute small tensors (at most 1024 elements)
      from constants alone, the shape arithmetic exporters emit (``Mod``, ``Div``, ``Cast`` of a few
      integers), are evaluated with ``onnx.reference`` so that the shapes they feed become static; they
      stay nodes of the workload, and weights are never computed. Every tensor a node reads or writes
      must then have a static shape and an element type of fixed size (see
      :mod:`~exactplace.frontends.onnx.shapes`; custom-domain operators need their output shapes in the
      model's ``value_info``: shape inference does not know them). A tensor may declare up to 2**128
      elements: sizes are computed from the declared shapes, never allocated.
    * Edges: an edge ``u -> v`` for every tensor ``u`` writes and ``v`` reads (also inside the bodies of
      ``If``/``Loop``/``Scan``: a body reading an outer tensor reads it from the node that holds the body);
      tensors from one node to another add up to one edge. Edge cost = tensor bytes / ``bandwidth`` (bytes
      per second), in milliseconds; the default ``bandwidth=inf`` makes transfers free, as the PipeDream
      importer. The graph model sends one copy per distinct cost of a node's out-edges (the paper's
      subdivision), which is exact for the usual node with a single output tensor.
    * Parameter synchronisation (replicated stages, ``solve(..., replication=True)``): ``Node.sync`` =
      ``4 x`` the bytes of the initializers the node reads ``/ bandwidth``, in milliseconds (PipeDream's
      all-reduce model); free with the default ``bandwidth=inf``. A weight read by several nodes counts on each.
    * Memory: the bytes of the initializers (and ``Constant`` tensors) the node reads, plus the bytes of
      its output tensors. A weight read by several nodes counts on each (two of them on one device count it
      twice: an over-estimate, never an under-estimate). Graph inputs cost nothing: the data is there, as
      PipeDream's ``Input`` sources. Bytes of 4-bit and other sub-byte types are rounded up per tensor.
    * Times (milliseconds, as PipeDream profiles and ``from_torch``): ``flops / rate`` with the FLOP model
      of :func:`~exactplace.frontends.onnx.flops.node_flops`, or, with ``profile=True``, measured
      (:func:`~exactplace.frontends.onnx.profile.profile_node_times`).

    The model is checked at the boundary first (:mod:`~exactplace.frontends.onnx.checks`).

    Raises
    ------
    InputFormatError
        A malformed model, in one line naming the file, the node (its name, else ``f"{op_type}_{position}"``)
        and the tensor or field at fault.
    SolverUnavailableError
        ``onnx`` (or, for ``profile=True``, ``onnxruntime``) is not installed.
    """
    function = "read_workload"
    check_param(isinstance(bandwidth, (int, float)) and not isinstance(bandwidth, bool) and bandwidth > 0,
                "bandwidth", function, "a positive number of bytes per second, or inf", bandwidth)
    for name, rate in (("accelerator_rate", accelerator_rate), ("cpu_rate", cpu_rate)):
        check_param(isinstance(rate, (int, float)) and not isinstance(rate, bool) and 0 < rate < math.inf, name,
                    function, "a positive, finite number of FLOP/s", rate)
    check_param(isinstance(profile, bool), "profile", function, "True or False", profile)
    check_param(isinstance(runs, int) and not isinstance(runs, bool) and runs >= 1, "runs", function,
                "a positive integer", runs)
    check_param(dims is None or isinstance(dims, Mapping), "dims", function,
                "a mapping from dimension names to positive integers", dims)
    dims = dict(dims or {})
    check_param(all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= _MAX_DIM
                    for k, v in dims.items()), "dims", function,
                "a mapping from dimension names to positive integers below 2**63", dims)
    try:
        return _to_dict(data, source=source, path=path, bandwidth=bandwidth, accelerators=accelerators,
                        memory=memory, cpus=cpus, accelerator_rate=accelerator_rate, cpu_rate=cpu_rate, dims=dims,
                        profile=profile, runs=runs)
    except InputFormatError as error:
        if source in str(error):
            raise
        raise InputFormatError(f"{source}: {error}") from None  # every message names the file


def _to_dict(data: bytes | Any, *, source: str, path: str | os.PathLike | None, bandwidth: float, accelerators: int,
             memory: float, cpus: int, accelerator_rate: float, cpu_rate: float, dims: dict[str, int],
             profile: bool, runs: int) -> dict[str, Any]:
    """:func:`onnx_to_dict` once its parameters are checked; its errors need not name ``source``."""
    onnx = load_onnx()
    model = data if isinstance(data, onnx.ModelProto) else parse_model(data, source)
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    if not fixed.graph.node:
        raise InputFormatError(f"{source}: the ONNX graph has no nodes.")
    check_strings(fixed.graph)
    graph = fixed.graph  # the model's own nodes and weights (shape inference saw some computed ahead)
    onnx_nodes = list(graph.node)
    names = [n.name or f"{n.op_type}_{i}" for i, n in enumerate(onnx_nodes)]
    check_versions(onnx, fixed, source)
    fix_input_dims(fixed, dims)
    check_external(fixed, path, source)
    probe = probe_copy(onnx, fixed)
    folded = fold_small_constants(onnx, probe)
    try:
        inferred = onnx.shape_inference.infer_shapes(folded, data_prop=True)
    except Exception as error:
        position, reason = error_reason(error, names)
        where = source if position is None else \
            f"{source}: ONNX node {names[position]!r} ({onnx_nodes[position].op_type})"
        raise InputFormatError(f"{where} fails ONNX shape inference: {reason}") from None
    strict: list[tuple[BaseException | None, Any]] = []

    def check() -> tuple[BaseException | None, Any]:  # strict inference with type checks, run once when asked
        if not strict:
            try:
                strict.append((None, onnx.shape_inference.infer_shapes(folded, check_type=True, strict_mode=True,
                                                                        data_prop=True)))
            except Exception as error:
                strict.append((error, None))
        return strict[0]

    def why() -> str:  # strict inference says why a shape is missing
        error = check()[0]
        return error_reason(error, names)[1] if error is not None else ""

    types = Types(inferred.graph, why)
    weights = {t.name for t in graph.initializer}
    inputs = {v.name for v in graph.input} - weights
    sparse = {t.values.name for t in graph.sparse_initializer} - weights - inputs
    for name in sorted(inputs):
        types.dtype_shape(name, "ONNX graph input")

    # Who writes each tensor, and what each node reads: the edges, checked for cycles before any size.
    producer: dict[str, int] = {}
    for i, node in enumerate(onnx_nodes):
        for tensor in node.output:
            if not tensor:
                continue
            where = f"ONNX node {names[i]!r} ({node.op_type}): output {tensor!r}"
            if tensor in producer:
                raise InputFormatError(f"{where} is also written by node {names[producer[tensor]]!r}.")
            if tensor in weights or tensor in inputs:
                raise InputFormatError(f"{where} is also {'an initializer' if tensor in weights else 'a graph input'}.")
            producer[tensor] = i
    kept = [i for i, n in enumerate(onnx_nodes) if n.op_type != "Constant"]
    constants = {t for i, n in enumerate(onnx_nodes) if n.op_type == "Constant" for t in n.output if t}
    if not kept:
        raise InputFormatError(f"{source}: the ONNX graph has only Constant nodes, no computation to place.")
    position = {i: k for k, i in enumerate(kept)}
    reads: dict[int, list[str]] = {}
    for i in kept:
        node = onnx_nodes[i]
        read = [t for t in node.input if t]
        read += sorted(t for body in subgraphs(node) for t in outer_names(body) if t not in node.input)
        reads[i] = list(dict.fromkeys(read))  # a tensor read twice is sent and held once
        for tensor in reads[i]:
            if tensor in sparse:
                raise InputFormatError(f"ONNX node {names[i]!r} ({node.op_type}): input {tensor!r} is a sparse "
                                       "initializer; only dense tensors are read (store it as a dense initializer).")
            if tensor not in producer and tensor not in weights and tensor not in inputs:
                raise InputFormatError(f"ONNX node {names[i]!r} ({node.op_type}): input {tensor!r} is written by "
                                       "no node, graph input or initializer.")
    check_acyclic([(producer[t], i) for i in kept for t in reads[i] if t in producer], names, source)

    flops: list[float] = []
    sizes: list[float] = []
    parameters: list[int] = []
    sent: dict[tuple[int, int], int] = {}
    for i in kept:
        node = onnx_nodes[i]
        where = f"ONNX node {names[i]!r} ({node.op_type})"
        weight_bytes = parameter_bytes = 0
        for tensor in reads[i]:
            if tensor in weights or tensor in constants:
                weight_bytes += types.nbytes(tensor, f"{where}: input")
                parameter_bytes += types.nbytes(tensor, f"{where}: input") if tensor in weights else 0
            elif tensor in producer:
                pair = (producer[tensor], i)
                sent[pair] = sent.get(pair, 0) + types.nbytes(tensor, f"{where}: input")
        outputs = [t for t in node.output if t]
        out_bytes = sum(types.nbytes(t, f"{where}: output") for t in outputs)
        in_shapes = [types.shape(t, f"{where}: input") if t else None for t in node.input]
        out_shapes = [types.shape(t, f"{where}: output") for t in outputs]
        attributes = _attributes(onnx, node)
        mismatch = operand_mismatch(node.op_type, list(node.input), in_shapes, attributes)
        if mismatch:
            raise InputFormatError(f"{source}: {where} does not type-check: {mismatch}.")
        try:
            count = node_flops(node.op_type, in_shapes, out_shapes, attributes)
        except (IndexError, TypeError, ValueError):
            raise InputFormatError(f"{where}: its input shapes {in_shapes} do not fit the operator.") from None
        flops.append(count)
        sizes.append(float(weight_bytes + out_bytes))
        parameters.append(parameter_bytes)
    type_check(onnx, check()[0], probe, onnx_nodes, names, types, source)

    if profile:
        measured = profile_node_times(onnx, fixed, types, path, runs, source)
        cpu = acc = [measured[i] for i in kept]
    else:
        cpu = [f / cpu_rate * 1e3 for f in flops]
        acc = [f / accelerator_rate * 1e3 for f in flops]
    out_nodes = [
        {"id": k, "name": names[i], "supportedOnFpga": True, "cpuLatency": cpu[k], "fpgaLatency": acc[k],
         "isBackwardNode": False, "size": sizes[k],
         **({"syncLatency": 4 * parameters[k] / bandwidth * 1e3} if parameters[k] and math.isfinite(bandwidth)
            else {})}
        for k, i in enumerate(kept)
    ]
    out_edges = [
        {"sourceId": position[u], "destId": position[v],
         "cost": nbytes / bandwidth * 1e3 if math.isfinite(bandwidth) else 0.0}
        for (u, v), nbytes in sent.items()
    ]
    return {"maxSizePerFPGA": memory if math.isfinite(memory) else 1e300, "maxFPGAs": accelerators,
            "maxCPUs": cpus, "nodes": out_nodes, "edges": out_edges}


def _attributes(onnx: Any, node: Any) -> dict[str, Any]:
    """The attributes the FLOP model and the channel check read."""
    wanted = {"transA", "kernel_shape", "group"}
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute if a.name in wanted}
