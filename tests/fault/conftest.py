"""The crash-point summary hooks live in the root conftest (tests/conftest.py), which the
xdist controller loads."""
