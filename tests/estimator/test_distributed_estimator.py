"""tf.estimator on a cluster from TF_CONFIG: RunConfig's task settings, the default device
function putting variables on the PS tasks, and train_and_evaluate's chief, worker and
evaluator parts (servers in this process, on free loopback ports, stopped at the end)."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.distributed import server as server_lib
from tensorflux.distributed.launcher import free_ports
from tests.estimator.test_estimator import X, Y, linear_model_fn


def _tf_config(monkeypatch, cluster, task_type, index=0):
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": cluster, "task": {"type": task_type, "index": index}}))


CLUSTER = {"chief": ["localhost:1111"], "worker": ["localhost:2222", "localhost:3333"],
           "ps": ["localhost:4444", "localhost:5555"]}


@pytest.mark.parametrize("task_type, index, master, is_chief, filters, global_id", [
    ("chief", 0, "grpc://localhost:1111", True, ["/job:ps", "/job:chief"], 0),
    ("worker", 1, "grpc://localhost:3333", False, ["/job:ps", "/job:worker/task:1"], 2),
    ("ps", 1, "grpc://localhost:5555", False, None, 4),
    ("evaluator", 0, "", False, None, None),
])
def test_run_config_reads_the_task_from_tf_config(monkeypatch, task_type, index, master,
                                                  is_chief, filters, global_id):
    _tf_config(monkeypatch, CLUSTER, task_type, index)
    config = tf.estimator.RunConfig()
    assert (config.task_type, config.task_id, config.master, config.is_chief) == \
        (task_type, index, master, is_chief)
    assert config.global_id_in_cluster == global_id
    assert (config.num_ps_replicas, config.num_worker_replicas) == (2, 3)
    assert config.cluster_spec.as_dict() == CLUSTER
    got = None if config.session_config is None else list(config.session_config.device_filters)
    assert got == filters


def test_run_config_without_a_cluster_is_local(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    config = tf.estimator.RunConfig()
    assert (config.task_type, config.task_id, config.master, config.is_chief,
            config.num_ps_replicas, config.num_worker_replicas) == ("worker", 0, "", True, 0, 1)
    assert config.global_id_in_cluster == 0
    monkeypatch.setenv("TF_CONFIG", json.dumps({"task": {"type": "worker", "index": 3}}))
    assert tf.estimator.RunConfig().master == ""
    monkeypatch.setenv("TF_CONFIG", json.dumps({"task": {"type": "evaluator", "index": 0}}))
    evaluator = tf.estimator.RunConfig()
    assert (evaluator.task_type, evaluator.master, evaluator.global_id_in_cluster) == \
        ("evaluator", "", None)


@pytest.mark.parametrize("tf_config, match", [
    ("{not json", "TF_CONFIG is not JSON"),
    (json.dumps({"cluster": CLUSTER}), "task.type"),
    (json.dumps({"cluster": CLUSTER, "task": {"type": "worker"}}), "task.index"),
    (json.dumps({"cluster": CLUSTER, "task": {"type": "worker", "index": 2}}),
     "worker:2 is not in its cluster"),
    (json.dumps({"cluster": {**CLUSTER, "evaluator": ["localhost:1"]},
                 "task": {"type": "chief", "index": 0}}), "evaluator"),
    (json.dumps({"cluster": {"worker": ["localhost:1"]},
                 "task": {"type": "worker", "index": 0}}), "a `chief` must be"),
])
def test_malformed_tf_config_is_a_value_error(monkeypatch, tf_config, match):
    monkeypatch.setenv("TF_CONFIG", tf_config)
    with pytest.raises(ValueError, match=match):
        tf.estimator.RunConfig()


def test_variables_go_to_the_ps_tasks(monkeypatch, tmp_path):
    _tf_config(monkeypatch, CLUSTER, "worker", 1)
    est = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path),
                                 params={"lr": 0.1})
    with tf.Graph().as_default(), tf.device(est._device_fn):
        a = tf.get_variable("a", [2])
        b = tf.get_variable("b", [2])
        c = a + b
    assert a.device == "/job:ps/task:0" and b.device == "/job:ps/task:1"
    assert c.device == "/job:worker/task:1"


def _input_fn():
    return tf.estimator.inputs.numpy_input_fn({"x": X}, Y, batch_size=32, num_epochs=None,
                                              shuffle=False)()


class _Count(tf.train.SessionRunHook):
    """Counts this task's training steps; sleeps `pause` seconds after each (a slower chief
    leaves the worker steps to take)."""

    def __init__(self, pause=0.0):
        self.steps, self.pause = 0, pause

    def after_run(self, run_context, run_values):
        self.steps += 1
        time.sleep(self.pause)


def _specs(max_steps, hook=None):
    train = tf.estimator.TrainSpec(_input_fn, max_steps=max_steps,
                                   hooks=[hook] if hook else None)
    evaluate = tf.estimator.EvalSpec(
        lambda: tf.estimator.inputs.numpy_input_fn({"x": X}, Y, batch_size=96,
                                                   shuffle=False)(),
        steps=1, start_delay_secs=0, throttle_secs=1)
    return train, evaluate


@pytest.mark.timeout(120)
def test_chief_worker_and_evaluator_train_on_the_ps(monkeypatch, tmp_path):
    """A PS task's server here, the chief and a worker training in two threads (each with
    its own server), then the evaluator on the last checkpoint: the model trains to
    max_steps and the evaluation reads the PS's trained variables."""
    started = []  # the chief's and the worker's servers, stopped at the end

    class Recorded(server_lib.Server):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(server_lib, "Server", Recorded)
    chief, worker, ps = (f"localhost:{p}" for p in free_ports(3))
    cluster = {"chief": [chief], "worker": [worker], "ps": [ps]}
    ps_server = tf.train.Server(tf.train.ClusterSpec(cluster), job_name="ps", task_index=0)
    model_dir = str(tmp_path / "model")
    configs = {}
    for task in ("chief", "worker"):
        _tf_config(monkeypatch, cluster, task)
        configs[task] = tf.estimator.RunConfig(model_dir=model_dir, save_checkpoints_steps=20,
                                               experimental_max_worker_delay_secs=1)
    _tf_config(monkeypatch, cluster, "evaluator")
    configs["evaluator"] = tf.estimator.RunConfig(model_dir=model_dir)
    assert configs["worker"].master == f"grpc://{worker}"
    counts = {"chief": _Count(pause=0.01), "worker": _Count(), "evaluator": None}
    results, failures = {}, []

    def run(task):
        try:
            est = tf.estimator.Estimator(linear_model_fn, config=configs[task],
                                         params={"lr": 0.05})
            train, evaluate = _specs(max_steps=300, hook=counts[task])
            results[task] = tf.estimator.train_and_evaluate(est, train, evaluate)
        except Exception as e:  # noqa: BLE001 - reported by the test
            failures.append((task, e))

    threads = [threading.Thread(target=run, args=(t,), daemon=True)
               for t in ("chief", "worker")]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
        assert not failures, failures
        assert results == {"chief": (None, None), "worker": (None, None)}
        run("evaluator")
        assert not failures, failures
        metrics, exports = results["evaluator"]
        assert metrics["global_step"] >= 300 and exports == []
        # Both replicas trained the one model: every step of either moved the global step.
        chief_steps, worker_steps = counts["chief"].steps, counts["worker"].steps
        assert chief_steps > 0 and worker_steps > 0, (chief_steps, worker_steps)
        assert chief_steps + worker_steps >= 300
        w = tf.train.load_variable(model_dir, "w")
        b = tf.train.load_variable(model_dir, "b")
        np.testing.assert_allclose(metrics["loss"], np.mean((X @ w + b - Y) ** 2), rtol=1e-5)
        assert metrics["loss"] < 0.5 * np.mean(Y ** 2)  # it trained
    finally:
        for server in [ps_server, *started]:
            server.stop()
    assert len(started) == 2
