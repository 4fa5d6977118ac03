"""tf.debugging traceback filtering and the process default of device-placement logging."""

from __future__ import annotations

import threading
import traceback

import pytest

import tensorflux as tf
from tensorflux.framework import traceback_utils


def _frames(error):
    return [(f.filename, f.name) for f in traceback.extract_tb(error.__traceback__)]


def _internal(filename):
    return filename.startswith(traceback_utils._PACKAGE_DIR) or filename.startswith(
        "<tensorflux")


def _build_bad_reshape():
    return tf.reshape(tf.zeros([6]), [4])


def _run_bad_reshape():
    x = tf.placeholder(tf.float32)
    y = tf.reshape(x, [4])
    with tf.Session() as sess:
        sess.run(y, {x: [1.0] * 6})


@pytest.fixture
def filtering_restored():
    yield
    tf.debugging.enable_traceback_filtering()


def test_filtering_is_on_by_default_and_per_thread(filtering_restored):
    assert tf.debugging.is_traceback_filtering_enabled() is True
    tf.debugging.disable_traceback_filtering()
    seen = []
    t = threading.Thread(target=lambda: seen.append(
        tf.debugging.is_traceback_filtering_enabled()))
    t.start()
    t.join(timeout=30)
    assert seen == [True] and tf.debugging.is_traceback_filtering_enabled() is False
    tf.debugging.enable_traceback_filtering()
    assert tf.debugging.is_traceback_filtering_enabled() is True


@pytest.mark.parametrize("fn, error, raise_point", [
    (_build_bad_reshape, ValueError, "set_output_shapes"),
    (_run_bad_reshape, tf.errors.InvalidArgumentError, "_reshape_target"),
])
def test_filtered_traceback_keeps_user_frames_and_raise_point(fn, error, raise_point,
                                                              filtering_restored):
    with tf.Graph().as_default():
        with pytest.raises(error) as info:
            fn()
    frames = _frames(info.value)
    names = [name for _, name in frames]
    assert fn.__name__ in names  # the user's frames
    assert names[-1] == raise_point  # where it was raised
    internal = [f for f in frames[:-1] if _internal(f[0])]
    # Left: the wrappers the user called (tf.reshape: its ragged dispatch, then the dense
    # function) and the filter's own frame.
    assert [name for _, name in internal] in (
        ["ragged_dispatch", "reshape", "error_handler"], ["error_handler"])
    assert "Reshape" in str(info.value) or "reshape" in str(info.value)

    tf.debugging.disable_traceback_filtering()
    with tf.Graph().as_default():
        with pytest.raises(error) as full:
            fn()
    full_frames = _frames(full.value)
    assert len(full_frames) > len(frames)
    assert {"apply_op"} <= {name for _, name in full_frames} or \
        {"_run_flat"} <= {name for _, name in full_frames}
    assert type(full.value) is type(info.value)
    assert str(full.value).splitlines()[0] == str(info.value).splitlines()[0]


def test_user_frames_inside_the_call_stay(filtering_restored):
    def branch():
        return tf.reshape(tf.zeros([6]), [4])

    with tf.Graph().as_default():
        with pytest.raises(ValueError) as info:
            tf.cond(tf.constant(True), branch, branch)
    names = [name for _, name in _frames(info.value)]
    assert "branch" in names


def test_log_device_placement_default(capsys):
    assert tf.debugging.get_log_device_placement() is False
    tf.debugging.set_log_device_placement(True)
    try:
        assert tf.debugging.get_log_device_placement() is True
        with tf.Graph().as_default():
            y = tf.add(1.0, 2.0, name="myadd")
            config = tf.ConfigProto(allow_soft_placement=True)
            with tf.Session(config=config) as sess:
                assert sess.run(y) == 3.0
            assert not config.log_device_placement  # the caller's proto is not changed
    finally:
        tf.debugging.set_log_device_placement(False)
    out = capsys.readouterr().out
    assert "myadd: (AddV2): /job:localhost/replica:0/task:0/device:CPU:0" in out
    with tf.Graph().as_default():
        y = tf.add(1.0, 2.0, name="quiet")
        with tf.Session() as sess:
            sess.run(y)
    assert "quiet" not in capsys.readouterr().out
