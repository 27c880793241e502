"""The sign-in throttle: wrong keys per client address, sign-ins per tenant (docs/dashboard.md).

A sliding window, not a fixed one: a flood that straddles a window's edge is
counted whole. An attempt refused by the throttle is not counted (its key is
never checked), so the wait it is told is the wait that works.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque

from wopeval.api.ui.sessions import Clock
from wopeval.settings import DashboardSettings


class SlidingWindow:
    """At most `limit` events per key in any `window` seconds; remembers `max_keys` keys,
    forgetting the least recently seen first (memory stays bounded)."""

    def __init__(self, limit: int, window: float, clock: Clock, *, max_keys: int) -> None:
        self._limit = limit
        self._window = window
        self._clock = clock
        self._max_keys = max_keys
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()

    def wait(self, key: str) -> int:
        """Whole seconds until `key` may have another event; 0 when it may now."""
        times = self._current(key)
        if times is None or len(times) < self._limit:
            return 0
        return max(1, math.ceil(times[0] + self._window - self._clock()))

    def note(self, key: str) -> None:
        times = self._current(key)
        if times is None:
            times = self._seen[key] = deque(maxlen=self._limit)
            while len(self._seen) > self._max_keys:
                self._seen.popitem(last=False)
        times.append(self._clock())

    def _current(self, key: str) -> deque[float] | None:
        """`key`'s events still inside the window, marked as seen most recently."""
        times = self._seen.get(key)
        if times is None:
            return None
        self._seen.move_to_end(key)
        start = self._clock() - self._window
        while times and times[0] <= start:
            times.popleft()
        return times


MAX_KEYS = 100_000
"""Client addresses (or tenants) a window remembers at once."""


class SignInThrottle:
    """Wrong keys counted per client address, sign-ins per tenant, in one sliding window."""

    def __init__(self, settings: DashboardSettings, clock: Clock) -> None:
        window = settings.sign_in_window_seconds
        self.failures = SlidingWindow(
            settings.failed_sign_ins_per_address, window, clock, max_keys=MAX_KEYS
        )
        self.sign_ins = SlidingWindow(
            settings.sign_ins_per_tenant, window, clock, max_keys=MAX_KEYS
        )
