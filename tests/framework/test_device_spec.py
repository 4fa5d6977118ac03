"""Device specs: parsing table, V1/V2 APIs, nested tf.device merging, runtime helpers."""

import pytest

from tensorflux.framework import device_spec as ds
from tests import oracle

V1, V2 = ds.DeviceSpecV1, ds.DeviceSpecV2

# (spec string, canonical to_string(), or "ValueError" when TF rejects it too).
PARSE = [
    ("/job:ps/replica:0/task:1/device:CPU:0", "/job:ps/replica:0/task:1/device:CPU:0"),
    ("/cpu:1", "/device:CPU:1"), ("/gpu:0", "/device:GPU:0"), ("CPU:0", "/device:CPU:0"),
    ("/device:GPU:*", "/device:GPU:*"), ("gpu:0", "/device:GPU:0"), ("/GPU:0", "/device:GPU:0"),
    ("/Gpu:1", "/device:GPU:1"), ("/device:gpu:0", "/device:GPU:0"), ("/cpu", "/device:CPU:*"),
    ("cpu", "/device:CPU:*"), ("", ""), ("/job:ps", "/job:ps"),
    ("/job:ps/task:2", "/job:ps/task:2"), ("/job:ps/task:2/cpu:0", "/job:ps/task:2/device:CPU:0"),
    ("/job:ps/task:2/gpu:*", "/job:ps/task:2/device:GPU:*"), ("/job:*", "/job:*"),
    ("/replica:1", "/replica:1"), ("/device:TPU:0", "/device:TPU:0"),
    ("/device:XLA_CPU:0", "/device:XLA_CPU:0"), ("/device:tpu:0", "/device:tpu:0"),
    ("/job:ps/job:worker", "/job:worker"), ("job:ps", "/job:ps"), ("//cpu:0", "/device:CPU:0"),
    ("/job:ps/", "/job:ps"), ("/task:1/job:w", "/job:w/task:1"),
    ("/job:ps/device:Gpu:1", "/job:ps/device:Gpu:1"),
    ("/device:CPU", "ValueError"), ("/job:ps/task:*", "ValueError"),
    ("/job:ps/task:x", "ValueError"), ("/job:ps/foo:1", "ValueError"),
    ("/device:CPU:0/device:GPU:1", "ValueError"), ("/gpu:0/cpu:1", "ValueError"),
    ("/job:ps/replica:0/task:1/device:CPU:0/extra:1", "ValueError"),
    ("/device:GPU:0:1", "ValueError"), ("/cpu:x", "ValueError"), ("foo", "ValueError"),
    ("/foo", "ValueError"), (" /cpu:0", "ValueError"), ("/tpu:0", "/device:TPU:0"),
    ("/custom:1", "/device:CUSTOM:1"), ("/xla_cpu:0", "ValueError"), ("/cpu:0:1", "ValueError"),
]


@pytest.mark.parametrize("spec,expected", PARSE, ids=[p[0] or "empty" for p in PARSE])
def test_parse(spec, expected):
    for cls in (V1, V2):
        if expected == "ValueError":
            with pytest.raises(ValueError):
                cls.from_string(spec)
            with pytest.raises(ValueError):
                ds.check_valid(spec)
        else:
            parsed = cls.from_string(spec)
            assert type(parsed) is cls and parsed.to_string() == expected
            assert cls.from_string(expected) == parsed


def test_error_messages_name_the_problem():
    with pytest.raises(ValueError, match="Unknown attribute 'foo' .* '/job:ps/foo:1'"):
        V1.from_string("/job:ps/foo:1")
    with pytest.raises(ValueError, match="Multiple device types"):
        V1.from_string("/gpu:0/cpu:1")
    with pytest.raises(ValueError, match="Task must be an integer, got 'x'"):
        V1.from_string("/job:ps/task:x")
    with pytest.raises(ValueError, match="Device index must be an integer"):
        V1.from_string("/cpu:x")


def test_fields_constructor_and_repr():
    spec = V1.from_string("/job:w/replica:1/task:2/device:GPU:3")
    assert (spec.job, spec.replica, spec.task, spec.device_type, spec.device_index) == \
        ("w", 1, 2, "GPU", 3)
    assert V1.from_string("/device:GPU:*").device_index is None
    assert V1(job="ps", device_type="gpu", device_index=0).to_string() == "/job:ps/device:GPU:0"
    assert V2(device_type="cpu").device_type == "CPU"
    assert V1(job="ps", task="1").to_string() == "/job:ps/task:1"
    assert V2(device_type="GPU", device_index="*").to_string() == "/device:GPU:*"
    with pytest.raises(ValueError):
        V1(job="ps", task="x")
    assert V1().to_string() == "" and V2(device_index=3).to_string() == ""
    assert repr(V1(job="ps")) == ("<DeviceSpec(job=ps, replica=None, task=None, "
                                  "device_type=None, device_index=None)>")
    assert ds.DeviceSpec is V1 and issubclass(V1, V2)
    assert ds.is_device_spec(V2()) and not ds.is_device_spec("/cpu:0")


def test_equality_and_hash():
    a = V1.from_string("/job:w")
    assert a == V1.from_string("/job:w") and hash(a) == hash(V1.from_string("/job:w"))
    assert a != "/job:w" and a != V1.from_string("/job:x")
    assert len({V2.from_string("/cpu:0"), V2(device_type="CPU", device_index=0)}) == 1


def test_v2_is_immutable():
    spec = V2(job="ps", task=1)
    assert spec.replace(job="w").to_string() == "/job:w/task:1"
    assert spec.to_string() == "/job:ps/task:1"
    assert spec.replace(device_type="GPU", device_index=0).replace(
        device_type=None).to_string() == "/job:ps/task:1"
    with pytest.raises(AttributeError):
        spec.job = "w"
    with pytest.raises(TypeError):
        spec.replace(color="red")
    merged = spec.make_merged_spec(V2(task=2, device_type="CPU"))
    assert merged.to_string() == "/job:ps/task:2/device:CPU:*" and type(merged) is V2
    assert spec.parse_from_string("/gpu:1").to_string() == "/device:GPU:1"
    assert spec.to_string() == "/job:ps/task:1"


def test_v1_is_mutable():
    spec = V1(job="ps")
    assert spec.merge_from(V1(task=3)) is None
    assert spec.to_string() == "/job:ps/task:3"
    spec.device_type = "gpu"
    spec.device_index = 1
    assert spec.to_string() == "/job:ps/task:3/device:GPU:1"
    spec.job = None
    assert spec.to_string() == "/task:3/device:GPU:1"
    again = V1.from_string("/job:ps/task:1/cpu:0")
    assert again.parse_from_string("/gpu:1") is again
    assert again.to_string() == "/device:GPU:1"


def _nested(specs):
    """What an op created inside nested `tf.device(s)` blocks gets, outermost spec first.

    Mirrors the graph: device functions are applied innermost first; None stops the walk.
    """
    device = ""

    class Node:
        pass

    node = Node()
    for spec in reversed(specs):
        if spec is None:
            break
        node.device = device
        device = ds.merge_device(spec)(node).to_string()
    return device


# (outermost-first device specs of nested blocks, device an op inside gets).
NESTED = [
    (["/job:ps/task:1", "/gpu:0"], "/job:ps/task:1/device:GPU:0"),
    (["/job:ps/task:1", "/job:worker"], "/job:worker/task:1"),
    (["/job:ps/task:1", ""], "/job:ps/task:1"),
    (["/job:ps/task:1", None], ""),
    (["/job:ps/task:1", "/device:CPU:*"], "/job:ps/task:1/device:CPU:*"),
    (["/gpu:0", "/cpu:1"], "/device:CPU:1"),
    (["/gpu:0", "/task:3"], "/task:3/device:GPU:0"),
    (["/gpu:0", "/job:ps/device:GPU:1"], "/job:ps/device:GPU:1"),
    (["/job:a", "/task:1", "/cpu:0"], "/job:a/task:1/device:CPU:0"),
    ([None, "/job:b"], "/job:b"),
]


@pytest.mark.parametrize("specs,expected", NESTED, ids=[str(n[0]) for n in NESTED])
def test_nested_device_blocks(specs, expected):
    assert _nested(specs) == expected


def test_merge_device_function():
    fn = ds.merge_device("/job:ps/gpu:0")

    class N:
        def __init__(self, device):
            self.device = device

    assert fn(N("/job:w/task:1/cpu:0")).to_string() == "/job:w/task:1/device:CPU:0"
    assert fn(N("")).to_string() == "/job:ps/device:GPU:0"
    assert fn(N(None)).to_string() == "/job:ps/device:GPU:0"
    assert fn(N("/task:3")).to_string() == "/job:ps/task:3/device:GPU:0"
    assert fn("/task:3").to_string() == "/job:ps/task:3/device:GPU:0"
    mutable = V1(job="x")
    snap = ds.merge_device(mutable)
    mutable.job = "y"
    assert snap(N("")).to_string() == "/job:x"
    with pytest.raises(ValueError):
        ds.merge_device("/bogus:1")


def test_canonical_name_and_fill_defaults():
    full = "/job:localhost/replica:0/task:0/device:CPU:0"
    assert ds.canonical_name("/cpu:0") == full
    assert ds.canonical_name(V2(device_type="cpu", device_index=0)) == full
    assert ds.canonical_name("/job:ps/task:2/gpu:1") == "/job:ps/replica:0/task:2/device:GPU:1"
    assert ds.canonical_name(full) == full
    assert ds.canonical_name("/job:w", default_device_type="CPU",
                             default_device_index=0) == "/job:w/replica:0/task:0/device:CPU:0"
    for incomplete in ("/job:ps", "/gpu:*", "", None):
        with pytest.raises(ValueError, match="does not name one device"):
            ds.canonical_name(incomplete)
    filled = ds.fill_defaults("/gpu:1", job="localhost", replica=0, task=0)
    assert filled.to_string() == "/job:localhost/replica:0/task:0/device:GPU:1"
    assert ds.fill_defaults("/job:ps", device_type="CPU").to_string() == "/job:ps/device:CPU:*"
    with pytest.raises(TypeError):
        ds.canonical_name(3)


IS_COMPATIBLE = [
    ("/gpu:0", "/job:localhost/replica:0/task:0/device:GPU:0", True),
    ("/gpu:0", "/job:localhost/replica:0/task:0/device:GPU:1", False),
    ("/gpu:*", "/job:localhost/replica:0/task:0/device:GPU:1", True),
    ("/job:ps", "/job:ps/replica:0/task:3/device:CPU:0", True),
    ("/job:ps/task:2", "/job:ps/replica:0/task:3/device:CPU:0", False),
    ("", "/job:ps/replica:0/task:3/device:CPU:0", True),
    ("/cpu:0", "/job:ps/replica:0/task:3/device:GPU:0", False),
    ("/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:0", True),
]


@pytest.mark.parametrize("requested,device,expected", IS_COMPATIBLE)
def test_is_compatible(requested, device, expected):
    assert ds.is_compatible(requested, device) is expected
    assert ds.is_compatible(V2.from_string(requested), V2.from_string(device)) is expected


@pytest.mark.oracle
def test_parsing_and_nesting_match_tensorflow():
    code = f"""
from tensorflow.python.framework import device_spec
def parse(s):
    try:
        return device_spec.DeviceSpecV1.from_string(s).to_string()
    except ValueError:
        return "ValueError"
def nested(specs):
    g = tf.Graph()
    with g.as_default():
        def build(rest):
            if not rest:
                return tf.constant(1).device
            with tf.device(rest[0]):
                return build(rest[1:])
        return build(specs)
result = {{"parse": [parse(s) for s, _ in {PARSE!r}],
          "nested": [nested(s) for s, _ in {NESTED!r}]}}
"""
    got = oracle.run_tf(code)
    assert got["parse"] == [e for _, e in PARSE]
    assert got["nested"] == [e for _, e in NESTED]
