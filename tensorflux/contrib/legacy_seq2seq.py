"""`tf.contrib.legacy_seq2seq`: the sequence losses over lists of per-step tensors (the
char-RNN tutorials' `sequence_loss_by_example`)."""

from tensorflux.contrib.seq2seq import legacy_sequence_loss as sequence_loss  # noqa: F401
from tensorflux.contrib.seq2seq import sequence_loss_by_example  # noqa: F401
