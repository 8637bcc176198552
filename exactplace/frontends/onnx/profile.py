"""Measured node times for the ONNX importer (``profile=True``): onnxruntime on one CPU thread.

``onnxruntime`` is imported inside :func:`profile_node_times`; a missing one raises
:class:`SolverUnavailableError`.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from exactplace.core.errors import InputFormatError, ParameterError, SolverUnavailableError
from exactplace.frontends.onnx.model import EXTERNAL, first_line
from exactplace.frontends.onnx.shapes import Types

__all__ = ["profile_node_times"]

#: Most bytes of random inputs ``profile=True`` allocates (all graph inputs together): 4 GiB.
_FEED_LIMIT = 2**32


def profile_node_times(onnx: Any, model: Any, types: Types, path: str | os.PathLike | None, runs: int,
             source: str) -> list[float]:
    """Milliseconds per ONNX node (by position in the graph), measured by onnxruntime on one CPU thread.

    onnxruntime runs the model (``CPUExecutionProvider``, graph optimisations off, so every ONNX node is
    one kernel) on random inputs of the inferred shapes (floats standard normal, integers and booleans
    zero, a valid index for ``Gather``), once to warm up and ``runs`` times with
    ``SessionOptions.enable_profiling``; each node's time is the mean of its kernel durations in the JSON
    profile, and stands for both its CPU and its accelerator time (as PipeDream's profiles). A node the
    profile does not time costs 0. External weights are read from beside ``path``; at most 4 GiB of
    inputs are allocated.
    """
    try:
        import onnxruntime as ort
    except ImportError:
        raise SolverUnavailableError("profile=True needs onnxruntime: pip install 'exactplace[onnx]'.") from None
    import numpy as np

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for i, node in enumerate(copy.graph.node):
        node.name = f"node{i}"  # unique names, to find each node in the profile
    if any(t.data_location == EXTERNAL for t in copy.graph.initializer):
        if path is None:
            raise ParameterError("profile=True: the model keeps its weights in external files; read it from its "
                                 "file (read_workload) so they can be found.")
        try:
            onnx.external_data_helper.load_external_data_for_model(copy, str(Path(path).parent))
        except Exception as error:  # OSError, or onnx's ValidationError for a file outside the model's folder
            raise InputFormatError(f"{source}: its external weights cannot be read: {first_line(error)}") \
                from None
    weights = {t.name for t in copy.graph.initializer}
    rng = np.random.default_rng(0)
    feeds = {}
    total = 0
    for value in copy.graph.input:
        if value.name in weights:
            continue
        elem, shape = types.dtype_shape(value.name, "ONNX graph input")
        total += types.nbytes(value.name, "ONNX graph input")
        if total > _FEED_LIMIT:
            raise InputFormatError(f"ONNX graph input {value.name!r} has shape {shape}: profile=True would allocate "
                                   f"{total} bytes of inputs, more than {_FEED_LIMIT}; use smaller input shapes "
                                   "(dims=...) or the FLOP model (profile=False).")
        try:
            dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
        except Exception:
            raise InputFormatError(f"ONNX graph input {value.name!r}: numpy has no element type {elem}, so "
                                   "profile=True cannot feed it.") from None
        if dtype.kind == "f":
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[value.name] = np.zeros(shape, dtype=dtype)
    with tempfile.TemporaryDirectory(prefix="exactplace-ort-") as folder:
        options = ort.SessionOptions()
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(folder, "profile")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 4  # fatal only: a failed load is reported in one line below
        try:
            session = ort.InferenceSession(copy.SerializeToString(), options, providers=["CPUExecutionProvider"])
            for _ in range(runs + 1):
                session.run(None, feeds)
        except Exception as error:
            raise InputFormatError(f"{source}: onnxruntime cannot run it to profile it: {first_line(error)}") \
                from None
        with open(session.end_profiling(), encoding="utf-8") as handle:
            events = json.load(handle)
    durations: dict[str, list[float]] = {}
    for event in events:
        name = event.get("name", "")
        if event.get("cat") == "Node" and name.endswith("_kernel_time"):
            durations.setdefault(name.removesuffix("_kernel_time"), []).append(float(event.get("dur", 0.0)))
    times = []
    for i in range(len(copy.graph.node)):
        seen = durations.get(f"node{i}", [])
        measured = seen[1:] if len(seen) > 1 else seen  # the first run warms up
        times.append(sum(measured) / len(measured) / 1e3 if measured else 0.0)  # microseconds -> ms
    return times
