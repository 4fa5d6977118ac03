"""A TF1 Estimator program on scikit-learn's digits: a wide & deep canned estimator over
feature columns, trained and evaluated with train_and_evaluate, then exported as a
SavedModel that `tensorflux-serve` can serve (its "predict" signature: a raw receiver of
float pixels cannot feed the Classify API, which takes serialized tf.Examples).

    python examples/estimator_digits.py [--steps 600] [--model_dir DIR]

On a local cluster (TF_CONFIG per task: a chief, PS and worker tasks train between-graph,
the evaluator evaluates each checkpoint and exports the last; one shared --model_dir):

    tensorflux-cluster --chief --ps 1 --workers 1 --evaluator -- \
        python examples/estimator_digits.py --model_dir /tmp/digits_model
"""

from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np
from sklearn.datasets import load_digits

import tensorflux as tf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--model_dir", default=None)
    args = parser.parse_args()
    tf.logging.set_verbosity(tf.logging.WARN)

    digits = load_digits()
    pixels = (digits.data / 16.0).astype(np.float32)
    # A categorical feature as the "wide" part: how many pixels are lit, in bands of 8.
    lit = (digits.data > 4).sum(axis=1).astype(np.int64) // 8
    labels = digits.target.astype(np.int64)
    split = 1500
    feats = {"pixels": pixels, "lit": lit}

    pixel_col = tf.feature_column.numeric_column("pixels", shape=64)
    lit_col = tf.feature_column.categorical_column_with_identity("lit", 9)
    model_dir = args.model_dir or tempfile.mkdtemp(prefix="estimator_digits_")
    estimator = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=model_dir, linear_feature_columns=[lit_col],
        dnn_feature_columns=[pixel_col], dnn_hidden_units=[64],
        dnn_optimizer=tf.train.AdamOptimizer(0.005), n_classes=10,
        config=tf.estimator.RunConfig(save_checkpoints_steps=200, tf_random_seed=0))

    def train_input():
        return tf.estimator.inputs.numpy_input_fn(
            {k: v[:split] for k, v in feats.items()}, labels[:split], batch_size=64,
            num_epochs=None, shuffle=True)()

    def eval_input():
        return tf.estimator.inputs.numpy_input_fn(
            {k: v[split:] for k, v in feats.items()}, labels[split:], batch_size=128,
            shuffle=False)()

    receiver = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"pixels": tf.placeholder(tf.float32, [None, 64]),
         "lit": tf.placeholder(tf.int64, [None])})
    result, exports = tf.estimator.train_and_evaluate(
        estimator, tf.estimator.TrainSpec(train_input, max_steps=args.steps),
        tf.estimator.EvalSpec(eval_input, steps=None, start_delay_secs=0, throttle_secs=0,
                              exporters=[tf.estimator.FinalExporter("digits", receiver)]))
    if result is None:  # a chief, worker or ps task of a cluster: the evaluator reports
        config = estimator.config
        print(f"{config.task_type}:{config.task_id}: done")
        return
    exported = [os.fsdecode(e) for e in exports if e]
    print(f"after {result['global_step']} steps: held-out accuracy {result['accuracy']:.4f}, "
          f"average loss {result['average_loss']:.4f}; SavedModel at {exported[-1]}")


if __name__ == "__main__":
    main()
