"""CPU kernels of the fused recurrent ops (contract in tensorflux/ops/rnn_block_ops.py):
LSTMBlockCell, BlockLSTM, BlockLSTMV2, GRUBlockCell and their Grad ops, in NumPy.

One matmul computes every gate of a step (BlockLSTM multiplies the inputs of all steps in
one matmul up front, then one [batch, units] x [units, 4 units] product per step); the gate
nonlinearities and the cell update are fused elementwise expressions. Half data is computed
in float32. Gate layout of the 4-unit axis: "icfo" (input, candidate, forget, output) for
LSTMBlockCell / BlockLSTM, "ifco" for BlockLSTMV2.
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu._nn_common import _invalid, _narrow, _widen
from tensorflux.kernels.registry import kernel_factory

# position of (i, ci, f, o) blocks along the gates axis, by layout
_ICFO = (0, 1, 2, 3)
_IFCO = (0, 2, 1, 3)


def _input_products(a, b):
    """a @ b over all time steps at once; a large one in blocks of rows (independent rows:
    the values of one product) that check the step between them."""
    out = np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))
    for lo, hi in interrupt.spans(a.shape[0], 2 * a.shape[1] * b.shape[1],
                                  elements=int(interrupt.CHUNK_FLOPS)):
        np.matmul(a[lo:hi], b, out=out[lo:hi])
    return out


def _weight_products(a, b):
    """a.T @ b summed over all time steps: one product (its sums cannot be cut without
    changing them), abandoned when the step must end (interrupt.abandonable)."""
    return interrupt.abandonable(np.matmul, a.T, b, work=2.0 * a.size * b.shape[1])


def _sigmoid(x):
    return 0.5 * np.tanh(0.5 * x) + 0.5


def _blocks(g, layout, n):
    return tuple(g[:, k * n:(k + 1) * n] for k in layout)


def _pack(parts, layout, n):
    """[batch, 4n] from (di, dci, df, do) in `layout` order."""
    out = np.empty((parts[0].shape[0], 4 * n), parts[0].dtype)
    for part, k in zip(parts, layout, strict=True):
        out[:, k * n:(k + 1) * n] = part
    return out


def _check_lstm(x, cs_prev, h_prev, w, wci, wcf, wco, b):
    """(batch, input size, units) after checking the shapes against each other."""
    if x.ndim != 2 or cs_prev.ndim != 2 or h_prev.ndim != 2 or w.ndim != 2:
        raise _invalid("x, cs_prev, h_prev and w must be matrices")
    batch, depth = x.shape
    n = cs_prev.shape[1]
    if cs_prev.shape[0] != batch or h_prev.shape != (batch, n):
        raise _invalid(f"cs_prev {list(cs_prev.shape)} and h_prev {list(h_prev.shape)} must "
                       f"be [{batch}, cell_size]")
    if w.shape != (depth + n, 4 * n):
        raise _invalid(f"w.shape {list(w.shape)} must be [{depth + n}, {4 * n}]")
    if b.shape != (4 * n,):
        raise _invalid(f"b.shape {list(b.shape)} must be [{4 * n}]")
    for name, v in (("wci", wci), ("wcf", wcf), ("wco", wco)):
        if v.shape != (n,):
            raise _invalid(f"{name}.shape {list(v.shape)} must be [{n}]")
    return batch, depth, n


def _lstm_step(gates, cs_prev, wci, wcf, wco, forget_bias, cell_clip, peephole, layout, n):
    """(i, cs, f, o, ci, co, h) from the pre-activations `gates` = [x, h_prev] w + b."""
    gi, gc, gf, go = _blocks(gates, layout, n)
    if peephole:
        i = _sigmoid(gi + cs_prev * wci)
        f = _sigmoid(gf + forget_bias + cs_prev * wcf)
    else:
        i = _sigmoid(gi)
        f = _sigmoid(gf + forget_bias)
    ci = np.tanh(gc)
    cs = ci * i + cs_prev * f
    if cell_clip > 0:
        np.clip(cs, -cell_clip, cell_clip, out=cs)
    o = _sigmoid(go + cs * wco) if peephole else _sigmoid(go)
    co = np.tanh(cs)
    return i, cs, f, o, ci, co, co * o


def _lstm_step_grad(cs_prev, i, cs, f, o, ci, co, cs_grad, h_grad, wci, wcf, wco, peephole):
    """(cs_prev_grad, di, dci, df, do) of one step: the gradients of the pre-activations."""
    do = o * (1 - o) * h_grad * co
    dcs = (1 - co * co) * h_grad * o + cs_grad
    if peephole:
        dcs = dcs + do * wco
    dci = (1 - ci * ci) * dcs * i
    df = f * (1 - f) * dcs * cs_prev
    di = i * (1 - i) * dcs * ci
    cs_prev_grad = dcs * f
    if peephole:
        cs_prev_grad = cs_prev_grad + di * wci + df * wcf
    return cs_prev_grad, di, dci, df, do


def _attrs(node):
    a = node.attrs
    return (float(a.get("forget_bias", 0.0)), float(a.get("cell_clip", 0.0)),
            bool(a.get("use_peephole", False)))


@kernel_factory("LSTMBlockCell", expensive=True)
def _lstm_block_cell(node):
    forget_bias, cell_clip, peephole = _attrs(node)

    def compute(ctx, x, cs_prev, h_prev, w, wci, wcf, wco, b):
        dtype = x.dtype
        x, cs_prev, h_prev, w, wci, wcf, wco, b = map(
            _widen, (x, cs_prev, h_prev, w, wci, wcf, wco, b))
        _, _, n = _check_lstm(x, cs_prev, h_prev, w, wci, wcf, wco, b)
        gates = np.concatenate([x, h_prev], 1) @ w
        gates += b
        outs = _lstm_step(gates, cs_prev, wci, wcf, wco, forget_bias, cell_clip, peephole,
                          _ICFO, n)
        return [_narrow(v, dtype) for v in outs]

    return compute


@kernel_factory("LSTMBlockCellGrad", expensive=True)
def _lstm_block_cell_grad(node):
    peephole = bool(node.attrs.get("use_peephole", False))

    def compute(ctx, x, cs_prev, h_prev, w, wci, wcf, wco, b, i, cs, f, o, ci, co, cs_grad,
                h_grad):
        dtype = x.dtype
        args = [_widen(v) for v in (x, cs_prev, h_prev, w, wci, wcf, wco, b)]
        _, _, n = _check_lstm(*args)
        cs_prev, wci, wcf, wco = args[1], args[4], args[5], args[6]
        i, cs, f, o, ci, co, cs_grad, h_grad = map(_widen, (i, cs, f, o, ci, co, cs_grad,
                                                            h_grad))
        cs_prev_grad, di, dci, df, do = _lstm_step_grad(
            cs_prev, i, cs, f, o, ci, co, cs_grad, h_grad, wci, wcf, wco, peephole)
        dicfo = _pack((di, dci, df, do), _ICFO, n)
        if peephole:
            peeps = ((di * cs_prev).sum(0), (df * cs_prev).sum(0), (do * cs).sum(0))
        else:
            peeps = (np.zeros(n, dicfo.dtype),) * 3
        return [_narrow(v, dtype) for v in (cs_prev_grad, dicfo) + peeps]

    return compute


def _check_seq(seq_len_max, x, timelen):
    if x.ndim != 3:
        raise _invalid(f"x must be 3-dimensional [timelen, batch, input], got {list(x.shape)}")
    steps = int(np.asarray(seq_len_max).reshape(()))
    if steps < 0 or steps > timelen:
        raise _invalid(f"seq_len_max ({steps}) must be in [0, timelen = {timelen}]")
    return steps


def _block_lstm_factory(layout):
    def factory(node):
        forget_bias, cell_clip, peephole = _attrs(node)

        def compute(ctx, seq_len_max, x, cs_prev, h_prev, w, wci, wcf, wco, b):
            dtype = x.dtype
            timelen = x.shape[0] if x.ndim == 3 else 0
            steps = _check_seq(seq_len_max, x, timelen)
            x, cs_prev, h_prev, w, wci, wcf, wco, b = map(
                _widen, (x, cs_prev, h_prev, w, wci, wcf, wco, b))
            batch, depth, n = _check_lstm(x[0] if timelen else np.zeros(x.shape[1:], x.dtype),
                                          cs_prev, h_prev, w, wci, wcf, wco, b)
            outs = np.zeros((7, timelen, batch, n), x.dtype)
            if steps:
                xw = _input_products(x[:steps].reshape(steps * batch, depth), w[:depth]) \
                    .reshape(steps, batch, 4 * n)
                xw += b
            wh = w[depth:]
            c, h = cs_prev, h_prev
            for t in range(steps):
                interrupt.check()  # the step's deadline and close, once per time step
                gates = xw[t] + h @ wh
                step = _lstm_step(gates, c, wci, wcf, wco, forget_bias, cell_clip, peephole,
                                  layout, n)
                for k, v in enumerate(step):
                    outs[k, t] = v
                c, h = step[1], step[6]
            return [_narrow(v, dtype) for v in outs]

        return compute

    return factory


kernel_factory("BlockLSTM", expensive=True)(_block_lstm_factory(_ICFO))
kernel_factory("BlockLSTMV2", expensive=True)(_block_lstm_factory(_IFCO))


def _block_lstm_grad_factory(layout):
    def factory(node):
        peephole = bool(node.attrs.get("use_peephole", False))

        def compute(ctx, seq_len_max, x, cs_prev, h_prev, w, wci, wcf, wco, b, i, cs, f, o,
                    ci, co, h, cs_grad, h_grad):
            dtype = x.dtype
            timelen = x.shape[0] if x.ndim == 3 else 0
            steps = _check_seq(seq_len_max, x, timelen)
            x, cs_prev, h_prev, w, wci, wcf, wco, b = map(
                _widen, (x, cs_prev, h_prev, w, wci, wcf, wco, b))
            i, cs, f, o, ci, co, h, cs_grad, h_grad = map(
                _widen, (i, cs, f, o, ci, co, h, cs_grad, h_grad))
            batch, depth = x.shape[1], x.shape[2]
            n = cs_prev.shape[1]
            if w.shape != (depth + n, 4 * n):
                raise _invalid(f"w.shape {list(w.shape)} must be [{depth + n}, {4 * n}]")
            for name, v in (("i", i), ("cs", cs), ("f", f), ("o", o), ("ci", ci),
                            ("co", co), ("h", h), ("cs_grad", cs_grad), ("h_grad", h_grad)):
                if v.shape != (timelen, batch, n):
                    raise _invalid(f"{name}.shape {list(v.shape)} must be "
                                   f"[{timelen}, {batch}, {n}]")
            wt = np.ascontiguousarray(w.T)
            x_grad = np.zeros_like(x)
            w_grad = np.zeros_like(w)
            b_grad = np.zeros_like(b)
            wci_grad, wcf_grad, wco_grad = (np.zeros(n, x.dtype) for _ in range(3))
            c_carry = np.zeros_like(cs_prev)
            h_carry = np.zeros_like(h_prev)
            dicfo_all = np.empty((steps, batch, 4 * n), x.dtype)
            for t in range(steps - 1, -1, -1):
                interrupt.check()
                c_prev_t = cs[t - 1] if t else cs_prev
                g_cs = cs_grad[t] + c_carry
                g_h = h_grad[t] + h_carry
                c_carry, di, dci, df, do = _lstm_step_grad(
                    c_prev_t, i[t], cs[t], f[t], o[t], ci[t], co[t], g_cs, g_h, wci, wcf,
                    wco, peephole)
                dicfo = _pack((di, dci, df, do), layout, n)
                dicfo_all[t] = dicfo
                h_carry = dicfo @ wt[:, depth:]
                if peephole:
                    wci_grad += (di * c_prev_t).sum(0)
                    wcf_grad += (df * c_prev_t).sum(0)
                    wco_grad += (do * cs[t]).sum(0)
            if steps:
                flat = dicfo_all.reshape(steps * batch, 4 * n)
                x_grad[:steps] = _input_products(flat, wt[:, :depth]).reshape(
                    steps, batch, depth)
                w_grad[:depth] = _weight_products(x[:steps].reshape(steps * batch, depth),
                                                  flat)
                hs = np.concatenate([h_prev[None], h[:steps - 1]], 0)
                w_grad[depth:] = _weight_products(hs.reshape(steps * batch, n), flat)
                b_grad = flat.sum(0)
            outs = (x_grad, c_carry, h_carry, w_grad, wci_grad, wcf_grad, wco_grad, b_grad)
            return [_narrow(v, dtype) for v in outs]

        return compute

    return factory


kernel_factory("BlockLSTMGrad", expensive=True)(_block_lstm_grad_factory(_ICFO))
kernel_factory("BlockLSTMGradV2", expensive=True)(_block_lstm_grad_factory(_IFCO))


def _check_gru(x, h_prev, w_ru, w_c, b_ru, b_c):
    if x.ndim != 2 or h_prev.ndim != 2:
        raise _invalid("x and h_prev must be matrices")
    batch, depth = x.shape
    n = h_prev.shape[1]
    if h_prev.shape[0] != batch:
        raise _invalid(f"h_prev.dims(0) != batch_size: {h_prev.shape[0]} vs. {batch}")
    for name, v, want in (("w_ru", w_ru, (depth + n, 2 * n)), ("w_c", w_c, (depth + n, n)),
                          ("b_ru", b_ru, (2 * n,)), ("b_c", b_c, (n,))):
        if v.shape != want:
            raise _invalid(f"{name}.shape {list(v.shape)} must be {list(want)}")
    return batch, depth, n


@kernel_factory("GRUBlockCell", expensive=True)
def _gru_block_cell(node):
    def compute(ctx, x, h_prev, w_ru, w_c, b_ru, b_c):
        _, depth, n = _check_gru(x, h_prev, w_ru, w_c, b_ru, b_c)
        ru = _sigmoid(np.concatenate([x, h_prev], 1) @ w_ru + b_ru)
        r, u = ru[:, :n], ru[:, n:]
        c = np.tanh(np.concatenate([x, r * h_prev], 1) @ w_c + b_c)
        h = u * h_prev + (1 - u) * c
        return [np.ascontiguousarray(r), np.ascontiguousarray(u), c, h]

    return compute


@kernel_factory("GRUBlockCellGrad", expensive=True)
def _gru_block_cell_grad(node):
    def compute(ctx, x, h_prev, w_ru, w_c, b_ru, b_c, r, u, c, d_h):
        _, depth, n = _check_gru(x, h_prev, w_ru, w_c, b_ru, b_c)
        d_c_bar = d_h * (1 - u) * (1 - c * c)
        d_u_bar = d_h * (h_prev - c) * u * (1 - u)
        d_xrh = d_c_bar @ w_c.T
        d_rh = d_xrh[:, depth:]
        d_r_bar = d_rh * h_prev * r * (1 - r)
        d_r_bar_u_bar = np.concatenate([d_r_bar, d_u_bar], 1)
        d_xh = d_r_bar_u_bar @ w_ru.T
        d_x = d_xrh[:, :depth] + d_xh[:, :depth]
        d_h_prev = d_rh * r + d_h * u + d_xh[:, depth:]
        return [d_x, d_h_prev, d_c_bar, d_r_bar_u_bar]

    return compute
