"""Key ranges of a split running DAG (issue 22): the key -> partition table and its moves.

A key's place is ``stable_hash64(key)`` cut into ``R`` fixed ranges; a table gives each range
its partition (:class:`KeyRanges`), and a re-split or a rebalance moves whole ranges
(:class:`RangeMove`) or gathered groups (:class:`GroupMove`). Why this is exact, and how the
plan uses it: :mod:`reuse.runtime.engines.shared.split`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from reuse.runtime import SparkRuntimeError
from reuse.tasks.base import stable_hash64

__all__ = ["RANGES", "SALT", "RangeMove", "GroupMove", "SplitAction", "KeyRanges"]

#: Key ranges per table: the hash's top 6 bits. Enough that a table can balance a few hundred
#: keys over a few partitions, few enough that per-range CPU is worth measuring.
RANGES = 64
#: Salt of the key hash, apart from the salts the tasks use (bloom filter 1, 2; moments 3-5).
SALT = 22


@dataclass(frozen=True)
class RangeMove:
    """Key range ``range`` (with its keys' state) moves from partition ``src`` to ``dst``."""

    range: int
    src: int
    dst: int


@dataclass(frozen=True)
class GroupMove:
    """Gathered group ``group`` (its tasks and their whole state) moves from ``src`` to ``dst``."""

    group: str
    src: int
    dst: int


SplitAction = RangeMove | GroupMove


@dataclass(frozen=True)
class KeyRanges:
    """The key -> partition function: fixed hash ranges, and the partition of each.

    Examples
    --------
    >>> kr = KeyRanges.even(2)
    >>> kr.owner[:2], kr.owner[-2:], kr.partition_of("temperature") == kr.owner[kr.range_of("temperature")]
    ((0, 0), (1, 1), True)
    >>> kr3, moves = kr.resplit(3)
    >>> [kr3.owner.count(p) for p in range(3)], len(moves)
    ([22, 21, 21], 21)
    """

    owner: tuple[int, ...]
    partitions: int

    def __post_init__(self) -> None:
        n = len(self.owner)
        if n < 1 or n & (n - 1):
            raise SparkRuntimeError(f"the number of key ranges must be a power of two, got {n}")
        if self.partitions < 1 or any(not 0 <= p < self.partitions for p in self.owner):
            raise SparkRuntimeError(f"a range's partition is outside 0..{self.partitions - 1}")

    @classmethod
    def even(cls, partitions: int, ranges: int = RANGES) -> KeyRanges:
        """Contiguous blocks of ranges of (nearly) equal size, partition 0 first."""
        if partitions < 1:
            raise SparkRuntimeError(f"partitions must be a positive integer, got {partitions!r}")
        return cls(tuple(r * partitions // ranges for r in range(ranges)), partitions)

    @property
    def ranges(self) -> int:
        return len(self.owner)

    def range_of(self, key: str) -> int:
        """The range of a key: the top bits of its stable hash."""
        return stable_hash64(key, SALT) >> (64 - (self.ranges.bit_length() - 1))

    def partition_of(self, key: str) -> int:
        return self.owner[self.range_of(key)]

    def ranges_of(self, partition: int) -> list[int]:
        return [r for r, p in enumerate(self.owner) if p == partition]

    def moved(self, moves: Iterable[RangeMove]) -> KeyRanges:
        owner = list(self.owner)
        for m in moves:
            if owner[m.range] != m.src:
                raise SparkRuntimeError(f"range {m.range} is in partition {owner[m.range]}, "
                                        f"not {m.src}")
            owner[m.range] = m.dst
        return KeyRanges(tuple(owner), self.partitions)

    def resplit(self, partitions: int) -> tuple[KeyRanges, list[RangeMove]]:
        """The same ranges over ``partitions``, as even as counts go, moving the fewest ranges.

        A range stays where it is while its partition survives and is under its quota; the
        others fill the partitions below quota, lowest range first. Quotas are ``R // M``, plus
        one for the ``R % M`` partitions that keep the most ranges (so those keep them).
        """
        if partitions < 1:
            raise SparkRuntimeError(f"partitions must be a positive integer, got {partitions!r}")
        r, m = self.ranges, partitions
        have = [self.owner.count(p) if p < self.partitions else 0 for p in range(m)]
        extra = set(sorted(range(m), key=lambda p: (-have[p], p))[: r % m])
        quota = [r // m + (p in extra) for p in range(m)]
        owner: list[int | None] = [None] * r
        kept = [0] * m
        for i, p in enumerate(self.owner):
            if p < m and kept[p] < quota[p]:
                owner[i] = p
                kept[p] += 1
        free = iter(p for p in range(m) for _ in range(quota[p] - kept[p]))
        moves: list[RangeMove] = []
        new: list[int] = []
        for i, kept_at in enumerate(owner):
            if kept_at is None:
                kept_at = next(free)
                moves.append(RangeMove(i, self.owner[i], kept_at))
            new.append(kept_at)
        return KeyRanges(tuple(new), m), moves
