"""The request deadline counts the server's time: an answer that arrived while the process could
not run (a blocked or starved event loop) is used, not thrown away and paid for again."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

from hhx.predictors.llm.deadline import backstop_s, within


async def _answer_over_a_socket(delay_s: float, block_s: float, deadline_s: float, guard):
    """The client reads through `guard(read, deadline_s)`; its loop is then blocked for `block_s`
    (past the deadline: a starved process), while the server answers after `delay_s`."""
    a, b = socket.socketpair()
    a.setblocking(False)
    reader, _writer = await asyncio.open_connection(sock=a)
    server = threading.Timer(delay_s, b.send, (b'["employed"]\n',))
    try:
        task = asyncio.ensure_future(guard(reader.readline(), deadline_s))
        await asyncio.sleep(0.01)  # the read is waiting on the socket
        server.start()
        time.sleep(block_s)  # the answer arrives, the process cannot run past the deadline
        return await task
    finally:
        b.close()
        _writer.close()


def test_an_answer_already_in_the_socket_survives_a_starved_loop():
    got = asyncio.run(_answer_over_a_socket(0.05, 0.6, 0.3, within))
    assert got == b'["employed"]\n'


def test_a_plain_wait_for_throws_that_answer_away():
    # what the engine did before: the timer wins the race and the request is sent again
    with pytest.raises(TimeoutError):
        asyncio.run(_answer_over_a_socket(0.05, 0.6, 0.3, asyncio.wait_for))


def test_a_silent_server_times_out_after_the_deadline():
    async def silent():
        await asyncio.sleep(30)

    async def main():
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await within(silent(), 0.5)
        return time.monotonic() - started

    elapsed = asyncio.run(main())
    assert 0.45 < elapsed < 1.5


def test_errors_pass_through_and_the_backstop_comes_later():
    async def broken():
        raise ConnectionResetError("reset")

    with pytest.raises(ConnectionResetError):
        asyncio.run(within(broken(), 1.0))
    assert backstop_s(5.0) > 5.0
