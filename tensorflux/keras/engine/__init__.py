"""Keras's engine: the layer base with functional-graph bookkeeping (base_layer), input
layers, functional and subclassed models (network), compile/fit (training), Sequential."""
