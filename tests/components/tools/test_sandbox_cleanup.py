"""The sandbox's deliberately swallowed errors (a confused fork-server pipe, cleanup in
``__del__``) are the expected OS/pipe errors only, and each is logged; anything else is raised."""

from __future__ import annotations

import logging

import pytest

from components.tools import sandbox
from components.tools.sandbox import SandboxEpisode, SandboxServer


def _raise(exc: BaseException):
    def boom(*_a, **_k):
        raise exc

    return boom


def test_a_confused_pipe_restarts_the_server_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    server = SandboxServer()
    server._pending_reap = True  # a reaped report is due, but there is no pipe to read it from
    with caplog.at_level(logging.DEBUG, logger=sandbox.__name__):
        server._drain()
    assert server.restarts == 1 and server._from is None and not server._pending_reap
    assert any("restarted" in r.getMessage() for r in caplog.records)


def test_a_bug_while_draining_is_not_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    server = SandboxServer()
    server._pending_reap = True
    monkeypatch.setattr(sandbox, "_recv_msg", _raise(RuntimeError("a bug")))
    with pytest.raises(RuntimeError, match="a bug"):
        server._drain()
    assert server.restarts == 0


def test_cleanup_errors_in_del_are_logged_and_bugs_are_not_hidden(caplog: pytest.LogCaptureFixture) -> None:
    server = SandboxServer()
    episode = SandboxEpisode.__new__(SandboxEpisode)  # no kernel: only __del__ is under test
    episode.episode_id = "ep-test"
    server.stop = _raise(ProcessLookupError("gone"))  # type: ignore[method-assign]
    episode._kill = _raise(BrokenPipeError("gone"))  # type: ignore[method-assign]
    with caplog.at_level(logging.DEBUG, logger=sandbox.__name__):
        server.__del__()
        episode.__del__()
    messages = [r.getMessage() for r in caplog.records]
    assert any("SandboxServer cleanup failed" in m and "gone" in m for m in messages)
    assert any("SandboxEpisode ep-test cleanup failed" in m for m in messages)
    server.stop = _raise(RuntimeError("a bug"))  # type: ignore[method-assign]
    episode._kill = _raise(RuntimeError("a bug"))  # type: ignore[method-assign]
    try:
        with pytest.raises(RuntimeError):
            server.__del__()
        with pytest.raises(RuntimeError):
            episode.__del__()
    finally:
        server.stop = lambda: None  # type: ignore[method-assign]
        episode._kill = lambda: None  # type: ignore[method-assign]
