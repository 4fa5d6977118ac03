"""`tf.spectral`: TF1's older name for the transforms of `tf.signal`."""

from tensorflux.signal import (  # noqa: F401
    dct,
    fft,
    fft2d,
    fft3d,
    idct,
    ifft,
    ifft2d,
    ifft3d,
    irfft,
    irfft2d,
    irfft3d,
    rfft,
    rfft2d,
    rfft3d,
)
