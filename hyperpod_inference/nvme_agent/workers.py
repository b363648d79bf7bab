"""The agent's own worker threads and its stop signal (stdlib only).

Every transfer runs on daemon threads this module starts: the process can end while one is stuck in a stalled read.
``CANCEL`` is set on SIGTERM (see ``cli``); workers check it between reads and between files, and the thread that
waits for them gives them ``GRACE`` seconds to notice before it lets the interruption go on.
"""

from __future__ import annotations

import collections
import threading
import time

CANCEL = threading.Event()
GRACE = 2.0  # seconds the waiting thread gives workers to stop after CANCEL (SIGTERM must end the agent within 5 s)


class Interrupted(Exception):
    """The agent is stopping (SIGTERM)."""


def check() -> None:
    if CANCEL.is_set():
        raise Interrupted("interrupted")


def run(count: int, target, name: str) -> list[BaseException]:
    """Run ``target()`` on ``count`` daemon threads and wait for them; return the exceptions they raised.

    If the wait is interrupted (SIGTERM raises ``SystemExit`` in the main thread), ``CANCEL`` is set and the workers get
    ``GRACE`` seconds to stop before the interruption propagates."""
    errors: list[BaseException] = []
    lock = threading.Lock()

    def body():
        try:
            target()
        except BaseException as exc:  # noqa: BLE001 - reported to the caller
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=body, name=f"nvme-agent-{name}-{i}", daemon=True) for i in range(max(1, count))]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except BaseException:
        CANCEL.set()
        deadline = time.monotonic() + GRACE
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        raise
    return errors


def each(items, fn, count: int, name: str) -> list[tuple[object, BaseException]]:
    """``fn(item)`` for every item on up to ``count`` threads; stops handing out items at ``CANCEL``. Returns the
    (item, exception) of every item that failed (an interrupted run raises ``Interrupted``)."""
    queue = collections.deque(items)
    failed: list[tuple[object, BaseException]] = []
    lock = threading.Lock()

    def worker():
        while True:
            check()
            with lock:
                if not queue:
                    return
                item = queue.popleft()
            try:
                fn(item)
            except Interrupted:
                raise
            except BaseException as exc:  # noqa: BLE001 - the item fails, the others go on
                with lock:
                    failed.append((item, exc))

    errors = run(min(count, len(queue)), worker, name)
    check()
    if errors:
        raise errors[0]
    return failed
