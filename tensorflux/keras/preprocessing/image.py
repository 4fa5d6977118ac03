"""`tf.keras.preprocessing.image`: Keras's ImageDataGenerator over NumPy arrays (random
rotations, shifts, shears, zooms, channel shifts and flips as one affine transform about
the image centre, scipy.ndimage's spline of `interpolation_order`; rescaling,
sample-wise and feature-wise centring and scaling, ZCA whitening; `flow` batches as a
`keras.utils.Sequence`), and the transform functions it is built from. The random draws
are NumPy's global stream, in Keras's order, so `np.random.seed` repeats them."""

from __future__ import annotations

import threading

import numpy as np

from tensorflux.keras import backend as K
from tensorflux.keras.utils import Sequence

__all__ = ["ImageDataGenerator", "NumpyArrayIterator", "Iterator", "apply_affine_transform",
           "apply_channel_shift", "flip_axis", "transform_matrix_offset_center"]


def flip_axis(x, axis):
    return np.flip(np.asarray(x), axis)


def transform_matrix_offset_center(matrix, x, y):
    """`matrix` made to act about the centre of an x-by-y image."""
    o_x, o_y = float(x) / 2 - 0.5, float(y) / 2 - 0.5
    offset = np.array([[1, 0, o_x], [0, 1, o_y], [0, 0, 1]])
    reset = np.array([[1, 0, -o_x], [0, 1, -o_y], [0, 0, 1]])
    return offset @ matrix @ reset


def apply_affine_transform(x, theta=0, tx=0, ty=0, shear=0, zx=1, zy=1, row_axis=0,
                           col_axis=1, channel_axis=2, fill_mode="nearest", cval=0.0,
                           order=1):
    """One image (3-D) rotated by `theta` degrees, shifted by (tx, ty) pixels (as in
    tf_keras, tx moves the columns and ty the rows when col_axis > row_axis), sheared by
    `shear` degrees and zoomed by (zx, zy), each channel resampled by
    scipy.ndimage.affine_transform (`fill_mode` outside the image)."""
    from scipy import ndimage

    matrix = None
    parts = []
    if theta != 0:
        t = np.deg2rad(theta)
        parts.append([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]])
    if tx != 0 or ty != 0:
        parts.append([[1, 0, tx], [0, 1, ty], [0, 0, 1]])
    if shear != 0:
        s = np.deg2rad(shear)
        parts.append([[1, -np.sin(s), 0], [0, np.cos(s), 0], [0, 0, 1]])
    if zx != 1 or zy != 1:
        parts.append([[zx, 0, 0], [0, zy, 0], [0, 0, 1]])
    for part in parts:
        matrix = np.array(part, dtype=np.float64) if matrix is None else matrix @ part
    if matrix is None:
        return x
    h, w = x.shape[row_axis], x.shape[col_axis]
    matrix = transform_matrix_offset_center(matrix, h, w)
    channels = np.rollaxis(x, channel_axis, 0)
    if col_axis > row_axis:  # as tf_keras: the matrix's first coordinate is the column
        matrix[:, [0, 1]] = matrix[:, [1, 0]]
        matrix[[0, 1]] = matrix[[1, 0]]
    out = np.stack([ndimage.affine_transform(c, matrix[:2, :2], matrix[:2, 2], order=order,
                                             mode=fill_mode, cval=cval) for c in channels])
    return np.rollaxis(out, 0, channel_axis + 1)


def apply_channel_shift(x, intensity, channel_axis=0):
    """Every channel shifted by `intensity`, clipped to the image's range."""
    x = np.rollaxis(x, channel_axis, 0)
    lo, hi = np.min(x), np.max(x)
    x = np.stack([np.clip(c + intensity, lo, hi) for c in x])
    return np.rollaxis(x, 0, channel_axis + 1)


def _shift(rng_range, size):
    """Keras's shift draw: a choice from an int range or a list (random sign), else a
    uniform float; a fraction (< 1) of the image size."""
    try:
        t = np.random.choice(rng_range)
        t *= np.random.choice([-1, 1])
    except ValueError:
        t = np.random.uniform(-rng_range, rng_range)
    if np.max(rng_range) < 1:
        t *= size
    return t


class ImageDataGenerator:
    """Keras's ImageDataGenerator for arrays (`flow`); `fit` computes the feature-wise
    statistics and ZCA components from sample data."""

    def __init__(self, featurewise_center=False, samplewise_center=False,
                 featurewise_std_normalization=False, samplewise_std_normalization=False,
                 zca_whitening=False, zca_epsilon=1e-6, rotation_range=0,
                 width_shift_range=0.0, height_shift_range=0.0, brightness_range=None,
                 shear_range=0.0, zoom_range=0.0, channel_shift_range=0.0,
                 fill_mode="nearest", cval=0.0, horizontal_flip=False, vertical_flip=False,
                 rescale=None, preprocessing_function=None, data_format=None,
                 validation_split=0.0, interpolation_order=1, dtype=None):
        """Raises:
          ValueError: a bad data_format, zoom_range, validation_split or fill_mode;
            brightness_range (it needs PIL, which tensorflux does not use)."""
        if brightness_range is not None:
            raise ValueError("tensorflux.keras: brightness_range is not supported (Keras "
                             "applies it through PIL)")
        if fill_mode not in ("constant", "nearest", "reflect", "wrap"):
            raise ValueError(f"fill_mode must be constant, nearest, reflect or wrap; got "
                             f"{fill_mode!r}")
        self.featurewise_center = featurewise_center
        self.samplewise_center = samplewise_center
        self.featurewise_std_normalization = featurewise_std_normalization
        self.samplewise_std_normalization = samplewise_std_normalization
        self.zca_whitening = zca_whitening
        self.zca_epsilon = zca_epsilon
        self.rotation_range = rotation_range
        self.width_shift_range = width_shift_range
        self.height_shift_range = height_shift_range
        self.shear_range = shear_range
        self.channel_shift_range = channel_shift_range
        self.fill_mode = fill_mode
        self.cval = cval
        self.horizontal_flip = horizontal_flip
        self.vertical_flip = vertical_flip
        self.rescale = rescale
        self.preprocessing_function = preprocessing_function
        self.interpolation_order = interpolation_order
        self.dtype = dtype or K.floatx()
        data_format = data_format or K.image_data_format()
        if data_format not in ("channels_last", "channels_first"):
            raise ValueError(f"data_format must be channels_last or channels_first; got "
                             f"{data_format!r}")
        self.data_format = data_format
        self.channel_axis, self.row_axis, self.col_axis = (
            (1, 2, 3) if data_format == "channels_first" else (3, 1, 2))
        if not 0 <= validation_split < 1:
            raise ValueError(f"validation_split must be in [0, 1); got {validation_split}")
        self._validation_split = validation_split
        if np.isscalar(zoom_range):
            self.zoom_range = [1 - zoom_range, 1 + zoom_range]
        elif len(zoom_range) == 2:
            self.zoom_range = [zoom_range[0], zoom_range[1]]
        else:
            raise ValueError(f"zoom_range must be a float or a pair; got {zoom_range!r}")
        if zca_whitening and not featurewise_center:
            self.featurewise_center = True  # as Keras (which warns)
        if zca_whitening and featurewise_std_normalization:
            self.featurewise_std_normalization = False
        self.mean = self.std = self.principal_components = None

    def flow(self, x, y=None, batch_size=32, shuffle=True, sample_weight=None, seed=None,
             save_to_dir=None, save_prefix="", save_format="png", subset=None):
        """Batches (x, y[, sample_weight]) of transformed, standardized images.

        Raises:
          ValueError: x not 4-D, x and y of different lengths, save_to_dir (it needs
            PIL), a bad subset."""
        if save_to_dir is not None:
            raise ValueError("tensorflux.keras: save_to_dir is not supported (Keras writes "
                             "the images through PIL)")
        return NumpyArrayIterator(x, y, self, batch_size=batch_size, shuffle=shuffle,
                                  sample_weight=sample_weight, seed=seed, subset=subset,
                                  dtype=self.dtype)

    def standardize(self, x):
        """`x` (one image or a batch) rescaled and normalized as configured (in place for
        float arrays, as Keras)."""
        if self.preprocessing_function:
            x = self.preprocessing_function(x)
        if self.rescale:
            x *= self.rescale
        if self.samplewise_center:
            x -= np.mean(x, keepdims=True)
        if self.samplewise_std_normalization:
            x /= np.std(x, keepdims=True) + 1e-6
        if self.featurewise_center and self.mean is not None:
            x -= self.mean
        if self.featurewise_std_normalization and self.std is not None:
            x /= self.std + 1e-6
        if self.zca_whitening and self.principal_components is not None:
            flat = np.reshape(x, (-1, int(np.prod(x.shape[-3:]))))
            x = np.reshape(flat @ self.principal_components, x.shape)
        return x

    def get_random_transform(self, img_shape, seed=None):
        """The random parameters for one image, drawn in Keras's order."""
        row, col = self.row_axis - 1, self.col_axis - 1
        if seed is not None:
            np.random.seed(seed)
        theta = np.random.uniform(-self.rotation_range, self.rotation_range) \
            if self.rotation_range else 0
        tx = _shift(self.height_shift_range, img_shape[row]) if self.height_shift_range \
            else 0
        ty = _shift(self.width_shift_range, img_shape[col]) if self.width_shift_range else 0
        shear = np.random.uniform(-self.shear_range, self.shear_range) \
            if self.shear_range else 0
        if self.zoom_range[0] == 1 and self.zoom_range[1] == 1:
            zx, zy = 1, 1
        else:
            zx, zy = np.random.uniform(self.zoom_range[0], self.zoom_range[1], 2)
        flip_h = (np.random.random() < 0.5) * self.horizontal_flip
        flip_v = (np.random.random() < 0.5) * self.vertical_flip
        shift = np.random.uniform(-self.channel_shift_range, self.channel_shift_range) \
            if self.channel_shift_range != 0 else None
        return {"theta": theta, "tx": tx, "ty": ty, "shear": shear, "zx": zx, "zy": zy,
                "flip_horizontal": flip_h, "flip_vertical": flip_v,
                "channel_shift_intensity": shift, "brightness": None}

    def apply_transform(self, x, transform_parameters):
        """One image (3-D) transformed by the parameters of `get_random_transform`."""
        p = transform_parameters
        row, col, ch = self.row_axis - 1, self.col_axis - 1, self.channel_axis - 1
        x = apply_affine_transform(x, p.get("theta", 0), p.get("tx", 0), p.get("ty", 0),
                                   p.get("shear", 0), p.get("zx", 1), p.get("zy", 1),
                                   row_axis=row, col_axis=col, channel_axis=ch,
                                   fill_mode=self.fill_mode, cval=self.cval,
                                   order=self.interpolation_order)
        if p.get("channel_shift_intensity") is not None:
            x = apply_channel_shift(x, p["channel_shift_intensity"], ch)
        if p.get("flip_horizontal", False):
            x = flip_axis(x, col)
        if p.get("flip_vertical", False):
            x = flip_axis(x, row)
        return x

    def random_transform(self, x, seed=None):
        return self.apply_transform(x, self.get_random_transform(x.shape, seed))

    def fit(self, x, augment=False, rounds=1, seed=None):
        """Feature-wise mean and std (per channel) and the ZCA components of `x`
        (rescaled; with `augment`, `rounds` randomly transformed copies).

        Raises:
          ValueError: x not 4-D."""
        x = np.asarray(x, dtype=self.dtype)
        if x.ndim != 4:
            raise ValueError(f"Input to .fit() should have rank 4; got shape {x.shape}")
        if seed is not None:
            np.random.seed(seed)
        x = np.copy(x)
        if self.rescale:
            x *= self.rescale
        if augment:
            ax = np.zeros((rounds * x.shape[0],) + x.shape[1:], dtype=self.dtype)
            for r in range(rounds):
                for i in range(x.shape[0]):
                    ax[i + r * x.shape[0]] = self.random_transform(x[i])
            x = ax
        shape = [1, 1, 1]
        shape[self.channel_axis - 1] = x.shape[self.channel_axis]
        axes = (0, self.row_axis, self.col_axis)
        if self.featurewise_center:
            self.mean = np.reshape(np.mean(x, axis=axes), shape)
            x -= self.mean
        if self.featurewise_std_normalization:
            self.std = np.reshape(np.std(x, axis=axes), shape)
            x /= self.std + 1e-6
        if self.zca_whitening:
            flat = np.reshape(x, (x.shape[0], -1))
            sigma = flat.T @ flat / flat.shape[0]
            u, s, _ = np.linalg.svd(sigma)
            self.principal_components = (u * (1.0 / np.sqrt(s[np.newaxis] +
                                                             self.zca_epsilon))) @ u.T


class Iterator(Sequence):
    """Keras's batch iterator: a Sequence of ceil(n / batch_size) batches (a new order
    each epoch when shuffling, from np.random.seed(seed + batches seen) when seeded) that
    is also a Python iterator."""

    def __init__(self, n, batch_size, shuffle, seed):
        self.n, self.batch_size, self.shuffle, self.seed = n, batch_size, shuffle, seed
        self.batch_index = 0
        self.total_batches_seen = 0
        self.lock = threading.Lock()
        self.index_array = None
        self.index_generator = self._flow_index()

    def _set_index_array(self):
        self.index_array = np.arange(self.n)
        if self.shuffle:
            self.index_array = np.random.permutation(self.n)

    def __getitem__(self, idx):
        if idx >= len(self):
            raise ValueError(f"Asked to retrieve element {idx}, but the Sequence has length "
                             f"{len(self)}")
        if self.seed is not None:
            np.random.seed(self.seed + self.total_batches_seen)
        self.total_batches_seen += 1
        if self.index_array is None:
            self._set_index_array()
        return self._get_batches_of_transformed_samples(
            self.index_array[self.batch_size * idx:self.batch_size * (idx + 1)])

    def __len__(self):
        return (self.n + self.batch_size - 1) // self.batch_size

    def on_epoch_end(self):
        self._set_index_array()

    def reset(self):
        self.batch_index = 0

    def _flow_index(self):
        self.reset()
        while True:
            if self.seed is not None:
                np.random.seed(self.seed + self.total_batches_seen)
            if self.batch_index == 0:
                self._set_index_array()
            if self.n == 0:
                current = 0
            else:
                current = (self.batch_index * self.batch_size) % self.n
            if self.n > current + self.batch_size:
                self.batch_index += 1
            else:
                self.batch_index = 0
            self.total_batches_seen += 1
            yield self.index_array[current:current + self.batch_size]

    def __iter__(self):
        return self

    def __next__(self):
        with self.lock:
            index_array = next(self.index_generator)
        return self._get_batches_of_transformed_samples(index_array)

    next = __next__


class NumpyArrayIterator(Iterator):
    """The batches of `ImageDataGenerator.flow`: (x, y[, sample_weight]), or x alone
    when `y` is None."""

    def __init__(self, x, y, image_data_generator, batch_size=32, shuffle=False,
                 sample_weight=None, seed=None, subset=None, dtype=None):
        self.dtype = dtype or K.floatx()
        x = np.asarray(x, dtype=self.dtype)
        if x.ndim != 4:
            raise ValueError(f"Input data in NumpyArrayIterator should have rank 4; got "
                             f"shape {x.shape}")
        if y is not None and len(x) != len(y):
            raise ValueError(f"x (images tensor) and y (labels) should have the same length; "
                             f"got {len(x)} and {len(y)}")
        if sample_weight is not None and len(x) != len(sample_weight):
            raise ValueError("x and sample_weight should have the same length")
        y = np.asarray(y) if y is not None else None
        sample_weight = np.asarray(sample_weight) if sample_weight is not None else None
        if subset is not None:
            if subset not in ("training", "validation"):
                raise ValueError(f"subset must be 'training' or 'validation'; got {subset!r}")
            cut = int(len(x) * image_data_generator._validation_split)
            part = slice(None, cut) if subset == "validation" else slice(cut, None)
            x = x[part]
            y = y[part] if y is not None else None
            sample_weight = sample_weight[part] if sample_weight is not None else None
        self.x, self.y, self.sample_weight = x, y, sample_weight
        self.image_data_generator = image_data_generator
        super().__init__(len(x), batch_size, shuffle, seed)

    def _get_batches_of_transformed_samples(self, index_array):
        gen = self.image_data_generator
        batch = np.zeros((len(index_array),) + self.x.shape[1:], dtype=self.dtype)
        for i, j in enumerate(index_array):
            params = gen.get_random_transform(self.x[j].shape)
            img = gen.apply_transform(self.x[j].astype(self.dtype), params)
            batch[i] = gen.standardize(img)
        if self.y is None:
            return batch
        out = (batch, self.y[index_array])
        if self.sample_weight is not None:
            out += (self.sample_weight[index_array],)
        return out
