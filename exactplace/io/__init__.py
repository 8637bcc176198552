"""The file formats: the workload JSON, splits and plans, and reading any workload file.

* :mod:`exactplace.io.workload`: the dnn-partitioning JSON format, :class:`Workload`;
* :mod:`exactplace.io.reading`: any workload file (JSON, PipeDream profile, ONNX model),
  its format detected;
* :mod:`exactplace.io.splits`: the reference split format, and a split in any format;
* :mod:`exactplace.io.plans`: exactplace plans read back (:class:`SplitFile`);
* :mod:`exactplace.io.checks` and :mod:`exactplace.io.files`: the input checks every format
  shares (typed fields; files and JSON read with one-line errors).

Everything public is importable from here.
"""

from __future__ import annotations

from exactplace.io.files import PathLike, load_json, parse_json, read_bytes, read_text
from exactplace.io.plans import SplitFile
from exactplace.io.reading import FORMATS, read_workload, workload_format, workload_from_text
from exactplace.io.splits import (
    extend_to_colocated,
    placement_from_dict,
    read_placement,
    read_split,
    read_split_file,
    split_file_from_dict,
    split_file_from_text,
    split_from_dict,
    split_from_stages,
    split_to_dict,
)
from exactplace.io.workload import (
    ANNOTATION_FIELDS,
    CLUSTER_FIELDS,
    EDGE_FIELDS,
    NODE_FIELDS,
    WORKLOAD_FIELDS,
    Workload,
    with_cluster,
    workload_from_dict,
    workload_to_dict,
    write_workload,
)

__all__ = [
    "ANNOTATION_FIELDS",
    "CLUSTER_FIELDS",
    "EDGE_FIELDS",
    "FORMATS",
    "NODE_FIELDS",
    "WORKLOAD_FIELDS",
    "PathLike",
    "SplitFile",
    "Workload",
    "extend_to_colocated",
    "load_json",
    "parse_json",
    "placement_from_dict",
    "read_bytes",
    "read_placement",
    "read_split",
    "read_split_file",
    "read_text",
    "read_workload",
    "split_file_from_dict",
    "split_file_from_text",
    "split_from_dict",
    "split_from_stages",
    "split_to_dict",
    "with_cluster",
    "workload_format",
    "workload_from_dict",
    "workload_from_text",
    "workload_to_dict",
    "write_workload",
]

