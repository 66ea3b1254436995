"""A request deadline that counts the server's time, not the time this process could not run.

On a busy machine (eight jobs on two cores) a process can be off the CPU, or its event loop busy
parsing other answers, for seconds. A plain `asyncio.wait_for(send, timeout_s)` then fires although
the server's answer is already in the socket: the answer is thrown away and the request sent again,
so the provider is paid twice. Here the deadline is spent in ticks of at most TICK_S; a tick that
overruns (the loop could not run) is charged only its nominal length. A request is given up after
`timeout_s` of loop time in which no answer could be read, whatever the machine's load; the wall
time is bounded by `timeout_s` plus the time the process was starved.

The transport's own timeout (litellm's) is set to `backstop_s(timeout_s)`, well past the deadline,
so that it never races this one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

TICK_S = 0.25
GRACE_STEPS = 4  # loop turns from "bytes in the socket" to "answer parsed" for an HTTP client


def backstop_s(timeout_s: float) -> float:
    """The transport's own timeout: only a backstop, after the engine's deadline."""
    return 2 * timeout_s + 30.0


async def within[T](coro: Coroutine[Any, Any, T], timeout_s: float) -> T:
    """`await coro`, cancelled after `timeout_s` of loop time without an answer: TimeoutError."""
    task = asyncio.ensure_future(coro)
    left = timeout_s
    try:
        while True:
            tick = min(TICK_S, left)
            done, _ = await asyncio.wait({task}, timeout=tick)
            if done:
                return task.result()
            left -= tick  # an overrun of the tick is the loop's lateness, not the server's
            if left <= 0:
                for _ in range(GRACE_STEPS):  # let the I/O already due run before giving up
                    await asyncio.sleep(0)
                    if task.done():
                        return task.result()
                break
    except BaseException:
        task.cancel()
        raise
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    raise TimeoutError(f"no answer within {timeout_s} s")
