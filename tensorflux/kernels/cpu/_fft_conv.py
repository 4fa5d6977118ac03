"""Stride-1 convolutions through the discrete Fourier transform, with the transforms as
matrix products.

A convolution with a k x k window costs 2*k*k*C*F flops per output position done
directly (im2col + gemm). In the frequency domain it is one product per frequency over
the channels: with P x P transforms (only P x (P//2 + 1) frequencies are needed for real
data) the channel mixing costs 8*P*(P//2+1)*C*F per image (complex multiply-adds), plus
the transforms in and out. For the 5x5 windows of a typical small CNN (16x16 images, 32
channels in, 64 out) that is ~4x fewer flops and ~1.7x less time; `worthwhile` weighs the
two counts by their measured speeds for each call, so 1x1 and most 3x3 windows and
few-channel inputs stay on im2col.

The transforms are tiny (P ~ 20), so they are not FFTs: each is a product with a DFT
matrix, a real (W_in x 2Q) matrix along the width (real input to the half spectrum,
complex values interleaved) and a complex (P x H_in) matrix along the height, and the
inverse ones are restricted to the output positions that are wanted; the filter's few taps
go through one real product with their 2-D DFT matrix. Everything is BLAS.
Float32 data is transformed in float32/complex64 (relative error ~1e-6 of the output's
magnitude, against ~1e-7 for im2col), float64 in float64/complex128.

Circular convolution equals the linear one when the transform size along an axis is at
least max(in + pad_before, out + (k-1)*dilation - pad_before, (k-1)*dilation + 1): every
index that wraps around lands on a zero of the padded signal, and the filter taps never
collide. With the filter placed at positions k*dilation - pad_before (negative positions
wrap), and X, G, DY the spectra of input, filter and out_backprop:
    forward:          Y[f]  = sum_c X[f, c] conj(G[f, c, o])
    backprop input:   DX[f] = sum_o DY[f, o] G[f, c, o]
    backprop filter:  DG[f] = sum_n X[f, n, c] conj(DY[f, n, o])
Conjugated spectra of real data come from the conjugated DFT matrices (no extra pass).
Transforms are split over the intra-op threads by batch chunks, the per-frequency products
by frequency chunks (each product keeps the whole batch: wide products run faster).
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from tensorflux.kernels import intra_op

# Time per flop of the channel mixing and of the transforms, relative to im2col's, and the
# margin by which the frequency domain must win: fitted to the two-thread times (forward
# and both backprops) of eleven layer shapes (3x3 to 7x7 windows, 3 to 128 channels, 8x8 to 64x64
# images) on the reference machine (2-core AMD EPYC, OpenBLAS). The per-frequency products
# are small complex gemms and the transforms are products with a short inner dimension, so
# both run well below im2col's rate. With these weights 3x3 windows stay on im2col unless
# the images are tiny and the channels many.
_MIXING_WEIGHT = 3.8
_TRANSFORM_WEIGHT = 1.3
_MARGIN = 1.1
# The forward conv's per-frequency products have one row per image: (N, C) x (C, F). At
# small batches they run further below BLAS's peak than the fit above (taken at batch 64)
# says, so the forward conv's mixing weight grows by THIN_BATCH / N below that batch
# (batch 8, CPU time measured: AlexNet's 27x27x64 -> 192 5x5 conv 43 ms by FFT against 42
# by im2col, Overfeat's 28x28x96 -> 256 75 against 65; their backprops still gain from the
# FFT: input gradients 47 against 54 and 80 against 108).
THIN_BATCH = 16
# Below this many direct flops im2col is used whatever the counts say (small calls are
# dominated by the fixed costs of the transforms).
_MIN_FLOPS = 5e7
_COMPLEX = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}


def transform_size(n_in: int, n_out: int, k: int, dilation: int, before: int) -> int:
    """The smallest transform length along one axis for which circular convolution gives
    the linear result (see the module docstring)."""
    span = (k - 1) * dilation
    return max(n_in + before, n_out + span - before, span + 1)


def _half(p: int) -> int:
    return p // 2 + 1


def worthwhile(dtype, n, hw, c, f, khw, dil, out_hw, pads, forward: bool = False) -> bool:
    """True when the frequency-domain convolution is expected to beat im2col for these
    shapes (any of the three convolutions: they have the same counts up to the transform
    of the third operand; `forward` for the forward conv, see THIN_BATCH)."""
    if np.dtype(dtype) not in _COMPLEX:
        return False
    (h, w), (kh, kw), (oh, ow) = hw, khw, out_hw
    direct = 2.0 * n * oh * ow * kh * kw * c * f
    if direct < _MIN_FLOPS:
        return False
    ph = transform_size(h, oh, kh, dil[0], pads[0])
    pw = transform_size(w, ow, kw, dil[1], pads[1])
    q = _half(pw)
    freqs = ph * q
    mixing = 8.0 * freqs * n * c * f
    if forward and n < THIN_BATCH:
        mixing *= THIN_BATCH / n

    def transform(rows, cols, channels):  # along the width (real), then the height
        return 2.0 * channels * rows * cols * 2 * q + 8.0 * ph * rows * q * channels

    transforms = (transform(h, w, n * c) + transform(oh, ow, n * f)
                  + transform(kh, kw, c * f))
    return _MARGIN * (_MIXING_WEIGHT * mixing + _TRANSFORM_WEIGHT * transforms) < direct


# ---- DFT matrices ------------------------------------------------------------------------


def _frozen(m: np.ndarray) -> np.ndarray:
    """`m` made read-only: cached matrices are shared by every thread and call."""
    m.flags.writeable = False
    return m


@functools.lru_cache(maxsize=256)
def _width_matrix(positions: tuple, p: int, conj: bool, dtype: np.dtype) -> np.ndarray:
    """(len(positions), 2Q) real: a row of samples at `positions` times this is the
    half spectrum along the width, each complex value as (re, im)."""
    ang = -2.0 * np.pi * np.outer(positions, np.arange(_half(p))) / p
    m = np.empty((len(positions), 2 * _half(p)))
    m[:, 0::2] = np.cos(ang)
    m[:, 1::2] = -np.sin(ang) if conj else np.sin(ang)
    return _frozen(m.astype(dtype))


@functools.lru_cache(maxsize=256)
def _height_matrix(positions: tuple, p: int, conj: bool, dtype: np.dtype) -> np.ndarray:
    """(P, len(positions)) complex: the full spectrum along the height."""
    sign = 1.0 if conj else -1.0
    m = np.exp(sign * 2j * np.pi * np.outer(np.arange(p), positions) / p)
    return _frozen(m.astype(_COMPLEX[np.dtype(dtype)]))


@functools.lru_cache(maxsize=256)
def _inverse_height(positions: tuple, p: int, dtype: np.dtype) -> np.ndarray:
    """(len(positions), P) complex: back from the height spectrum, at `positions` only
    (with the 1/P of the inverse transform)."""
    m = np.exp(2j * np.pi * np.outer(positions, np.arange(p)) / p) / p
    return _frozen(m.astype(_COMPLEX[np.dtype(dtype)]))


@functools.lru_cache(maxsize=256)
def _inverse_width(positions: tuple, p: int, dtype: np.dtype) -> np.ndarray:
    """(2Q, len(positions)) real: from a half spectrum (complex values as (re, im)) of a
    real signal back to its samples at `positions`: the real part of the inverse, the
    frequencies that stand for two (f and P - f) counted twice."""
    q = _half(p)
    weight = np.full(q, 2.0)
    weight[0] = 1.0
    if p % 2 == 0:
        weight[-1] = 1.0
    ang = 2.0 * np.pi * np.outer(np.arange(q), positions) / p
    m = np.empty((2 * q, len(positions)))
    m[0::2] = weight[:, None] * np.cos(ang) / p
    m[1::2] = -weight[:, None] * np.sin(ang) / p
    return _frozen(m.astype(dtype))


@functools.lru_cache(maxsize=64)
def _filter_matrix(taps: tuple, ph: int, pw: int, dtype: np.dtype) -> np.ndarray:
    """(kh*kw, 2F) real: the 2-D DFT (full along the height, half along the width) of
    signals sampled at the `taps` positions, each complex value as (re, im)."""
    fh = _height_matrix(taps[0], ph, False, np.dtype(np.float64))  # (P, kh)
    fw = _width_matrix(taps[1], pw, False, np.dtype(np.float64))  # (kw, 2Q)
    wc = fw[:, 0::2] + 1j * fw[:, 1::2]  # (kw, Q)
    m = np.einsum("pi,jq->ijpq", fh, wc).reshape(len(taps[0]) * len(taps[1]), -1)
    return _frozen(m.view(np.float64).astype(dtype))


def _positions(count: int, step: int = 1, offset: int = 0) -> tuple:
    return tuple(i * step - offset for i in range(count))


# ---- transforms --------------------------------------------------------------------------


def _spectrum(a: np.ndarray, fh: np.ndarray, fw: np.ndarray) -> np.ndarray:
    """Spectrum (P, Q, R) of `a` (H_in, R..., W_in) real: along the last axis by `fw`, then
    along the first by `fh`; R is everything in between, flattened."""
    h, w = a.shape[0], a.shape[-1]
    q = fw.shape[1] // 2
    rows = np.ascontiguousarray(a).reshape(-1, w)
    half = (rows @ fw).view(fh.dtype).reshape(h, -1)  # (H_in, R*Q)
    full = (fh @ half).reshape(fh.shape[0], -1, q)  # (P, R, Q)
    return np.ascontiguousarray(full.transpose(0, 2, 1))


def _samples(spec: np.ndarray, ih: np.ndarray, iw: np.ndarray) -> np.ndarray:
    """Real samples (H_out, R, W_out) of spectrum (P, Q, R) (a view: R's rows may be
    strided), at the positions `ih` (rows) and `iw` (columns) were made for."""
    p, q, r = spec.shape
    part = np.matmul(ih, spec.transpose(1, 0, 2))  # (Q, H_out, R), one product per Q
    part = np.ascontiguousarray(part.transpose(1, 2, 0))  # (H_out, R, Q)
    real = part.view(iw.dtype).reshape(-1, 2 * q) @ iw
    return real.reshape(part.shape[0], r, iw.shape[1])


class _Geometry:
    """Transform sizes and DFT matrices for one call: input (h, w), output (oh, ow),
    filter (kh, kw) with `dilations`, padding before (pt, pl)."""

    def __init__(self, hw, out_hw, khw, dilations, pads, dtype):
        (h, w), (oh, ow), (kh, kw), (dh, dw), (pt, pl) = hw, out_hw, khw, dilations, pads
        self.dtype = np.dtype(dtype)
        self.ph = ph = transform_size(h, oh, kh, dh, pt)
        self.pw = pw = transform_size(w, ow, kw, dw, pl)
        self.freqs = ph * _half(pw)
        self.data = (_positions(h), _positions(w))
        self.out = (_positions(oh), _positions(ow))
        self.taps = (_positions(kh, dh, pt), _positions(kw, dw, pl))

    def forward(self, positions, conj=False):
        ph, pw = positions
        return (_height_matrix(ph, self.ph, conj, self.dtype),
                _width_matrix(pw, self.pw, conj, self.dtype))

    def inverse(self, positions):
        ph, pw = positions
        return _inverse_height(ph, self.ph, self.dtype), _inverse_width(pw, self.pw,
                                                                         self.dtype)

    def filter_spectrum(self, w: np.ndarray) -> np.ndarray:
        """(F, C, O) spectrum of the filter (kh, kw, C, O) placed at its tap positions: one
        real product of the flattened taps with the (kh*kw, 2F) matrix of the 2-D DFT
        (complex values interleaved), then one transposing copy."""
        kh, kw, c, o = w.shape
        m = _filter_matrix(self.taps, self.ph, self.pw, self.dtype)
        spec = (w.reshape(kh * kw, c * o).T @ m).view(_COMPLEX[self.dtype])  # (C*O, F)
        return np.ascontiguousarray(spec.T).reshape(self.freqs, c, o)

    def data_spectrum(self, a: np.ndarray, positions, conj: bool, parts: int) -> np.ndarray:
        """(F, N, C) spectrum of NHWC `a` whose rows/columns sit at `positions` (conjugated
        if `conj`), computed in batch chunks over the intra-op threads."""
        n, c = a.shape[0], a.shape[3]
        fh, fw = self.forward(positions, conj)
        q = fw.shape[1] // 2
        out = np.empty((self.ph, q, n, c), fh.dtype)

        def work(n0, n1):
            spec = _spectrum(a[n0:n1].transpose(1, 0, 3, 2), fh, fw)
            np.copyto(out[:, :, n0:n1], spec.reshape(self.ph, q, n1 - n0, c))

        intra_op.parallel_for(work, n, self._image_grain(n, c, parts), parts)
        return out.reshape(self.freqs, n, c)

    def to_nhwc(self, spec: np.ndarray, positions, out: np.ndarray, parts: int) -> None:
        """Writes the samples of (F, N, C) `spec` at `positions` into NHWC `out`, in batch
        chunks over the intra-op threads."""
        n, _, _, c = out.shape
        ih, iw = self.inverse(positions)

        def work(n0, n1):
            part = spec[:, n0:n1].reshape(self.ph, -1, (n1 - n0) * c)
            real = _samples(part, ih, iw)  # (H, nb*C, W)
            np.copyto(out[n0:n1],
                      real.reshape(real.shape[0], n1 - n0, c, -1).transpose(1, 0, 3, 2))

        intra_op.parallel_for(work, n, self._image_grain(n, c, parts), parts)

    def _image_grain(self, n: int, c: int, parts: int) -> int:
        """Images per chunk of a transform: `_grain`, but about interrupt.CHUNK_FLOPS of
        work at most (the step is checked between chunks, kernels/interrupt.py), and
        about `_TRANSFORM_BYTES` of temporaries (a chunk's rows, half and full spectra)."""
        per_image = 8.0 * self.ph * self.pw * (self.ph + self.pw) * c
        temps = 4 * self.ph * (self.pw + 2) * c * self.dtype.itemsize
        grain = min(_grain(n, parts), max(1, _TRANSFORM_BYTES // temps))
        return intra_op.bounded_grain(grain, n, n * per_image)


def _negated(positions):
    return tuple(tuple(-i for i in axis) for axis in positions)


# Temporaries of one chunk of a transform: a few such chunks (one per thread) is all the
# transforms add to the spectra they make, however large the batch.
_TRANSFORM_BYTES = 2 << 20


def _grain(n: int, parts: int) -> int:
    return max(1, -(-n // (2 * parts))) if parts > 1 else n


# ---- spectra shared by the kernels of one step -------------------------------------------

_CACHE_KEY = "fft_conv.spectra"
# Spectra kept per step and device (the rest is recomputed when asked for again).
_CACHE_BYTES = 64 << 20


class _StepSpectra:
    """The spectra computed in one step, by operand and transform: the forward convolution
    makes the input's and the filter's, the backprop kernels of the same step reuse them
    and share out_backprop's. An entry holds its operand, so that operand's buffer cannot
    be freed, reused or written in place (kernels/buffers.py) while the entry lives: equal
    (address, shape, strides, dtype) means equal data. A second kernel that asks for a
    spectrum being made waits for it rather than making it again.

    Each spectrum serves two kinds of kernel (`shared_by`): once both have asked, the entry
    is dropped, so it and its operand are not kept until the step ends (in a training
    step the backprops of the first layers, the step's peak of memory, come after those
    of the later layers). A third kernel asking for it again makes it anew."""

    def __init__(self):
        self.lock = threading.Lock()
        self.entries: dict = {}
        self.bytes = 0

    def get(self, tag, operand: np.ndarray, make, user: str | None = None,
            shared_by: tuple = ()):
        """The spectrum `tag` of `operand`, made by `make()` unless this step has it.
        `user` is the kind of kernel asking; once every kind in `shared_by` has asked, the
        entry is dropped (none given: it stays until the step ends)."""
        info = operand.__array_interface__
        key = (tag, info["data"][0], operand.shape, info["strides"], operand.dtype.str)
        with self.lock:
            entry = self.entries.get(key)
            mine = entry is None and self.bytes < _CACHE_BYTES
            if mine:
                # operand, value, made, kinds that asked, bytes counted
                entry = self.entries[key] = [operand, None, threading.Event(), set(), 0]
            if entry is not None:
                self._taken(key, entry, user, shared_by)
        if entry is None:
            return make()
        if not mine:
            entry[2].wait()
            return entry[1] if entry[1] is not None else make()
        try:
            entry[1] = value = make()
            with self.lock:
                if self.entries.get(key) is entry:
                    self.bytes += value.nbytes
                    entry[4] = value.nbytes
        except BaseException:
            with self.lock:
                if self.entries.get(key) is entry:
                    del self.entries[key]
            raise
        finally:
            entry[2].set()
        return value

    def _taken(self, key, entry, user, shared_by: tuple) -> None:
        """Records that a kernel of kind `user` asked for the entry; drops the entry once
        every kind in `shared_by` has (the lock is held)."""
        entry[3].add(user)
        if shared_by and entry[3].issuperset(shared_by):
            del self.entries[key]
            self.bytes -= entry[4]


def _spectra(ctx):
    """This step's shared spectra (a private store when there is no step: no sharing)."""
    container = getattr(ctx, "step_container", None)
    if container is None:
        return _StepSpectra()
    store = container.get(_CACHE_KEY)
    return store if store is not None else container.setdefault(_CACHE_KEY, _StepSpectra())


# ---- the three convolutions --------------------------------------------------------------
# They share: X* (conjugated spectrum of the input), G (spectrum of the filter) and DY
# (spectrum of out_backprop). Forward: conj(Y) = X* G, and y(i) = idft(conj(Y))(-i);
# backprop input: DX = DY G^T; backprop filter: conj(DG) = X*^T DY, dg(m) = idft(..)(-m).


# Each spectrum is shared by two of the three kernels ("forward" Conv2D, backprop "input",
# backprop "filter"); once both have taken it, no kernel of the step needs it again.


def _input_spectrum(spectra, geo, x, parts, user):
    return spectra.get(("x*", geo.ph, geo.pw, geo.data), x,
                       lambda: geo.data_spectrum(x, geo.data, True, parts), user,
                       ("forward", "filter"))


def _filter_spectrum(spectra, geo, w, user):
    return spectra.get(("g", geo.ph, geo.pw, geo.taps), w, lambda: geo.filter_spectrum(w),
                       user, ("forward", "input"))


def _out_spectrum(spectra, geo, dy, parts, user):
    return spectra.get(("dy", geo.ph, geo.pw, geo.out), dy,
                       lambda: geo.data_spectrum(dy, geo.out, False, parts), user,
                       ("input", "filter"))


def _mix(a: np.ndarray, b: np.ndarray, parts: int) -> np.ndarray:
    """(F, M, K) @ (F, K, N) per frequency, split over chunks of frequencies (each product
    keeps all M rows: the batch is not cut, so the products stay wide)."""
    freqs = a.shape[0]
    out = np.empty((freqs, a.shape[1], b.shape[2]), np.result_type(a, b))

    def work(f0, f1):
        np.matmul(a[f0:f1], b[f0:f1], out=out[f0:f1])

    work_all = 8.0 * freqs * a.shape[1] * a.shape[2] * b.shape[2]
    intra_op.parallel_for(work, freqs, intra_op.bounded_grain(_grain(freqs, parts), freqs,
                                                              work_all), parts)
    return out


def conv_forward(x, w, pads, out_hw, dilations, parts: int, ctx=None) -> np.ndarray:
    """NHWC stride-1 convolution of `x` (N, H, W, C) with `w` (kh, kw, C, F)."""
    n, h, wd, c = x.shape
    kh, kw, _, f = w.shape
    dtype = np.result_type(x, w)
    geo = _Geometry((h, wd), out_hw, (kh, kw), dilations, pads, dtype)
    spectra = _spectra(ctx)
    g = _filter_spectrum(spectra, geo, w, "forward")
    xs = _input_spectrum(spectra, geo, x, parts, "forward")
    out = np.empty((n,) + tuple(out_hw) + (f,), dtype)
    geo.to_nhwc(_mix(xs, g, parts), _negated(geo.out), out, parts)
    return out


def conv_backprop_input(shape, w, dy, pads, dilations, parts: int, ctx=None) -> np.ndarray:
    """d(loss)/d(input) of NHWC `shape` for a stride-1 convolution, from the filter `w`
    and out_backprop `dy`."""
    n, h, wd, c = shape
    kh, kw = w.shape[:2]
    dtype = np.result_type(w, dy)
    geo = _Geometry((h, wd), dy.shape[1:3], (kh, kw), dilations, pads, dtype)
    spectra = _spectra(ctx)
    gt = _filter_spectrum(spectra, geo, w, "input").transpose(0, 2, 1)  # (F, O, C)
    dys = _out_spectrum(spectra, geo, dy, parts, "input")
    out = np.empty((n, h, wd, c), dtype)
    geo.to_nhwc(_mix(dys, gt, parts), geo.data, out, parts)
    return out


def conv_backprop_filter(x, dy, khw, pads, dilations, parts: int, ctx=None) -> np.ndarray:
    """d(loss)/d(filter) (kh, kw, C, F) of a stride-1 convolution of NHWC `x` whose
    out_backprop is `dy`."""
    n, h, wd, c = x.shape
    f = dy.shape[3]
    dtype = np.result_type(x, dy)
    geo = _Geometry((h, wd), dy.shape[1:3], khw, dilations, pads, dtype)
    spectra = _spectra(ctx)
    xs = _input_spectrum(spectra, geo, x, parts, "filter").transpose(0, 2, 1)  # (F, C, N)
    dys = _out_spectrum(spectra, geo, dy, parts, "filter")
    dg = _mix(xs, dys, parts)
    ih, iw = geo.inverse(_negated(geo.taps))
    real = _samples(dg.reshape(geo.ph, -1, c * f), ih, iw)  # (kh, C*F, kw)
    return np.ascontiguousarray(real.reshape(khw[0], c, f, khw[1]).transpose(0, 3, 1, 2))
