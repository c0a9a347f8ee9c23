"""The lease of the process that builds one version of a published index (:mod:`toolrag.index.published`):
``toolrag-index-NAME-lease-VERSION`` holds who builds it (``owner``) until when (``expires``), renewed every third
of the lease while held. Creating a collection is atomic on the server, so two processes starting together
cannot both take it; an expired lease (its holder was killed) is taken over and the build finished."""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from typing import Protocol

from toolrag.errors import StoreError

__all__ = ["Lease", "LeaseStore", "owner_id"]

log = logging.getLogger(__name__)


class LeaseStore(Protocol):
    """What a lease reads and writes of its published index (:class:`toolrag.index.published.PublishedIndex`)."""

    @property
    def name(self) -> str: ...

    def lease_holder(self, version: str) -> tuple[str, float] | None: ...

    def renew(self, version: str, owner: str, ttl: float) -> None: ...

    def lease_name(self, version: str) -> str: ...

    def drop(self, collection: str) -> None: ...


def owner_id() -> str:
    """Who holds a lease, in words an operator can trace: host, process id and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Lease:
    """The right to build one version, held in a collection's metadata until ``expires``; renewed every third of
    the lease by a daemon thread while held (``heartbeat=False``: only by :meth:`renew`). :meth:`check` raises
    when another process took it over (this one stalled past the expiry), so a stale builder never flips the
    manifest."""

    def __init__(self, index: LeaseStore, version: str, owner: str, ttl: float, *, heartbeat: bool = True
                 ) -> None:
        self.index, self.version, self.owner, self.ttl = index, version, owner, ttl
        self.lost: str | None = None
        self._stop = threading.Event()
        if heartbeat:
            threading.Thread(target=self._beat, name="toolrag-lease", daemon=True).start()

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl / 3) and self.renew():
            pass

    def renew(self) -> bool:
        """Push the expiry one lease ahead; False (and :attr:`lost` set) when another process holds it now."""
        try:
            holder = self.index.lease_holder(self.version)
            if holder is None or holder[0] != self.owner:
                self.lost = f"taken over by {holder[0] if holder else 'nobody'}"
                return False
            self.index.renew(self.version, self.owner, self.ttl)
        except StoreError as exc:  # a blip: the next beat tries again, the expiry leaves room for two misses
            log.warning("renewing the build lease of %s failed: %s", self.version, exc)
        return True

    def check(self) -> None:
        if self.lost is not None:
            raise StoreError(f"the lease to build version {self.version} of index {self.index.name!r} was lost "
                             f"({self.lost}); another process finishes the build")

    def release(self) -> None:
        self._stop.set()
        if self.lost is None:
            try:
                holder = self.index.lease_holder(self.version)
                if holder is not None and holder[0] == self.owner:
                    self.index.drop(self.index.lease_name(self.version))
            except StoreError as exc:  # it expires on its own
                log.warning("releasing the build lease of %s failed: %s", self.version, exc)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
