"""Ports for the tests that start servers: one free port, and the wait until a server started in the same event
loop listens on it."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 with nothing listening on it (at the time of the call)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def listening(port: int, *, timeout: float = 60.0, every: float = 0.2) -> None:
    """Return once something accepts connections on 127.0.0.1:``port``; ``TimeoutError`` after ``timeout`` s."""
    import anyio

    with anyio.fail_after(timeout):
        while True:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(every)
            else:
                await stream.aclose()
                return
