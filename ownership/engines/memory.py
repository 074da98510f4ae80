"""The memory accounting of the packed searches (batch, native, partitioned).

- `keep_freed_memory`: glibc keeps freed block temporaries for reuse (NOTE(first-touch));
  process-wide, so only the `ownership` command calls it;
- `PeakMemory`: a search's peak resident memory, for Coverage.peak_memory (NOTE(peak-memory));
- `memory_limit`: the resident memory a search may reach: its --max-memory, and never more than
  it holds plus 90% of what the machine still has available (a search never swaps).
"""

from __future__ import annotations

from ..limits import available_memory, peak_resident_memory, resident_memory


def keep_freed_memory() -> None:
    """Ask glibc to keep freed memory for reuse instead of returning it to the kernel.

    NOTE(first-touch): a search allocates and frees many block-sized temporaries. By default
    glibc serves blocks of 128 KiB and more with fresh mmap()s and unmaps them on free, so every
    block faults its pages in again; on virtual machines a first touch of memory is expensive
    (measured 13-30 us per 4 KiB page on the project's VMs: benchmarks/RESULTS.md). Raising the
    mmap and trim thresholds makes freed temporaries reusable, which cut a 7 M-state run from
    12 s to 8 s there. Process-wide, so the engine never calls it: the `ownership` command does,
    and a library user may (a no-op without glibc)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    libc.mallopt(m_mmap_threshold, 32 << 20)     # the largest value glibc accepts
    libc.mallopt(m_trim_threshold, 1 << 30)
    libc.mallopt(m_top_pad, 64 << 20)


class PeakMemory:
    """The process's peak resident memory during one search, for Coverage.peak_memory.

    NOTE(peak-memory): sampling the resident set between slices misses what a search holds
    for a moment inside one: a visited table that grows holds the old and the new table
    while it rehashes (at 140 M states of the incident model, 4,900 MB sampled where the
    kernel counted 5,813). The kernel's high-water mark is exact but covers the process's
    whole life; where the search raised it, it is the search's peak. Where it did not (an
    earlier search in the same process went higher), the largest sample is what is known."""

    def __init__(self) -> None:
        self.sampled = resident_memory()
        self.before = peak_resident_memory()

    def sample(self) -> int:
        """The resident memory now, kept if it is the largest seen."""
        rss = resident_memory()
        self.sampled = max(self.sampled, rss)
        return rss

    def peak(self) -> int:
        """The search's peak resident memory so far (NOTE(peak-memory))."""
        self.sample()
        high = peak_resident_memory()
        return high if high > self.before else self.sampled


def memory_limit(max_memory: int | None) -> int | None:
    """The resident memory a search may reach: max_memory, and never more than what the
    process holds plus 90% of what the machine still has available (no swapping); None
    where neither is known."""
    limits = [] if max_memory is None else [max_memory]
    avail = available_memory()
    if avail is not None:
        limits.append(resident_memory() + int(avail * 0.9))
    return min(limits) if limits else None
