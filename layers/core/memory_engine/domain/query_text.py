"""Pure helpers that read a query's text: entity-name candidates, keyword mode, dates named, who asks."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memory_engine.domain.entities import normalize_entity_name
from memory_engine.domain.entries import USER_NAMES

_WORD = re.compile(r"\w+", re.UNICODE)
#: Query syntax a caller writes on purpose: a quoted phrase, ``-word``, ``OR`` in capitals. A lowercase
#: "or" is a word of a question ("did I enrol in courses or training programs?"), as in Lucene's query
#: parser, which reads only capitalized operators: read as ``websearch_to_tsquery`` reads it (case
#: blind), it made "courses or training programs" two ANDed groups that only rows holding every word of
#: one of them could match (53 of BEAM's 554 questions, 20 of SciFact's 809 claims).
_WEBSEARCH_SYNTAX = re.compile(r'"|(^|\s)-\w|\sOR\s')

#: Longest entity name (in words) looked up from the query.
MAX_NAME_WORDS = 6
MAX_CANDIDATES = 2_000


def normalize_name(text: str) -> str:
    """Entity-name normalization shared with the write path (NFKC, lower case, single spaces)."""
    return normalize_entity_name(text)


def name_candidates(query: str, *, max_words: int = MAX_NAME_WORDS) -> list[str]:
    """Every span of the normalized query that starts at a word start and ends at a word end,
    up to ``max_words`` words: exactly the strings an entity name can equal to be "named in the
    query" at word boundaries (so ``art`` is a candidate of "art class" but never of "start").
    """
    text = normalize_name(query)
    words = list(_WORD.finditer(text))
    out: dict[str, None] = {}
    for i, first in enumerate(words):
        for last in words[i : i + max_words]:
            out.setdefault(text[first.start() : last.end()], None)
            if len(out) >= MAX_CANDIDATES:
                return list(out)
    return list(out)


#: The first person singular: the one asking speaks of themselves ("what deadline did I set?", "my
#: schema"). The plural is not in it: "we" and "our" take in the assistant as well.
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself)\b", re.IGNORECASE)


def speaker_names(query: str) -> tuple[str, ...]:
    """Who the query names by a pronoun, as speakers' names: the user's (:data:`USER_NAMES`) when it
    speaks in the first person singular. An agent searches its memory with what its user asks, so
    "I" is the user, whose turns (role ``user``) and facts (subject ``user``) it asks about, as
    "what did Caroline say" asks about Caroline's."""
    return USER_NAMES if _FIRST_PERSON.search(query) else ()


def uses_websearch_syntax(query: str) -> bool:
    """True when the caller wrote ``websearch_to_tsquery`` syntax (quotes, ``-term``, ``OR``)."""
    return bool(_WEBSEARCH_SYNTAX.search(query))


_MONTHS = {
    name: number for number, name in enumerate(
        ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
         "november", "december"), start=1)
}
_MONTH_NAMES = "|".join(_MONTHS)
#: Month names that are also common words: a month only when capitalized or with a day or year.
_ALSO_WORDS = frozenset({"may", "march"})
_DATE = re.compile(
    rf"\b(?:(?P<day1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?)?(?P<month>{_MONTH_NAMES})\b"
    rf"(?:\s+(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?\b)?(?:,?\s*(?P<year>(?:19|20)\d\d)\b)?"
    r"|\b(?P<iso>(?:19|20)\d\d-\d\d-\d\d)\b|\b(?:in|of|during|since)\s+(?P<lone_year>(?:19|20)\d\d)\b(?![-/]\d)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class DateMention:
    """A calendar date or period named in a query ("on 11 December, 2023", "in May 2023", "in
    June", "in 2022"): the parts it fixes; a missing part matches any value."""

    year: int | None = None
    month: int | None = None
    day: int | None = None

    def matches(self, when: datetime | None) -> bool:
        """True when ``when`` falls on this date or in this period, read in UTC (as
        :meth:`period` and the search statement read it)."""
        if when is None:
            return False
        if when.tzinfo is not None:
            when = when.astimezone(UTC)
        return (
            (self.year is None or when.year == self.year)
            and (self.month is None or when.month == self.month)
            and (self.day is None or when.day == self.day)
        )

    def period(self) -> tuple[datetime, datetime] | None:
        """``[start, end)`` in UTC when the year is named (a year, a month of it, a day); None for a
        month or day of any year ("in June"), which only a month/day comparison can find."""
        if self.year is None:
            return None
        if self.month is None:
            return datetime(self.year, 1, 1, tzinfo=UTC), datetime(self.year + 1, 1, 1, tzinfo=UTC)
        if self.day is None:
            year, month = (self.year + 1, 1) if self.month == 12 else (self.year, self.month + 1)
            return datetime(self.year, self.month, 1, tzinfo=UTC), datetime(year, month, 1, tzinfo=UTC)
        try:
            start = datetime(self.year, self.month, self.day, tzinfo=UTC)
        except ValueError:  # "31 June": no such day, nothing falls on it
            return datetime(self.year, self.month, 1, tzinfo=UTC), datetime(self.year, self.month, 1, tzinfo=UTC)
        return start, start + timedelta(days=1)


def date_mentions(query: str) -> list[DateMention]:
    """Explicit dates and periods in ``query`` (English month names, ISO dates, "in 2022"). Only
    what is written: relative phrases ("last week") are not resolved."""
    out: list[DateMention] = []
    for match in _DATE.finditer(query):
        if match["iso"]:
            iso_year, iso_month, iso_day = (int(p) for p in match["iso"].split("-"))
            if 1 <= iso_month <= 12 and 1 <= iso_day <= 31:
                out.append(DateMention(iso_year, iso_month, iso_day))
        elif match["lone_year"]:
            out.append(DateMention(int(match["lone_year"])))
        else:
            bare = not (match["day1"] or match["day2"] or match["year"])
            if bare and match["month"].lower() in _ALSO_WORDS and not match["month"][0].isupper():
                continue  # "may I ask", "march on": a word, not a month
            day_text = match["day1"] or match["day2"]
            day = int(day_text) if day_text and 1 <= int(day_text) <= 31 else None
            out.append(DateMention(int(match["year"]) if match["year"] else None, _MONTHS[match["month"].lower()], day))
    return list(dict.fromkeys(out))


#: A month or day named without a year ("in June", "on 9 June") is looked for in each of this many
#: years up to the current one, and in the next: one index range per year, so the statement stays
#: bounded in any memory (a month/day comparison would read every dated fact of the scope).
YEARLESS_YEARS = 30


def periods(mentions: Sequence[DateMention], *, now: datetime) -> list[tuple[datetime, datetime]]:
    """The UTC ranges ``[start, end)`` that ``mentions`` name, overlapping ones merged, earliest
    first; a year-less mention gives one range per year of the last ``YEARLESS_YEARS`` and the next."""
    spans: list[tuple[datetime, datetime]] = []
    for mention in mentions:
        if mention.year is not None:
            years = [mention]
        else:
            years = [DateMention(year, mention.month, mention.day) for year in range(now.year - YEARLESS_YEARS + 1, now.year + 2)]
        spans.extend(period for m in years if (period := m.period()) is not None and period[0] < period[1])
    merged: list[tuple[datetime, datetime]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
