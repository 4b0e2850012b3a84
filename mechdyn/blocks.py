"""Row blocks for work that C or C++ does with the GIL released: a run's records split over as many threads as
this process may use, so the post-processing of a run (its energies, its trace's text) takes both cores of a
two-core machine rather than one."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import TypeVar

MOST_THREADS = 4  # beyond this the blocks' own overhead eats the gain on a run's few thousand rows
SMALLEST = 500  # rows: a shorter block costs more to hand to a thread than to do in place

T = TypeVar("T")


def row_blocks(n: int, per_thread: int = 1) -> list[tuple[int, int]]:
    """[start, end) ranges covering rows 0..n, `per_thread` for each thread: as many threads as the cores this
    process may run on (at most MOST_THREADS), no block shorter than SMALLEST rows unless there is only one."""
    k = max(1, min(per_thread * threads(), n // SMALLEST))
    edges = [n * i // k for i in range(k + 1)]
    return list(zip(edges[:-1], edges[1:]))


def threads() -> int:
    """The threads the blocks run on: one per core this process may run on (its affinity where the system keeps
    one, as Linux does), at most MOST_THREADS. More threads than cores only make the blocks finish together."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(cores, MOST_THREADS)


def each_block(work: Callable[[int, int], T], n: int, per_thread: int = 1) -> Iterator[T]:
    """work(start, end) on every one of row_blocks(n, per_thread), on threads when there is more than one; their
    results in row order, each as soon as it and those before it are done (a consumer can write the first while
    the threads work on the rest). `work` must release the GIL to gain anything (a cffi call, Arrow's writer)."""
    blocks = row_blocks(n, per_thread)
    if len(blocks) == 1:
        return iter([work(*blocks[0])])
    return _pool().map(lambda b: work(*b), blocks)


@cache
def _pool() -> ThreadPoolExecutor:
    """The threads the blocks run on, started once and kept: a run's post-processing calls each_block more than
    once, and each call is a few milliseconds. (A test that changes the affinity sees blocks split for it, run
    on the threads already started.)"""
    return ThreadPoolExecutor(threads(), thread_name_prefix="mechdyn-blocks")

