#===- kilnbench/stats.py - Statistics of timings and ratios ----------------===#
#
# The same summary statistics as kiln-run (Measure.cpp): percentiles
# interpolate linearly between order statistics (numpy's default), the
# standard deviation is the sample one (n - 1). Ratios of two sets of
# timings are ratios of medians with a percentile-bootstrap confidence
# interval whose generator is seeded, so a report is reproducible from its
# samples.
#
#===----------------------------------------------------------------------===#

import math
import random


def percentile(sorted_samples, q):
    """q-th percentile (0..100) of ascending samples, numpy's 'linear'."""
    n = len(sorted_samples)
    if n == 0:
        raise ValueError("percentile of no samples")
    if n == 1:
        return float(sorted_samples[0])
    rank = q / 100.0 * (n - 1)
    lo = int(math.floor(rank))
    if lo >= n - 1:
        return float(sorted_samples[-1])
    frac = rank - lo
    return sorted_samples[lo] + (sorted_samples[lo + 1] - sorted_samples[lo]) * frac


def median(samples):
    return percentile(sorted(samples), 50)


def summarize(samples):
    """min, median, mean, p90, p99, max, stddev (sample) and count."""
    s = sorted(float(x) for x in samples)
    n = len(s)
    if n == 0:
        return {"count": 0}
    mean = sum(s) / n
    var = sum((x - mean) ** 2 for x in s) / (n - 1) if n > 1 else 0.0
    return {
        "count": n,
        "min": s[0],
        "median": percentile(s, 50),
        "mean": mean,
        "p90": percentile(s, 90),
        "p99": percentile(s, 99),
        "max": s[-1],
        "stddev": math.sqrt(var),
    }


def ratio_of_medians(a, b, resamples=2000, confidence=0.95, seed=0):
    """median(a) / median(b) with a bootstrap interval.

    Each resample draws len(a) values of a and len(b) of b with
    replacement and takes the ratio of their medians; the interval is the
    central `confidence` share of those ratios. Returns (ratio, low, high).
    """
    if not a or not b:
        raise ValueError("ratio of an empty sample")
    ratio = median(a) / median(b)
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        ra = [a[rng.randrange(len(a))] for _ in a]
        rb = [b[rng.randrange(len(b))] for _ in b]
        ratios.append(median(ra) / median(rb))
    ratios.sort()
    tail = (1 - confidence) / 2 * 100
    return ratio, percentile(ratios, tail), percentile(ratios, 100 - tail)


def tasks_per_hour(task_seconds):
    return 3600.0 / task_seconds if task_seconds > 0 else float("nan")
