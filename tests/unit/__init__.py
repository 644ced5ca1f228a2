"""Unit tests: no TensorFlow, no training; fake trials and fake stored studies."""
