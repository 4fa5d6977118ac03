"""Post-training quantization: a frozen float GraphDef becomes an eight-bit one.

    ranges = calibrate(graph_def, {"input:0": calibration_images})
    qgraph = quantize_graph_def(graph_def, ["logits"], ranges)

The rewrite (what TensorFlow's eight-bit graph transform does, with calibrated ranges in
place of ranges measured at run time):

    x (float) -QuantizeV2-> quint8 -QuantizedConv2D / QuantizedMatMul (quint8 weights)-> qint32
      -Requantize-> quint8 -QuantizedBiasAdd (quint8 bias)-> qint32 -Requantize-> quint8
      -QuantizedRelu-> quint8 -> (the next layer takes it as is) ... -Dequantize-> float

- Conv2D (NHWC, no dilation) and MatMul whose weights are Consts are quantized; so are a
  BiasAdd, Add or AddV2 of a 1-D Const onto a quantized value, Relu, Relu6 and MaxPool
  (NHWC) of one, and a Reshape or Identity of one (the integers reshape, the range goes
  along).
- Every Requantize asks for the range calibration saw for that tensor (widened to contain
  0); a bias add followed by its only consumer Relu/Relu6 is requantized straight into the
  activation's range [0, max], so no level is spent on values the Relu clears.
- Fused (the default; `fuse=False` keeps the chain above): a Conv2D or MatMul whose only
  consumer is a bias add of a 1-D Const (and that bias add's only consumer a Relu, or none
  that is a Relu/Relu6), becomes one QuantizedConv2DWithBias[AndRelu]AndRequantize /
  QuantizedMatMulWithBias[AndRelu]AndRequantize: the float bias is added to the 32-bit
  accumulator (at its precision, not through an 8-bit bias and a second Requantize) and
  the sum requantized straight into the bias add's (or the Relu's [0, max]) range, in one
  pass over each block of the product while it is in cache.
- Weights and biases are stored as quint8 Consts (MIN_FIRST, their own min/max), a quarter
  of their float bytes; activations are quantized with MIN_FIRST so that 0 is exact.
- A graph output that no node consumes is dequantized straight from its qint32 result.
- Any other node is copied as it is, with float inputs (a quantized value is dequantized
  first, once). A quantized value that is a graph output, or that feeds a float node, is
  dequantized under the original node's name, so fetches by name keep working.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes, importer, op_registry, tensor_util
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import array_ops, constant_op, quantization_ops, quantized_fused_ops
from tensorflux.protos import graph_pb2
from tensorflux.runtime import session as session_lib

__all__ = ["calibrate", "quantize_graph_def", "const_bytes"]

_QUINT8 = dtypes.quint8
_MODE = "MIN_FIRST"
_BIAS_OPS = ("BiasAdd", "Add", "AddV2")


def _tensor_name(name: str) -> str:
    return name if ":" in name else f"{name}:0"


def const_bytes(graph_def) -> int:
    """The bytes of every Const tensor in `graph_def` (weights, biases, ranges, shapes)."""
    return sum(tensor_util.MakeNdarray(n.attr["value"].tensor).nbytes
               for n in graph_def.node if n.op == "Const")


def calibrate(graph_def, feeds, tensor_names=None, batch_size=256) -> dict:
    """Runs the float graph on calibration inputs and records each tensor's range.

    Args:
      graph_def: the frozen float GraphDef.
      feeds: {tensor name in graph_def: NumPy batch}; all batches have the same length.
      tensor_names: the tensors to record; default every float32 output of a non-Const node.
      batch_size: examples per run (the ranges are over all of them).

    Returns:
      {tensor name "node:0": (min, max)} as Python floats.
    """
    g = graph_lib.Graph()
    with g.as_default():
        importer.import_graph_def(graph_def, name="")
    if tensor_names is None:
        tensor_names = [t.name for op in g.get_operations() if op.type != "Const"
                        for t in op.outputs if t.dtype == dtypes.float32]
    feeds = {_tensor_name(k): np.asarray(v) for k, v in feeds.items()}
    n = len(next(iter(feeds.values())))
    lo = {name: np.inf for name in tensor_names}
    hi = {name: -np.inf for name in tensor_names}
    with session_lib.Session(graph=g) as sess:
        for start in range(0, n, batch_size):
            values = sess.run(list(tensor_names),
                              {k: v[start:start + batch_size] for k, v in feeds.items()})
            for name, v in zip(tensor_names, values, strict=True):
                if np.size(v):
                    lo[name] = min(lo[name], float(np.min(v)))
                    hi[name] = max(hi[name], float(np.max(v)))
    return {name: (lo[name], hi[name]) for name in tensor_names if lo[name] <= hi[name]}


def quantize_graph_def(graph_def, output_names, ranges, name_suffix="eightbit", fuse=True):
    """The eight-bit version of a frozen float graph (see the module docstring).

    Args:
      graph_def: the frozen float GraphDef (weights as Consts).
      output_names: the node names the result must still compute (float, same names).
      ranges: calibrated ranges, as `calibrate` returns them.
      name_suffix: the name scope, under each original node, of its quantized ops.
      fuse: whether a product with its bias add (and Relu) becomes one fused op.

    Returns:
      A GraphDef with the same feeds and outputs, computing in eight bits.

    Raises:
      KeyError: an output or an input of a rewritten node is missing from the graph, or a
        tensor that must be quantized has no calibrated range.
    """
    g = graph_lib.Graph()
    with g.as_default():
        rewriter = _Rewriter(graph_def, ranges, name_suffix,
                             [_tensor_name(n).split(":")[0] for n in output_names], fuse)
        for name in output_names:
            rewriter.float_tensor(_tensor_name(name))
    out = graph_pb2.GraphDef()
    out.CopyFrom(g.as_graph_def())
    return out


class _Rewriter:
    """Builds the quantized graph on demand, from the outputs back (in the default graph).

    `_float` maps an original tensor name to its float tensor in the new graph, `_quant` to
    its (quint8 values, min, max) there; each original tensor gets at most one of each.
    """

    def __init__(self, graph_def, ranges, suffix, outputs=(), fuse=False):
        self._nodes = {n.name: n for n in graph_def.node}
        self._consumers: dict[str, list] = {}
        for n in graph_def.node:
            for inp in n.input:
                self._consumers.setdefault(inp.lstrip("^").split(":")[0], []).append(n)
        self._ranges = ranges
        self._suffix = suffix
        self._float: dict[str, object] = {}
        self._quant: dict[str, tuple] = {}
        self._ops: dict[str, object] = {}
        self._outputs = set(outputs)
        self._fuse = fuse

    # ---- lookups ---------------------------------------------------------------------

    def _node(self, tensor_name):
        return self._nodes[tensor_name.split(":")[0]]

    def _const(self, tensor_name):
        node = self._nodes.get(_tensor_name(tensor_name).split(":")[0])
        if node is None or node.op != "Const":
            return None
        return tensor_util.MakeNdarray(node.attr["value"].tensor)

    def _range(self, tensor_name, floor_zero=False):
        """The calibrated range widened to contain 0 (and not empty)."""
        lo, hi = self._ranges[tensor_name]
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        if floor_zero:
            lo = 0.0
        return lo, hi if hi > lo else lo + 1e-6

    def _scope(self, node):
        return f"{node.name}/{self._suffix}"

    # ---- the two views of a tensor ---------------------------------------------------

    def float_tensor(self, name):
        """The float tensor standing for original tensor `name` in the new graph."""
        name = _tensor_name(name)
        if name in self._float:
            return self._float[name]
        node = self._node(name)
        if name not in self._quant:
            self._rewrite(node)
        if name in self._quant:
            values, lo, hi = self._quant[name]
            self._float[name] = quantization_ops.dequantize(values, lo, hi, mode=_MODE,
                                                            name=node.name)
        else:
            self._float[name] = self._copy(node).outputs[int(name.split(":")[1])]
        return self._float[name]

    def quantized(self, name):
        """(quint8 values, min, max) for original tensor `name`, quantizing if need be."""
        name = _tensor_name(name)
        if name not in self._quant:
            node = self._node(name)
            self._rewrite(node)
            if name not in self._quant:
                lo, hi = self._range(name)
                out = quantization_ops.quantize_v2(
                    self.float_tensor(name), lo, hi, _QUINT8, mode=_MODE,
                    name=f"{node.name}/{self._suffix}/quantize")
                self._quant[name] = tuple(out)
        return self._quant[name]

    def _is_quantized(self, name):
        """Whether original tensor `name` comes out of the rewrite as a quantized value."""
        name = _tensor_name(name)
        if name not in self._quant and name not in self._float:
            self._rewrite(self._node(name))
        return name in self._quant

    # ---- node rewrites ---------------------------------------------------------------

    def _rewrite(self, node):
        """Records the node's quantized output if one of the rules applies."""
        key = f"{node.name}:0"
        if key in self._quant or node.name in self._ops:
            return
        self._ops[node.name] = None  # visiting: a float copy may follow
        rule = {"Conv2D": self._conv2d, "MatMul": self._matmul, "Relu": self._relu,
                "Relu6": self._relu, "MaxPool": self._max_pool, "Reshape": self._pass_through,
                "Identity": self._pass_through}.get(node.op)
        if node.op in _BIAS_OPS:
            rule = self._bias_add
        if rule is not None:
            result = rule(node)
            if result is not None:
                self._quant[key] = tuple(result)

    def _quantized_weights(self, values, scope):
        values = np.asarray(values, np.float32)
        lo, hi = float(min(values.min(), 0.0)), float(max(values.max(), 0.0))
        with graph_lib.Graph().as_default():
            q = quantization_ops.quantize_v2(values, lo, hi, _QUINT8, mode=_MODE)
            with session_lib.Session() as sess:
                data, qlo, qhi = sess.run(list(q))
        return (constant_op.constant(data, dtype=_QUINT8, name=f"{scope}/weights"),
                constant_op.constant(qlo, name=f"{scope}/weights_min"),
                constant_op.constant(qhi, name=f"{scope}/weights_max"))

    def _requantized(self, acc, name, scope, floor_zero=False):
        node = name.split(":")[0]
        if node in self._outputs and not self._consumers.get(node):
            return acc  # a graph output: dequantized from the 32-bit accumulator, no loss
        lo, hi = self._range(name, floor_zero)
        return quantization_ops.requantize(*acc, lo, hi, out_type=_QUINT8,
                                           name=f"{scope}/requantize")

    def _conv2d(self, node):
        w = self._const(node.input[1])
        attr = node.attr
        if w is None or attr["data_format"].s not in (b"", b"NHWC") or \
                attr["padding"].s not in (b"SAME", b"VALID") or \
                any(d != 1 for d in attr["dilations"].list.i):
            return None
        scope = self._scope(node)
        x = self.quantized(node.input[0])
        wq, wlo, whi = self._quantized_weights(w, scope)
        acc = quantization_ops.quantized_conv2d(
            x[0], wq, x[1], x[2], wlo, whi, strides=list(attr["strides"].list.i),
            padding=attr["padding"].s.decode(), name=scope)
        return self._requantized(acc, f"{node.name}:0", scope)

    def _matmul(self, node):
        w = self._const(node.input[1])
        if w is None or node.attr["transpose_a"].b:
            return None
        scope = self._scope(node)
        x = self.quantized(node.input[0])
        wq, wlo, whi = self._quantized_weights(w, scope)
        acc = quantization_ops.quantized_mat_mul(x[0], wq, x[1], x[2], wlo, whi,
                                                 transpose_b=node.attr["transpose_b"].b,
                                                 name=scope)
        return self._requantized(acc, f"{node.name}:0", scope)

    def _bias_operands(self, node):
        """(x input name, 1-D Const bias) of a bias add of a Const, or None."""
        if node.op == "BiasAdd" and node.attr["data_format"].s not in (b"", b"NHWC"):
            return None
        x_name, b_name = node.input[0], node.input[1]
        b = self._const(b_name)
        if b is None and node.op != "BiasAdd":
            x_name, b_name = b_name, x_name
            b = self._const(b_name)
        return None if b is None or b.ndim != 1 else (x_name, b)

    def _only_consumer(self, node, consumer):
        users = self._consumers.get(node.name, [])
        return len(users) == 1 and users[0] is consumer and node.name not in self._outputs

    def _fusable(self, bias_node):
        """(product node, weights, bias) when bias_node adds a Const bias to the only use of
        a Conv2D / MatMul the rules quantize; else None."""
        if not self._fuse or bias_node.op not in _BIAS_OPS:
            return None
        operands = self._bias_operands(bias_node)
        if operands is None or operands[0].startswith("^") or \
                _tensor_name(operands[0]).split(":")[1] != "0":
            return None
        prod = self._nodes.get(operands[0].split(":")[0])
        if prod is None or prod.op not in ("Conv2D", "MatMul") or \
                not self._only_consumer(prod, bias_node) or not self._product_ok(prod):
            return None
        w = self._const(prod.input[1])
        channels = w.shape[0 if prod.op == "MatMul" and prod.attr["transpose_b"].b else -1]
        b = operands[1]
        return (prod, w, b) if b.shape == (channels,) else None

    def _product_ok(self, node):
        if self._const(node.input[1]) is None:
            return False
        if node.op == "MatMul":
            return not node.attr["transpose_a"].b
        attr = node.attr
        return attr["data_format"].s in (b"", b"NHWC") and \
            attr["padding"].s in (b"SAME", b"VALID") and \
            all(d == 1 for d in attr["dilations"].list.i)

    def _fused(self, bias_node, relu_node=None):
        """The fused op for product -> bias_node (-> relu_node), or None."""
        found = self._fusable(bias_node)
        if found is None:
            return None
        prod, w, b = found
        last = relu_node if relu_node is not None else bias_node
        scope = self._scope(last)
        x = self.quantized(prod.input[0])
        wq, wlo, whi = self._quantized_weights(w, scope)
        bias = constant_op.constant(np.asarray(b, np.float32), name=f"{scope}/bias")
        lo, hi = self._range(f"{last.name}:0", floor_zero=relu_node is not None)
        if prod.op == "Conv2D":
            return quantized_fused_ops.quantized_conv2d_with_bias_and_requantize(
                x[0], wq, bias, x[1], x[2], wlo, whi, lo, hi,
                strides=list(prod.attr["strides"].list.i), padding=prod.attr["padding"].s.decode(),
                relu=relu_node is not None, name=scope)
        return quantized_fused_ops.quantized_mat_mul_with_bias_and_requantize(
            x[0], wq, bias, x[1], x[2], wlo, whi, lo, hi, relu=relu_node is not None,
            transpose_b=prod.attr["transpose_b"].b, name=scope)

    def _bias_add(self, node):
        operands = self._bias_operands(node)
        if operands is None:
            return None
        users = self._consumers.get(node.name, [])
        relu_next = len(users) == 1 and users[0].op in ("Relu", "Relu6")
        graph_output = node.name in self._outputs and not users
        if not relu_next and not graph_output:
            fused = self._fused(node)
            if fused is not None:
                return fused
        x_name, b = operands
        if not self._is_quantized(x_name):
            return None
        scope = self._scope(node)
        x = self.quantized(x_name)
        bq, blo, bhi = self._quantized_weights(b, scope)
        acc = quantization_ops.quantized_bias_add(x[0], bq, x[1], x[2], blo, bhi,
                                                  out_type=dtypes.qint32, name=scope)
        # Requantize straight into the following Relu's range when it is the only consumer.
        users = self._consumers.get(node.name, [])
        if len(users) == 1 and users[0].op in ("Relu", "Relu6"):
            return self._requantized(acc, f"{users[0].name}:0", scope, floor_zero=True)
        return self._requantized(acc, f"{node.name}:0", scope)

    def _relu(self, node):
        src = self._nodes.get(node.input[0].split(":")[0])
        if node.op == "Relu" and src is not None and src.op in _BIAS_OPS and \
                node.input[0] in (src.name, f"{src.name}:0") and self._only_consumer(src, node):
            fused = self._fused(src, node)
            if fused is not None:
                return fused
        if not self._is_quantized(node.input[0]):
            return None
        fn = quantization_ops.quantized_relu if node.op == "Relu" else \
            quantization_ops.quantized_relu6
        return fn(*self.quantized(node.input[0]), out_type=_QUINT8, name=self._scope(node))

    def _max_pool(self, node):
        attr = node.attr
        if attr["data_format"].s not in (b"", b"NHWC") or \
                attr["padding"].s not in (b"SAME", b"VALID") or \
                not self._is_quantized(node.input[0]):
            return None
        return quantization_ops.quantized_max_pool(
            *self.quantized(node.input[0]), ksize=list(attr["ksize"].list.i),
            strides=list(attr["strides"].list.i), padding=attr["padding"].s.decode(),
            name=self._scope(node))

    def _pass_through(self, node):
        """Reshape / Identity of a quantized value: the integers move, the range stays."""
        if not self._is_quantized(node.input[0]):
            return None
        values, lo, hi = self.quantized(node.input[0])
        if node.op == "Identity":
            return values, lo, hi
        shape = self._const(node.input[1])
        shape = shape if shape is not None else self.float_tensor(node.input[1])
        return array_ops.reshape(values, shape, name=self._scope(node)), lo, hi

    # ---- everything else -------------------------------------------------------------

    def _copy(self, node):
        """The node itself in the new graph, its inputs mapped to float tensors."""
        if self._ops.get(node.name) is not None:
            return self._ops[node.name]
        input_map = {}
        for inp in node.input:
            if inp.startswith("^"):
                src = self._nodes[inp[1:]]
                has_outputs = bool(op_registry.get(src.op).outputs)
                input_map[inp] = self.float_tensor(src.name).op if has_outputs else \
                    self._copy(src)
            else:
                input_map[inp] = self.float_tensor(inp)
        single = graph_pb2.GraphDef()
        single.node.add().CopyFrom(node)
        importer.extend_graph(single, input_map=input_map or None)  # keeps the name
        op = graph_lib.get_default_graph().get_operation_by_name(node.name)
        self._ops[node.name] = op
        return op
