"""`tf.contrib.tensorboard.plugins.projector`: the embedding projector's config, written
next to a FileWriter's event files (word2vec_basic.py's last step)."""

from __future__ import annotations

import os

from google.protobuf import text_format

from tensorflux.platform import gfile
from tensorflux.protos.projector_config_pb2 import (
    EmbeddingInfo,
    ProjectorConfig,
    SpriteMetadata,
)

__all__ = ["EmbeddingInfo", "ProjectorConfig", "SpriteMetadata", "visualize_embeddings"]

# The name TensorBoard's projector plugin looks for in a log directory.
PROJECTOR_FILENAME = "projector_config.pbtxt"


def visualize_embeddings(summary_writer, config) -> None:
    """Writes `config` as `projector_config.pbtxt` into `summary_writer`'s log directory,
    where TensorBoard's projector reads it.

    Args:
      summary_writer: a `tf.summary.FileWriter`.
      config: a `ProjectorConfig`.

    Raises:
      ValueError: the writer has no log directory.
    """
    logdir = summary_writer.get_logdir()
    if logdir is None:
        raise ValueError("Summary writer must have a logdir")
    with gfile.GFile(os.path.join(logdir, PROJECTOR_FILENAME), "w") as f:
        f.write(text_format.MessageToString(config))
