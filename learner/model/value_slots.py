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

Task words: most values still spelled out came from the task's own wording in lower case: a product ("kettle"), a
relation in a memory query ("who is my babysitter"), a topic ("invoice paperwork"), a note ("the ski trip"); the
model wrote a memorised one ("lampack", "cousin"). With ``task_words`` (the window's ``word_slots``), the content
words of the task (three letters or more, no function word, outside the other candidates) are candidates too,
named by slots of their own, ``<|wK|>``, numbered apart from the values' so every value keeps its slot: "who is my
<|w0|>", "I'm <|w1|> <|w2|>, sorry!". A task has 16 such words at most in the main job's pools (4 at the median).
So are the task's numbers ("$61.67", "4 night(s)", "rated 3.5"), and an action's number field that equals one is
written as its slot (``"amount":<|w0|>``); a number the task does not hold ("top_k":5) stays a number.
Measured 2026-12-06 (1,200 steps on the main job's round-0 datasets, against value slots alone): words only, seed
0: 231 vs 210 exact dev reference steps (70 vs 88 wrong values), dev 0.344 vs 0.294, test 0.306 vs 0.200; seed 1:
dev 0.294 vs 0.231, test 0.344 vs 0.263. Words and numbers: seed 0, 233 exact steps, dev 0.294, test 0.381 (the
templates that pay an amount or set a duration now solved); seed 1, dev 0.344, test 0.450.

Worklist slots: a list result ("every Amber Fields track", "every receipt") numbers its ids by where they first
stand, so the id a step needs next has another slot in every instance, and a two-layer model does not learn to point
at it (see the random slots above). The harness's worklist line names the next id no call has used
(``CompactContext.worklist``); that id gets the slot ``<|n0|>`` wherever it stands, and the id the line named before
it ``<|n1|>`` (the one the last calls worked on: forward a receipt, then archive it), so "add the next track" is one
token in every instance. Measured 2026-12-07 on the main job's round-0 model (seed 0, whole dev and test splits,
against the goal-ranked tool prior alone): the line with value slots only, dev 0.389 / test 0.372 vs 0.404 / 0.374,
the five list templates 8 of 40 tasks vs 4; with the worklist slots dev 0.411, test 0.459, the list templates 22 of
40 (build_playlist 8 of 8, expense_receipts 6 of 8).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from harness_service.context.messages import ASSISTANT_START, USER_START, split_turns
from harness_service.context.sections import TASK_HEADING
from harness_service.context.worklist import WORKLIST_LINE

SLOT_COUNT = 48
"""Slot tokens in the vocabulary; past this many distinct values in a conversation, slots are reused, newest wins
(a prompt of the main job's cold-start data marks 16 candidates at the median, 134 at most)."""
WORD_COUNT = 24
"""Slot tokens of the task's own words (``SlotTable.of``'s ``task_words``); past this many, reused, newest wins."""
LIST_TOKENS = ("<|n0|>", "<|n1|>")
"""The slots of the worklist's ids (``harness_service.context.worklist``): the next id of the list the episode works
through (named by the newest worklist line), and the one named before it (the id the last calls worked on)."""
SLOT_TOKENS = (*(f"<|v{i}|>" for i in range(SLOT_COUNT)), *(f"<|w{i}|>" for i in range(WORD_COUNT)), *LIST_TOKENS)
"""Every slot token: the values' ``<|vK|>``, the task words' ``<|wK|>``, then the worklist's ``<|nK|>``."""
_VALUE_TOKENS, _WORD_TOKENS = SLOT_TOKENS[:SLOT_COUNT], SLOT_TOKENS[SLOT_COUNT : SLOT_COUNT + WORD_COUNT]
_SLOT = re.compile(r"<\|[vwn](\d+)\|>")
_STRING_FIELD = re.compile(r'("((?:[^"\\]|\\.)*)"\s*:\s*)"((?:[^"\\]|\\.)*)"')
"""A JSON field with a string value: group 2 the key, group 3 the value (a tool result's, or an action's)."""
_NUMBER_FIELD = re.compile(r'("(?:[^"\\]|\\.)*"\s*:\s*)(-?\d+(?:\.\d+)?)(?=\s*[,}\]])')
"""A JSON field with a number value: group 2 the number (an action's amount, nights, rating)."""
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
_TASK = re.compile(re.escape(TASK_HEADING) + r"(.*?)(?:\n\n# |<\|im_end\|>|$)", re.S)
"""The task's wording in its user turn."""
_WORD = re.compile(r"(?<![\w'])[a-z]{3,}(?![\w'])")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?!\.?\d|[^\W\d])")
"""A number in the task's wording: 77.85 in "$77.85", 35 in "35-minute", 4 in "4 night(s)"."""
_FUNCTION_WORDS = frozenset(
    "the and for with from that this then than them they their there these those its any all one who whom whose "
    "how what which when where why was were are been being has have had will would can could should may might "
    "not but nor into onto out off over under about each every some your you our his her him she also just "
    "let get got".split()
)
"""Words of a task that are never word candidates: they carry no value a tool call takes."""
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
    def of(cls, conversation: str, task_words: bool = False) -> SlotTable:
        """The table of a ChatML conversation (the harness's rendered messages); with ``task_words``, the content
        words of its task ("kettle", "babysitter") are candidates too, named by the word slots ``<|wK|>``."""
        spans: list[tuple[int, int]] = []
        words: set[tuple[int, int]] = set()
        position = 0
        for turn in split_turns(conversation):
            if turn.startswith(USER_START):
                found = _candidates(turn)
                spans.extend((position + a, position + b) for a, b in found)
                if task_words and not words:
                    words.update((position + a, position + b) for a, b in _task_words(turn, found))
            position += len(turn)
        listed = _worklist_ids(conversation)
        by_value: dict[str, str] = dict(zip(listed, LIST_TOKENS, strict=False))
        slots: dict[str, str] = dict(zip(LIST_TOKENS, listed, strict=False))
        marks: list[tuple[int, int, str]] = []
        named = {False: 0, True: 0}  # distinct values, distinct words
        for start, end in sorted({*spans, *words}):
            value = conversation[start:end]
            if value not in by_value:
                word = (start, end) in words
                bank = _WORD_TOKENS if word else _VALUE_TOKENS
                token = bank[named[word] % len(bank)]
                named[word] += 1
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
        slot token, in a value the model composes each name, date, time or number that is a candidate ("Booked
        Hotel Saffron Berlin." -> ``"Booked <|v7|>."``), and each number field that is one of the task's numbers."""
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

        def number(found: re.Match[str]) -> str:
            token = values.get(found.group(2))
            return found.group(1) + token if token is not None and token in _WORD_TOKENS else found.group(0)

        return _NUMBER_FIELD.sub(number, _STRING_FIELD.sub(slot, action))

    @cached_property
    def _values(self) -> dict[str, str]:
        return {value: token for token, value in self.slots.items()}

    @cached_property
    def _names(self) -> re.Pattern[str] | None:
        """The candidates that start with a capital, a digit or a plus (no lowercase value such as a status
        "confirmed", which is as easily spelled), and the task's words, longest first, each standing apart from the
        letters or digits around it: "2026-03-10" and "20:00" in "2026-03-10T20:00", but no "Rome" in "Romeo"."""
        names = sorted(
            (v for t, v in self.slots.items() if v[0].isupper() or v[0].isdigit() or v[0] == "+" or t in _WORD_TOKENS),
            key=len,
        )
        return re.compile("|".join(_apart(name) for name in reversed(names))) if names else None

    def expand(self, output: str) -> str:
        """The model's ``output`` with each slot token replaced by its value (an unknown slot by nothing)."""
        return _SLOT.sub(lambda found: self.slots.get(found.group(0), ""), output)


def _worklist_ids(conversation: str) -> list[str]:
    """The id the newest worklist line names, then the newest other id an earlier line named (none, one or both)."""
    named = [found.group(1) for found in WORKLIST_LINE.finditer(conversation)]
    if not named:
        return []
    before = next((value for value in reversed(named) if value != named[-1]), None)
    return [named[-1]] if before is None else [named[-1], before]


def _apart(value: str) -> str:
    """A pattern of ``value`` not continuing a run of letters or digits on either side (nor a number past its
    point: no "2" in "2.5")."""
    before = {True: r"[\d.]", False: r"[^\W\d_]"}  # a digit (or a number's point), or a letter
    after = {True: r"\.?\d", False: r"[^\W\d_]"}
    return rf"(?<!{before[value[0].isdigit()]}){re.escape(value)}(?!{after[value[-1].isdigit()]})"


def _task_words(turn: str, taken: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Character spans of the content words of the task in ``turn`` (none if it holds no task), outside the
    ``taken`` spans of other candidates ('Water plants', an e-mail address)."""
    task = _TASK.search(turn)
    if task is None:
        return []
    start, end = task.span(1)
    spans = sorted(found.span() for pattern in (_WORD, _NUMBER) for found in pattern.finditer(turn, start, end))
    return [(a, b) for a, b in spans if turn[a:b] not in _FUNCTION_WORDS and not any(s < b and a < e for s, e in taken)]


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
