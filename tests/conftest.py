"""The rxstream pytest plugin, loaded here rather than through its entry point.

pyproject's addopts disable the installed entry point (`-p no:rxstream`) and
this file loads the same plugin: entry points are imported before coverage
starts, so the package's module-level code would count as never run.
"""

pytest_plugins = ["rxstream.testing.plugin", "pytester"]
