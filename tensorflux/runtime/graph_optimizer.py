"""Graph optimizations on each cached step graph (whitepaper §5.1).

With OptimizerOptions L1 (TensorFlow's default) the step graph is rewritten by
1. constant folding: a stateless node whose data inputs are all constants (and which has no
   control inputs) is computed once, at build time, by its own CPU kernel, and replaced by a
   Const; Shape, Size and Rank of tensors whose static shape is known fold too. Results larger
   than `MAX_FOLDED_BYTES` are left alone (a constant that big costs memory for little gain);
2. common subexpression elimination: stateless nodes with the same op, attributes, inputs
   (in any order for commutative ops), control inputs and requested device are one node;
3. kernel fusion (only when the caller says every device is a CPU, `fuse=True`: the fused
   op has a CPU kernel only): Conv2D -> BiasAdd [-> Relu] becomes one _FusedConv2D, and
   MatMul -> BiasAdd [-> Relu] one _FusedMatMul, as grappler's remapper does
   (`fuse_conv_bias_relu`, `fuse_matmul_bias_relu`; an NHWC conv's or a product's sum with
   a 1-D bias vector of its last dimension through Add/AddV2 counts as a BiasAdd); and a
   sum of products
   AddN(MatMul(a_i, b_i, transpose_a=True)...) becomes one MatMul of the concatenated
   operands (`merge_summed_products`: the weight gradient of an unrolled RNN); a
   FusedBatchNormV3 -> Relu pair becomes one _FusedBatchNormEx, and a ReluGrad feeding a
   FusedBatchNormGradV3 one _FusedBatchNormGradEx (`fuse_batch_norm_relu`); and
   Add/AddV2(x, MatMul(a, b)) one _FusedMatMulAdd, the product added into x's buffer
   (`fuse_matmul_add`: a weight gradient summed over a while loop's iterations); last, a
   tree of small float32 elementwise nodes of one shape one _FusedElementwise
   (elementwise_fusion.py: an RNN cell's gate arithmetic and its gradient);
4. after placement (`optimize_placed`, same conditions as 3): the dense Adam, Momentum and
   gradient-descent updates of a step's small variables on one device become one
   _FusedResourceApply<rule> node (`fuse_optimizer_updates`);
5. dead-code elimination: what no fetch or target needs any more is dropped; a stateless
   node whose outputs nothing reads, kept only by control edges (tf.tuple's gates in
   gradients: the input gradient of a first layer), becomes a NoOp waiting on its inputs'
   producers, as grappler's dependency optimizer does: its kernel never runs.
L0 (or `do_constant_folding` / `do_common_subexpression_elimination` false) turns the
corresponding pass off. Stateful and control-flow nodes, feeds, NoOps (their definitions'
`keep_identity`) and fetched nodes keep their identity, so no pass can change a step's results.
"""

from __future__ import annotations

import functools

import numpy as np

from tensorflux.framework import dtypes, op_registry, tensor_shape
from tensorflux.kernels import registry as kernel_registry
from tensorflux.kernels.registry import KernelContext
from tensorflux.runtime import elementwise_fusion
from tensorflux.runtime.exec_options import ExecOptions
from tensorflux.runtime.frame_analysis import flow_kind
from tensorflux.runtime.step_graph import Node, StepGraph, topological_order

MAX_FOLDED_BYTES = 10 * 1024 * 1024


class _Folding:
    """What a kernel evaluated by constant folding sees as its session: the resource
    guard's bound is MAX_FOLDED_BYTES (framework/resource_guard.py), so folding never
    allocates a result it would not keep (the kernel refuses; the node runs at run time)."""

    _exec_options = ExecOptions(max_tensor_bytes=MAX_FOLDED_BYTES)
    _config = None
    _closed = False


_FOLDING = _Folding()


def _levels(options) -> tuple[bool, bool]:
    """(fold constants?, eliminate common subexpressions?) for an OptimizerOptions."""
    if options is None or options.opt_level >= 0:  # L1 (the default) turns both on
        return True, True
    return bool(options.do_constant_folding), bool(options.do_common_subexpression_elimination)


def optimize(sg: StepGraph, options=None, fuse: bool = False) -> None:
    """Rewrites `sg` in place according to `options` (an OptimizerOptions proto or None);
    `fuse`: the step runs on CPU devices only, so kernels may be fused."""
    fold, cse = _levels(options)
    if not (fold or cse):
        return
    if fold:
        fold_constants(sg)
    if cse:
        eliminate_common_subexpressions(sg)
    if fuse:
        fuse_conv_bias_relu(sg)
        fuse_batch_norm_relu(sg)
        merge_summed_products(sg)
        fuse_matmul_bias_relu(sg)
        fuse_matmul_add(sg)
        elementwise_fusion.fuse_elementwise(sg)
    unread_to_no_op(sg)
    eliminate_dead_code(sg)


def _stateless(n: Node) -> bool:
    """True for a node the passes may fold, merge or replace: its definition says it is
    neither stateful nor control flow, nor to be kept as itself (`keep_identity`: feeds,
    NoOp)."""
    opdef = op_registry.lookup(n.op)
    return opdef is not None and not (opdef.is_stateful or opdef.control_flow
                                      or opdef.keep_identity)


def _replace_uses(sg: StepGraph, mapping: dict[tuple[Node, int], tuple[Node, int]]) -> None:
    if not mapping:
        return
    for n in sg.nodes:
        n.inputs = [mapping.get(e, e) for e in n.inputs]
    sg.fetches = [mapping.get(e, e) for e in sg.fetches]


def fold_constants(sg: StepGraph) -> int:
    """Replaces foldable nodes by Consts; returns how many were folded.

    A constant may wait on control inputs (a Const created inside `control_dependencies`).
    Folding must keep those orderings: the folded Const gets the control inputs of every
    node in the constant cone it replaces.
    """
    fetched = {n for n, _ in sg.fetches} | set(sg.targets)
    in_loops = any(flow_kind(n.op) == "enter" for n in sg.nodes)
    values: dict[tuple[Node, int], np.ndarray] = {}
    waits: dict[tuple[Node, int], tuple[Node, ...]] = {}  # control inputs behind a value
    for n in sg.nodes:
        if n.op == "Const" and isinstance(n.attrs["value"], np.ndarray):  # not deferred
            values[(n, 0)] = n.attrs["value"]
            waits[(n, 0)] = tuple(n.control_inputs)
    ctx = KernelContext(0, None, session=_FOLDING)
    mapping: dict[tuple[Node, int], tuple[Node, int]] = {}
    folded = 0
    for n in topological_order(sg.nodes, skip_back_edges=True)[0]:
        if n.op == "Const" or n in fetched or not _stateless(n):
            continue
        if n.op in ("Shape", "Size", "Rank"):
            # In a while loop the folded constant must stay in the loop's frame (and be as
            # dead as its input): it waits on the producer of the input it replaces.
            outs, cone = _fold_shape_op(n), (n.inputs[0][0],) if in_loops else ()
        else:
            outs, cone = None, ()
        if outs is None:
            if not n.inputs or not all(e in values for e in n.inputs):
                continue
            outs = _evaluate(n, [values[e] for e in n.inputs], ctx)
            cone = tuple(c for e in n.inputs for c in waits[e])
        if outs is None or sum(getattr(v, "nbytes", 0) for v in outs) > MAX_FOLDED_BYTES:
            continue
        controls = list(dict.fromkeys(cone + tuple(n.control_inputs)))
        for i, v in enumerate(outs):
            const = Node(f"{n.name}/_folded_{i}" if len(outs) > 1 else f"{n.name}/_folded",
                         "Const", {"value": v, "dtype": n.output_dtypes[i]}, [], controls,
                         [n.output_dtypes[i]], n.requested_device, n.traceback)
            const.colocation = n.colocation
            sg.add(const)
            values[(const, 0)] = v
            waits[(const, 0)] = tuple(controls)
            mapping[(n, i)] = (const, 0)
        folded += 1
    _replace_uses(sg, mapping)
    return folded


def _evaluate(n: Node, inputs: list, ctx) -> list | None:
    kdef = kernel_registry.find_kernel(n.op, "CPU", n.attrs)
    if kdef is None or kdef.is_async:
        return None
    try:
        out = kdef.factory(n)(ctx, *inputs)
    except Exception:  # noqa: BLE001 - an error here is the step's to report at run time
        return None
    outs = [out] if len(n.output_dtypes) == 1 else list(out or ())
    if len(outs) != len(n.output_dtypes):
        return None
    result = []
    for v, dt in zip(outs, n.output_dtypes, strict=True):
        if dt is dtypes.resource or dt is dtypes.variant:
            return None
        arr = np.asarray(v, dtype=dt.numpy_dtype)
        arr.flags.writeable = False
        result.append(arr)
    return result


def _fold_shape_op(n: Node) -> list | None:
    src, idx = n.inputs[0]
    shape = src.output_shapes[idx] if src.output_shapes else None
    if shape is None or not isinstance(shape, tensor_shape.TensorShape):
        return None
    out_dtype = n.output_dtypes[0].numpy_dtype
    if n.op == "Rank":
        if shape.ndims is None:
            return None
        return [np.array(shape.ndims, dtype=out_dtype)]
    if not shape.is_fully_defined():
        return None
    if n.op == "Shape":
        return [np.array(shape.as_list(), dtype=out_dtype)]
    return [np.array(shape.num_elements(), dtype=out_dtype)]


def _attr_key(value):
    if isinstance(value, np.ndarray):
        return ("nd", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, list):
        return tuple(_attr_key(v) for v in value)
    if isinstance(value, tensor_shape.TensorShape):
        return ("shape", value._dims_tuple)
    if isinstance(value, dict):
        return tuple(sorted((k, _attr_key(v)) for k, v in value.items()))
    return value


def eliminate_common_subexpressions(sg: StepGraph) -> int:
    """Merges equivalent stateless nodes; returns how many were removed."""
    canonical: dict[tuple, Node] = {}
    mapping: dict[tuple[Node, int], tuple[Node, int]] = {}
    replaced: dict[Node, Node] = {}
    fetched = set(sg.targets)
    removed = 0
    for n in topological_order(sg.nodes, skip_back_edges=True)[0]:
        if mapping:
            n.inputs = [mapping.get(e, e) for e in n.inputs]
        if replaced and n.control_inputs:
            n.control_inputs = list(dict.fromkeys(replaced.get(c, c)
                                                  for c in n.control_inputs))
        if not (_stateless(n) or n.op == "Const") or n in fetched:
            continue
        if n.op == "Const" and n.attrs["value"].nbytes > MAX_FOLDED_BYTES:
            continue
        inputs = [(s.id, i) for s, i in n.inputs]
        opdef = op_registry.lookup(n.op)
        if opdef is not None and opdef.is_commutative:
            inputs.sort()
        try:
            key = (n.op, tuple(inputs), tuple(sorted(c.id for c in n.control_inputs)),
                   n.requested_device, tuple(sorted((k, _attr_key(v))
                                                    for k, v in n.attrs.items())))
            hash(key)
        except TypeError:
            continue
        first = canonical.get(key)
        if first is None:
            canonical[key] = n
            continue
        for i in range(len(n.output_dtypes)):
            mapping[(n, i)] = (first, i)
        replaced[n] = first
        removed += 1
    sg.fetches = [mapping.get(e, e) for e in sg.fetches]
    return removed


_FUSABLE_TYPES = (dtypes.float32, dtypes.float64)


def fuse_conv_bias_relu(sg: StepGraph) -> int:
    """Rewrites each Conv2D -> BiasAdd [-> Relu] chain into one _FusedConv2D node (TF's
    signature: fused_ops [BiasAdd] or [BiasAdd, Relu], the bias as its one argument),
    whose kernel adds the bias and applies the ReLU to each chunk of the conv's output as
    the product writes it: two passes over the activations and two allocations fewer per
    layer, the same values bit for bit. An NHWC conv's `conv + b` (Add/AddV2, either
    order) with a 1-D `b` of the conv's static channel count is a BiasAdd here (grappler's
    remapper calls it a bias-semantic add), and Shape ops reading the conv (the gradient of
    such an add asks for its operands' shapes) read the chain's output instead, which has
    the same shape. A chain fuses when each intermediate output is read by the next node
    only (not fetched, no control edge from it; the conv also by such Shape ops), the nodes
    ask for the same device, data format and a float32/float64 type. The chain's last node
    is rewritten in place, so it keeps its name (fetches, traces and errors name it, as
    with grappler's fused nodes) and what reads it; the others are left unread, for
    dead-code elimination. Returns how many chains were fused."""
    return _fuse_bias_relu(sg, "Conv2D")


def fuse_matmul_bias_relu(sg: StepGraph) -> int:
    """Rewrites each MatMul -> BiasAdd [-> Relu] chain into one _FusedMatMul node (TF's
    signature, as grappler's remapper makes it: fused_ops [BiasAdd] or [BiasAdd, Relu], the
    bias as its one argument), whose kernel adds the bias and applies the ReLU in one pass
    over the product's fresh output: two passes over the activations, one allocation and
    one or two nodes fewer per layer, the same values bit for bit (a fully connected
    layer's `matmul(h, w) + b` and its ReLU). As for the conv (`fuse_conv_bias_relu`,
    whose rules this follows): `product + b` (Add/AddV2, either order) with a 1-D `b` of
    the product's static column count is a BiasAdd, and Shape ops reading the product (the
    gradient of such an add asks for its operands' shapes) read the chain's output, of the
    same shape; a BiasAdd fuses in its default NHWC format only; intermediate outputs must
    be read by the next node only (not fetched, no control edge from them), the nodes ask
    for the same device and a float32/float64 type. The chain's last node is rewritten in
    place, keeping its name. Returns how many chains were fused."""
    return _fuse_bias_relu(sg, "MatMul")


def _fuse_bias_relu(sg: StepGraph, op: str) -> int:
    """The chains `op` (Conv2D or MatMul) -> BiasAdd [-> Relu] rewritten into one
    `_Fused<op>` node, by the rules of `fuse_conv_bias_relu`/`fuse_matmul_bias_relu`."""
    readers: dict[tuple[Node, int], list[Node]] = {}
    for n in sg.nodes:
        for e in n.inputs:
            readers.setdefault(e, []).append(n)
    held = ({n for n, _ in sg.fetches} | set(sg.targets) | set(sg.args)
            | {c for n in sg.nodes for c in n.control_inputs})

    def only_reader(n: Node, reader_op: str) -> Node | None:
        users = readers.get((n, 0), [])
        nxt = users[0] if len(users) == 1 else None
        if (nxt is None or nxt.op != reader_op or n in held or nxt.inputs[0] != (n, 0)
                or nxt.requested_device != n.requested_device
                or nxt.attrs.get("T") != n.attrs.get("T")):
            return None
        return nxt

    fused = 0
    for producer in list(sg.nodes):
        if producer.op != op or producer.attrs.get("T") not in _FUSABLE_TYPES:
            continue
        bias_add = only_reader(producer, "BiasAdd")
        shapes: list[Node] = []
        if bias_add is None:
            columns = None
            if op == "MatMul":
                dims = _static_dims(producer, 0)
                columns = dims[1] if dims is not None and len(dims) == 2 else None
            bias_add, shapes = _bias_semantic_add(producer, readers, held, columns)
            if bias_add is None:
                continue
            bias = next(e for e in bias_add.inputs if e != (producer, 0))
        else:
            bias = bias_add.inputs[1]
        data_format = producer.attrs.get("data_format", "NHWC") if op == "Conv2D" else "NHWC"
        if bias_add.op == "BiasAdd" and (bias_add.attrs.get("data_format", "NHWC")
                                         != data_format):
            continue
        relu = only_reader(bias_add, "Relu")
        last = relu or bias_add
        if shapes and _reaches(bias[0], set(shapes)):
            continue  # (the bias computed from the producer's shape: a cycle otherwise)
        controls = producer.control_inputs + bias_add.control_inputs
        if relu is not None:
            controls += relu.control_inputs
        fused_ops = ["BiasAdd", "Relu"] if relu is not None else ["BiasAdd"]
        if op == "Conv2D":
            attrs = dict(producer.attrs, num_args=1, epsilon=1e-4, leakyrelu_alpha=0.2,
                         fused_ops=fused_ops)
        else:
            attrs = {"transpose_a": producer.attrs.get("transpose_a", False),
                     "transpose_b": producer.attrs.get("transpose_b", False),
                     "T": producer.attrs["T"], "num_args": 1, "epsilon": 1e-4,
                     "leakyrelu_alpha": 0.2, "fused_ops": fused_ops}
        last.op, last.attrs = "_Fused" + op, attrs
        last.inputs = [producer.inputs[0], producer.inputs[1], bias]
        last.control_inputs = list(dict.fromkeys(controls))
        for shape_op in shapes:
            shape_op.inputs = [(last, 0)]
        fused += 1
    return fused


def _static_dims(node: Node, index: int) -> list | None:
    shapes = node.output_shapes
    if not shapes or index >= len(shapes) or shapes[index] is None:
        return None
    dims = getattr(shapes[index], "dims", None)
    return None if dims is None else [getattr(d, "value", d) for d in dims]


def _bias_semantic_add(conv: Node, readers: dict, held: set, channels=None):
    """(the Add/AddV2 adding a 1-D bias of the channel count to NHWC `conv`'s output, the
    Shape ops that read the conv besides it), or (None, []). With `channels`, `conv` is
    another producer (a product) whose last dimension is statically `channels` (None:
    unknown, no fusion)."""
    users = readers.get((conv, 0), [])
    adds = [u for u in users if u.op in ("AddV2", "Add")]
    shapes = [u for u in users if u.op == "Shape" and u not in held]
    if conv.op == "Conv2D":
        dims = _static_dims(conv, 0)
        if conv.attrs.get("data_format", "NHWC") != "NHWC" or dims is None or len(dims) != 4:
            return None, []
        channels = dims[3]
    if (len(adds) != 1 or len(adds) + len(shapes) != len(users) or conv in held
            or not isinstance(channels, int)):
        return None, []
    add = adds[0]
    others = [e for e in add.inputs if e != (conv, 0)]
    if (len(add.inputs) != 2 or len(others) != 1 or add.requested_device != conv.requested_device
            or add.attrs.get("T") != conv.attrs.get("T")
            or _static_dims(others[0][0], others[0][1]) != [channels]):
        return None, []
    return add, shapes


def _reaches(start: Node, targets: set) -> bool:
    """Whether `start` is one of `targets` or depends on one (data or control edges)."""
    seen, todo = set(), [start]
    while todo:
        n = todo.pop()
        if n in targets:
            return True
        if id(n) in seen:
            continue
        seen.add(id(n))
        todo.extend(src for src, _ in n.inputs)
        todo.extend(n.control_inputs)
    return False


def fuse_batch_norm_relu(sg: StepGraph) -> int:
    """Rewrites FusedBatchNormV3 -> Relu into one _FusedBatchNormEx (activation_mode
    "Relu", TF's signature, as grappler's remapper makes it), whose kernel applies the ReLU
    in its normalize pass, and float32 FusedBatchNormV3 -> AddV2(., s) -> Relu (a residual
    block's tail) into one with `s` as its side input (added before the ReLU; `s` made
    before the batch norm: of two batch norms added, the later takes the earlier as `s`);
    then each FusedBatchNormGradV3 whose y_backprop is a ReluGrad of such a node's output
    into one _FusedBatchNormGradEx taking the ReLU's incoming gradient and output, whose
    passes read the masked gradient where they read y_backprop. A Relu
    pass and a ReluGrad pass (and their arrays) fewer per layer, the same values bit for bit
    (kernels/cpu/batch_norm_ops.py). A pair fuses when the batch norm's y is read by the
    Relu only (and not fetched), the Relu and ReluGrad are not fetched nor waited on by a
    control edge, the ReluGrad's output is read by the gradient only, and the nodes ask for
    the same device and type, 4-D data. The batch norm and its gradient are rewritten in
    place (their other outputs keep their readers); what read the Relu reads the fused
    node, and the Relu and ReluGrad are left unread, for dead-code elimination. Returns
    how many batch norms and gradients were fused."""
    readers: dict[tuple[Node, int], list[Node]] = {}
    for n in sg.nodes:
        for e in n.inputs:
            readers.setdefault(e, []).append(n)
    held = ({n for n, _ in sg.fetches} | set(sg.targets) | set(sg.args)
            | {c for n in sg.nodes for c in n.control_inputs})
    fetched = set(sg.fetches)

    def sole_reader(edge: tuple[Node, int], op: str) -> Node | None:
        users = readers.get(edge, [])
        nxt = users[0] if len(users) == 1 else None
        if (nxt is None or nxt.op != op or nxt in held or edge in fetched
                or nxt.requested_device != edge[0].requested_device
                or nxt.attrs.get("T") != edge[0].attrs.get("T")):
            return None
        return nxt

    def four_d(n: Node) -> bool:
        return n.attrs.get("data_format", "NHWC") in ("NHWC", "NCHW", b"NHWC", b"NCHW")

    fused, redirect, taken = 0, {}, set()
    for bn in list(sg.nodes):
        if bn.op != "FusedBatchNormV3" or not four_d(bn):
            continue
        side, add = [], None
        users = readers.get((bn, 0), [])
        if (len(users) == 1 and users[0].op in ("AddV2", "Add")
                and bn.attrs.get("T") == dtypes.float32):
            add = sole_reader((bn, 0), users[0].op)
            other = [e for e in add.inputs if e != (bn, 0)] if add is not None else []
            if add is None or len(other) != 1 or add in taken or other[0][0].id >= bn.id:
                # (two batch norms added: the later one takes the sum, the earlier one is
                # its side input; a side input made after the batch norm might read it)
                continue
            side = other
            taken.add(add)
        relu = sole_reader((add, 0) if add is not None else (bn, 0), "Relu")
        if relu is None or relu.inputs[0] != ((add, 0) if add is not None else (bn, 0)):
            continue
        bn.op = "_FusedBatchNormEx"
        bn.attrs = dict(bn.attrs, num_side_inputs=len(side), activation_mode="Relu")
        bn.inputs = bn.inputs + side
        controls = bn.control_inputs + relu.control_inputs
        if add is not None:
            controls += add.control_inputs
        bn.control_inputs = list(dict.fromkeys(controls))
        redirect[(relu, 0)] = (bn, 0)
        fused += 1
    if not redirect:
        return 0
    for n in sg.nodes:
        if any(e in redirect for e in n.inputs):
            n.inputs = [redirect.get(e, e) for e in n.inputs]
    for e, new in redirect.items():  # a Relu's readers are the fused node's now
        readers.setdefault(new, []).extend(readers.pop(e, []))
    for grad in list(sg.nodes):
        if grad.op != "FusedBatchNormGradV3" or not four_d(grad):
            continue
        relu_grad = grad.inputs[0][0]
        if (relu_grad.op != "ReluGrad" or relu_grad in held
                or readers.get((relu_grad, 0)) != [grad]
                or relu_grad.requested_device != grad.requested_device):
            continue
        forward = relu_grad.inputs[1][0]
        if (forward.op != "_FusedBatchNormEx" or relu_grad.inputs[1][1] != 0
                or forward.inputs[0] != grad.inputs[1]
                or relu_grad.attrs.get("T") != grad.attrs.get("T")):
            continue
        grad.op = "_FusedBatchNormGradEx"
        grad.attrs = dict(grad.attrs, num_side_inputs=0, activation_mode="Relu")
        grad.inputs = ([relu_grad.inputs[0]] + grad.inputs[1:]
                       + [forward.inputs[2], relu_grad.inputs[1]])
        grad.control_inputs = list(dict.fromkeys(grad.control_inputs
                                                 + relu_grad.control_inputs))
        fused += 1
    return fused


# A sum of products is merged when the concatenated operands take at most this share of
# the memory of the partial products they replace.
_MERGE_OPERAND_SHARE = 0.5
_MERGE_MIN_BYTES = 1 << 20  # ... and the partial products take at least this much
# A term's rows left unknown (a placeholder's batch dimension, None: tflearn's inputs) count
# as this many in that test: a common batch size
_MERGE_UNKNOWN_ROWS = 128


def _static_matrix(node: Node, index: int,
                   unknown_rows: bool = False) -> tuple[int | None, int] | None:
    """(rows, columns) of a 2-D output of static shape; with `unknown_rows`, rows may be
    None (an unknown first dimension)."""
    shapes = node.output_shapes
    if not shapes or index >= len(shapes) or shapes[index] is None:
        return None
    dims = getattr(shapes[index], "dims", None)
    if dims is None or len(dims) != 2:
        return None
    rows, cols = (getattr(d, "value", d) for d in dims)
    if not isinstance(cols, int) or not (isinstance(rows, int) or
                                         (unknown_rows and rows is None)):
        return None
    return rows, cols


def _add_like(sg: StepGraph, like: Node, name: str, op: str, attrs: dict, inputs: list,
              controls: list, shape, dtype) -> Node:
    """Adds a node of one output to `sg`, on `like`'s device and colocation."""
    node = Node(name, op, attrs, inputs, controls, [dtype], like.requested_device,
                like.traceback)
    node.output_shapes = [shape]
    node.colocation = like.colocation
    return sg.add(node)


def merge_summed_products(sg: StepGraph) -> int:
    """Rewrites AddN(MatMul(a_1, b_1, transpose_a=True), ..., MatMul(a_n, b_n, ...)) — the
    gradient of a weight that an unrolled RNN (tf.nn.static_rnn) multiplies at every time
    step, each term x_t^T . dy_t — into MatMul(ConcatV2(a_1..a_n, 0), ConcatV2(b_1..b_n, 0),
    transpose_a=True): one product of the stacked operands instead of n thin products
    (k = the batch) and their n partial sums alive at once (an LSTM-512 LM over 20 steps:
    20 products of [1024, 2048], 160 MiB, against 7.5 MiB of stacked operands), and one
    product splits over the cores where thin ones do not. A term may reach the AddN through
    Identity nodes (tf.tuple's gates of the gradient); their control inputs move to the
    merged product, and the term's nodes become NoOps waiting on what they read (a control
    edge may wait on them: tf.tuple's group_deps). Only terms that nothing else reads (not
    fetched), with static 2-D shapes whose stacked operands take at most half the partial
    products' memory (rows may be unknown, a placeholder's batch dimension: each such term
    counts as _MERGE_UNKNOWN_ROWS rows); terms that do not qualify stay in the AddN.
    Graphs with while loops are left alone (a new node would need the loop's frame). The
    values are the same sums, added in another order. Returns how many AddN nodes were rewritten."""
    if any(flow_kind(n.op) == "enter" for n in sg.nodes):
        return 0
    readers: dict[Node, int] = {}
    for n in sg.nodes:
        for src, _ in n.inputs:
            readers[src] = readers.get(src, 0) + 1
    held = {n for n, _ in sg.fetches} | set(sg.targets) | set(sg.args)

    def term(edge: tuple[Node, int], dtype, device: str):
        """(MatMul node, control inputs on the way) if `edge` is a mergeable product."""
        node, index = edge
        controls: list[Node] = []
        chain: list[Node] = []
        while node.op == "Identity" and index == 0 and readers.get(node) == 1 and \
                node not in held and node.requested_device == device:
            controls += node.control_inputs
            chain.append(node)
            node, index = node.inputs[0]
        a = node.attrs
        if (node.op != "MatMul" or index != 0 or readers.get(node) != 1 or node in held
                or node.requested_device != device or a.get("T") != dtype
                or not a.get("transpose_a") or a.get("transpose_b")):
            return None
        return node, controls + node.control_inputs, chain + [node]

    merged = 0
    for s in list(sg.nodes):
        dtype = s.attrs.get("T")
        if s.op != "AddN" or dtype not in _FUSABLE_TYPES or len(s.inputs) < 2:
            continue
        terms, rest, shape = [], [], None
        for e in s.inputs:
            t = term(e, dtype, s.requested_device)
            a_shape = b_shape = None
            if t is not None:
                (a, ai), (b, bi) = t[0].inputs
                a_shape = _static_matrix(a, ai, unknown_rows=True)
                b_shape = _static_matrix(b, bi, unknown_rows=True)
            if (a_shape is None or b_shape is None
                    or None not in (a_shape[0], b_shape[0]) and a_shape[0] != b_shape[0]
                    or (shape is not None and shape != (a_shape[1], b_shape[1]))):
                rest.append(e)
                continue
            shape = (a_shape[1], b_shape[1])
            rows = a_shape[0] if a_shape[0] is not None else b_shape[0]
            terms.append((t[0], t[1], rows, t[2]))
        if len(terms) < 2:
            continue
        m, n = shape
        known = None not in [kk for _, _, kk, _ in terms]
        k = sum(_MERGE_UNKNOWN_ROWS if kk is None else kk for _, _, kk, _ in terms)
        itemsize = np.dtype(dtype.as_numpy_dtype).itemsize
        products = len(terms) * m * n * itemsize
        if products < _MERGE_MIN_BYTES or k * (m + n) * itemsize > \
                _MERGE_OPERAND_SHARE * products:
            continue
        k = k if known else None
        name = s.name + "/merged_products"
        axis = _add_like(sg, s, name + "/axis", "Const", {"value": np.zeros((), np.int32),
                                                          "dtype": dtypes.int32},
                         [], [], tensor_shape.TensorShape([]), dtypes.int32)
        stacked = [_add_like(sg, s, f"{name}/concat_{j}", "ConcatV2",
                             {"N": len(terms), "T": dtype, "Tidx": dtypes.int32},
                             [mm.inputs[j] for mm, _, _, _ in terms] + [(axis, 0)], [],
                             tensor_shape.TensorShape([k, (m, n)[j]]), dtype) for j in (0, 1)]
        controls = list(dict.fromkeys(c for _, cs, _, _ in terms for c in cs))
        attrs = {"T": dtype, "transpose_a": True, "transpose_b": False}
        operands = [(stacked[0], 0), (stacked[1], 0)]
        if rest:
            product = _add_like(sg, s, name, "MatMul", attrs, operands, controls,
                                tensor_shape.TensorShape([m, n]), dtype)
            s.inputs = rest + [(product, 0)]
            s.attrs = dict(s.attrs, N=len(s.inputs))
        else:  # the AddN itself becomes the product: it keeps its name and its readers
            s.op, s.attrs, s.inputs = "MatMul", attrs, operands
            s.control_inputs = list(dict.fromkeys(s.control_inputs + controls))
        for _, _, _, chain in terms:  # unread now: NoOps after what they read
            for node in chain:
                node.control_inputs = list(dict.fromkeys(
                    node.control_inputs + [src for src, _ in node.inputs]))
                node.op, node.attrs, node.inputs = "NoOp", {}, []
                node.output_dtypes, node.output_shapes = [], None
        merged += 1
    return merged


FUSE_ADD_MIN_ELEMENTS = 1 << 16  # sums of a product at least this big fuse (fuse_matmul_add)


def _through_identities(n: Node) -> Node:
    while n.op == "Identity" and n.inputs:
        n = n.inputs[0][0]
    return n


def _is_product(n: Node) -> bool:
    opdef = op_registry.lookup(n.op)
    return opdef is not None and (opdef.flops or "").partition(":")[0] == "matmul"


def fuse_matmul_add(sg: StepGraph) -> int:
    """Rewrites AddV2/Add(x, MatMul(a, b)) (either order) into _FusedMatMulAdd(a, b, x),
    whose kernel adds the product into x's buffer (donated, or a copy) by one BLAS call
    with beta = 1: the sum of a weight's gradient over a while loop's iterations
    (`acc += x_t^T dy_t`, tf.gradients' accumulator of a loop invariant, where
    `merge_summed_products` cannot reach) no longer writes each [k, n] product and reads
    it back with the sum (dynamic_rnn's 3 x LSTM-512 over 25 steps: 75 such products of
    [1024, 2048] a step). Only a product that nothing else reads and nobody fetches, of a
    static 2-D shape of at least FUSE_ADD_MIN_ELEMENTS that x's static shape does not
    contradict (a loop's accumulator has none; the kernel adds as AddV2 does, broadcasting,
    when x's shape turns out to differ), on the add's device and type; not when x is itself a
product (two products the chooser may run side by side). It may reach the add
    through Identity nodes read by nothing else (tf.gradients' tuple gates), whose control
    inputs move to the add. The add is rewritten in place (keeping its name and frame); the
    product and those Identities become NoOps after what they read (a control edge may wait
    on them: tf.tuple's group_deps). Returns how many adds were fused."""
    readers: dict[tuple[Node, int], list[Node]] = {}
    for n in sg.nodes:
        for e in n.inputs:
            readers.setdefault(e, []).append(n)
    held = {n for n, _ in sg.fetches} | set(sg.targets) | set(sg.args)
    fused = 0
    for s in list(sg.nodes):
        dtype = s.attrs.get("T")
        if s.op not in ("AddV2", "Add") or dtype not in _FUSABLE_TYPES or len(s.inputs) != 2:
            continue
        for j in (0, 1):
            (mm, index), other = s.inputs[j], s.inputs[1 - j]
            chain, reader = [], s
            while mm.op == "Identity" and index == 0 and mm not in held and \
                    readers.get((mm, 0)) == [reader] and \
                    mm.requested_device == s.requested_device:
                chain.append(mm)  # tf.gradients' tuple gates between product and sum
                reader, (mm, index) = mm, mm.inputs[0]
            if (mm.op != "MatMul" or index != 0 or mm in held or other[0] in chain + [mm]
                    or readers.get((mm, 0)) != [reader] or mm.attrs.get("T") != dtype
                    or mm.requested_device != s.requested_device
                    or _is_product(_through_identities(other[0]))):
                continue  # two products: unfused they may run side by side (exec_options)
            dims, other_dims = _static_dims(mm, 0), _static_dims(*other)
            if (dims is None or len(dims) != 2 or not all(isinstance(d, int) for d in dims)
                    or dims[0] * dims[1] < FUSE_ADD_MIN_ELEMENTS
                    or (other_dims is not None and (len(other_dims) != 2 or any(
                        d is not None and d != want for d, want in zip(
                            other_dims, dims, strict=True))))):
                continue
            s.op, s.inputs = "_FusedMatMulAdd", [mm.inputs[0], mm.inputs[1], other]
            s.attrs = {"T": dtype, "transpose_a": bool(mm.attrs.get("transpose_a")),
                       "transpose_b": bool(mm.attrs.get("transpose_b"))}
            s.control_inputs = list(dict.fromkeys(
                s.control_inputs + [c for n in chain + [mm] for c in n.control_inputs]))
            for n in chain + [mm]:  # unread now: NoOps after what they read
                n.control_inputs = list(dict.fromkeys(
                    n.control_inputs + [src for src, _ in n.inputs]))
                n.op, n.attrs, n.inputs = "NoOp", {}, []
                n.output_dtypes, n.output_shapes = [], None
            fused += 1
            break
    return fused


def optimize_placed(sg: StepGraph, options=None, fuse: bool = False) -> None:
    """The rewrites that need each node's device (after `placer.place`, before
    partitioning): with `options` as for `optimize` (L1 and `fuse`), a step's optimizer
    updates fused per device (`fuse_optimizer_updates`)."""
    fold, cse = _levels(options)
    if fuse and (fold or cse):
        fuse_optimizer_updates(sg)


FUSE_MAX_ELEMENTS = 1 << 16  # updates of variables up to this size fuse (_native.c CHUNK)


@functools.cache
def _fusable_updates() -> frozenset:
    """The update ops that have a `_Fused` form (ops/training_ops.py FUSABLE)."""
    return frozenset(op.removeprefix("_Fused") for op in op_registry.registered_ops()
                     if op.startswith("_FusedResourceApply"))


def _small_update(n: Node) -> bool:
    """Whether update `n`'s gradient (so its variable) has a static size of at most
    FUSE_MAX_ELEMENTS."""
    names = [a.name for a in op_registry.get(n.op).inputs]
    index = names.index("grad") if "grad" in names else names.index("delta")
    src, out = n.inputs[index]
    dims = _static_dims(src, out)
    return dims is not None and all(isinstance(d, int) for d in dims) and \
        int(np.prod(dims, dtype=np.int64)) <= FUSE_MAX_ELEMENTS


def fuse_optimizer_updates(sg: StepGraph) -> int:
    """Rewrites the dense updates of small variables (a static size of at most
    FUSE_MAX_ELEMENTS) of one rule on one device (ResourceApplyAdam, ResourceApplyMomentum
    or ResourceApplyGradientDescent nodes with the same type and attributes: an optimizer's
    `apply_gradients` makes one per variable) into one `_Fused<op>` node
    (ops/training_ops.py), whose kernel applies them all in one pass over the intra-op
    pool: one kernel call per step instead of one per variable (biases, a last layer's
    weights), and updates of one native chunk each, which would each run on one thread,
    spread over the pool's threads. The same values bit for bit. Bigger variables keep
    their own update, which the static schedule runs as soon as its gradient exists, so
    that big gradients die early (the fused node runs once every gradient it takes
    exists). Only updates none of which waits on another
    (data or control, through any path) fuse; what waited on one of them waits on the
    fused node, which waits on everything any of them waited on. Updates that are fetched
    or run as targets keep their identity, and steps with control flow (a conditional
    update would take the others into its branch's deadness) are left alone. Needs the
    placer's devices (`Node.device`); the fused node keeps the first update's name. Returns
    how many nodes were fused away."""
    if any(flow_kind(n.op) is not None for n in sg.nodes):
        return 0
    fusable = _fusable_updates()
    held = {n for n, _ in sg.fetches} | set(sg.targets) | set(sg.args)
    groups: dict[tuple, list[Node]] = {}
    for n in sg.nodes:
        if n.op in fusable and n not in held and n.device and \
                _small_update(n):
            key = (n.op, n.device, n.attrs["T"], n.attrs.get("use_locking", False),
                   n.attrs.get("use_nesterov", False))
            groups.setdefault(key, []).append(n)
    groups = {k: g for k, g in groups.items() if len(g) > 1}
    if not groups:
        return 0
    order, _ = topological_order(sg.nodes, skip_back_edges=True)
    removed: dict[Node, Node] = {}
    for members in groups.values():
        bit = {n: 1 << i for i, n in enumerate(members)}
        above: dict[Node, int] = {}  # node -> the members it depends on (or is)
        for n in order:
            mask = bit.get(n, 0)
            for src, _ in n.inputs:
                mask |= above.get(src, 0)
            for c in n.control_inputs:
                mask |= above.get(c, 0)
            above[n] = mask
        chosen, taken = [], 0
        for n in order:  # in topological order: a member after those it depends on
            if n in bit and not (above[n] & ~bit[n] & taken):
                chosen.append(n)
                taken |= bit[n]
        if len(chosen) < 2:
            continue
        first = chosen[0]
        columns = list(zip(*(m.inputs for m in chosen), strict=True))
        first.inputs = [e for col in columns for e in col]
        first.control_inputs = list(dict.fromkeys(c for m in chosen for c in m.control_inputs))
        first.op = "_Fused" + first.op
        first.attrs = dict(first.attrs, N=len(chosen))
        for m in chosen[1:]:
            removed[m] = first
    if not removed:
        return 0
    for n in sg.nodes:
        if any(c in removed for c in n.control_inputs):
            n.control_inputs = list(dict.fromkeys(removed.get(c, c) for c in n.control_inputs))
    sg.remove(removed)
    return len(removed)


def unread_to_no_op(sg: StepGraph) -> int:
    """Turns stateless nodes whose outputs no node reads and no fetch takes (only control
    edges keep them) into NoOps with their inputs' producers as control inputs, so that
    what waited on them still waits on what they waited on; returns how many. Whole unread
    chains go (consumers first: a node only the NoOps made here read is unread too)."""
    readers: dict[Node, int] = {}
    for n in sg.nodes:
        for src, _ in n.inputs:
            readers[src] = readers.get(src, 0) + 1
    for n, _ in sg.fetches:
        readers[n] = readers.get(n, 0) + 1
    kept = set(sg.targets) | set(sg.args)
    changed = 0
    for n in reversed(sg.nodes):  # (consumers after their producers in sg.nodes)
        if readers.get(n) or n in kept or not n.output_dtypes or not _stateless(n):
            continue
        # A Switch is live while one of its outputs is dead: a control edge from it would
        # not carry the deadness the data edge does (tf.cond's pivots are such nodes).
        if any(flow_kind(s.op) == "switch" for s, _ in n.inputs):
            continue
        for src, _ in n.inputs:
            readers[src] -= 1
        n.control_inputs = list(dict.fromkeys(n.control_inputs + [s for s, _ in n.inputs]))
        n.op, n.attrs, n.inputs, n.output_dtypes, n.output_shapes = "NoOp", {}, [], [], None
        changed += 1
    return changed


def eliminate_dead_code(sg: StepGraph) -> int:
    """Drops nodes that no fetch, target, feed or stateful node needs."""
    keep: set[Node] = set()
    stack = [n for n, _ in sg.fetches] + list(sg.targets) + list(sg.args)
    while stack:
        n = stack.pop()
        if n in keep:
            continue
        keep.add(n)
        stack.extend(s for s, _ in n.inputs)
        stack.extend(n.control_inputs)
    dead = [n for n in sg.nodes if n not in keep]
    if dead:
        sg.remove(dead)
    return len(dead)
