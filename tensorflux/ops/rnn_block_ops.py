"""The fused recurrent ops of TensorFlow's contrib.rnn: LSTMBlockCell (one LSTM step, every
gate from one matmul on [x, h_prev]), BlockLSTM / BlockLSTMV2 (a whole time-major sequence),
GRUBlockCell (one GRU step), and the Grad ops their gradients call. OpDefs as TensorFlow's,
so GraphDefs it writes import and run. Kernels: tensorflux/kernels/cpu/rnn_block_ops.py.

LSTM step, with gates = [x, h_prev] w + b split in four blocks of `cell_size` columns
(order i, ci, f, o for LSTMBlockCell and BlockLSTM; i, f, ci, o for BlockLSTMV2):
    i = sigmoid(gi + cs_prev * wci)      (peephole terms only when use_peephole)
    f = sigmoid(gf + forget_bias + cs_prev * wcf)
    ci = tanh(gc); cs = clip(i * ci + f * cs_prev, cell_clip)   (no clip when cell_clip <= 0)
    o = sigmoid(go + cs * wco); co = tanh(cs); h = o * co
BlockLSTMV2 has no forget_bias attr (0) and cell_clip defaults to 0 (no clipping). BlockLSTM
runs `seq_len_max` steps; later steps of every output are zeros. As in TensorFlow, the
gradients use only the cs and h outputs' gradients and ignore the clipping.

GRU step: r, u = split(sigmoid([x, h_prev] w_ru + b_ru)); c = tanh([x, r * h_prev] w_c + b_c);
h = u * h_prev + (1 - u) * c.
"""

from __future__ import annotations

from tensorflux.framework.common_shapes import checked_dims, merge_dim
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.ops import joining_ops, matrix_ops, reduction_ops, slicing_ops

__all__ = ["lstm_block_cell", "block_lstm", "block_lstm_v2", "gru_block_cell"]

_LSTM_IN = ["x: T", "cs_prev: T", "h_prev: T", "w: T", "wci: T", "wcf: T", "wco: T", "b: T"]
_LSTM_OUT = ["i: T", "cs: T", "f: T", "o: T", "ci: T", "co: T", "h: T"]
_HALF_FLOAT = "T: {half, float}"
_PEEP = "use_peephole: bool = false"
_PEEP_REQUIRED = "use_peephole: bool"


def _dim(t, rank, k):
    dims = checked_dims(t, rank=rank)
    return None if dims is None else dims[k]


def _lstm_cell_shape(op):
    x, cs_prev, h_prev, w, wci, wcf, wco, b = op.inputs[:8]
    batch = _dim(x, 2, 0)
    n = _dim(cs_prev, 2, 1)
    batch = merge_dim(batch, _dim(cs_prev, 2, 0))
    batch = merge_dim(batch, _dim(h_prev, 2, 0))
    n = merge_dim(n, _dim(h_prev, 2, 1))
    checked_dims(w, rank=2)
    for v in (wci, wcf, wco, b):
        checked_dims(v, rank=1)
    return [batch, n], n


def _lstm_block_cell_shape(op):
    out, _ = _lstm_cell_shape(op)
    return [out] * 7


def _lstm_block_cell_grad_shape(op):
    (batch, n), _ = _lstm_cell_shape(op)
    return [[batch, n], [batch, None if n is None else 4 * n], [n], [n], [n]]


def _seq_shape(op):
    checked_dims(op.inputs[0], rank=0)
    x = checked_dims(op.inputs[1], rank=3)
    time_len, batch = (None, None) if x is None else (x[0], x[1])
    cs = checked_dims(op.inputs[2], rank=2)
    n = None if cs is None else cs[1]
    batch = merge_dim(batch, None if cs is None else cs[0])
    h = checked_dims(op.inputs[3], rank=2)
    if h is not None:
        batch, n = merge_dim(batch, h[0]), merge_dim(n, h[1])
    checked_dims(op.inputs[4], rank=2)
    for v in op.inputs[5:9]:
        checked_dims(v, rank=1)
    return time_len, batch, n


def _block_lstm_shape(op):
    return [list(_seq_shape(op))] * 7


def _block_lstm_grad_shape(op):
    _seq_shape(op)
    return [op.inputs[k].shape for k in range(1, 9)]


def _gru_shape(op):
    x, h_prev = op.inputs[0], op.inputs[1]
    batch = merge_dim(_dim(x, 2, 0), _dim(h_prev, 2, 0))
    n = _dim(h_prev, 2, 1)
    for k in (2, 3):
        checked_dims(op.inputs[k], rank=2)
    for k in (4, 5):
        checked_dims(op.inputs[k], rank=1)
    return batch, n


def _gru_block_cell_shape(op):
    batch, n = _gru_shape(op)
    return [[batch, n]] * 4


def _gru_block_cell_grad_shape(op):
    batch, n = _gru_shape(op)
    return [[batch, _dim(op.inputs[0], 2, 1)], [batch, n], [batch, n],
            [batch, None if n is None else 2 * n]]


define_op("LSTMBlockCell", inputs=_LSTM_IN, outputs=_LSTM_OUT,
          attrs=["forget_bias: float = 1", "cell_clip: float = 3", _PEEP, _HALF_FLOAT],
          shape_fn=_lstm_block_cell_shape)
define_op("LSTMBlockCellGrad", inputs=_LSTM_IN + _LSTM_OUT[:6] + ["cs_grad: T", "h_grad: T"],
          outputs=["cs_prev_grad: T", "dicfo: T", "wci_grad: T", "wcf_grad: T",
                   "wco_grad: T"],
          attrs=[_PEEP_REQUIRED, _HALF_FLOAT], shape_fn=_lstm_block_cell_grad_shape)

_SEQ_IN = ["seq_len_max: int64"] + _LSTM_IN
_SEQ_GRAD_IN = _SEQ_IN + _LSTM_OUT + ["cs_grad: T", "h_grad: T"]
_SEQ_GRAD_OUT = ["x_grad: T", "cs_prev_grad: T", "h_prev_grad: T", "w_grad: T",
                 "wci_grad: T", "wcf_grad: T", "wco_grad: T", "b_grad: T"]
define_op("BlockLSTM", inputs=_SEQ_IN, outputs=_LSTM_OUT,
          attrs=["forget_bias: float = 1", "cell_clip: float = 3", _PEEP, _HALF_FLOAT],
          shape_fn=_block_lstm_shape)
define_op("BlockLSTMV2", inputs=_SEQ_IN, outputs=_LSTM_OUT,
          attrs=["cell_clip: float = 0", _PEEP, _HALF_FLOAT], shape_fn=_block_lstm_shape)
define_op("BlockLSTMGrad", inputs=_SEQ_GRAD_IN, outputs=_SEQ_GRAD_OUT,
          attrs=[_PEEP_REQUIRED, _HALF_FLOAT], shape_fn=_block_lstm_grad_shape)
define_op("BlockLSTMGradV2", inputs=_SEQ_GRAD_IN, outputs=_SEQ_GRAD_OUT,
          attrs=[_PEEP_REQUIRED, _HALF_FLOAT], shape_fn=_block_lstm_grad_shape)

define_op("GRUBlockCell", inputs=["x: T", "h_prev: T", "w_ru: T", "w_c: T", "b_ru: T",
                                  "b_c: T"],
          outputs=["r: T", "u: T", "c: T", "h: T"], attrs=["T: {float}"],
          shape_fn=_gru_block_cell_shape)
define_op("GRUBlockCellGrad", inputs=["x: T", "h_prev: T", "w_ru: T", "w_c: T", "b_ru: T",
                                      "b_c: T", "r: T", "u: T", "c: T", "d_h: T"],
          outputs=["d_x: T", "d_h_prev: T", "d_c_bar: T", "d_r_bar_u_bar: T"],
          attrs=["T: {float}"], shape_fn=_gru_block_cell_grad_shape)

for _op in ("LSTMBlockCellGrad", "BlockLSTMGrad", "BlockLSTMGradV2", "GRUBlockCellGrad"):
    not_differentiable(_op)


# ---- wrappers (the generated functions' keyword names) -------------------------------------


def lstm_block_cell(x, cs_prev, h_prev, w, wci, wcf, wco, b, forget_bias=1.0, cell_clip=3.0,
                    use_peephole=False, name=None):
    """One fused LSTM step; returns (i, cs, f, o, ci, co, h)."""
    return apply_op("LSTMBlockCell", x=x, cs_prev=cs_prev, h_prev=h_prev, w=w, wci=wci,
                    wcf=wcf, wco=wco, b=b, forget_bias=forget_bias, cell_clip=cell_clip,
                    use_peephole=use_peephole, name=name)


def block_lstm(seq_len_max, x, cs_prev, h_prev, w, wci, wcf, wco, b, forget_bias=1.0,
               cell_clip=3.0, use_peephole=False, name=None):
    """The fused LSTM over a time-major sequence; returns (i, cs, f, o, ci, co, h)."""
    return apply_op("BlockLSTM", seq_len_max=seq_len_max, x=x, cs_prev=cs_prev,
                    h_prev=h_prev, w=w, wci=wci, wcf=wcf, wco=wco, b=b,
                    forget_bias=forget_bias, cell_clip=cell_clip, use_peephole=use_peephole,
                    name=name)


def block_lstm_v2(seq_len_max, x, cs_prev, h_prev, w, wci, wcf, wco, b, cell_clip=0.0,
                  use_peephole=False, name=None):
    """BlockLSTM with gate order i, f, ci, o and no forget bias."""
    return apply_op("BlockLSTMV2", seq_len_max=seq_len_max, x=x, cs_prev=cs_prev,
                    h_prev=h_prev, w=w, wci=wci, wcf=wcf, wco=wco, b=b, cell_clip=cell_clip,
                    use_peephole=use_peephole, name=name)


def gru_block_cell(x, h_prev, w_ru, w_c, b_ru, b_c, name=None):
    """One fused GRU step; returns (r, u, c, h)."""
    return apply_op("GRUBlockCell", x=x, h_prev=h_prev, w_ru=w_ru, w_c=w_c, b_ru=b_ru,
                    b_c=b_c, name=name)


# ---- gradients ------------------------------------------------------------------------------


def _split_columns(t, depth):
    """(t[:, :depth], t[:, depth:]) of a matrix."""
    return (slicing_ops.strided_slice(t, [0, 0], [0, depth], [1, 1], begin_mask=3,
                                      end_mask=1),
            slicing_ops.strided_slice(t, [0, depth], [0, 0], [1, 1], begin_mask=1,
                                      end_mask=3))


def _input_depth(x, w, cs_prev):
    """The input size: x's last dim when static, else w's rows less the cell size."""
    depth = x.shape.as_list()[-1] if x.shape.ndims is not None else None
    if depth is None:
        rows, n = w.shape.as_list()[0] if w.shape.ndims else None, \
            cs_prev.shape.as_list()[-1] if cs_prev.shape.ndims else None
        if rows is None or n is None:
            raise ValueError("the fused RNN op's gradient needs the input size statically")
        depth = rows - n
    return depth


@gradient("LSTMBlockCell")
def _lstm_block_cell_grad(op, *grads):
    x, cs_prev, h_prev, w, wci, wcf, wco, b = op.inputs
    i, cs, f, o, ci, co, _ = op.outputs
    cs_grad, h_grad = grads[1], grads[6]
    cs_prev_grad, dicfo, wci_grad, wcf_grad, wco_grad = apply_op(
        "LSTMBlockCellGrad", x=x, cs_prev=cs_prev, h_prev=h_prev, w=w, wci=wci, wcf=wcf,
        wco=wco, b=b, i=i, cs=cs, f=f, o=o, ci=ci, co=co, cs_grad=cs_grad, h_grad=h_grad,
        use_peephole=op.attrs["use_peephole"])
    xh = joining_ops.concat([x, h_prev], 1)
    xh_grad = matrix_ops.matmul(dicfo, w, transpose_b=True)
    x_grad, h_prev_grad = _split_columns(xh_grad, _input_depth(x, w, cs_prev))
    w_grad = matrix_ops.matmul(xh, dicfo, transpose_a=True)
    b_grad = reduction_ops.reduce_sum(dicfo, 0)
    return [x_grad, cs_prev_grad, h_prev_grad, w_grad, wci_grad, wcf_grad, wco_grad, b_grad]


def _block_lstm_grad(op, *grads):
    seq_len_max, x, cs_prev, h_prev, w, wci, wcf, wco, b = op.inputs
    i, cs, f, o, ci, co, h = op.outputs
    outs = apply_op(
        "BlockLSTMGrad" if op.type == "BlockLSTM" else "BlockLSTMGradV2",
        seq_len_max=seq_len_max, x=x, cs_prev=cs_prev, h_prev=h_prev, w=w, wci=wci, wcf=wcf,
        wco=wco, b=b, i=i, cs=cs, f=f, o=o, ci=ci, co=co, h=h, cs_grad=grads[1],
        h_grad=grads[6], use_peephole=op.attrs["use_peephole"])
    return [None] + list(outs)


gradient("BlockLSTM")(_block_lstm_grad)
gradient("BlockLSTMV2")(_block_lstm_grad)


@gradient("GRUBlockCell")
def _gru_block_cell_grad(op, *grads):
    x, h_prev, w_ru, w_c, b_ru, b_c = op.inputs
    r, u, c, _ = op.outputs
    d_x, d_h_prev, d_c_bar, d_r_bar_u_bar = apply_op(
        "GRUBlockCellGrad", x=x, h_prev=h_prev, w_ru=w_ru, w_c=w_c, b_ru=b_ru, b_c=b_c, r=r,
        u=u, c=c, d_h=grads[3])
    x_h_prev = joining_ops.concat([x, h_prev], 1)
    d_w_ru = matrix_ops.matmul(x_h_prev, d_r_bar_u_bar, transpose_a=True)
    d_b_ru = reduction_ops.reduce_sum(d_r_bar_u_bar, 0)
    x_h_prevr = joining_ops.concat([x, h_prev * r], 1)
    d_w_c = matrix_ops.matmul(x_h_prevr, d_c_bar, transpose_a=True)
    d_b_c = reduction_ops.reduce_sum(d_c_bar, 0)
    return [d_x, d_h_prev, d_w_ru, d_w_c, d_b_ru, d_b_c]


