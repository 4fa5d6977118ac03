"""SyncReplicasOptimizer: synchronous between-graph replication on an in-process cluster.

Each replica is a thread with its own graph and its own MonitoredTrainingSession on its
own worker task; the variables live on the one PS task (explicit `tf.device` blocks). The
chief is replica 0. Checks:
- 2 replicas aggregating 2: after K updates the variables equal K plain SGD steps on the
  mean gradient, computed in NumPy (a dense variable, and an embedding whose sparse rows
  are averaged over the replicas that touched them);
- backup workers (3 replicas aggregating 2): a straggler's gradients arrive stale, are
  dropped and counted, and never reach the variables; the global step advances by one per
  update;
- a replica that leaves mid-training does not stop the others while 2 remain;
- the optimizer's argument and ordering errors (TensorFlow's, plus the issue's
  `replicas_to_aggregate > total_num_replicas`).
Optionally the 2-replica run is repeated under TensorFlow (oracle) with the same result.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import tensorflux as tf
from tests.distributed.conftest import Cluster
from tests.oracle import run_tf
from tests.threads_util import wait_until

pytestmark = pytest.mark.timeout(120)

LR = 0.5
PS = "/job:ps/task:0"


class _Model:
    """One replica's graph: `train` (the replica's train op), `step`, `params`, `dropped`
    (the accumulators' stale-gradient count), `local_step`, `opt`."""

    def __init__(self, task, build_loss, params_init, replicas_to_aggregate, total):
        self.graph = tf.Graph()
        with self.graph.as_default():
            with tf.device(PS):
                self.step = tf.train.get_or_create_global_step()
                self.params = {name: tf.get_variable(name, initializer=value)
                               for name, value in params_init.items()}
            with tf.device(f"/job:worker/task:{task}"):
                loss = build_loss(task, self.params)
                self.opt = tf.train.SyncReplicasOptimizer(
                    tf.train.GradientDescentOptimizer(LR), replicas_to_aggregate, total)
                self.train = self.opt.minimize(loss, global_step=self.step)
                self.dropped = self.opt.num_dropped_gradients()
            self.local_step, = [v for v in tf.local_variables()
                                if v.op.name == "sync_rep_local_step"]


def _release_tokens(cluster, n):
    """Puts `n` tokens (-1) in the shared token queue from a session of its own.

    A replica whose train op is blocked waiting for a token when training stops may wait
    forever (as in TensorFlow: the other replicas that would make the update are gone);
    one token per replica lets each finish its last step, and then see the stop."""
    g = tf.Graph()
    with g.as_default(), tf.device(PS):
        queue = tf.FIFOQueue(-1, tf.int64, shapes=[()], shared_name="sync_token_q",
                             name="sync_token_q")
        release = queue.enqueue_many([[-1] * n])
    with tf.Session(cluster.target, graph=g) as sess:
        try:
            sess.run(release)
        except tf.errors.CancelledError:
            pass  # the chief has closed the queue already: nobody waits on it


def _run_replicas(cluster, models, bodies, num_tokens=-1, stop=None):
    """Runs `bodies[i](sess, model)` in one thread per replica, each in a
    MonitoredTrainingSession (replica 0 the chief) with the optimizer's hook; returns
    the bodies' results. Once `stop` is set, releases the replicas blocked on a token.
    Raises the first error of a thread."""
    results, failures = [None] * len(models), []
    releaser = None
    if stop is not None:
        releaser = threading.Thread(target=lambda: stop.wait(90) and _release_tokens(
            cluster, len(models)), daemon=True)
        releaser.start()

    def replica(i):
        m = models[i]
        try:
            hook = m.opt.make_session_run_hook(i == 0, num_tokens=num_tokens)
            with m.graph.as_default(), tf.train.MonitoredTrainingSession(
                    master=cluster.workers[i].target, is_chief=i == 0, hooks=[hook],
                    stop_grace_period_secs=1, log_step_count_steps=0,
                    max_wait_secs=60) as sess:
                results[i] = bodies[i](sess, m)
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            failures.append(e)

    threads = [threading.Thread(target=replica, args=(i,), daemon=True)
               for i in range(len(models))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    if releaser is not None:
        stop.set()
        releaser.join(30)
    assert not any(t.is_alive() for t in threads), "a replica hung"
    if failures:
        raise failures[0]
    return results


def _ps_accumulator(cluster, shared_name):
    """The accumulator resource on the PS task (its take count is not exposed by an op)."""
    device = cluster.ps[0]._worker.env.device_mgr.devices[0]
    return device.resource_mgr.get("", shared_name)


# ---- 2 replicas: exactly synchronous SGD on the mean gradient ------------------------------

X = [np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[0.5, -1.0], [2.0, 0.0]])]
Y = [np.array([[1.0], [2.0]]), np.array([[0.0], [1.0]])]
IDS = [np.array([0, 2]), np.array([2, 3])]
ROWS = [np.array([[1.0, -2.0], [0.5, 0.25]]), np.array([[4.0, 1.0], [-1.0, 3.0]])]
W0 = np.array([[0.1], [-0.2]])
E0 = np.arange(8, dtype=np.float64).reshape(4, 2) / 8


def _regression_loss(task, params):
    """A mean squared error on the task's data plus a linear term on embedding rows (a
    sparse gradient: `ROWS[task]` at rows `IDS[task]`)."""
    err = tf.matmul(tf.constant(X[task]), params["w"]) - Y[task]
    rows = tf.gather(params["emb"], tf.constant(IDS[task]))
    return tf.reduce_mean(tf.square(err)) + tf.reduce_sum(rows * ROWS[task])


def _expected_sync_sgd(steps):
    """K SGD steps on the replicas' mean gradient (sparse rows: mean over the replicas
    that touched each row, as the SparseConditionalAccumulator averages)."""
    w, emb = W0.copy(), E0.copy()
    for _ in range(steps):
        grads = [2 * X[i].T @ (X[i] @ w - Y[i]) / len(X[i]) for i in range(2)]
        w = w - LR * (grads[0] + grads[1]) / 2
        total, count = np.zeros_like(emb), np.zeros(len(emb))
        for ids, rows in zip(IDS, ROWS, strict=True):
            total[ids] += rows
            count[ids] += 1
        touched = count > 0
        emb[touched] -= LR * total[touched] / count[touched, None]
    return w, emb


def test_two_replicas_equal_sync_sgd_on_the_mean_gradient():
    steps = 4
    cluster = Cluster(2, 1)
    try:
        models = [_Model(i, _regression_loss, {"w": W0, "emb": E0}, 2, 2) for i in range(2)]
        # Lock-step rounds: no initial tokens, so each round's update takes exactly one
        # gradient from each replica, and a replica starts its next round only once both
        # have their token (a fast one cannot take the other's token).
        rounds = threading.Barrier(2)

        def body(sess, m):
            tokens = []
            for _ in range(steps):
                rounds.wait()
                tokens.append(sess.run(m.train))
            rounds.wait()
            out = tokens, sess.run([m.step, m.params["w"], m.params["emb"], m.dropped])
            rounds.wait()  # the chief's sync thread serves until both have read
            return out

        results = _run_replicas(cluster, models, [body, body], num_tokens=0)
    finally:
        cluster.stop()
    want_w, want_emb = _expected_sync_sgd(steps)
    for tokens, (step, w, emb, dropped) in results:
        assert tokens == list(range(1, steps + 1)) and step == steps and dropped == 0
        np.testing.assert_allclose(w, want_w, rtol=1e-12, atol=0)
        np.testing.assert_allclose(emb, want_emb, rtol=1e-12, atol=0)


# ---- backup workers and replicas that leave ------------------------------------------------

# Constant gradients: the fast replicas' are equal, so every update of the fast ones moves
# w by exactly -LR * FAST; the slow replica's points elsewhere, so a single one of its
# gradients reaching w would leave the lattice w0 - k * LR * FAST.
FAST = np.array([1.0, 2.0])
SLOW = np.array([1000.25, -3000.5])


def _linear_loss(slow_task):
    def build(task, params):
        return tf.reduce_sum(params["w"] * (SLOW if task == slow_task else FAST))
    return build


def _updates_made(w) -> int:
    """k such that w == -k * LR * FAST exactly (asserts that there is one)."""
    k = -w[0] / (LR * FAST[0])
    assert k == int(k) and np.array_equal(w, -k * LR * FAST), f"off the lattice: {w}"
    return int(k)


def _settle(sess, m, acc, n):
    """Once no replica applies any more: waits until every update the accumulator took
    has been applied and counted in the global step; returns (global step, w)."""
    seen = {}

    def settled():
        takes = acc.global_step
        step = sess.run(m.step)
        w = sess.run(m.params["w"])
        seen.update(step=step, w=w)
        return acc.num_accumulated() < n and acc.global_step == takes == step

    wait_until(settled, timeout=20)
    return seen["step"], seen["w"]


def _trainer(more, stop, started, finished, acc=None):
    """Trains, once every replica has its session, while `more(global step)` and no other
    replica has stopped; the chief (with `acc`) then waits for the others, lets the last
    update land and reads the result."""
    def body(sess, m):
        started.wait()
        while not stop.is_set():
            if not more(sess.run(m.step)):
                stop.set()
                break
            sess.run(m.train)
        finished.wait()
        if acc is not None:
            step, w = _settle(sess, m, acc(), 2)
            return step, w, sess.run(m.dropped)
        return None
    return body


def test_backup_workers_drop_the_stragglers_gradients():
    target = 8
    cluster = Cluster(3, 1)
    stop, slow_attempts = threading.Event(), []
    started, finished = threading.Barrier(3), threading.Barrier(3)

    def slow(sess, m):
        # A straggler: each gradient is computed only after the others have moved the
        # global step past the one it starts from, so it is always stale.
        started.wait()
        while not stop.is_set():
            start = sess.run(m.local_step)
            while sess.run(m.step) <= start and not stop.is_set():
                time.sleep(0.01)
            if stop.is_set():
                break
            time.sleep(0.05)
            sess.run(m.train)
            slow_attempts.append(start)
        finished.wait()

    def more(step):  # until `target`, and the straggler has tried twice
        return step < target or len(slow_attempts) < 2

    try:
        models = [_Model(i, _linear_loss(2), {"w": np.zeros(2)}, 2, 3) for i in range(3)]
        acc = lambda: _ps_accumulator(cluster, "w:0/grad_accum")  # noqa: E731
        results = _run_replicas(cluster, models, [
            _trainer(more, stop, started, finished, acc),
            _trainer(more, stop, started, finished), slow], stop=stop)
    finally:
        cluster.stop()
    step, w, dropped = results[0]
    assert step >= target
    assert _updates_made(w) == step  # one global step per update, no slow gradient in it
    assert len(slow_attempts) >= 2 and dropped >= len(slow_attempts)


def test_a_replica_leaving_does_not_stop_the_others():
    target = 10
    cluster = Cluster(3, 1)
    stop = threading.Event()
    started, finished = threading.Barrier(3), threading.Barrier(2)
    left = []

    def leaver(sess, m):
        started.wait()
        for _ in range(3):
            sess.run(m.train)
        left.append(sess.run(m.step))  # then its thread ends and its session closes

    def more(step):  # until `target`, and 5 updates after the third replica left
        return not left or step < max(target, left[0] + 5)

    try:
        models = [_Model(i, _linear_loss(None), {"w": np.zeros(2)}, 2, 3) for i in range(3)]
        acc = lambda: _ps_accumulator(cluster, "w:0/grad_accum")  # noqa: E731
        results = _run_replicas(cluster, models, [
            _trainer(more, stop, started, finished, acc),
            _trainer(more, stop, started, finished), leaver], stop=stop)
    finally:
        cluster.stop()
    step, w, _ = results[0]
    assert left and step >= max(target, left[0] + 5)
    assert _updates_made(w) == step


# ---- construction and errors ---------------------------------------------------------------


def _local_setup(replicas=2, total=None):
    w = tf.Variable([1.0, 2.0], name="w")
    emb = tf.Variable(np.ones((3, 2), np.float32), name="emb")
    step = tf.train.get_or_create_global_step()
    loss = tf.reduce_sum(w * w) + tf.reduce_sum(tf.gather(emb, [0, 2]))
    opt = tf.train.SyncReplicasOptimizer(tf.train.MomentumOptimizer(0.1, 0.9), replicas,
                                         total)
    return opt, loss, step, w, emb


def test_argument_and_ordering_errors():
    with tf.Graph().as_default():
        opt, loss, step, w, _ = _local_setup(2, 3)
        with pytest.raises(ValueError, match=r"^get_init_tokens_op\(\) should be called "
                           r"after apply_gradients\(\).$"):
            opt.get_init_tokens_op()
        with pytest.raises(ValueError, match=r"^Should be called after apply_gradients"):
            opt.get_chief_queue_runner()
        with pytest.raises(ValueError, match="^Must supply at least one variable$"):
            opt.apply_gradients([], step)
        grads = opt.compute_gradients(loss)
        with pytest.raises(ValueError, match="^Global step is required to check staleness$"):
            opt.apply_gradients(grads)
        with pytest.raises(ValueError, match="apply_gradient should be called before"):
            opt.make_session_run_hook(True).begin()
        opt.apply_gradients(grads, step)
        assert opt.make_session_run_hook(True)._sync_optimizer is opt  # TF's attribute
        assert opt.get_init_tokens_op(0).type == "NoOp"
        assert opt.get_init_tokens_op().type == "QueueEnqueueManyV2"
    with tf.Graph().as_default():
        opt, loss, step, _, _ = _local_setup(3, 3)
        opt.minimize(loss, global_step=step)
        opt.get_init_tokens_op(0)  # needs max(0, 3 - 3)
        with pytest.raises(ValueError, match=r"^Too few tokens to finish the first step: -2 "
                           r"\(given\) vs 0 \(needed\)$"):
            opt.get_init_tokens_op(-2)
    # TensorFlow accepts replicas_to_aggregate > total_num_replicas; the issue asks for a
    # ValueError.
    with pytest.raises(ValueError, match=r"replicas_to_aggregate \(3\) must not exceed "
                       r"total_num_replicas \(2\)"):
        tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 3, 2)
    with pytest.raises(ValueError, match="replicas_to_aggregate must be at least 1"):
        tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 0)


def test_graph_structure_slots_and_a_single_process_run():
    with tf.Graph().as_default() as g:
        opt, loss, step, w, emb = _local_setup(1)
        train = opt.minimize(loss, global_step=step)
        types = {op.type for op in g.get_operations()}
        assert {"ResourceConditionalAccumulator", "SparseConditionalAccumulator",
                "FIFOQueueV2"} <= types
        names = sorted(op.get_attr("shared_name") for op in g.get_operations()
                       if op.type in ("ResourceConditionalAccumulator",
                                      "SparseConditionalAccumulator", "FIFOQueueV2"))
        assert names == [b"emb:0/grad_accum", b"sync_token_q", b"w:0/grad_accum"]
        # TensorFlow's local step; tensorflux's chief heartbeat is in no collection.
        (local,) = tf.local_variables()
        assert local.op.name == "sync_rep_local_step" and local.dtype.base_dtype == tf.int64
        assert "sync_chief_heartbeat" not in {v.op.name for v in tf.global_variables()}
        assert g.get_operation_by_name("sync_chief_heartbeat").type == "VarHandleOp"
        assert opt.get_slot_names() == ["momentum"]
        assert opt.get_slot(w, "momentum") is not None
        assert opt.get_chief_queue_runner().enqueue_ops[0].type == "QueueEnqueueManyV2"
        # One replica aggregating one gradient, in one local session, without initial
        # tokens: each run's gradient makes one update, whose token ends the run.
        hook = opt.make_session_run_hook(True, num_tokens=0)
        dropped = opt.num_dropped_gradients()
        with tf.train.MonitoredSession(hooks=[hook], stop_grace_period_secs=1) as sess:
            tokens = [sess.run(train) for _ in range(3)]
            got_w, got_emb, got_step, dropped = sess.run([w, emb, step, dropped])
    want, velocity = np.array([1.0, 2.0]), np.zeros(2)
    for _ in range(3):
        velocity = 0.9 * velocity + 2 * want
        want = want - 0.1 * velocity
    want_emb = np.ones((3, 2))
    want_emb[[0, 2]] -= 0.1 * (1 + 1.9 + 2.71)  # the rows' momentum: 1, 1.9, 2.71
    assert tokens == [1, 2, 3] and got_step == 3 and dropped == 0
    np.testing.assert_allclose(got_w, want, rtol=1e-6)
    np.testing.assert_allclose(got_emb, want_emb, rtol=1e-6)


def test_a_scaffold_with_the_chief_init_op_as_local_init_op():
    """As tmulc18/Distributed-TensorFlow-Guide's ssgd.py builds it: a global step made with
    tf.Variable(name="global_step") outside its collection, the Scaffold's local_init_op the
    optimizer's chief_init_op, its ready_for_local_init_op the optimizer's. The session gets
    ready (the chief heartbeat is no variable the script's init ops must cover) and
    StopAtStepHook finds that global step."""
    with tf.Graph().as_default():
        w = tf.Variable([0.0, 0.0], name="w")
        step = tf.Variable(0, dtype=tf.int32, trainable=False, name="global_step")
        loss = tf.reduce_mean(tf.square(w - 100.0))
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.01), 1, 1)
        train = opt.minimize(loss, global_step=step)
        scaffold = tf.train.Scaffold(init_op=tf.global_variables_initializer(),
                                     local_init_op=opt.chief_init_op,
                                     ready_for_local_init_op=opt.ready_for_local_init_op)
        hooks = [opt.make_session_run_hook(True, num_tokens=0),
                 tf.train.StopAtStepHook(last_step=4)]
        assert tf.train.get_global_step() is step
        runs = 0
        with tf.train.MonitoredTrainingSession(is_chief=True, scaffold=scaffold, hooks=hooks,
                                               stop_grace_period_secs=1) as sess:
            while not sess.should_stop():
                sess.run(train)
                runs += 1
    assert runs == 4  # each run one update and one step; the hook stopped at step 4


def test_variable_averages_run_after_the_tokens_are_enqueued():
    class Averages:
        def apply(self, var_list):
            self.var_list = var_list
            return tf.no_op(name="average")

    with tf.Graph().as_default():
        averages = Averages()
        w = tf.Variable([1.0, 2.0], name="w")
        opt = tf.train.SyncReplicasOptimizer(
            tf.train.GradientDescentOptimizer(0.1), 1, variable_averages=averages,
            variables_to_average=[w])
        opt.minimize(tf.reduce_sum(w * w), global_step=tf.train.get_or_create_global_step())
        sync_op, = opt.get_chief_queue_runner().enqueue_ops
        assert sync_op.name == "average" and averages.var_list == [w]
        assert [c.type for c in sync_op.control_inputs] == ["QueueEnqueueManyV2"]


# ---- the same 2-replica run under TensorFlow ----------------------------------------------

_TF_RUN = """
import threading
X = {X}; Y = {Y}; IDS = {IDS}; ROWS = {ROWS}; W0 = {W0}; E0 = {E0}; LR = {LR}; STEPS = {STEPS}
import socket

def free_port():
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]

jobs = {{"worker": ["localhost:%d" % free_port() for _ in range(2)],
        "ps": ["localhost:%d" % free_port()]}}
spec = tf.train.ClusterSpec(jobs)
workers = [tf.train.Server(spec, job_name="worker", task_index=i) for i in range(2)]
ps = tf.train.Server(spec, job_name="ps", task_index=0)
rounds = threading.Barrier(2)
chief_ready = threading.Event()
out = {{}}

def replica(i):
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            step = tf.train.get_or_create_global_step()
            w = tf.get_variable("w", initializer=np.array(W0))
            emb = tf.get_variable("emb", initializer=np.array(E0))
        with tf.device("/job:worker/task:%d" % i):
            err = tf.matmul(tf.constant(np.array(X[i])), w) - np.array(Y[i])
            rows = tf.gather(emb, tf.constant(np.array(IDS[i])))
            loss = tf.reduce_mean(tf.square(err)) + tf.reduce_sum(rows * np.array(ROWS[i]))
            opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(LR), 2, 2)
            train = opt.minimize(loss, global_step=step)
        hook = opt.make_session_run_hook(i == 0, num_tokens=0)
        if i:
            chief_ready.wait(60)  # TensorFlow's worker would poll every 30 s
        with tf.train.MonitoredTrainingSession(master=workers[i].target, is_chief=i == 0,
                                               hooks=[hook], stop_grace_period_secs=1,
                                               log_step_count_steps=0) as sess:
            chief_ready.set()
            for _ in range(STEPS):
                rounds.wait()
                sess.run(train)
            rounds.wait()
            out[i] = [v.tolist() for v in sess.run([w, emb])] + [int(sess.run(step))]
            rounds.wait()

threads = [threading.Thread(target=replica, args=(i,), daemon=True) for i in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join(120)
result = [out.get(0), out.get(1)]
"""


@pytest.mark.oracle
@pytest.mark.timeout(240)
def test_two_replicas_match_tensorflow():
    steps = 3
    code = _TF_RUN.format(X=[x.tolist() for x in X], Y=[y.tolist() for y in Y],
                          IDS=[i.tolist() for i in IDS], ROWS=[r.tolist() for r in ROWS],
                          W0=W0.tolist(), E0=E0.tolist(), LR=LR, STEPS=steps)
    result = run_tf(code, timeout=200)
    want_w, want_emb = _expected_sync_sgd(steps)
    for got in result:
        assert got is not None, "a TensorFlow replica did not finish"
        np.testing.assert_allclose(np.array(got[0]), want_w, rtol=1e-12)
        np.testing.assert_allclose(np.array(got[1]), want_emb, rtol=1e-12)
        assert got[2] == steps


def test_the_chiefs_death_is_reported_not_waited_on():
    """The chief's task goes away mid-training (its server stops: its queue runner and
    heartbeat die with it); the other replica, blocked on a token, is released and its
    MonitoredSession raises FailedPreconditionError naming the chief within the timeout."""
    cluster = Cluster(2, 1)
    outcome: dict = {}
    trained = threading.Event()

    def replica(i, m):
        hook = m.opt.make_session_run_hook(i == 0, chief_timeout_secs=2.0)
        try:
            with m.graph.as_default(), tf.train.MonitoredTrainingSession(
                    master=cluster.workers[i].target, is_chief=i == 0, hooks=[hook],
                    stop_grace_period_secs=1, log_step_count_steps=0,
                    max_wait_secs=60) as sess:
                if i == 0:
                    while not trained.is_set():
                        sess.run(m.train)
                    cluster.workers[0].stop()  # the chief's task dies
                    return
                for _ in range(3):
                    sess.run(m.train)
                trained.set()
                start = time.monotonic()
                while time.monotonic() - start < 60:
                    sess.run(m.train)  # blocks on a token once the chief is gone
        except BaseException as e:  # noqa: BLE001 - checked below
            outcome[i] = (e, time.monotonic())

    try:
        models = [_Model(i, _linear_loss(None), {"w": np.zeros(2)}, 2, 2) for i in range(2)]
        threads = [threading.Thread(target=replica, args=(i, models[i]), daemon=True)
                   for i in range(2)]
        for t in threads:
            t.start()
        threads[1].join(90)
        assert not threads[1].is_alive(), "the replica waited for the dead chief"
    finally:
        trained.set()
        cluster.stop()
    error = outcome.get(1, (None,))[0]
    assert isinstance(error, tf.errors.FailedPreconditionError), repr(error)
    assert "chief" in str(error)
