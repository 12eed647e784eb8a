"""CPU time per chunk: 500 concurrent async streams vs one stream, in one event loop.

A local asyncio server (its own thread and loop) streams `--chunks` chat chunks
per request, flushing each one. The client runs `from_request | sse_frames |
decode_chunks | deltas` on the main thread's loop; only that thread's CPU time
(`time.thread_time`) is counted, so the server's work is left out. The target:
per chunk, 500 concurrent streams cost at most 1.5x what one stream costs
(rxstream adds no per-stream overhead that grows with the number of streams).

    python benchmarks/bench_concurrency.py           # 500 streams x 200 chunks
    python benchmarks/bench_concurrency.py --quick   # 100 streams x 50 chunks

Prints the ratio; exits 1 when it is above the target.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time

import httpx

import rxstream as rs

TARGET = 1.5


def _event(payload: object) -> bytes:
    data = b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


class Server:
    """Streams `chunks` text chunks then `[DONE]` for every request, on its own loop."""

    def __init__(self, chunks: int) -> None:
        self.chunks = chunks
        self.port = 0
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    def __enter__(self) -> Server:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=2048)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            await reader.readexactly(length)
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            )
            piece = {"choices": [{"index": 0, "delta": {"content": "tok "}}]}
            for _ in range(self.chunks):
                writer.write(_event(piece))
                await writer.drain()
                await asyncio.sleep(0)
            finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            done = b"data: [DONE]\n\n"
            writer.write(_event(finish) + b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


async def run_streams(url: str, streams: int) -> tuple[float, int]:
    """CPU seconds of this thread and text chunks received, for `streams` at once."""
    payload = {"model": "bench", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        received = 0

        async def one() -> None:
            nonlocal received
            done = asyncio.Event()
            failures: list[Exception] = []

            def count(delta: rs.Delta) -> None:
                nonlocal received
                if isinstance(delta, rs.TextDelta):
                    received += 1

            rs.from_request(client, "POST", url, json=payload).pipe(
                rs.sse_frames(), rs.decode_chunks(), rs.deltas()
            ).subscribe(count, lambda e: (failures.append(e), done.set()), done.set)
            await done.wait()
            if failures:
                raise failures[0]

        start = time.thread_time()
        await asyncio.gather(*(one() for _ in range(streams)))
        return time.thread_time() - start, received


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="100 streams x 50 chunks")
    parser.add_argument("--streams", type=int, default=None)
    parser.add_argument("--chunks", type=int, default=None)
    options = parser.parse_args(argv)
    streams = options.streams or (100 if options.quick else 500)
    chunks = options.chunks or (50 if options.quick else 200)

    with Server(chunks) as server:
        url = f"http://127.0.0.1:{server.port}/v1/chat/completions"
        asyncio.run(run_streams(url, 1))  # warm up imports and caches
        # One stream, repeated so its total work matches the concurrent run's.
        single_cpu = single_chunks = 0.0
        for _ in range(max(1, min(streams, 20))):
            cpu, got = asyncio.run(run_streams(url, 1))
            single_cpu, single_chunks = single_cpu + cpu, single_chunks + got
        many_cpu, many_chunks = asyncio.run(run_streams(url, streams))

    if single_chunks != chunks * max(1, min(streams, 20)) or many_chunks != chunks * streams:
        print(f"lost chunks: single {single_chunks:g}, concurrent {many_chunks}", file=sys.stderr)
        return 2
    per_single = single_cpu / single_chunks * 1e6
    per_many = many_cpu / many_chunks * 1e6
    ratio = per_many / per_single
    print(f"1 stream:     {per_single:7.1f} us CPU per chunk")
    print(f"{streams} streams: {per_many:7.1f} us CPU per chunk")
    print(f"ratio {ratio:.2f} (target <= {TARGET})")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
