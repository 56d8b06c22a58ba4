"""Latency statistics shared by bench/enumeration.py and bench/mail.py (standard library only)."""
import statistics


def percentiles(xs):
    """p10, p50, p90, p99 and the mean of seconds, in milliseconds."""
    xs = sorted(xs)
    pick = lambda p: xs[min(len(xs) - 1, int(p * len(xs)))] * 1000
    return pick(0.10), pick(0.50), pick(0.90), pick(0.99), statistics.mean(xs) * 1000


def ks(a, b):
    """The two-sample Kolmogorov-Smirnov distance: the largest gap between the two CDFs."""
    a, b = sorted(a), sorted(b)
    i = j = 0
    d = 0.0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            i += 1
        else:
            j += 1
        d = max(d, abs(i / len(a) - j / len(b)))
    return d
