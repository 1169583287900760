"""The PyTorch reference code of tests/make_goldens.py, one file per lesson or model family."""
