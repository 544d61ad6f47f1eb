"""checkpointfs.polling: the one waiting helper, driven by a clock the test moves (no real sleeping)."""

from __future__ import annotations

import pytest

from checkpointfs.polling import poll, poll_until


class SteppedClock:
    """A clock that moves only when ``sleep`` is called, recording the pauses."""

    def __init__(self) -> None:
        self.now = 100.0
        self.pauses: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def test_returns_the_first_value_and_backs_off() -> None:
    clock = SteppedClock()
    answers = iter([None, None, None, "ready"])
    assert poll(lambda: next(answers), 10, clock=clock, sleep=clock.sleep, first_delay_s=0.1,
                max_delay_s=0.25) == "ready"
    assert clock.pauses == [0.1, 0.2, 0.25]


def test_gives_up_at_the_deadline_without_sleeping_past_it() -> None:
    clock = SteppedClock()
    calls: list[float] = []

    def never() -> None:
        calls.append(clock.now)

    assert poll_until(never, 101.0, clock=clock, sleep=clock.sleep, first_delay_s=0.4, max_delay_s=0.4) is None
    assert clock.now == pytest.approx(101.0)
    assert calls[0] == 100.0 and calls[-1] == pytest.approx(101.0)  # checked once more at the deadline


def test_checks_once_even_when_the_deadline_has_passed() -> None:
    clock = SteppedClock()
    assert poll_until(lambda: 7, 50.0, clock=clock, sleep=clock.sleep) == 7
    assert poll_until(lambda: None, 50.0, clock=clock, sleep=clock.sleep) is None
    assert clock.pauses == []


def test_an_error_of_the_check_propagates_at_once() -> None:
    clock = SteppedClock()

    def broken() -> None:
        raise RuntimeError("store unreachable")

    with pytest.raises(RuntimeError, match="unreachable"):
        poll(broken, 10, clock=clock, sleep=clock.sleep)
    assert clock.pauses == []
