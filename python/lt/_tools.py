"""Python functions (sync or ``async``) as lt tools: each is called with
the tool's argument (JSON-shaped data: a record is a ``dict``) and returns
its result. An ``async`` function is awaited: on the caller's event loop
under ``lt.run_async``, on an event loop of the calling thread under
``lt.run``. A batch of independent calls (``gather``, ``fan_out``) runs its
async tools concurrently.

Every call runs on a daemon thread of a pool (``_work``), not on the
session's thread, so that the session can stop waiting at the call's
deadline or its cancellation (``python/src/worker.rs``): an abandoned
``async`` call is cancelled (``job.on_cancel``); a sync function runs to its
end on its thread, its result dropped."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from typing import Any, Awaitable, Callable, List, Mapping, Optional, Set, Tuple

from . import _lt

Tool = Callable[[Any], Any]
Outcome = Tuple[Optional[bool], Any]

def _raised(tool: str, e: BaseException) -> str:
    """``tool t raised ValueError: …`` (as the extension words a raise). An
    exception whose ``str()`` itself fails is named by its type alone."""
    name = type(e).__name__
    try:
        msg = str(e)
    except Exception:  # a broken __str__ is the tool's, not the batch's
        msg = ""
    return f"tool {tool} raised {name}: {msg}" if msg else f"tool {tool} raised {name}"


class _Foreign(Exception):
    """A tool's result lt cannot await: a pending asyncio Future of an event
    loop other than the one lt awaits it on. Awaited anyway, asyncio would
    fail with a message about lt's own task; the call's ``Err`` says what
    the tool did instead (``tool t returned …``)."""


def _foreign(result: Any, loop: Optional[asyncio.AbstractEventLoop]) -> Optional[str]:
    """Why ``result`` cannot be awaited on ``loop`` (``None``: a new loop of
    this thread, under ``lt.run``), or ``None`` when it can. A future that is
    done gives its value on any loop."""
    if not asyncio.isfuture(result) or result.done():
        return None
    try:
        own = result.get_loop()
    except AttributeError:  # a future-like object without a loop: await it
        return None
    if own is loop:
        return None
    where = ("an event loop of its own (lt.run)" if loop is None
             else "the event loop that runs lt.run_async")
    return (f"returned an asyncio Future of another event loop: lt awaits a tool's "
            f"awaitable on {where}; make the tool `async def`, or return its value")


class _Stop:
    """A ``KeyboardInterrupt`` or ``SystemExit`` an ``async`` tool raised,
    carried out of its task as a value: raised inside a task, asyncio
    would re-raise it out of the event loop (the host's, under
    ``lt.run_async``) instead of the awaiting code. Re-raised on the pool
    thread, where ``job.fail`` stops the run with it."""

    def __init__(self, e: BaseException) -> None:
        self.e = e


async def _await(x: Awaitable[Any]) -> Any:
    try:
        return await x
    except (KeyboardInterrupt, SystemExit) as e:
        return _Stop(e)


def _value(r: Any) -> Any:
    """``r``, or the exception a ``_Stop`` carries, raised."""
    if isinstance(r, _Stop):
        raise r.e
    return r


_here = threading.local()  # a pool thread's job (``_here.job``), for a batch


def _work() -> None:
    """A pool thread: runs the jobs of every session, one after another,
    until ``next_job`` raises ``StopIteration`` (it was idle too long).
    The tool is called from these Python frames, never under a Rust frame
    (Python's exit may end this thread while it runs). The tool is the
    user's function itself: ``job.done`` takes a result of a plain type
    (``dict``, ``list``, ``str``, …) at once and answers ``None``; for any
    other (an awaitable) it answers the run's ``settle``, whose value it is
    then given."""
    job = _lt.Job()  # this thread's, given each call in turn
    next_job, done = job.next, _lt.giver(job)  # `done` without a tuple a call
    _here.job = job
    try:
        while True:
            f, arg = next_job()
            try:
                r = f(arg)
                settle = done(r)
                if settle is not None:
                    done(settle(r, job))
            except BaseException as e:  # a raising tool is the call's Err
                job.fail(e)
            f = arg = r = settle = None
    except StopIteration:  # idle too long, with others idle: the thread ends
        pass


def _start_worker() -> None:
    """Starts one more pool thread (the session found none idle)."""
    threading.Thread(target=_work, name="lt-tool", daemon=True).start()


def _close_unstarted(aws: List[Any]) -> None:
    """Closes each coroutine of ``aws`` that never started (its call was
    abandoned before its task ran): Python would otherwise warn that the
    tool's coroutine "was never awaited", as if the user's code were at
    fault. Only for coroutines this thread's own loop was to run: one
    another loop may still start is left alone."""
    for aw in aws:
        if inspect.iscoroutine(aw) and inspect.getcoroutinestate(aw) == inspect.CORO_CREATED:
            aw.close()


def _run_here(coro: Awaitable[Any], job: Any, inner: List[Any]) -> Any:
    """Awaits ``coro`` on a new event loop of this thread; the job's
    cancellation cancels its task. The coroutines of ``inner`` (the
    tool's, which ``coro`` awaits) are closed at the end if they never
    started."""
    loop = asyncio.new_event_loop()
    try:
        task = loop.create_task(_await(coro))
        job.on_cancel(lambda: loop.call_soon_threadsafe(task.cancel))
        return _value(loop.run_until_complete(task))
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
            _close_unstarted([coro, *inner])


class Dispatch:
    """The functions of one run and what the extension needs besides them:
    ``settle`` for a result that is not plain data, ``batch`` for the
    ``async`` calls of a batch (pairs out)."""

    def __init__(self, tools: Mapping[str, Tool], loop: Optional[asyncio.AbstractEventLoop]) -> None:
        self.tools = dict(tools)
        self.loop = loop
        self.any_async = any(inspect.iscoroutinefunction(f) for f in self.tools.values())

    def settle(self, result: Any, job: Any) -> Any:
        """The value of a result that may be awaitable (``job.done`` hands
        over every result not of a plain type)."""
        if not inspect.isawaitable(result):
            return result
        why = _foreign(result, self.loop)
        if why is not None:
            raise _Foreign(why)
        if self.loop is not None:
            waiting = _await(result)
            try:
                fut = asyncio.run_coroutine_threadsafe(waiting, self.loop)
            except BaseException:
                # The host's loop is closed (the run was over): no one will
                # start these; closed, they leave no "never awaited" warning.
                _close_unstarted([waiting, result])
                raise
            job.on_cancel(fut.cancel)
            return _value(_result_on(fut, self.loop))
        return _run_here(result, job, [])

    def async_names(self) -> List[str]:
        """The tools whose functions are ``async`` (a batch runs their
        calls together)."""
        return [name for name, f in self.tools.items() if inspect.iscoroutinefunction(f)]

    def batch(self, work: Tuple[int, List[Tuple[str, Any, Optional[float]]]]) -> List[Outcome]:
        """The ``async`` calls of a batch, ``work`` being ``(slots, calls)``:
        awaited together, at most ``slots`` at once (the profile's
        ``max_concurrency``), each within its own timeout (seconds, counted
        from the batch's start, the wait for a slot included; ``None``:
        none): an outcome per call, ``(None, None)`` for one that timed out.
        A ``KeyboardInterrupt`` or ``SystemExit`` in any of them is raised
        (it stops the run). Runs on a pool thread (its job cancels the
        batch)."""
        slots, calls = work
        job = _here.job
        batch = _Batch(slots)
        outcomes: List[Optional[Outcome]] = [None] * len(calls)
        pending: List[Tuple[int, str, Awaitable[Any], Optional[float]]] = []
        awaited: List[Any] = []  # the tools' awaitables
        for i, (name, arg, timeout) in enumerate(calls):
            f = self.tools.get(name)
            if f is None:
                outcomes[i] = (False, f"tool {name} has no in-process function")
                continue
            try:
                r = f(arg)
            except Exception as e:  # a raising tool is the call's Err
                outcomes[i] = (False, _raised(name, e))
                continue
            if inspect.isawaitable(r):
                pending.append((i, name, r, timeout))
                awaited.append(r)
            else:
                outcomes[i] = (True, r)
        if pending:

            def deliver(results: List[Any]) -> List[Outcome]:
                for (i, name, _, _), r in zip(pending, results):
                    if isinstance(r, _Stop):
                        raise r.e
                    if isinstance(r, _TimedOut):
                        outcomes[i] = (None, None)
                    elif isinstance(r, BaseException):
                        outcomes[i] = (False, _raised(name, r))
                    else:
                        outcomes[i] = r
                return _every(outcomes)

            together = batch.together([(name, r, timeout) for _, name, r, timeout in pending])
            if self.loop is not None:
                fut = asyncio.run_coroutine_threadsafe(together, self.loop)
                job.on_cancel(fut.cancel)
                try:
                    return deliver(_result_on(fut, self.loop))
                finally:
                    batch.cancel_stragglers(self.loop)
            return _run_batch_here(batch, together, job, awaited, deliver)
        return _every(outcomes)


# How often a call awaited on the host's loop looks whether that loop was
# closed (seconds).
_LOOP_CHECK = 0.25


def _result_on(fut: "concurrent.futures.Future[Any]", loop: asyncio.AbstractEventLoop) -> Any:
    """The result of ``fut``, a call awaited on ``loop`` (the host's, under
    ``lt.run_async``). A loop closed with the call pending would never
    settle it: the call then raises ``RuntimeError`` (its ``Err``), as a
    call made after the loop closed does, rather than waiting for its
    deadline."""
    while True:
        try:
            return fut.result(timeout=_LOOP_CHECK)
        except concurrent.futures.TimeoutError:
            if fut.done():
                raise  # the tool's own TimeoutError
            if loop.is_closed():
                # Not `fut.cancel()`: its callback would call the closed
                # loop (a traceback printed); the task went with the loop.
                raise RuntimeError("Event loop is closed (the loop running lt.run_async closed with the call pending)") from None


def _every(outcomes: List[Optional[Outcome]]) -> List[Outcome]:
    """A batch's outcomes, one per call (``no outcome`` for a gap)."""
    return [o if o is not None else (False, "no outcome") for o in outcomes]


class _TimedOut:
    """A batch's call that outlived its own timeout."""


class _Batch:
    """The ``async`` calls of one batch on one event loop: each awaited
    within its own deadline, all together, and those past their deadlines
    cancelled only once the batch's outcomes are given (a task slow to
    stop, or one that blocks its loop as it stops, would hold them back:
    break-it pass)."""

    def __init__(self, slots: int) -> None:
        self.stragglers: List["asyncio.Task[Any]"] = []
        self.slots = slots

    async def within(self, name: str, aw: Awaitable[Any], timeout: Optional[float], began: float) -> Any:
        """``(True, value)`` or ``(False, message)`` of ``aw``, ``_TimedOut()``
        past ``timeout`` (seconds from ``began``, the batch's start on the
        loop's clock, so that the wait for a slot counts; a value that
        comes later, the loop having been blocked, is past it too), or
        ``_Stop`` for a ``KeyboardInterrupt`` or ``SystemExit``. A
        ``TimeoutError`` the tool raises itself is its ``Err``, not a
        timeout."""

        async def settled() -> Any:
            # A `KeyboardInterrupt` or `SystemExit` is caught here, inside
            # the task made of this coroutine: raised out of a task, asyncio
            # re-raises it out of the event loop, past the batch.
            try:
                return (True, await aw)
            except Exception as e:  # a raising tool is the call's Err
                return (False, _raised(name, e))
            except (KeyboardInterrupt, SystemExit) as e:
                return _Stop(e)

        if timeout is None:
            return await settled()
        loop = asyncio.get_running_loop()
        left = timeout - (loop.time() - began)
        if left <= 0:  # its time went waiting for a slot
            _close_unstarted([aw])
            return _TimedOut()
        # Not `asyncio.wait_for`, which waits for the cancelled task to end.
        task = loop.create_task(settled())
        try:
            done, _ = await asyncio.wait({task}, timeout=left)
        except BaseException:
            task.cancel()  # the batch itself was cancelled
            raise
        if task in done:
            if loop.time() - began <= timeout:
                return task.result()
        else:
            # Its slot is given up now; it is cancelled with the batch's end.
            self.stragglers.append(task)
        return _TimedOut()

    async def together(self, calls: List[Tuple[str, Awaitable[Any], Optional[float]]]) -> List[Any]:
        """Each call's value (``within``'s), in order, at most ``slots``
        running at once, taken in order; as soon as one is a ``_Stop``,
        that stop for all (the run is stopping; the others are cancelled
        and those not started are closed).

        ``slots`` workers take the calls one after another: a batch of any
        size makes only that many tasks, so it starts at once and a cancel
        stops it at once, and no call starts after it (break-it pass: a task
        a call, 200,000 calls held the host's loop for 3 s as they were
        made, and calls went on starting after ``cancel()``)."""
        n = len(calls)
        if n == 0:
            return []
        loop = asyncio.get_running_loop()
        began = loop.time()
        results: List[Any] = [None] * n
        todo = iter(range(n))
        stops: List[_Stop] = []

        async def worker() -> None:
            for i in todo:
                name, aw, timeout = calls[i]
                r = await self.within(name, aw, timeout, began)
                results[i] = r
                if isinstance(r, _Stop):
                    stops.append(r)
                    return

        workers = [loop.create_task(worker()) for _ in range(min(self.slots, n))]
        ended: "asyncio.Future[None]" = loop.create_future()
        left = [len(workers)]

        def one_ended(t: "asyncio.Task[Any]") -> None:
            left[0] -= 1
            if not ended.done() and (stops or left[0] == 0):
                ended.set_result(None)

        for w in workers:
            w.add_done_callback(one_ended)
        try:
            await ended
        finally:
            # Those not done: the run stops, or was cancelled (on a loop the
            # host closed under the batch, they went with it).
            if not loop.is_closed():
                for w in workers:
                    w.cancel()
            # The calls no worker took never start.
            _close_unstarted([calls[i][1] for i in todo])
        if stops:
            return [stops[0]] * n
        return results

    def cancel_stragglers(self, loop: asyncio.AbstractEventLoop) -> None:
        """Cancels the calls past their deadlines, on ``loop`` (another
        thread's: the host's, under ``lt.run_async``)."""
        for t in self.stragglers:
            try:
                loop.call_soon_threadsafe(t.cancel)
            except RuntimeError:  # the host's loop is closed
                pass


def _outcome_of(t: "asyncio.Task[Any]") -> Any:
    """A done task's value, or the exception it ended with, as a value."""
    if t.cancelled():
        return asyncio.CancelledError()
    e = t.exception()
    return e if e is not None else t.result()


# How long, in seconds, the calls of a batch on its own loop (under
# ``lt.run``) that are still running once its outcomes are known (past
# their deadlines, or the run stopping) are given to end, cancelled.
_GRACE = 1.0

# Tasks that did not end within the grace: kept, never run again and never
# destroyed (destroyed, a task warns "was destroyed but it is pending", and
# closing its coroutine throws ``GeneratorExit`` into the user's code,
# which may not let it end).
_stuck: Set["asyncio.Task[Any]"] = set()


def _run_batch_here(
    batch: _Batch,
    together: Awaitable[Any],
    job: Any,
    inner: List[Any],
    deliver: Callable[[List[Any]], List[Outcome]],
) -> List[Outcome]:
    """Awaits a batch on a new event loop of this thread (the job's
    cancellation cancels it) and returns its outcomes (``deliver`` of its
    results). Calls still running then (past their deadlines) are
    cancelled and given :data:`_GRACE` to end on a thread of their own, so
    that the outcomes are not held back and this thread is free."""
    loop = asyncio.new_event_loop()
    try:
        task = loop.create_task(_await(together))
        job.on_cancel(lambda: loop.call_soon_threadsafe(task.cancel))
        return deliver(_value(loop.run_until_complete(task)))
    finally:
        for t in batch.stragglers:
            t.cancel()
        left = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in left:
            t.cancel()
        if left:
            threading.Thread(
                target=_reap, args=(loop, left, [together, *inner]), name="lt-reap", daemon=True
            ).start()
        else:
            _close(loop, [together, *inner])


def _reap(loop: asyncio.AbstractEventLoop, left: List["asyncio.Task[Any]"], inner: List[Any]) -> None:
    """Lets a batch's cancelled calls end, for :data:`_GRACE` at most, then
    closes their loop; those still running are kept (:data:`_stuck`)."""
    try:
        loop.run_until_complete(asyncio.wait(left, timeout=_GRACE))
    finally:
        _close(loop, inner)


def _close(loop: asyncio.AbstractEventLoop, inner: List[Any]) -> None:
    """Closes a batch's loop: its async generators finished, the tasks
    still pending kept, the coroutines of ``inner`` that never started
    closed."""
    try:
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        _stuck.update(t for t in asyncio.all_tasks(loop) if not t.done())
        loop.close()
        _close_unstarted(inner)


