"""Helpers the tests share (one copy each): processes, servers, chunkings."""
