"""tensorflux.distributed.cluster: ClusterSpec, TF_CONFIG resolution, the server's flags.

ClusterSpec and the TF_CONFIG precedence are compared with TensorFlow 2.21 (`tf.train.
ClusterSpec`, `TFConfigClusterResolver` + `tf.train.Server`'s server-def completion) in one
oracle run; the tables below record what that run shows, so they hold without the oracle.
"""

from __future__ import annotations

import dataclasses
import json
import os
import textwrap

import pytest

import tensorflux as tf
from tensorflux.distributed import cluster as cluster_lib
from tensorflux.distributed.cluster import ClusterSpec, ServerTarget
from tensorflux.protos import cluster_pb2
from tests.oracle import run_tf

# ---- ClusterSpec against TensorFlow ------------------------------------------------------

# Runs under TensorFlow and under tensorflux alike: `probe(CS, ClusterDef)` describes each
# case of CASES as JSON-safe text (reprs, and "!Error: message" for exceptions).
PROBE = '''
def _attempt(f):
    try:
        return repr(f())
    except Exception as e:
        return "!" + type(e).__name__ + ": " + str(e)

def _cluster_def(ClusterDef, jobs):
    d = ClusterDef()
    for name, tasks in jobs:
        job = d.job.add()
        job.name = name
        for i, address in tasks.items():
            job.tasks[i] = address
    return d

def _job_record(cs, job):
    indices = cs.task_indices(job)
    probes = indices + [max(indices, default=-1) + 1, "0"]
    return [cs.num_tasks(job), indices, _attempt(lambda: cs.job_tasks(job)),
            [_attempt(lambda: cs.task_address(job, i)) for i in probes]]

def _record(CS, arg):
    try:
        cs = CS(arg)
    except Exception as e:
        return {"init": "!" + type(e).__name__ + ": " + str(e)}
    rec = {"as_dict": _attempt(cs.as_dict), "jobs": repr(cs.jobs), "str": str(cs),
           "repr": repr(cs), "bool": bool(cs), "copy": _attempt(lambda: CS(cs).as_dict()),
           "def": [(j.name, sorted(j.tasks.items())) for j in cs.as_cluster_def().job],
           "wire": cs.as_cluster_def().SerializeToString(deterministic=True).hex(),
           "missing": [_attempt(lambda: cs.num_tasks("nope")),
                       _attempt(lambda: cs.task_indices("nope")),
                       _attempt(lambda: cs.task_address("nope", 0)),
                       _attempt(lambda: cs.job_tasks(b"nope"))]}
    for job in cs.jobs:
        rec["job " + repr(job)] = _job_record(cs, job)
    return rec

def probe(CS, ClusterDef, cases, equality):
    ns = {"CS": CS, "cdef": lambda jobs: _cluster_def(ClusterDef, jobs)}
    out = {label: _record(CS, eval(src, ns)) for label, src in cases.items()}
    out["equality"] = [[CS(eval(a, ns)) == eval(b, ns), CS(eval(a, ns)) != eval(b, ns)]
                       for a, b in equality]
    d = _cluster_def(ClusterDef, [("w", {0: "a:1"})])
    out["kept"] = [CS(d).as_cluster_def() is d, CS(CS(d)).as_cluster_def() is d,
                   _attempt(lambda: hash(CS({})))]
    return out
'''

CASES = {
    "empty": "{}",
    "dense": '{"worker": ["w0:2222", "w1:2222"], "ps": ["p0:2222"]}',
    "tuple": '{"w": ("a:1", "b:2")}',
    "sparse": '{"worker": {1: "w1:1", 3: "w3:3"}, "ps": ["p:1"]}',
    "dict_dense": '{"w": {1: "b:1", 0: "a:0"}}',
    "str_keys": '{"w": {"1": "b:1", "0": "a:0"}}',
    "bool_key": '{"w": {True: "a:1"}}',
    "empty_list_job": '{"w": [], "p": ["x:1"]}',
    "insertion_order": '{"z": ["z:1"], "a": ["a:1"], "m": ["m:1"]}',
    "bytes_address": '{"w": [b"a:1", "b:2"]}',
    "bytes_job": '{b"w": ["a:1"]}',
    "unicode": '{"w\\u00e9": ["\\u00fc:1"]}',
    "invalid_job_names_kept": '{"bad-name": ["a:1"], "1x": ["b:1"], "": ["c:1"]}',
    "invalid_addresses_kept": '{"w": ["nonsense", "", "a:99999", "[::1]:1"]}',
    "cluster_def": 'cdef([("w", {2: "x:2", 0: "y:0"}), ("a", {}), ("w", {5: "z:5"})])',
    "cluster_def_order": 'cdef([("b", {0: "b:0"}), ("a", {0: "a:0"})])',
    "copy_bytes": 'CS({"w": [b"a:1"]})',
    "copy_sparse": 'CS({"w": {4: "a:4"}, "p": ["p:0"]})',
    "none": "None",
    "list": '[("w", ["a:1"])]',
    "string": '"ps|a:1"',
    "str_tasks": '{"w": "a:1"}',
    "set_tasks": '{"w": {"a:1"}}',
    "int_job": '{1: ["a:1"]}',
    "int_address": '{"w": [1]}',
    "none_address": '{"w": ["a:1", None]}',
    "out_of_int32": '{"w": {2**31: "x:1"}}',
    "bad_utf8": '{"w": [b"\\xff"]}',
    # Same error class as TensorFlow, our own message (TF's is Python's bare int()/sort error).
    "word_key": '{"w": {"a": "x:1"}}',
    "none_key": '{"w": {None: "x:1"}}',
    "mixed_job_types": '{b"w": ["a:1"], "x": ["b:1"]}',
    # Deliberate differences, see DIFFERENCES.
    "negative_key": '{"w": {-1: "x:1"}}',
    "fractional_key": '{"w": {1.5: "x:1"}}',
}

EQUALITY = [
    ('{"w": ["a"]}', 'CS({"w": {0: "a"}})'),
    ('{"w": ["a"]}', '{"w": {0: "a"}}'),  # the internal form compares equal, as in TF
    ('{"w": ["a"]}', '{"w": ["a"]}'),
    ('{"w": ["a"]}', 'CS({"w": ["b"]})'),
    ('{"w": ["a"]}', 'cdef([("w", {0: "a"})])'),
    ('{"w": [b"a"]}', 'CS({"w": ["a"]})'),
    ("{}", "None"),
    ("{}", "{}"),
    ("{}", "CS({})"),
]

MESSAGE_DIFFERS = {"word_key", "none_key", "mixed_job_types"}

# label -> (our error, TensorFlow's as_dict): clusters TensorFlow accepts and we refuse.
DIFFERENCES = {
    # No device can be named task:-1 (TF's job_tasks then fails with IndexError).
    "negative_key": ("!ValueError: Task index -1 in job 'w' is negative",
                     "{'w': {-1: 'x:1'}}"),
    # TF truncates 1.5 to task 1.
    "fractional_key": ("!ValueError: Task index 1.5 in job 'w' is not an integer",
                       "{'w': {1: 'x:1'}}"),
}


# TF's job_tasks of a job without tasks fails on max() of an empty sequence; ours is [].
TF_EMPTY_JOB_TASKS = "!ValueError: max() arg is an empty sequence"


def _empty_jobs_as_ours(record: dict) -> int:
    """Rewrites TF's job_tasks failure on an empty job to our []; returns how many."""
    count = 0
    for key, value in record.items():
        if key.startswith("job ") and value[2] == TF_EMPTY_JOB_TASKS:
            value[2], count = "[]", count + 1
    return count


def _error_class(value):
    return value.split(":")[0] if isinstance(value, str) and value.startswith("!") else value


def _probe_ours():
    ns: dict = {}
    exec(textwrap.dedent(PROBE), ns)  # noqa: S102 - the shared probe
    return json.loads(json.dumps(ns["probe"](ClusterSpec, cluster_pb2.ClusterDef, CASES,
                                             EQUALITY)))


# ---- TF_CONFIG against TensorFlow --------------------------------------------------------

_TWO_JOBS = {"worker": ["w0:1", "w1:1"], "ps": ["p0:1"]}

# (TF_CONFIG, explicit arguments) -> (job, task, protocol), cluster compared as well.
RESOLVE_CASES = [
    ({"cluster": _TWO_JOBS, "task": {"type": "worker", "index": 1}}, {},
     ("worker", 1, "grpc")),
    ({"cluster": _TWO_JOBS, "task": {"type": "worker", "index": 1}},
     {"job_name": "ps", "task_index": 0}, ("ps", 0, "grpc")),
    ({"cluster": _TWO_JOBS, "task": {"type": "worker", "index": 1}}, {"task_index": 0},
     ("worker", 0, "grpc")),
    ({"cluster": _TWO_JOBS, "task": {"type": "ps", "index": 0}, "rpc_layer": "grpc+verbs"},
     {}, ("ps", 0, "grpc+verbs")),
    ({"cluster": _TWO_JOBS, "task": {"type": "ps", "index": 0}, "rpc_layer": "grpc+verbs"},
     {"protocol": "grpc"}, ("ps", 0, "grpc")),
    ({"task": {"type": "worker", "index": 1}}, {"cluster": {"worker": ["a:1", "b:2"]}},
     ("worker", 1, "grpc")),
    ({"cluster": {"worker": ["x:1"]}}, {"cluster": {"ps": ["a:1"]}}, ("ps", 0, "grpc")),
    ({}, {"cluster": {"worker": ["a:1"]}}, ("worker", 0, "grpc")),
    ({"cluster": {"chief": ["c:1"]}}, {}, ("chief", 0, "grpc")),
    ({"cluster": {"worker": {"3": "w3:1"}}}, {}, ("worker", 3, "grpc")),
    ({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": "1"}}, {},
     ("worker", 1, "grpc")),
    ({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker"}}, {"task_index": 1},
     ("worker", 1, "grpc")),
    ({"cluster": {"worker": ["a:1"]}, "task": {"index": 0}, "environment": "cloud"}, {},
     ("worker", 0, "grpc")),
    ({"cluster": {"w": ["a:1", "b:1"]}, "task": {"type": "w", "index": 1},
      "session_master": "grpc://a:1"}, {"protocol": "grpc+gdr"}, ("w", 1, "grpc+gdr")),
]

TF_RESOLVE = '''
def tf_resolve(config, args):
    from tensorflow.python.training import server_lib
    os.environ["TF_CONFIG"] = json.dumps(config)
    r = tf.distribute.cluster_resolver.TFConfigClusterResolver(
        task_type=args.get("job_name"), task_id=args.get("task_index"),
        rpc_layer=args.get("protocol"))
    cluster = args.get("cluster")
    spec = tf.train.ClusterSpec(cluster) if cluster is not None else r.cluster_spec()
    sd = server_lib._make_server_def(spec, r.task_type, r.task_id, r.rpc_layer, None)
    return [repr(tf.train.ClusterSpec(sd.cluster).as_dict()), sd.job_name, sd.task_index,
            sd.protocol]
'''


def _resolve_ours(config, args):
    target = cluster_lib.resolve(environ={"TF_CONFIG": json.dumps(config)}, **args)
    return [repr(ClusterSpec(target.cluster_spec.as_cluster_def()).as_dict()),
            target.job_name, target.task_index, target.protocol]


@pytest.fixture(scope="module")
def tensorflow_results():
    return run_tf(textwrap.dedent(PROBE) + textwrap.dedent(TF_RESOLVE) + f"""
import json
result = {{
    "cluster_spec": probe(tf.train.ClusterSpec, tf.train.ClusterDef, {CASES!r},
                          {EQUALITY!r}),
    "resolve": [tf_resolve(c, a) for c, a, _ in {RESOLVE_CASES!r}],
}}
""")


@pytest.mark.oracle
def test_cluster_spec_matches_tensorflow(tensorflow_results):
    theirs, ours = tensorflow_results["cluster_spec"], _probe_ours()
    assert set(ours) == set(theirs)
    empty_jobs = sum(_empty_jobs_as_ours(theirs[label]) for label in CASES)
    assert empty_jobs == 2, "TensorFlow's job_tasks of an empty job changed"
    for label, (our_error, their_dict) in DIFFERENCES.items():
        assert (ours.pop(label)["init"], theirs.pop(label)["as_dict"]) == (our_error,
                                                                          their_dict)
    for label in sorted(theirs):
        mine, tf_record = ours[label], theirs[label]
        if label in MESSAGE_DIFFERS:
            mine = {k: _error_class(v) for k, v in mine.items()}
            tf_record = {k: _error_class(v) for k, v in tf_record.items()}
        assert mine == tf_record, label


@pytest.mark.oracle
def test_resolve_matches_tensorflow(tensorflow_results):
    theirs = tensorflow_results["resolve"]
    ours = [_resolve_ours(config, args) for config, args, _ in RESOLVE_CASES]
    assert ours == theirs


# ---- ClusterSpec, recorded ---------------------------------------------------------------

SPEC_TABLE = [
    # (cluster, as_dict, str)
    ({}, {}, "ClusterSpec({})"),
    ({"worker": ["w0:1", "w1:1"], "ps": ["p:1"]}, {"worker": ["w0:1", "w1:1"], "ps": ["p:1"]},
     "ClusterSpec({'ps': ['p:1'], 'worker': ['w0:1', 'w1:1']})"),
    ({"worker": {1: "w1:1", 3: "w3:3"}}, {"worker": {1: "w1:1", 3: "w3:3"}},
     "ClusterSpec({'worker': {1: 'w1:1', 3: 'w3:3'}})"),
    ({"w": {"1": "b", "0": "a"}}, {"w": ["a", "b"]}, "ClusterSpec({'w': ['a', 'b']})"),
    ({"w": []}, {"w": {}}, "ClusterSpec({'w': {}})"),
    ({"w": [b"a:1"]}, {"w": [b"a:1"]}, "ClusterSpec({'w': [b'a:1']})"),
    ({"bad-name": ["nonsense"]}, {"bad-name": ["nonsense"]},
     "ClusterSpec({'bad-name': ['nonsense']})"),
]


@pytest.mark.parametrize("cluster,as_dict,text", SPEC_TABLE)
def test_cluster_spec_views(cluster, as_dict, text):
    spec = ClusterSpec(cluster)
    assert spec.as_dict() == as_dict
    assert str(spec) == repr(spec) == text
    assert bool(spec) == bool(cluster)
    assert spec.jobs == list(cluster)
    assert ClusterSpec(spec) == ClusterSpec(spec.as_cluster_def())


def test_cluster_spec_accessors():
    spec = ClusterSpec({"worker": {1: "w1:1", 3: "w3:3"}, "ps": ["p0:1", "p1:1"]})
    assert spec.num_tasks("worker") == 2
    assert spec.task_indices("worker") == [1, 3]
    assert spec.task_address("worker", 3) == "w3:3"
    assert spec.job_tasks("worker") == [None, "w1:1", None, "w3:3"]
    assert spec.job_tasks("ps") == ["p0:1", "p1:1"]
    assert [(j.name, dict(j.tasks)) for j in spec.as_cluster_def().job] == [
        ("ps", {0: "p0:1", 1: "p1:1"}), ("worker", {1: "w1:1", 3: "w3:3"})]


ERROR_TABLE = [
    # (callable, error class, message)
    (lambda: ClusterSpec(None), TypeError, "`cluster` must be a dictionary mapping one or "
     "more job names to lists of network addresses, or a `ClusterDef` protocol buffer"),
    (lambda: ClusterSpec({"w": "a:1"}), TypeError, "The tasks for job 'w' must be a list or "
     "a dictionary from integers to strings."),
    (lambda: ClusterSpec({1: ["a"]}), TypeError, "Job name 1 must be bytes or unicode"),
    (lambda: ClusterSpec({"w": ["a", 2]}), TypeError, "Task address 2 must be bytes or "
     "unicode"),
    (lambda: ClusterSpec({"w": {"a": "x"}}), ValueError, "Task index 'a' in job 'w' is not "
     "an integer"),
    (lambda: ClusterSpec({"w": {-2: "x"}}), ValueError, "Task index -2 in job 'w' is "
     "negative"),
    (lambda: ClusterSpec({"w": {2**31: "x"}}), ValueError, "Value out of range: 2147483648"),
    (lambda: ClusterSpec({b"w": ["a"], "x": ["b"]}), TypeError, "Job names mix str and bytes"),
    (lambda: ClusterSpec({"w": ["a"]}).num_tasks("x"), ValueError,
     "No such job in cluster: 'x'"),
    (lambda: ClusterSpec({"w": ["a"]}).job_tasks(b"w"), ValueError,
     "No such job in cluster: b'w'"),
    (lambda: ClusterSpec({"w": ["a"]}).task_address("w", 1), ValueError,
     "No task with index 1 in job 'w'"),
    (lambda: hash(ClusterSpec({})), TypeError, "unhashable type: 'ClusterSpec'"),
]


@pytest.mark.parametrize("call,error,message", ERROR_TABLE)
def test_cluster_spec_errors(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert str(info.value).startswith(message)


def test_cluster_spec_equality_and_def_identity():
    spec = ClusterSpec({"w": ["a"]})
    assert spec == ClusterSpec({"w": {0: "a"}}) and not spec != ClusterSpec({"w": {0: "a"}})
    assert spec == {"w": {0: "a"}} and spec != {"w": ["a"]}
    assert ClusterSpec({"w": [b"a"]}) != spec and ClusterSpec({}) != None  # noqa: E711
    cluster_def = spec.as_cluster_def()
    assert ClusterSpec(cluster_def).as_cluster_def() is cluster_def
    assert ClusterSpec(spec).as_cluster_def() is not cluster_def


def test_exported_as_tf_train():
    assert tf.train.ClusterSpec is ClusterSpec
    assert "ClusterSpec" in tf.train.__all__


# ---- TF_CONFIG ----------------------------------------------------------------------------


@pytest.mark.parametrize("config,args,expected", RESOLVE_CASES)
def test_resolve_precedence(config, args, expected):
    target = cluster_lib.resolve(environ={"TF_CONFIG": json.dumps(config)}, **args)
    assert (target.job_name, target.task_index, target.protocol) == expected
    cluster = args.get("cluster", config.get("cluster"))
    assert target.cluster_spec == ClusterSpec(cluster)


def test_resolve_reads_os_environ(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"ps": ["p:1"]}}))
    assert cluster_lib.resolve() == ServerTarget(ClusterSpec({"ps": ["p:1"]}), "ps", 0, "grpc")
    monkeypatch.delenv("TF_CONFIG")
    assert cluster_lib.resolve({"w": ["a:1"]}).job_name == "w"
    assert "TF_CONFIG" not in os.environ


def test_server_target_is_frozen():
    target = cluster_lib.resolve({"w": ["a:1"]}, environ={})
    with pytest.raises(dataclasses.FrozenInstanceError):
        target.job_name = "x"


@pytest.mark.parametrize("text", [None, "", "  ", "{}"])
def test_load_tf_config_absent(text):
    environ = {} if text is None else {"TF_CONFIG": text}
    assert cluster_lib.load_tf_config(environ) == {}


_CLUSTER = {"worker": ["a:1", "b:1"], "ps": ["p:1"]}

RESOLVE_ERRORS = [
    # (TF_CONFIG text, explicit arguments, error class, regex the message matches)
    ("{not json", {}, ValueError, r"TF_CONFIG is not valid JSON .*'\{not json'"),
    ("[1, 2]", {}, ValueError, r"TF_CONFIG must be a JSON object, got '\[1, 2\]'"),
    ('{"cluster": ["a:1"]}', {}, ValueError, r"\"cluster\" must be an object .*\['a:1'\]"),
    ('{"cluster": {"w": "a:1"}}', {}, ValueError, r"\"cluster\" is malformed .*job 'w'"),
    ('{"cluster": {"w": [1]}}', {}, ValueError, r"malformed \(Task address 1 must be"),
    ('{"cluster": {"w": {"x": "a:1"}}}', {}, ValueError, r"Task index 'x' in job 'w'"),
    ('{"task": "worker"}', {"cluster": _CLUSTER}, ValueError, r"\"task\" must be an object"),
    ('{"rpc_layer": 1}', {"cluster": _CLUSTER}, ValueError, r"\"rpc_layer\" must be a str"),
    ('{"environment": []}', {"cluster": _CLUSTER}, ValueError, r"\"environment\" must be"),
    ('{"task": {"type": 3, "index": 0}}', {"cluster": _CLUSTER}, ValueError,
     r"task type must be a non-empty string, got 3"),
    ('{"task": {"type": "worker", "index": "one"}}', {"cluster": _CLUSTER}, ValueError,
     r"task index must be an integer, got 'one'"),
    ('{"task": {"type": "worker", "index": 1.5}}', {"cluster": _CLUSTER}, ValueError,
     r"task index must be an integer, got 1.5"),
    ('{"task": {"type": "worker", "index": true}}', {"cluster": _CLUSTER}, ValueError,
     r"task index must be an integer, got True"),
    ('{"task": {"type": "chief", "index": 0}}', {"cluster": _CLUSTER}, ValueError,
     r"Job 'chief' \(TF_CONFIG task type\) is not in the cluster"),
    ('{"task": {"type": "worker", "index": 2}}', {"cluster": _CLUSTER}, ValueError,
     r"Task index 2 \(TF_CONFIG task index\) is not a task of job 'worker'.*\[0, 1\]"),
    ('{"task": {"type": "worker", "index": -1}}', {"cluster": _CLUSTER}, ValueError,
     r"Task index -1 \(TF_CONFIG task index\)"),
    ('{"task": {"type": "worker", "index": 1}}', {"cluster": _CLUSTER, "job_name": "ps"},
     ValueError, r"Task index 1 \(TF_CONFIG task index\) is not a task of job 'ps'"),
    ("", {"cluster": _CLUSTER, "job_name": "ps", "task_index": 3}, ValueError,
     r"Task index 3 \(argument task_index\)"),
    ("", {"cluster": _CLUSTER, "job_name": "chief"}, ValueError,
     r"Job 'chief' \(argument job_name\)"),
    ("", {"cluster": _CLUSTER}, ValueError, r"Must specify an explicit `job_name`"),
    ("", {}, ValueError, r"Must specify an explicit `job_name`.* 0 jobs"),
    ("", {"cluster": _CLUSTER, "job_name": "worker"}, ValueError,
     r"Must specify an explicit `task_index`.*\[0, 1\]"),
    ("", {"cluster": {"bad-job": ["a:1"]}}, ValueError, r"Invalid job name 'bad-job'"),
    ("", {"cluster": ["a:1"]}, TypeError, r"`cluster` must be a dictionary"),
    ("", {"cluster": _CLUSTER, "job_name": 1}, TypeError, r"job_name must be a string"),
    ("", {"cluster": _CLUSTER, "job_name": "ps", "task_index": "0"}, TypeError,
     r"task_index must be an integer"),
    ("", {"cluster": _CLUSTER, "job_name": "ps", "protocol": 1}, TypeError,
     r"protocol must be a string"),
]


@pytest.mark.parametrize("text,args,error,message", RESOLVE_ERRORS)
def test_resolve_errors(text, args, error, message):
    with pytest.raises(error, match=message):
        cluster_lib.resolve(environ={"TF_CONFIG": text}, **args)


# ---- command-line flags ------------------------------------------------------------------

ADDRESSES = [
    ("localhost:2222", True), ("10.0.0.1:0", True), ("host-1.example.com:65535", True),
    ("[::1]:2222", True), ("[fe80::1%eth0]:1", True), ("my_host:1", True),
    ("localhost", False), ("localhost:65536", False), ("localhost:-1", False),
    ("localhost:abc", False), (":2222", False), ("::1:2222", False), ("[::1]", False),
    ("[zz]:1", False), ("a/b:12", False), ("a b:1", False), ("host:", False),
    ("/bns/foo", False), (b"a:1", False),
]


@pytest.mark.parametrize("address,ok", ADDRESSES)
def test_validate_address(address, ok):
    if ok:
        assert cluster_lib.validate_address(address) == address
    else:
        with pytest.raises(ValueError, match="Address"):
            cluster_lib.validate_address(address)


@pytest.mark.parametrize("name,ok", [("worker", True), ("a_B9", True), ("x", True),
                                     ("bad-name", False), ("1x", False), ("", False),
                                     ("_x", False), ("x.y", False), (b"w", False)])
def test_validate_job_name(name, ok):
    if ok:
        assert cluster_lib.validate_job_name(name) == name
    else:
        with pytest.raises(ValueError, match="Invalid job name"):
            cluster_lib.validate_job_name(name)


@pytest.mark.parametrize("ps,worker,expected", [
    ("a:1,b:2", "c:3", {"ps": ["a:1", "b:2"], "worker": ["c:3"]}),
    ("", "c:3", {"worker": ["c:3"]}),
    ("a:1", " ", {"ps": ["a:1"]}),
    ("", "", {}),
    (" a:1 , [::1]:2 ", "", {"ps": ["a:1", "[::1]:2"]}),
])
def test_parse_hosts(ps, worker, expected):
    spec = cluster_lib.parse_hosts(ps, worker)
    assert spec.as_dict() == expected and spec.jobs == list(expected)


@pytest.mark.parametrize("ps,worker,message", [
    ("a:1,,b:2", "", r"--ps_hosts: empty address in 'a:1,,b:2'"),
    ("a:1", "c:3,", r"--worker_hosts: empty address"),
    ("a", "", r"--ps_hosts: Address 'a' is not of the form host:port"),
    ("", "c:99999", r"--worker_hosts: Address 'c:99999': port '99999'"),
])
def test_parse_hosts_errors(ps, worker, message):
    with pytest.raises(ValueError, match=message):
        cluster_lib.parse_hosts(ps, worker)


@pytest.mark.parametrize("text,expected", [
    ("ps|h1:1;h2:2,worker|h3:3", {"ps": ["h1:1", "h2:2"], "worker": ["h3:3"]}),
    (" worker|h3:3 ", {"worker": ["h3:3"]}),
    ("", {}),
    ('{"ps": ["h1:1"], "worker": {"1": "h3:3"}}', {"ps": ["h1:1"], "worker": {1: "h3:3"}}),
    ('{"w": ["[::1]:1"]}', {"w": ["[::1]:1"]}),
    ("{}", {}),
])
def test_parse_cluster_spec(text, expected):
    assert cluster_lib.parse_cluster_spec(text).as_dict() == expected


@pytest.mark.parametrize("text,message", [
    ("ps:h1:1", r"'ps:h1:1' is not of the form job\|host:port"),
    ("ps|h1:1|h2:2", r"'ps\|h1:1\|h2:2' is not of the form"),
    ("ps|h1:1,", r"'' is not of the form"),
    ("ps|", r"job 'ps' has no addresses in 'ps\|'"),
    ("ps|h1:1;;h2:2", r"job 'ps': empty address in 'h1:1;;h2:2'"),
    ("ps|h1:1,ps|h2:2", r"job 'ps' is given twice"),
    ("bad-job|h1:1", r"Invalid job name 'bad-job'.* in 'bad-job\|h1:1'"),
    ("ps|h1", r"job 'ps': Address 'h1' is not of the form host:port"),
    ("{bad json", r"--cluster_spec is not valid JSON"),
    ('{"ps": "h1:1"}', r"job 'ps' must have a non-empty list or object of addresses"),
    ('{"ps": []}', r"job 'ps' must have a non-empty list"),
    ('{"ps": [1]}', r"job 'ps': Address 1 must be a string"),
    ('{"1ps": ["h:1"]}', r"Invalid job name '1ps'"),
    ('{"ps": {"x": "h:1"}}', r"--cluster_spec: Task index 'x' in job 'ps'"),
])
def test_parse_cluster_spec_errors(text, message):
    with pytest.raises(ValueError, match=message):
        cluster_lib.parse_cluster_spec(text)
