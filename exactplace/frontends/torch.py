"""Place real PyTorch models: :func:`from_torch` captures, profiles and returns a :class:`TorchGraph`.

Capture uses ``torch.fx.symbolic_trace``: every ``call_module`` / ``call_function`` /
``call_method`` node of the traced graph becomes one node (placeholders, constants and the output
do not). Each node is profiled on CPU and on the target device (warm-up, repeats, median), in
milliseconds. Memory is the node's parameters and buffers plus its output (the activation an
accelerator holds; for training also the parameters' gradients and optimizer state). Communication of a node's output
follows a bandwidth model fitted by least squares on measured copies, t = a * bytes + b (as Baechi
and FastT do). With ``training=True`` every forward node gets a backward partner (timed with
autograd), colocated with it through a shared color class, with the mirrored edges.

torch is imported inside the functions: ``import exactplace`` never loads it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from exactplace.core.errors import GraphError, ParameterError, check_param
from exactplace.core.graph import Graph, Node
from exactplace.core.params import Real, brief
from exactplace.frontends.torch_costs import Roofline, roofline_times
from exactplace.frontends.torch_support import attribute, move_to, one_thread_per_op

__all__ = ["TorchGraph", "block_container", "fit_bandwidth", "from_torch"]

COMPUTE_OPS = ("call_module", "call_function", "call_method")
GRANULARITIES = ("operator", "module", "block")
#: Each term of the communication model ``(a, b)``: a time per byte or a time, at most 1e100 (no overflow).
_BANDWIDTH_TERM = Real(low=0, high=1e100)


class TorchGraph(Graph):
    """A :class:`~exactplace.core.graph.Graph` that remembers the module it was captured from.

    Every method, evaluator and ``write_workload`` treat it as a plain Graph; :func:`exactplace.replay`
    and :mod:`exactplace.export` also use the captured module.

    Attributes
    ----------
    module : torch.fx.GraphModule
        The traced module; node ``i < forward_count`` is its compute node ``fx_names[i]``.
    fx_names : tuple of str
        fx node name of each forward node, by position.
    targets : tuple of str or None
        Qualified submodule name of each forward ``call_module`` node (None for functions).
    module_paths : tuple of str
        The module each forward node runs in, by its qualified name (``"transformer.h.3.attn"``;
        ``""`` for the top module): its submodule call, or what ``torch.export`` recorded.
    example_inputs : tuple
        The inputs it was profiled with.
    bandwidth : tuple of float
        The fitted model (a seconds per byte, b seconds): communication time = a * bytes + b.
    """

    def __init__(self, nodes: Sequence[Node], edges: Sequence[tuple[int, int, float]], *, module: Any,
                 fx_names: Sequence[str], targets: Sequence[str | None], module_paths: Sequence[str],
                 example_inputs: tuple[Any, ...], bandwidth: tuple[float, float], device: str) -> None:
        object.__setattr__(self, "module", module)
        object.__setattr__(self, "fx_names", tuple(fx_names))
        object.__setattr__(self, "targets", tuple(targets))
        object.__setattr__(self, "module_paths", tuple(module_paths))
        object.__setattr__(self, "example_inputs", tuple(example_inputs))
        object.__setattr__(self, "bandwidth", bandwidth)
        object.__setattr__(self, "profile_device", device)
        super().__init__(nodes, edges)

    @property
    def forward_count(self) -> int:
        """Number of forward nodes (positions ``0..forward_count-1``, in the module's program order)."""
        return len(self.fx_names)


def _torch() -> Any:
    from exactplace.frontends.torch_support import require_torch

    return require_torch()


def _tensors(value: Any) -> list[Any]:
    torch = _torch()
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _nbytes(value: Any) -> int:
    return sum(t.numel() * t.element_size() for t in _tensors(value))


def _timed(function: Callable[[], Any], device: str, warmup: int, repeats: int,
           statistic: Callable[[list[float]], float] = statistics.median) -> float:
    """Milliseconds of ``function`` (median of ``repeats`` after ``warmup`` calls; CUDA synchronized)."""
    torch = _torch()
    cuda = device.startswith("cuda")
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeats):
        if cuda:
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        function()
        if cuda:
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return 1e3 * statistic(times)


def fit_bandwidth(device: str = "cpu", sizes: Sequence[int] = (1 << 14, 1 << 18, 1 << 21, 1 << 23, 1 << 24),
                  repeats: int = 7) -> tuple[float, float]:
    """Fit t = a * bytes + b (milliseconds) to measured copies between ``device`` and host memory.

    On CPU the copy is a tensor clone in RAM; on CUDA, device -> host and back, halved. Each size
    takes the fastest of its repeats (contention from other processes only ever adds time), and
    both coefficients are clipped at zero (a negative intercept is noise).

    Examples
    --------
    >>> a, b = fit_bandwidth("cpu", sizes=(1 << 12, 1 << 16, 1 << 20), repeats=3)  # doctest: +SKIP
    >>> a > 0 and b >= 0                                                              # doctest: +SKIP
    True
    """
    torch = _torch()
    measured = []
    tensors = [torch.ones(size // 4, device=device) for size in sizes]
    for tensor in tensors:  # one untimed pass: the first copies pay for allocator and thread start-up
        tensor.clone().cpu()
    for tensor in tensors:
        if device.startswith("cuda"):
            measured.append(_timed(lambda t=tensor: t.cpu().to(device), device, 1, repeats, min) / 2)
        else:
            measured.append(_timed(lambda t=tensor: t.clone(), device, 1, repeats, min))
    a, b = np.polyfit(np.array(sizes, dtype=float), np.array(measured), 1)
    return max(float(a), 0.0), max(float(b), 0.0)


def from_torch(
    module: Any,
    example_inputs: Sequence[Any],
    training: bool = False,
    device: str = "cpu",
    *,
    granularity: str = "operator",
    warmup: int = 2,
    repeats: int = 5,
    bandwidth: tuple[float, float] | None = None,
    optimizer_copies: float = 2.0,
    roofline: Roofline | None = None,
) -> TorchGraph:
    """Capture ``module``, profile every node and return a graph every method accepts.

    The module is traced by ``torch.fx`` and, where that fails (Hugging Face models, say), by
    ``torch.export`` (non-strict); at block granularity ``torch.export`` is tried first.

    Parameters
    ----------
    module : torch.nn.Module
    example_inputs : sequence
        Positional inputs of one sample (batch).
    training : bool
        Add backward nodes (timed with autograd), colocated with their forward partners.
    device : str
        Where accelerator times are measured (``"cuda:0"``, or ``"cpu"``: then accelerator and CPU
        times are the same measurement).
    granularity : {"operator", "module", "block"}
        ``"module"`` colocates every function / method node with the compute node that feeds it, so
        splits fall only at submodule calls, which :mod:`exactplace.export` can express.
        ``"block"`` colocates the nodes of each repeated block (the children ``0, 1, ...`` of the
        container with the most of them, such as ``model.layers``), and apart the nodes of each
        module beside it (embeddings, final norm, head); code of no module, or of the container's
        ancestors, joins the node before it.
    warmup, repeats : int
        Profiling: calls before timing, and timed calls (median).
    bandwidth : (a, b), optional
        Communication model in milliseconds per byte and milliseconds; fitted when None.
    optimizer_copies : float, default 2
        Training: copies of each parameter the optimizer keeps beside the parameter and its gradient
        (Adam: 2, SGD with momentum: 1, plain SGD: 0).
    roofline : Roofline, optional
        Cost every node analytically instead of timing it (:mod:`exactplace.frontends.torch_costs`):
        FLOPs counted on one run, bytes from the tensors' shapes and dtypes, so a model on the
        ``meta`` device (with meta inputs) is captured without allocating it. ``device``, ``warmup``
        and ``repeats`` are then unused; communication follows the roofline's link unless
        ``bandwidth`` is given.

    Returns
    -------
    TorchGraph
        Times in milliseconds, memory in bytes; node ids are positions (forward nodes first, in
        program order; backward node of forward node ``i`` has id ``forward_count + i``). In training
        graphs each forward node's output is its ``activation`` (held from its forward to its backward,
        once per microbatch in flight under a pipeline schedule).

    Profiling runs the module in eval mode (train mode with ``training=True``); the module's and every
    submodule's ``training`` flag are left as they were, even when capture fails.

    Raises
    ------
    GraphError
        The module cannot be traced by torch.fx nor by torch.export (the message gives torch's reasons).
    ParameterError
        A parameter is out of range (the message names it).
    """
    torch = _torch()

    check_param(isinstance(module, torch.nn.Module), "module", "from_torch", "a torch.nn.Module", module)
    check_param(granularity in GRANULARITIES, "granularity", "from_torch", f"one of {list(GRANULARITIES)}",
                granularity)
    check_param(isinstance(example_inputs, (tuple, list)), "example_inputs", "from_torch", "a tuple of inputs",
                example_inputs)
    check_param(isinstance(training, bool), "training", "from_torch", "True or False", training)
    check_param(Real(low=0).accepts(optimizer_copies), "optimizer_copies", "from_torch", "a number >= 0",
                brief(optimizer_copies))
    check_param(isinstance(device, str), "device", "from_torch", "a device name such as 'cpu' or 'cuda:0'", device)
    for name, value, low in (("warmup", warmup, 0), ("repeats", repeats, 1)):
        check_param(isinstance(value, int) and not isinstance(value, bool) and low <= value <= 10**6, name,
                    "from_torch", f"an integer in [{low}, 1000000]", brief(value))
    check_param(bandwidth is None or (isinstance(bandwidth, (tuple, list)) and len(bandwidth) == 2
                                      and all(_BANDWIDTH_TERM.accepts(x) for x in bandwidth)),
                "bandwidth", "from_torch", "None or a pair (a, b) of finite non-negative numbers", brief(bandwidth))
    # The traced module shares the user's submodules: switching it to eval or train mode would switch theirs.
    modes = [(sub, sub.training) for sub in module.modules()]
    try:
        return _capture(torch, module, example_inputs, training, device, granularity, warmup, repeats, bandwidth,
                        optimizer_copies, roofline)
    finally:
        for sub, mode in modes:
            sub.training = mode


def _capture(torch: Any, module: Any, example_inputs: Sequence[Any], training: bool, device: str,
             granularity: str, warmup: int, repeats: int, bandwidth: tuple[float, float] | None,
             optimizer_copies: float, roofline: Roofline | None) -> TorchGraph:
    """:func:`from_torch` once its parameters are checked (it restores the module's training flags after)."""
    module.train(training)  # torch.export keeps the mode it traced in (from_torch restores every flag after)
    traced = _trace(torch, module, tuple(example_inputs), granularity)
    cpu_times, acc_times, outputs, (a, b) = _node_costs(traced, type(module).__name__, tuple(example_inputs), device,
                                                        warmup, repeats, bandwidth, roofline)
    fx_nodes = [n for n in traced.graph.nodes if n.op in COMPUTE_OPS]
    paths = [_module_path(n) for n in fx_nodes]
    position = {n.name: i for i, n in enumerate(fx_nodes)}
    parameters = _parameter_bytes(traced, fx_nodes, 2 + optimizer_copies if training else 1)
    edges: list[tuple[int, int, float]] = []
    color: list[int] = list(range(len(fx_nodes)))
    comm = []
    for i, n in enumerate(fx_nodes):
        size = _nbytes(outputs[n.name])
        comm.append(a * size + b if size else 0.0)
        sources = [position[p.name] for p in n.all_input_nodes if p.name in position]
        edges.extend((j, i, comm[j]) for j in sorted(set(sources)))
    if granularity == "module":
        color = _module_colors(fx_nodes)
    elif granularity == "block":
        color = _block_colors(paths)
    consumed = {u for u, _, _ in edges}
    nodes = []
    for i, n in enumerate(fx_nodes):
        activation = _nbytes(outputs[n.name])
        # The model charges communication on edges; an output nothing in the graph reads has none
        # (and the workload format, which stores costs on edges only, could not keep it).
        colored = training or granularity != "operator"
        nodes.append(Node(i, cpu_time=cpu_times[n.name], acc_time=acc_times[n.name],
                          memory=parameters[i] + activation, comm=comm[i] if i in consumed else 0.0,
                          color=color[i] if colored else None, name=n.name,
                          activation=activation if training else 0.0))
    if training:
        if roofline is None:
            with one_thread_per_op():
                backward = _backward_times(traced, tuple(example_inputs), fx_nodes, device, warmup, repeats)
            backward_cpu = backward
        else:
            backward = [roofline.backward_factor * acc_times[n.name] for n in fx_nodes]
            backward_cpu = [roofline.backward_factor * cpu_times[n.name] for n in fx_nodes]
        count = len(fx_nodes)
        for i, n in enumerate(fx_nodes):
            nodes.append(Node(count + i, cpu_time=backward_cpu[i], acc_time=backward[i], memory=0.0, comm=comm[i],
                              color=color[i], backward=True, name=f"{n.name}.backward"))
        # the gradient of u's output flows from v's backward to u's backward: u's output size
        edges.extend([(count + v, count + u, comm[u]) for u, v, _ in edges])
        edges.extend((i, count + i, 0.0) for i in range(count))
    targets = [str(n.target) if n.op == "call_module" else None for n in fx_nodes]
    return TorchGraph(nodes, edges, module=traced, fx_names=[n.name for n in fx_nodes], targets=targets,
                      module_paths=paths, example_inputs=tuple(example_inputs), bandwidth=(a, b), device=device)


def _node_costs(traced: Any, name: str, inputs: tuple[Any, ...], device: str, warmup: int, repeats: int,
                bandwidth: tuple[float, float] | None, roofline: Roofline | None
                ) -> tuple[dict[str, float], dict[str, float], dict[str, Any], tuple[float, float]]:
    """CPU and accelerator milliseconds per compute node, its outputs, and the link model (a, b):
    measured, or from ``roofline``."""
    could_not_run = f"from_torch could not run {name} on its example_inputs"
    if roofline is not None:
        try:
            cpu, acc, outputs = roofline_times(traced, inputs, roofline, COMPUTE_OPS, _nbytes)
        except Exception as error:  # torch raises RuntimeError, TypeError, ... for inputs the module does not take
            raise ParameterError(f"{could_not_run}: {_first_line(error)}") from None
        return cpu, acc, outputs, bandwidth or (1e3 / roofline.link_bandwidth, 1e3 * roofline.link_latency)
    with one_thread_per_op():  # a CPU node's time is its time on one core
        try:
            cpu, outputs = _profile(traced, inputs, "cpu", warmup, repeats)
        except Exception as error:
            raise ParameterError(f"{could_not_run}: {_first_line(error)}") from None
        try:
            link = bandwidth if bandwidth is not None else fit_bandwidth(device)
            acc = cpu if device == "cpu" else _profile(traced, inputs, device, warmup, repeats)[0]
        except Exception as error:  # an unknown or absent device
            raise ParameterError(f"from_torch could not profile on device {device!r}: {_first_line(error)}") from None
    return cpu, acc, outputs, link


def _trace(torch: Any, module: Any, inputs: tuple[Any, ...], granularity: str) -> Any:
    """The module as an fx GraphModule: by torch.fx (submodule calls stay nodes), else by torch.export
    (operators only, each with the module it ran in); at block granularity torch.export first."""

    def by_fx() -> Any:
        return torch.fx.symbolic_trace(module).train(module.training)

    def by_export() -> Any:
        exported = torch.export.export(_tensor_outputs(module), inputs, strict=False).module()
        # export's guard check is bookkeeping, not a node of the model
        for n in [n for n in exported.graph.nodes if n.op == "call_module" and str(n.target).startswith("_guards")]:
            n.graph.erase_node(n)
        exported.recompile()
        return exported

    tracers = [("torch.fx", by_fx), ("torch.export", by_export)]
    errors = []
    for name, tracer in tracers[::-1] if granularity == "block" else tracers:
        try:
            return tracer()
        except Exception as error:  # torch raises TraceError, TypeError, UserError, ... for untraceable code
            errors.append(f"with {name}: {_first_line(error)}")
    raise GraphError(f"from_torch could not trace {type(module).__name__} " + "; nor ".join(errors))


def _tensor_outputs(module: Any) -> Any:
    """What torch.export traces: the module as the attribute ``inner`` of one returning only the
    tensors of its outputs (Hugging Face models also return caches, ``DynamicCache``, which
    torch.export cannot flatten; the plan and the replay need the tensors only)."""
    import torch

    class TensorOutputs(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = module

        def forward(self, *args: Any) -> Any:
            return _tensors_kept(self.inner(*args))

    return TensorOutputs()


def _tensors_kept(value: Any) -> Any:
    """``value`` with everything but tensors (and containers of them) left out; dict-like outputs as dicts."""
    import torch

    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, dict):  # transformers' ModelOutput too
        kept = {k: _tensors_kept(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None}
    if isinstance(value, (tuple, list)):
        kept = [v for v in (_tensors_kept(v) for v in value) if v is not None]
        return tuple(kept) if kept else None
    return None


def _module_path(n: Any) -> str:
    """The qualified name of the module a compute node runs in ("" for the top module)."""
    if n.op == "call_module":
        return str(n.target)
    stack = n.meta.get("nn_module_stack")
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    if not isinstance(path, str):
        return ""
    # torch.export traced the module as the attribute `inner` (_tensor_outputs)
    return "" if path in ("", "inner") else path.removeprefix("inner.")


def block_container(paths: Sequence[str]) -> str | None:
    """The module whose numbered children are the repeated blocks: of the modules with at least 2
    numbered children among ``paths``, the one with the most (None: there is none).

    >>> block_container(["transformer.wte", "transformer.h.0.attn", "transformer.h.1", "lm_head"])
    'transformer.h'
    """
    children: dict[str, set[str]] = {}
    for path in paths:
        parts = path.split(".")
        for depth in range(len(parts) - 1):
            if parts[depth + 1].isdigit():
                children.setdefault(".".join(parts[: depth + 1]), set()).add(parts[depth + 1])
    return max((c for c in children if len(children[c]) >= 2), key=lambda c: len(children[c]), default=None)


def _block_colors(paths: list[str]) -> list[int]:
    """Color of each node at block granularity (see :func:`from_torch`).

    The repeated blocks are the numbered children of the container with the most of them (at
    least 2; none: the top module's children); a node in one takes the block's color, a node in
    another module the color of the child of its last common ancestor with the container
    (``transformer.wte`` beside ``transformer.h``, ``embeddings`` beside ``encoder.layer``), and
    a node of no module or of an ancestor of the container (``transformer``'s own code) the color
    of the node before it.

    Examples
    --------
    >>> _block_colors(["emb", "layers.0.ln", "layers.0", "layers.1.fc", "", "head"])
    [0, 1, 1, 3, 3, 5]
    >>> _block_colors(["model.wte", "model", "model.h.0.attn", "model.h.1.mlp", "model.ln_f", "model", "lm_head"])
    [0, 0, 2, 3, 4, 4, 6]
    >>> _block_colors(["embeddings.word", "embeddings.norm", "encoder.layer.0", "encoder.layer.1", "pooler"])
    [0, 0, 2, 3, 4]
    """
    container = block_container(paths)
    ancestors = [] if container is None else container.split(".")
    color, first = [], {}
    for i, path in enumerate(paths):
        parts = path.split(".")
        if container is not None and path.startswith(container + "."):
            key = ".".join(parts[: len(ancestors) + 1])
        elif path and not (container or "").startswith(path + "."):
            common = 0
            while common < min(len(parts) - 1, len(ancestors)) and parts[common] == ancestors[common]:
                common += 1
            key = ".".join(parts[: common + 1])
        else:
            color.append(color[-1] if color else i)
            continue
        color.append(first.setdefault(key, i))
    return color


def _first_line(error: BaseException) -> str:
    """The first line of torch's message (the rest is the fx node it ran, and a traceback)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _module_colors(fx_nodes: list[Any]) -> list[int]:
    """Color of each node when splits may fall only at submodule calls.

    A function or method node joins the latest submodule call before it in program order (nodes
    before the first call join that first call), so every device holds whole program-order
    segments that start at a submodule call.
    """
    modules = [i for i, n in enumerate(fx_nodes) if n.op == "call_module"]
    if not modules:
        return [0] * len(fx_nodes)
    color, current = [], modules[0]
    for i, n in enumerate(fx_nodes):
        if n.op == "call_module":
            current = i
        color.append(current)
    return color


def _profile(traced: Any, inputs: tuple[Any, ...], device: str, warmup: int, repeats: int
             ) -> tuple[dict[str, float], dict[str, Any]]:
    """Run the traced module once on ``device``, timing every compute node; returns (ms per node, outputs)."""
    import copy

    import torch.fx

    torch = _torch()
    moved = copy.deepcopy(traced).to(device)
    times: dict[str, float] = {}
    outputs: dict[str, Any] = {}

    class Profiler(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            if n.op not in COMPUTE_OPS:
                return super().run_node(n)
            with torch.no_grad():
                if _mutates(n):  # an in-place op run again would change its inputs again: time it on copies
                    args, kwargs = self.fetch_args_kwargs_from_env(n)
                    function = getattr(self, n.op)
                    times[n.name] = _timed(lambda: function(n.target, *_copies((args, kwargs))), device, warmup,
                                           repeats)
                else:
                    times[n.name] = _timed(lambda: super(Profiler, self).run_node(n), device, warmup, repeats)
                result = super().run_node(n)
            outputs[n.name] = result
            return result

    Profiler(moved).run(*move_to(inputs, device))
    return times, outputs


def _mutates(n: Any) -> bool:
    """Whether an operator node writes into one of its inputs (an in-place aten op such as ``add_``)."""
    schema = getattr(n.target, "_schema", None)
    return schema is not None and any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)


def _copies(value: Any) -> Any:
    """``value`` with every tensor in it cloned (any nesting torch's pytree knows)."""
    torch = _torch()
    from torch.utils._pytree import tree_map_only

    return tree_map_only(torch.Tensor, torch.clone, value)


def _parameter_bytes(traced: Any, fx_nodes: list[Any], factor: float) -> list[float]:
    """Bytes of the parameters and buffers each node owns (called module, or constants it reads), each
    trainable parameter ``factor`` times (training: its gradient and the optimizer's copies too)."""
    owned = []
    seen: set[str] = set()
    for n in fx_nodes:
        total = 0.0
        if n.op == "call_module":
            sub = traced.get_submodule(n.target)
            total += sum(p.numel() * p.element_size() for p in sub.parameters()) * factor
            total += sum(b.numel() * b.element_size() for b in sub.buffers())
        for p in n.all_input_nodes:
            if p.op == "get_attr" and p.target not in seen:
                seen.add(p.target)  # a constant read by several nodes is counted at its first reader
                value = attribute(traced, p.target)
                total += _nbytes(value) * (factor if getattr(value, "requires_grad", False) else 1)
        owned.append(total)
    return owned


def _backward_times(traced: Any, inputs: tuple[Any, ...], fx_nodes: list[Any], device: str, warmup: int,
                    repeats: int) -> list[float]:
    """Milliseconds of each node's backward: autograd through the node alone, from its recorded inputs."""
    import copy

    import torch.fx

    torch = _torch()
    moved = copy.deepcopy(traced).to(device)
    values: dict[str, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            result = super().run_node(n)
            values[n.name] = result
            return result

    with torch.no_grad():
        Recorder(moved).run(*move_to(inputs, device))
    times = []
    for n in fx_nodes:
        def leaf(value: Any) -> Any:
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                return value.detach().requires_grad_(True)
            return value

        args = torch.fx.node.map_arg(n.args, lambda p: leaf(values[p.name]))
        kwargs = torch.fx.node.map_arg(n.kwargs, lambda p: leaf(values[p.name]))
        interpreter = torch.fx.Interpreter(moved)
        function = getattr(interpreter, n.op)

        def call(args: Any = args, kwargs: Any = kwargs, function: Any = function, n: Any = n) -> Any:
            # an in-place op runs on copies: the recorded values feed later nodes' timings unchanged
            return function(n.target, *(_copies((args, kwargs)) if _mutates(n) else (args, kwargs)))

        with torch.enable_grad():
            result = call()
        grads = [t for t in _tensors(result) if t.requires_grad]
        if not grads:
            times.append(0.0)
            continue

        def step(call: Any = call) -> None:
            with torch.enable_grad():
                out = [t for t in _tensors(call()) if t.requires_grad]
                torch.autograd.backward(out, [torch.ones_like(t) for t in out])

        forward_only = _timed(call, device, warmup, repeats)
        times.append(max(_timed(step, device, warmup, repeats) - forward_only, 0.0))
    return times
