"""Value slots: the tiny planner names a value the harness showed it by a slot token instead of spelling it.

The tiny model chooses the right tool far more often than the right value; most wrong values are a name or a date
that *was* in its window, spelled wrong or replaced by one memorised from the train pools (``bench/step_accuracy.py``).
Spelling a value is many choices, and the first of them is made among look-alike capitals. With value slots, every
candidate value in the user turns (the task, tool results, memory hits) is followed by a slot token ``<|vK|>``
naming it, and an action's string value that equals one is written as that single token: choosing ``<|v0|>``, the
token right after "Berlin" in the prompt, is one choice, and the decoder writes "Berlin" back (``SlotTable.expand``).

Slots are numbered in the order the values first appear in the conversation, so the same part of a task's wording
gets the same slot in every instance of its template ("Book me 1 night(s) in Berlin<|v0|> from
2026-03-06<|v1|>"): the model learns which slot an argument takes and writes the right value for names it never
saw. Measured 2026-12-06 on the main job's seed-0 round-0 dataset (576 demonstrations, 3,185 examples, 1,200 SFT
steps; 349 teacher-forced dev reference steps, 64 dev + 64 test tasks), against no slots (copy bias 7: 121 exact
steps, 48 unparsable, 140 wrong values, dev 0.050, test 0.038): slots, copy bias 0: 205 exact, 13 unparsable, 89
wrong values, dev 0.206, test 0.225 (every category above 0 on both); copy bias 7: 197 exact, dev 0.188, test
0.200. Seed 1's round-0 dataset, slots and bias 0 against no slots and bias 7: 206 vs 123 exact, dev 0.237 vs
0.081, test 0.219 vs 0.069. Slots drawn at random per episode instead (so a slot means nothing by itself and the
model must point at the value by its context): training loss 0.26 vs 0.07, 91 exact steps, most wrong values
another value of the window; 1,200 CPU steps do not teach a two-layer model that pointer.

Candidates: a tool result's JSON string values (``"name":"Umber Spanish Kitchen"``); in the text, quoted phrases,
runs of capitalised words (with and without a sentence's first word: "Call Nora Chen"; without a possessive "'s";
each side of an "and"), dates, times, phone numbers, e-mail addresses and codes ("rivernet-5291"). The same value
always gets the same slot in a conversation; past ``SLOT_COUNT`` values, slots are reused and name their newest
value. Training and decoding go through the same ``PromptWindow`` calls (``prompt_ids`` marks the prompt,
``written`` writes an output's values as slots, ``output_text`` writes them back), so they stay identical; earlier
actions in the prompt are shown as the model wrote them, with slots. A value the model composes holds the names,
dates and times it copies as slots ("Dinner at <|v2|> on <|v3|> at <|v4|>?", "<|v3|>T<|v4|>"); the rest of it, and
a value it computes ("03:00"), stays text. Of the 3,901 string values of the seed-0 round-0 dataset's actions,
2,730 are slots, 217 composed with slots, 954 text (before the composed values and the name rules: 2,643 slots,
1,258 text). On that dataset, 1,200 steps: 210 vs 205 exact dev reference steps, dev 0.294 vs 0.206, test 0.200
vs 0.225; seed 1's: 205 vs 206, dev 0.231 vs 0.237, test 0.263 vs 0.219 (2026-12-06).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from harness_service.context.messages import ASSISTANT_START, USER_START, split_turns

SLOT_COUNT = 48
"""Slot tokens in the vocabulary; past this many distinct values in a conversation, slots are reused, newest wins
(a prompt of the main job's cold-start data marks 16 candidates at the median, 134 at most)."""
SLOT_TOKENS = tuple(f"<|v{i}|>" for i in range(SLOT_COUNT))
_SLOT = re.compile(r"<\|v(\d+)\|>")
_STRING_FIELD = re.compile(r'("((?:[^"\\]|\\.)*)"\s*:\s*)"((?:[^"\\]|\\.)*)"')
"""A JSON field with a string value: group 2 the key, group 3 the value (a tool result's, or an action's)."""
_TEXT_VALUES = (
    re.compile(r"(?<![\w'])'([^'\n]{2,60}?)'(?!\w)"),  # a quoted phrase: 'Best of Velvet Road'
    re.compile(r"\b\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2})?\b"),  # a date, maybe with a time
    re.compile(r"(?<![\d:])\d{1,2}:\d{2}(?![\d:])"),  # a time
    re.compile(r"\+\d[\d-]{6,}\d"),  # a phone number
    re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),  # an e-mail address
    re.compile(r"\b[A-Za-z]+-\d{3,}\b"),  # a code: rivernet-5291
)
_JOINERS = "of|de|the|and|&"
"""The words a run of capitalised words may hold between its names ("Bank of Rye", "Salt & Pepper")."""
_CAPITALISED = re.compile(rf"\b[A-Z][\w&-]*(?:'s)?(?:(?: (?:{_JOINERS}))? [A-Z][\w&-]*(?:'s)?)*")
"""A run of capitalised words (Umber Spanish Kitchen). One opening a sentence or a line is no value by itself."""
_AND = re.compile(r"[A-Z](?:(?! and ).)*")
"""The parts of a run of capitalised words joined by "and"."""
_CONNECTOR = re.compile(rf"(?:(?:{_JOINERS}) )+")
_OPENERS = ("\n", '"', "# ", "- ", ". ", "? ", "! ")
_SYNTAX_KEYS = frozenset({"kind", "name"})
"""An action's own fields (before its ``args``) whose values are a choice among a few names: never slots."""


@dataclass(frozen=True)
class SlotTable:
    """The candidate values of one conversation and the slot each got."""

    slots: dict[str, str]
    """Slot token -> value (the value's text as it stands in the prompt, JSON-escaped where it came from JSON)."""
    marks: tuple[tuple[int, str], ...]
    """(position in the conversation text, slot token) for each candidate, in order: where ``mark`` inserts them."""

    @classmethod
    def of(cls, conversation: str) -> SlotTable:
        """The table of a ChatML conversation (the harness's rendered messages)."""
        spans: list[tuple[int, int]] = []
        position = 0
        for turn in split_turns(conversation):
            if turn.startswith(USER_START):
                spans.extend((position + a, position + b) for a, b in _candidates(turn))
            position += len(turn)
        by_value: dict[str, str] = {}
        slots: dict[str, str] = {}
        marks: list[tuple[int, int, str]] = []
        for start, end in sorted(set(spans)):
            value = conversation[start:end]
            if value not in by_value:
                token = SLOT_TOKENS[len(by_value) % SLOT_COUNT]
                by_value[value] = token
                slots[token] = value  # a reused slot names its newest value
            marks.append((end, -start, by_value[value]))
        marks.sort()  # by position; of two values ending together, the shorter one's slot first
        return cls(slots, tuple((end, token) for end, _, token in marks))

    def mark(self, conversation: str) -> str:
        """``conversation`` with each candidate followed by its slot token, and the string values of earlier actions
        (assistant turns) written as slots, as the model writes them."""
        pieces: list[str] = []
        cursor = 0
        for position, token in self.marks:
            pieces.append(conversation[cursor:position])
            pieces.append(token)
            cursor = position
        pieces.append(conversation[cursor:])
        marked = "".join(pieces)
        return "".join(
            self.delexicalise(turn) if turn.startswith(ASSISTANT_START) else turn for turn in split_turns(marked)
        )

    def delexicalise(self, action: str) -> str:
        """``action`` with every string value that is a candidate (other than a ``kind`` or ``name``) written as its
        slot token, and in a value the model composes, each name, date, time or number that is a candidate
        ("Booked Hotel Saffron Berlin." -> ``"Booked <|v7|>."``)."""
        values = self._values
        args = action.find('"args"')

        def slot(found: re.Match[str]) -> str:
            if found.group(2) in _SYNTAX_KEYS and (args < 0 or found.start() < args):
                return found.group(0)
            value = found.group(3)
            token = values.get(value)
            if token is None and self._names is not None:
                token = self._names.sub(lambda name: values[name.group()], value)
            return found.group(0) if token is None else f'{found.group(1)}"{token}"'

        return _STRING_FIELD.sub(slot, action)

    @cached_property
    def _values(self) -> dict[str, str]:
        return {value: token for token, value in self.slots.items()}

    @cached_property
    def _names(self) -> re.Pattern[str] | None:
        """The candidates that start with a capital, a digit or a plus (no lowercase word such as a status
        "confirmed", which is as easily spelled), longest first, each standing apart from the letters or digits
        around it: "2026-03-10" and "20:00" in "2026-03-10T20:00", but no "Rome" in "Romeo"."""
        names = sorted((v for v in self.slots.values() if v[0].isupper() or v[0].isdigit() or v[0] == "+"), key=len)
        return re.compile("|".join(_apart(name) for name in reversed(names))) if names else None

    def expand(self, output: str) -> str:
        """The model's ``output`` with each slot token replaced by its value (an unknown slot by nothing)."""
        return _SLOT.sub(lambda found: self.slots.get(found.group(0), ""), output)


def _apart(value: str) -> str:
    """A pattern of ``value`` not continuing a run of letters or digits on either side."""
    edge = {True: r"\d", False: r"[^\W\d_]"}  # a digit, or a letter
    return rf"(?<!{edge[value[0].isdigit()]}){re.escape(value)}(?!{edge[value[-1].isdigit()]})"


def _candidates(turn: str) -> list[tuple[int, int]]:
    """Character spans of the candidate values of one user turn."""
    spans = [found.span(3) for found in _STRING_FIELD.finditer(turn)]
    for pattern in _TEXT_VALUES:
        for found in pattern.finditer(turn):
            span = found.span(1) if pattern.groups else found.span()
            if "<|" not in turn[span[0] : span[1]]:
                spans.append(span)
    for found in _CAPITALISED.finditer(turn):
        text, (start, end) = found.group(), found.span()
        if text.endswith("'s"):  # "Lucia Moreau's place": the name without the possessive
            text, end = text[:-2], end - 2
        if not (start == 0 or turn[:start].endswith(_OPENERS)):
            spans.append((start, end))
        elif (start, end) not in spans and " " in text:  # "Call Nora Chen": with and without the first word
            rest = _CONNECTOR.match(text, text.index(" ") + 1)  # "Which of Berlin": Berlin, not "of Berlin"
            spans += [(start, end), (start + (rest.end() if rest else text.index(" ") + 1), end)]
        for part in _AND.finditer(text):  # "Italian and Lebanese": each of them too
            if part.span() != (0, len(text)):
                spans.append((start + part.start(), start + part.end()))
    return [span for span in spans if span[1] - span[0] >= 2]
