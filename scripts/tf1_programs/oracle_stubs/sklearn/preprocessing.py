"""The oracle venv has no scikit-learn: LabelBinarizer for integer class labels."""
import numpy as np


class LabelBinarizer:
    def fit(self, y):
        self.classes_ = np.unique(y)
        return self

    def transform(self, y):
        return (np.asarray(y)[:, None] == self.classes_[None, :]).astype(np.int64)

    def fit_transform(self, y):
        return self.fit(y).transform(y)
