"""The oracle venv has no scikit-learn: confusion_matrix in NumPy (what the notebooks call)."""
import numpy as np


def confusion_matrix(y_true, y_pred, labels=None):
    labels = np.unique(np.concatenate([y_true, y_pred])) if labels is None else np.asarray(labels)
    index = {v: i for i, v in enumerate(labels)}
    cm = np.zeros((len(labels), len(labels)), np.int64)
    for t, p in zip(y_true, y_pred, strict=True):
        cm[index[t], index[p]] += 1
    return cm
