"""TF-Slim's data library: TFExampleDecoder's handlers against the values written (images
against PIL's encoding and decoding), DatasetDataProvider / parallel_read over TFRecord
files (order, epochs, record keys), get_data_files, single_pass_read, QueueRunners, and the
error cases (an unknown item or feature key, undecodable image bytes)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image as PILImage

import tensorflux as tf

slim = tf.contrib.slim
tfexample_decoder = slim.tfexample_decoder


def _bytes(*values):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(values)))


def _ints(*values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def _floats(*values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def _example(**features) -> bytes:
    return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()


def _encode(image: np.ndarray, fmt: str) -> bytes:
    buf = io.BytesIO()
    PILImage.fromarray(image.squeeze(-1) if image.shape[-1] == 1 else image).save(
        buf, format=fmt, quality=95)
    return buf.getvalue()


def _decode(serialized, keys_to_features, items_to_handlers, items=None):
    with tf.Graph().as_default():
        decoder = tfexample_decoder.TFExampleDecoder(keys_to_features, items_to_handlers)
        tensors = decoder.decode(tf.constant(serialized), items)
        with tf.Session() as sess:
            sess.run(tf.tables_initializer())
            return sess.run(tensors)


_IMAGE_FEATURES = {
    "image/encoded": tf.FixedLenFeature((), tf.string, default_value=""),
    "image/format": tf.FixedLenFeature((), tf.string, default_value="jpeg"),
}


@pytest.mark.parametrize("fmt,channels", [("PNG", 1), ("PNG", 3), ("png", 3)])
def test_image_png_matches_pixels(fmt, channels):
    image = np.random.default_rng(0).integers(0, 256, (5, 7, channels), dtype=np.uint8)
    serialized = _example(**{"image/encoded": _bytes(_encode(image, "PNG")),
                             "image/format": _bytes(fmt.encode())})
    (out,) = _decode(serialized, _IMAGE_FEATURES,
                     {"image": tfexample_decoder.Image(channels=channels)})
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, image)


def test_image_jpeg_close_to_pil_and_decoded_by_header():
    image = np.random.default_rng(1).integers(0, 256, (16, 16, 3), dtype=np.uint8)
    encoded = _encode(image, "JPEG")
    reference = np.asarray(PILImage.open(io.BytesIO(encoded)).convert("RGB"))
    # the format string says png: JPEG data is still recognised by its header
    for fmt in (b"jpeg", b"png"):
        serialized = _example(**{"image/encoded": _bytes(encoded), "image/format": _bytes(fmt)})
        (out,) = _decode(serialized, _IMAGE_FEATURES,
                         {"image": tfexample_decoder.Image(shape=[16, 16, 3])})
        assert out.shape == (16, 16, 3)
        assert np.abs(out.astype(int) - reference.astype(int)).mean() < 2.0


@pytest.mark.parametrize("fmt", [b"raw", b"RAW"])
def test_image_raw_with_shape_and_dtype(fmt):
    image = np.arange(2 * 3 * 1, dtype=np.float32).reshape(2, 3, 1) / 7
    serialized = _example(**{"image/encoded": _bytes(image.tobytes()),
                             "image/format": _bytes(fmt)})
    (out,) = _decode(serialized, _IMAGE_FEATURES,
                     {"image": tfexample_decoder.Image(shape=[2, 3, 1], channels=1,
                                                       dtype=tf.float32)})
    np.testing.assert_array_equal(out, image)


def test_image_static_shape_and_repeated():
    images = [np.full((4, 4, 3), v, np.uint8) for v in (10, 200)]
    with tf.Graph().as_default():
        handler = tfexample_decoder.Image(channels=3)
        one = handler.tensors_to_item({"image/encoded": tf.constant(_encode(images[0], "PNG")),
                                       "image/format": tf.constant(b"png")})
        assert one.get_shape().as_list() == [None, None, 3]
        repeated = tfexample_decoder.Image(repeated=True, shape=[4, 4, 3])
        many = repeated.tensors_to_item({
            "image/encoded": tf.constant([_encode(i, "PNG") for i in images]),
            "image/format": tf.constant(b"png")})
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(many), np.stack(images))


def test_bad_image_bytes_fail_at_run():
    serialized = _example(**{"image/encoded": _bytes(b"not an image"),
                             "image/format": _bytes(b"png")})
    with pytest.raises(tf.errors.InvalidArgumentError):
        _decode(serialized, _IMAGE_FEATURES, {"image": tfexample_decoder.Image()})


def test_tensor_handler_shapes_defaults_and_shape_keys():
    serialized = _example(label=_ints(7), matrix=_floats(*range(6)), dims=_ints(3, 2),
                          tokens=_ints(4, 5, 6))
    features = {
        "label": tf.FixedLenFeature([1], tf.int64),
        "missing": tf.FixedLenFeature([], tf.int64, default_value=-1),
        "matrix": tf.FixedLenFeature([6], tf.float32),
        "dims": tf.FixedLenFeature([2], tf.int64),
        "tokens": tf.VarLenFeature(tf.int64),
    }
    handlers = {
        "label": tfexample_decoder.Tensor("label", shape=[]),
        "missing": tfexample_decoder.Tensor("missing"),
        "matrix": tfexample_decoder.Tensor("matrix", shape_keys="dims"),
        "tokens": tfexample_decoder.Tensor("tokens", default_value=0),
    }
    label, missing, matrix, tokens = _decode(serialized, features, handlers,
                                             ["label", "missing", "matrix", "tokens"])
    assert label == 7 and np.shape(label) == ()
    assert missing == -1
    np.testing.assert_array_equal(matrix, np.arange(6, dtype=np.float32).reshape(3, 2))
    np.testing.assert_array_equal(tokens, [4, 5, 6])
    with pytest.raises(ValueError, match="both shape_keys and shape"):
        tfexample_decoder.Tensor("matrix", shape_keys="dims", shape=[3, 2])


def test_bounding_box_sparse_tensor_callback_backup_lookup():
    serialized = _example(**{
        "bbox/ymin": _floats(0.1, 0.5), "bbox/xmin": _floats(0.2, 0.6),
        "bbox/ymax": _floats(0.3, 0.7), "bbox/xmax": _floats(0.4, 0.8),
        "ids": _ints(0, 2), "vals": _floats(1.5, 2.5), "text": _bytes(b"b"),
        "empty_text": _bytes(),
    })
    features = {f"bbox/{k}": tf.VarLenFeature(tf.float32)
                for k in ("ymin", "xmin", "ymax", "xmax")}
    features.update(ids=tf.VarLenFeature(tf.int64), vals=tf.VarLenFeature(tf.float32),
                    text=tf.FixedLenFeature([], tf.string),
                    empty_text=tf.VarLenFeature(tf.string))
    with tf.Graph().as_default():
        table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(["a", "b", "c"]), tf.constant([0, 1, 2], tf.int64)), -1)
        handlers = {
            "boxes": tfexample_decoder.BoundingBox(prefix="bbox/"),
            "sparse": tfexample_decoder.SparseTensor("ids", "vals", shape=[3],
                                                     densify=True),
            "sum": tfexample_decoder.ItemHandlerCallback(
                ["vals"], lambda t: tf.reduce_sum(t["vals"].values)),
            "backup": tfexample_decoder.BackupHandler(
                tfexample_decoder.Tensor("empty_text", default_value=""),
                tfexample_decoder.Tensor("text", shape=[1])),
            "lookup": tfexample_decoder.LookupTensor("text", table),
        }
        decoder = tfexample_decoder.TFExampleDecoder(features, handlers)
        assert decoder.list_items() == list(handlers)
        tensors = decoder.decode(tf.constant(serialized))
        with tf.Session() as sess:
            sess.run(tf.tables_initializer())
            boxes, sparse, total, backup, lookup = sess.run(tensors)
    np.testing.assert_allclose(boxes, [[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]],
                               rtol=1e-6)
    np.testing.assert_array_equal(sparse, [1.5, 0, 2.5])
    assert total == pytest.approx(4.0)
    assert list(backup) == [b"b"]
    assert lookup == 1


def test_unknown_feature_key_and_item_are_key_errors():
    serialized = _example(label=_ints(1))
    decoder = tfexample_decoder.TFExampleDecoder(
        {"label": tf.FixedLenFeature([], tf.int64)},
        {"label": tfexample_decoder.Tensor("image/class/label")})
    with tf.Graph().as_default(), pytest.raises(KeyError):
        decoder.decode(tf.constant(serialized))
    decoder = tfexample_decoder.TFExampleDecoder(
        {"label": tf.FixedLenFeature([], tf.int64)},
        {"label": tfexample_decoder.Tensor("label")})
    with tf.Graph().as_default(), pytest.raises(KeyError):
        decoder.decode(tf.constant(serialized), ["nope"])


def _write_records(path, labels):
    with tf.python_io.TFRecordWriter(str(path)) as writer:
        for label in labels:
            writer.write(_example(label=_ints(int(label))))


def _dataset(pattern, num_samples):
    decoder = tfexample_decoder.TFExampleDecoder(
        {"label": tf.FixedLenFeature([], tf.int64)},
        {"label": tfexample_decoder.Tensor("label")})
    return slim.dataset.Dataset(data_sources=pattern, reader=tf.TFRecordReader,
                                decoder=decoder, num_samples=num_samples,
                                items_to_descriptions={"label": "an int"}, num_classes=10)


def test_dataset_data_provider_in_order_one_epoch(tmp_path):
    _write_records(tmp_path / "part-0.tfrecord", range(0, 5))
    _write_records(tmp_path / "part-1.tfrecord", range(5, 8))
    with tf.Graph().as_default():
        dataset = _dataset(str(tmp_path / "part-*.tfrecord"), 8)
        assert dataset.num_classes == 10 and dataset.num_samples == 8
        provider = slim.dataset_data_provider.DatasetDataProvider(
            dataset, num_readers=1, shuffle=False, num_epochs=1)
        assert set(provider.list_items()) == {"label", "record_key"}
        assert provider.num_samples() == 8
        label, key = provider.get(["label", "record_key"])
        with pytest.raises(ValueError, match="Item \\[image\\] is invalid"):
            provider.get(["image"])
        with pytest.raises(ValueError, match="list or tuple"):
            provider.get("label")
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            with slim.queues.QueueRunners(sess):
                seen = [sess.run([label, key]) for _ in range(8)]
                with pytest.raises(tf.errors.OutOfRangeError):
                    sess.run(label)
    assert [int(v) for v, _ in seen] == list(range(8))
    assert seen[0][1].decode().endswith("part-0.tfrecord:0")


def test_parallel_read_shuffled_covers_every_record(tmp_path):
    _write_records(tmp_path / "a.tfrecord", range(20))
    with tf.Graph().as_default():
        key, value = slim.parallel_reader.parallel_read(
            str(tmp_path / "a.tfrecord"), tf.TFRecordReader, num_epochs=1, num_readers=2,
            capacity=16, min_after_dequeue=4, seed=3)
        label = tf.parse_single_example(value, {"label": tf.FixedLenFeature([], tf.int64)})
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            with slim.queues.QueueRunners(sess):
                got = [int(sess.run(label["label"])) for _ in range(20)]
                with pytest.raises(tf.errors.OutOfRangeError):
                    sess.run(key)
    assert sorted(got) == list(range(20))


def test_single_pass_read_and_data_files(tmp_path):
    _write_records(tmp_path / "x-0.tfrecord", [3, 4])
    _write_records(tmp_path / "x-1.tfrecord", [5])
    files = slim.parallel_reader.get_data_files([str(tmp_path / "x-*.tfrecord")])
    assert sorted(files) == [str(tmp_path / "x-0.tfrecord"), str(tmp_path / "x-1.tfrecord")]
    assert slim.parallel_reader.get_data_files("plain/path") == ["plain/path"]
    with pytest.raises(ValueError, match="No data files found"):
        slim.parallel_reader.get_data_files(str(tmp_path / "nothing-*"))
    with tf.Graph().as_default():
        _, value = slim.parallel_reader.single_pass_read(
            str(tmp_path / "x-0.tfrecord"), tf.TFRecordReader)
        label = tf.parse_single_example(value, {"label": tf.FixedLenFeature([], tf.int64)})
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            with slim.queues.QueueRunners(sess):
                assert [sess.run(label["label"]) for _ in range(2)] == [3, 4]
                with pytest.raises(tf.errors.OutOfRangeError):
                    sess.run(value)


def test_record_key_clash_and_reader_queue_type():
    class Decoder(slim.data_decoder.DataDecoder):
        def decode(self, data, items):
            return [data for _ in items]

        def list_items(self):
            return ["record_key"]

    with tf.Graph().as_default():
        dataset = slim.dataset.Dataset("some-file", tf.TFRecordReader, Decoder(), 1, {})
        with pytest.raises(ValueError, match="record_key"):
            slim.dataset_data_provider.DatasetDataProvider(dataset, shuffle=False)
        with pytest.raises(TypeError, match="key, value"):
            slim.parallel_reader.ParallelReader(tf.TFRecordReader,
                                                tf.FIFOQueue(4, [tf.string]))


def test_crop_keeps_static_depth_for_slim_preprocessing():
    # inception_preprocessing crops a decoded [?, ?, 3] image, then tf.train.batch needs
    # the depth: crop_to_bounding_box sets the window's static shape as TF does
    with tf.Graph().as_default():
        image = tf.placeholder(tf.uint8, [None, None, 3])
        assert tf.image.central_crop(image, 0.875).shape.as_list() == [None, None, 3]
        batch = tf.placeholder(tf.float32, [2, None, 9, 4])
        assert tf.image.crop_to_bounding_box(batch, 1, 2, 3, 4).shape.as_list() == [2, 3, 4, 4]
