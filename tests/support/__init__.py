"""Helpers the tests share (one copy each): every helper more than one test file uses is here.

- `fast`: the fast-path switch (`way`, `typed_decoding`) and a run's outcome to compare;
- `ways`: one stream decoded every way a "same event but its text" shortcut must agree with;
- `typed`, `typed_gemini_ollama_bedrock`: the typed (msgspec) path against the standard library's;
- `pipelines`: the pipelines a dialect's recording runs through, by name;
- `dialects`: raw bytes through the real operators, SSE frames and their bytes (dialect tests);
- `mutations`: every field of every recorded event set to a wrong value (the sweep's cases);
- `operators`: ReactiveTest shorthands, error records and chunks of the operator tests;
- `chunking`: a core machine fed the same input cut in many ways, one output demanded;
- `json_paths`: a test module run on both JSON paths of `ChunkDecoder`;
- `narrowing`: a list of a union narrowed to the one kind a test expects (`only`);
- `run_items`: a run's items as `rs.run` gives them, written by hand;
- `sources`: running an observable to its end, sync or async, against a server;
- `serve`: an ASGI app under uvicorn on 127.0.0.1, in a thread (`serving`);
- `redis`, `redis_cluster`: a producer and a follower on a real Redis; a Redis Cluster;
- `redis_steps`: the Redis jobs' step machines played by hand (`play`, `said`), no Redis;
  entries and commands written by hand (`entry`, `xread`, `kinds`);
- `launch`: the example app launched as a user would;
- `schema_check`: a tiny JSON Schema checker (jsonschema is not a dependency);
- `docs_blocks`: a docs block run as printed against a fake server;
- `aisdk`, `conformance_readers`, `request_recordings`: what the AI SDK client, the official
  SDKs' readers and the request oracle share;
- `leaks`: every place a secret could hide in an exception;
- `pools`: single-thread pools (the `pool` fixture of `tests/io`);
- `processes`, `node`: child processes and the Node clients;
- `codec_strategies`: every kind of item the wire codec encodes, and all of an item's fields;
- `scripted_streams`: one script of deltas in every dialect's bytes, read back (`deltas_of`);
- `credentials`: the credentials the secrets tests send, and every form that must not leak;
- `example_scripts`: an example script run in a fresh interpreter (`run`);
- `chat_app`: the chat example's client side (start a chat, read its events);
- `conformance_scenarios`: the scenarios the SDKs and the JS clients read from the fake server;
- `sdk_oracle`: what an official SDK sends (`sdk_request`), `KEY`, the `aws_env` fixture;
- `bedrock_events`: Bedrock ConverseStream events written by hand;
- `json_documents`, `json_patch`: JSON documents (and damaged ones, and item-like objects); an
  RFC 6902 applier;
- `token_encodings`: the encodings the token tests count with, and their text helpers;
- `recordings`: what each recording in tests/data means, one module a dialect.

No test module imports from another test module (`tests/test_layout.py` checks it).
"""
