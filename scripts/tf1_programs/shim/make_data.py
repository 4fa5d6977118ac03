"""Makes the local data the stand-ins serve, in $TF1_PROGRAMS_WORK (needs scikit-learn and
Pillow): digits28.npz, sklearn's 8x8 digits upscaled x3 and padded to 28x28 in [0, 1],
shuffled once; digits8.npz, the 8x8 digits as load_digits gives them (for the oracle's
sklearn stand-in: MorvanZhou's tf17_dropout); imgdata/{cats,dogs}/*.jpg, 32 small JPEGs for
build_an_image_dataset.py."""

import os

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits

WORK = os.environ.get("TF1_PROGRAMS_WORK", "/tmp/tf1progs")
os.makedirs(WORK, exist_ok=True)
d = load_digits()
img = d.images.astype(np.float32) / 16.0
big = np.pad(np.kron(img, np.ones((3, 3), np.float32)), ((0, 0), (2, 2), (2, 2)))
perm = np.random.RandomState(0).permutation(len(big))
np.savez_compressed(os.path.join(WORK, "digits28.npz"), images=big[perm].reshape(-1, 784),
                    labels=d.target[perm].astype(np.int64))
np.savez_compressed(os.path.join(WORK, "digits8.npz"), data=d.data, target=d.target)
rng = np.random.RandomState(0)
for name, (lo, hi) in {"cats": (0, 120), "dogs": (120, 255)}.items():
    os.makedirs(os.path.join(WORK, "imgdata", name), exist_ok=True)
    for i in range(16):
        pixels = rng.randint(lo, hi + 1, size=(80, 80, 3)).astype(np.uint8)
        Image.fromarray(pixels).save(os.path.join(WORK, "imgdata", name, f"{i}.jpg"))
