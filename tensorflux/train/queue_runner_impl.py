"""TensorFlow's module name for the QueueRunner implementation (`queue_runner_impl`), kept
for code that imports it by that name; the implementation is in queue_runner.py."""

from tensorflux.train.queue_runner import (  # noqa: F401
    QueueRunner,
    add_queue_runner,
    start_queue_runners,
)
