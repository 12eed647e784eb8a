"""The sans-I/O core: pure incremental state machines.

Each machine has two verbs: `feed(x)` returns a list of items (possibly empty),
`close()` flushes what is buffered and raises if the input stopped half-way.
No I/O, no threads, no clocks, no reactivex, no httpx: the same input always
gives the same output, so the same machine serves an Rx operator, a `for` loop
and an `async for`.
"""
