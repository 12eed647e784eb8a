"""The footer of the command's views: timing, rate, token counts, usage and finish.

`Stats` collects them as the stream goes (from whichever clock the view is
given: the wall clock live, the recorded stamps on a replay) and `footer()`
says them in one line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..models import TokenCount, Usage

__all__ = ["Clock", "Stats"]

#: Where a view reads the time (seconds; only differences matter).
Clock = Callable[[], float]


@dataclass
class Stats:
    """Timing and counts for the footer.

    Times come from `clock`: the wall clock (`time.monotonic`) for a live
    stream, the recorded `: t=` stamps for a replayed log, so a replay's
    footer shows the timings of the stream it recorded.
    """

    clock: Clock = time.monotonic
    started: float = 0.0
    first_token: float | None = None
    last_token: float | None = None
    ended: float | None = None
    deltas: int = 0
    content: int = 0  # deltas that carry text, reasoning, a refusal or tool-call arguments
    tokens: dict[int, TokenCount] = field(default_factory=dict)  # the latest count per choice
    usage: Usage | None = None
    finish: str | None = None
    finish_raw: str | None = None
    citations: int = 0
    counting: str = ""

    def __post_init__(self) -> None:
        self.started = self.clock()

    def footer(self, interrupted: bool = False) -> str:
        """One line: time to first token, the rate, token counts, provider usage, finish."""
        parts: list[str] = []
        if self.first_token is None:
            parts.append("no tokens yet")
        else:
            parts.append(f"time to first token {self.first_token - self.started:.2f} s")
            parts.append(self.rate())
        counted = self.counted()
        if counted is not None:
            refusal = f", refusal {counted.refusal}" if counted.refusal else ""
            parts.append(
                f"{counted.total} tokens (reasoning {counted.reasoning}, text {counted.text}, "
                f"tool arguments {counted.tool_arguments}{refusal}; {self.counting})"
            )
        else:
            parts.append(f"{self.deltas} deltas ({self.counting})")
        if self.usage is not None:
            u = self.usage
            extra = f", reasoning {u.reasoning_tokens}" if u.reasoning_tokens is not None else ""
            parts.append(
                f"provider usage: prompt {u.prompt_tokens}, completion {u.completion_tokens}"
                f"{extra}, total {u.total_tokens}"
            )
        if self.citations:
            parts.append(f"{self.citations} citation{'s' if self.citations > 1 else ''}")
        if self.finish:
            raw = self.finish_raw
            # The provider's own word, where it is another ("end_turn", "STOP", "completed").
            said = f" ({raw})" if raw and raw != self.finish else ""
            parts.append(f"finish: {self.finish}{said}")
        if interrupted:
            parts.append("interrupted")
        return " · ".join(parts)

    def counted(self) -> TokenCount | None:
        """The local token counts, summed over the choices (None when not counting)."""
        counts = list(self.tokens.values())
        if not counts:
            return None
        if len(counts) == 1:
            return counts[0]
        return TokenCount(
            text=sum(c.text for c in counts),
            reasoning=sum(c.reasoning for c in counts),
            refusal=sum(c.refusal for c in counts),
            tool_arguments=sum(c.tool_arguments for c in counts),
            final=all(c.final for c in counts),
        )

    def rate(self) -> str:
        """Output per second, from the first content delta to the latest one.

        Counted tokens when an encoding counts them (exact for the text so far,
        "estimated" while a running count says it estimates a long tail); else
        the provider's `completion_tokens` once its usage arrived ("provider's
        count"); else content deltas, which are not tokens (one delta may carry
        several), and the label says so.
        """
        first, last = self.first_token, self.last_token
        span = last - first if first is not None and last is not None else 0.0
        counted = self.counted()
        if counted is not None:
            # A running count may estimate a long unbroken tail (`TokenCount.estimated`,
            # where the core has it); the final count is exact.
            estimated = any(getattr(c, "estimated", False) for c in self.tokens.values())
            amount, unit = counted.total, "tokens/s (estimated)" if estimated else "tokens/s"
        elif self.usage is not None:
            amount, unit = self.usage.completion_tokens, "tokens/s (provider's count)"
        else:
            amount, unit = self.content, "deltas/s (not tokens)"
        if span <= 0 or amount <= 0:
            return f"- {unit}"
        return f"{amount / span:.1f} {unit}"
