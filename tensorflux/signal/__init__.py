"""`tf.signal`: FFTs (tensorflux/ops/spectral_ops.py) and the signal-processing library
(frames, STFT, windows, mel filters, DCT, MFCCs; signal_ops.py here)."""

from tensorflux.ops.spectral_nd_ops import fftnd, ifftnd, irfftnd, rfftnd  # noqa: F401
from tensorflux.ops.spectral_ops import (  # noqa: F401
    fft,
    fft2d,
    fft3d,
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
from tensorflux.signal.signal_ops import (  # noqa: F401
    dct,
    fftshift,
    frame,
    hamming_window,
    hann_window,
    idct,
    ifftshift,
    inverse_mdct,
    inverse_stft,
    inverse_stft_window_fn,
    kaiser_bessel_derived_window,
    kaiser_window,
    linear_to_mel_weight_matrix,
    mdct,
    mfccs_from_log_mel_spectrograms,
    overlap_and_add,
    stft,
    vorbis_window,
)
