"""CPython side of `cargo bench --bench run`: the same pure computations as
the lt programs, written as comprehensions, over the same 1,000,000 Ints.
Prints one line per case: `<case> <median ms>`."""
import statistics
import sys
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 7
xs = list(range(N))


def fold_sum():
    return sum([x for x in xs])


def map_filter_fold():
    return sum([y for y in [x * 3 for x in xs] if y % 2 == 0])


for name, f in [("fold_sum", fold_sum), ("map_filter_fold", map_filter_fold)]:
    times = []
    for _ in range(REPS):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1000)
    print(name, round(statistics.median(times), 2))
