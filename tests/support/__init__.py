"""Helpers the tests share (one copy each).

- `fast`: the fast-path switch (`way`, `typed_decoding`) and a run's outcome to compare;
- `pipelines`: the pipelines a dialect's recording runs through, by name;
- `sources`: running an observable to its end, sync or async, against a server;
- `leaks`: every place a secret could hide in an exception;
- `pools`: single-thread pools (the `pool` fixture of `tests/io`);
- `processes`, `node`: child processes and the Node clients.
"""
