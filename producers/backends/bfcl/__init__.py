"""BFCL multi-turn (the PyPI ``bfcl-eval`` wheel, installed without its dependencies) as an environment plugin.

Only the wheel's data files and its pure-Python API classes are used; see README.md.
"""
