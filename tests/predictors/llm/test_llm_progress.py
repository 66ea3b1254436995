"""Progress of LLM requests when output is not a terminal: plain lines with counts and an ETA."""

from __future__ import annotations

import logging

from hhx.predictors.llm.progress import Progress, duration


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_plain_lines_at_intervals_with_an_eta(capsys, monkeypatch):
    import hhx.predictors.llm.progress as progress

    monkeypatch.setattr(progress, "logging_configured", lambda: False)  # lines go to stderr
    clock = Clock()
    bar = Progress("smollm2_135m", 200, enabled=None, interval_s=20.0, clock=clock)
    for _ in range(40):
        clock.t += 1.0  # one request a second
        bar.update(1)
        bar.note(errors=0, failed=0)
    bar.close()
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == "smollm2_135m: 200 requests to send"
    assert lines[1] == ("smollm2_135m: 20/200 requests (10%) in 20s, 1.00/s, ETA 3m00s; "
                        "errors 0, failed 0")
    assert lines[2].startswith("smollm2_135m: 40/200 requests (20%) in 40s")
    assert lines[-1].startswith("smollm2_135m: 40/200") and len(lines) == 4  # the last at close


def test_lines_go_to_the_log_when_logging_is_set_up(caplog):
    caplog.set_level(logging.INFO, logger="hhx.progress")
    bar = Progress("m", 3, enabled=None)
    bar.update(3)
    bar.close()
    assert "m: 3 requests to send" in caplog.text and "m: 3/3 requests (100%)" in caplog.text


def test_silent_when_disabled(capsys):
    bar = Progress("m", 3, enabled=False)
    bar.update(3)
    bar.close()
    assert capsys.readouterr().err == ""


def test_durations():
    assert [duration(s) for s in (0, 42, 185, 7620)] == ["0s", "42s", "3m05s", "2h07m"]
