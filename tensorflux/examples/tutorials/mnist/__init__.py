"""`tensorflow.examples.tutorials.mnist`: `input_data.read_data_sets`."""
