"""Value slots: candidate values of the prompt get slot tokens, the model writes a copied value as its slot, and the
decoder writes the value back; training and decoding see the same tokens."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pytest
import torch

from harness_service.context.messages import ChatMessage, render_messages
from harness_service.context.worklist import Worklist
from learner.dataset.tokenize import tokenize_example
from learner.model import train_tokenizer
from learner.model.copy_bias import CopyBias
from learner.model.policy import PlannerPolicy
from learner.model.value_slots import LIST_TOKENS, SLOT_COUNT, SLOT_TOKENS, SlotTable
from learner.model.window import END, PromptWindow, slot_ids, turn_corpus
from producers.backends.base import ToolSpec

pytestmark = pytest.mark.unit

SYSTEM = "You operate a user's phone apps through tools. Use Contacts wisely.\n- contacts.search_contacts(query)"
GOAL = "# Task\nPay Nora Chen back the $12 for lunch on 2026-03-04 at 12:30; her number is +1-555-6139."
CALL = '<action>{"kind":"tool_call","name":"contacts.search_contacts","args":{"query":"Nora Chen"}}</action>'
RESULT = 'Observation (step 1):\n{"result":[{"id":"c_14","name":"Nora Chen","phone":"+1-555-6139"}]}'
PAY = (
    '<action>{"kind":"tool_call","name":"payments.send","args":{"amount":12,"contact_id":"c_14","note":"lunch"}}'
    "</action>"
)
WINDOW = PromptWindow(max_prompt_tokens=256, max_new_tokens=48, goal_tokens=96, system_tokens=48, value_slots=True)


def messages(goal: str = GOAL) -> list[ChatMessage]:
    return [
        ChatMessage(role="system", content=SYSTEM),
        ChatMessage(role="user", content=goal),
        ChatMessage(role="assistant", content=CALL),
        ChatMessage(role="user", content=RESULT),
    ]


def conversation(goal: str = GOAL) -> str:
    return render_messages(messages(goal))


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(list(turn_corpus([conversation() + PAY] * 3)), vocab_size=480, extra_special=SLOT_TOKENS)


def test_candidates_of_user_turns_get_one_slot_per_value_and_system_text_gets_none() -> None:
    text = conversation()
    table = SlotTable.of(text)
    values = set(table.slots.values())
    assert {"Nora Chen", "2026-03-04", "12:30", "+1-555-6139", "c_14"} <= values
    assert "Contacts" not in values and "Pay" not in values  # the system turn; a sentence's first word
    marked = table.mark(text)
    slot = next(token for token, value in table.slots.items() if value == "Nora Chen")
    assert marked.count(f"Nora Chen{slot}") == 2  # the task and the tool result: the same value, the same slot
    assert f'"query":"{slot}"' in marked  # the earlier action, as the model wrote it
    assert marked.startswith(text[: text.index("<|im_start|>user")])  # the system turn is untouched


def test_an_action_writes_candidate_values_as_slots_and_keeps_names_kinds_and_numbers() -> None:
    text = conversation()
    table = SlotTable.of(text)
    written = table.delexicalise(PAY)
    contact = next(token for token, value in table.slots.items() if value == "c_14")
    assert written == PAY.replace('"c_14"', f'"{contact}"')  # "lunch" is no candidate, 12 is a number
    named = '<action>{"kind":"tool_call","name":"music.create_playlist","args":{"name":"Nora Chen"}}</action>'
    assert '"name":"music.create_playlist"' in table.delexicalise(named)
    assert '"args":{"name":"<|v' in table.delexicalise(named)  # an argument called "name" is a value
    assert table.expand(written) == PAY
    assert SlotTable.of("").expand('{"query":"<|v5|>"}') == '{"query":""}'  # a slot the prompt has not: nothing


def test_names_are_candidates_without_a_possessive_an_opening_word_or_a_joining_and() -> None:
    goal = (
        "# Task\nWhich of Berlin, Porto will be warmest? Get me a ride to Lucia Moreau's place."
        "\n- My office is in Rome. Compare the open Italian and Lebanese restaurants. The code is rivernet-5291."
    )
    values = set(SlotTable.of(conversation(goal)).slots.values())
    assert {"Berlin", "Porto", "Lucia Moreau", "Italian", "Lebanese", "Rome", "rivernet-5291"} <= values
    assert not {"of Berlin", "Lucia Moreau's", "My"} & values


def test_a_composed_value_writes_the_names_dates_and_times_it_holds_as_slots() -> None:
    goal = "# Task\nInvite Yuki Berg to dinner at Hotel Saffron Berlin on 2026-03-04 at 19:00; Romeo is in Rome."
    table = SlotTable.of(conversation(goal))
    token = {value: token for token, value in table.slots.items()}
    action = (
        '<action>{"kind":"tool_call","name":"calendar.add","args":{"title":"Dinner at Hotel Saffron Berlin",'
        '"start":"2026-03-04T19:00","note":"Romeos and c_14","kind":"Rome"}}</action>'
    )
    written = table.delexicalise(action)
    assert f'"title":"Dinner at {token["Hotel Saffron Berlin"]}"' in written  # the longest name, not "Berlin"
    assert f'"start":"{token["2026-03-04"]}T{token["19:00"]}"' in written  # digits apart from the letter between
    assert '"note":"Romeos and c_14"' in written  # no "Romeo" in a longer word, no lowercase id
    assert f'"kind":"{token["Rome"]}"' in written  # an argument called "kind" is a value
    assert table.expand(written) == action


def test_task_words_are_candidates_with_word_slots_when_asked_and_leave_the_value_slots_alone() -> None:
    goal = "# Task\nText my babysitter that I'm running late; mail ana.lee@mail.test about the 'school plans'."
    text = conversation(goal)
    table = SlotTable.of(text, task_words=True)
    words = {value: token for token, value in table.slots.items() if token.startswith("<|w")}
    # no function word ("that", "about", "the"), nothing inside the e-mail address or the quoted phrase
    assert words == {"babysitter": "<|w0|>", "running": "<|w1|>", "late": "<|w2|>", "mail": "<|w3|>"}
    assert "babysitter<|w0|>" in table.mark(text)
    action = (
        '<action>{"kind":"memory_read","query":"who is my babysitter"}</action>'
        '{"args":{"text":"I\'m running late, sorry!","note":"babysitters","to":"ana.lee@mail.test"}}'
    )
    written = table.delexicalise(action)
    assert '"query":"who is my <|w0|>"' in written
    assert '"text":"I\'m <|w1|> <|w2|>, sorry!"' in written
    assert '"note":"babysitters"' in written  # never inside a longer word
    assert '"to":"<|v' in written  # the e-mail address is a value
    assert table.expand(written) == action
    plain = SlotTable.of(text)
    assert not any(token.startswith("<|w") for token in plain.slots)  # off unless asked
    assert {t: v for t, v in table.slots.items() if t.startswith("<|v")} == plain.slots


def test_the_tasks_numbers_are_word_candidates_and_a_number_field_of_an_action_takes_their_slot() -> None:
    goal = "# Task\nPay Ada Lee $61.67 for the 2 tickets on 2026-03-04 (a 35-minute call, rated 3.5 or more)."
    table = SlotTable.of(conversation(goal), task_words=True)
    words = {value: token for token, value in table.slots.items() if token.startswith("<|w")}
    assert {"61.67", "2", "35", "3.5"} <= set(words)
    assert not {"2026", "03", "04"} & set(words)  # the date is one value
    action = '{"args":{"amount":61.67,"qty":2,"top_k":5,"min_rating":3.50,"note":"61.67 for 2 tickets, not 2.5"}}'
    written = table.delexicalise(action)
    assert f'"amount":{words["61.67"]},"qty":{words["2"]},' in written
    assert '"top_k":5,"min_rating":3.50,' in written  # no number of the task; not as the task wrote it
    assert f'"note":"{words["61.67"]} for {words["2"]} {words["tickets"]}, not 2.5"' in written  # no 2 in 2.5
    assert table.expand(written) == action
    assert SlotTable.of(conversation(goal)).delexicalise(action) == action  # numbers are task words only


def test_slots_follow_the_order_values_first_appear_so_a_templates_wording_keeps_its_slots() -> None:
    names = ("Ada Lee", "Bo Kim", "Cy Moe")
    tables = [SlotTable.of(conversation(GOAL.replace("Nora Chen", name))) for name in names]
    slots_of_the_name = {next(t for t, v in table.slots.items() if v in names) for table in tables}
    assert slots_of_the_name == {SLOT_TOKENS[1]}  # "Pay Ada Lee" is the first candidate, "Ada Lee" the second
    assert SlotTable.of(conversation()) == SlotTable.of(conversation())  # deterministic: train and serve agree


def test_past_the_slot_count_slots_are_reused_and_name_their_newest_value() -> None:
    goal = "# Task\nvisit " + ", ".join(f"Town{k:03d}" for k in range(SLOT_COUNT + 2))
    table = SlotTable.of(conversation(goal))
    assert table.slots[SLOT_TOKENS[0]] == f"Town{SLOT_COUNT:03d}"
    assert table.delexicalise('{"args":{"city":"Town000"}}') == '{"args":{"city":"Town000"}}'  # its slot moved on
    assert table.delexicalise('{"args":{"city":"Town005"}}') == '{"args":{"city":"<|v5|>"}}'


def test_the_worklist_names_its_next_id_and_the_one_before_by_slots_of_their_own() -> None:
    tracks = [{"id": f"trk_{k}", "title": f"Song {k}"} for k in (3, 7, 9)]
    worklist, turns = Worklist(), [ChatMessage(role="user", content=GOAL)]
    worklist.observe(1, tracks)
    for track in ("trk_3", "trk_7"):
        turns.append(ChatMessage(role="user", content=f"Observation:\n{json.dumps(tracks)}\n{worklist.line()}"))
        worklist.use({"track_id": track})
        turns.append(ChatMessage(role="assistant", content=PAY.replace("c_14", track)))
    turns.append(ChatMessage(role="user", content=f"Observation (step 4):\n{{}}\n{worklist.line()}"))
    text = render_messages(turns)
    table = SlotTable.of(text)
    assert (table.slots[LIST_TOKENS[0]], table.slots[LIST_TOKENS[1]]) == ("trk_9", "trk_7")  # next, and before it
    assert "trk_3" not in {table.slots[t] for t in LIST_TOKENS}  # an id used before that gets a value slot
    assert table.delexicalise(PAY.replace("c_14", "trk_9")) == PAY.replace('"c_14"', f'"{LIST_TOKENS[0]}"')
    assert table.mark(text).count(f"trk_9{LIST_TOKENS[0]}") == 3  # the list, every time, and the line
    assert SlotTable.of(conversation()).slots.keys().isdisjoint(LIST_TOKENS)  # no worklist, no list slots


def test_training_and_decoding_round_trip_through_the_same_tokens(tokenizer) -> None:
    text = conversation()
    row = tokenize_example(tokenizer, WINDOW, text, PAY, value_weight=4.0)
    slots = slot_ids(tokenizer)
    assert len(slots) == len(SLOT_TOKENS)
    prompt_length = row["completion_mask"].index(1)
    completion = row["input_ids"][prompt_length:]
    assert sum(token in slots for token in completion) == 1  # c_14, one token
    assert any(token in slots for token in row["input_ids"][:prompt_length])
    assert row["input_ids"][:prompt_length] == WINDOW.prompt_ids(tokenizer, text)
    assert WINDOW.output_text(tokenizer, text, completion[:-1]) == PAY
    weighted = [w for w, token in zip(row["loss_weight"][prompt_length:], completion, strict=True) if token in slots]
    assert weighted == [4.0]  # the slot is the value's token


def test_value_slots_refuse_a_chat_template() -> None:
    with pytest.raises(ValueError, match="set value_slots"):
        dataclasses.replace(WINDOW, value_slots=False, word_slots=True)
    with pytest.raises(ValueError, match="value_slots"):
        dataclasses.replace(WINDOW, goal_tokens=0, system_tokens=0, chat_template=True)


def test_the_copy_bias_favours_the_prompts_slots_where_a_value_begins(tokenizer) -> None:
    prompt = WINDOW.prompt_ids(tokenizer, conversation())
    present = sorted(set(prompt) & set(slot_ids(tokenizer)))
    copy = CopyBias(tokenizer, 7.0).prompt(prompt, present)
    begin = copy.favoured('<action>{"kind":"tool_call","name":"payments.send","args":{"contact_id":"')
    assert set(present) <= set(begin)
    written = copy.favoured('<action>{"kind":"tool_call","name":"payments.send","args":{"contact_id":"<|v3|>')
    assert not set(present) & set(written)  # after a slot, nothing pushes the value on


class _SlotWriter:
    """A network that writes, token by token, the completion it was built with; ``rather`` (position -> token) puts
    another token above the plan's at a position, the plan's then comes second."""

    device = torch.device("cpu")

    def __init__(self, plan: list[int], prompt_length: int, vocab: int, rather: dict[int, int] | None = None) -> None:
        self.plan, self.prompt_length, self.vocab, self.rather = plan, prompt_length, vocab, rather or {}

    def eval(self) -> None:
        return None

    def __call__(self, input_ids, past_key_values=None, use_cache=True):  # noqa: ANN001
        seen = (past_key_values or []) + input_ids[0].tolist()
        position = len(seen) - self.prompt_length
        logits = torch.zeros(1, 1, self.vocab)
        logits[0, -1, self.plan[position]] = 10.0
        if position in self.rather:
            logits[0, -1, self.rather[position]] = 11.0
        return SimpleNamespace(logits=logits, past_key_values=seen)


def test_the_policy_writes_the_slot_back_as_the_value_the_harness_showed(tokenizer) -> None:
    text = conversation()
    plan = WINDOW.completion_ids(tokenizer, WINDOW.written(text, PAY))
    assert plan[-1] == tokenizer.convert_tokens_to_ids(END)
    network = _SlotWriter(plan, len(WINDOW.prompt_ids(tokenizer, text)), len(tokenizer))
    out = PlannerPolicy(network, tokenizer, name="slots", window=WINDOW).generate(messages())
    assert out.text == PAY
    assert out.sampled is not None and list(out.sampled.completion_ids) == plan  # RL trains on the slot tokens


def test_constrained_decoding_reads_a_slot_as_the_value_it_names_and_never_takes_one_that_names_none(
    tokenizer,
) -> None:
    text = conversation()
    pay = ToolSpec(
        name="payments.send",
        description="Send money to a contact.",
        parameters={
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "contact_id": {"type": "string", "pattern": "^c_[0-9]+$"},
                "note": {"type": "string"},
            },
            "required": ["amount", "contact_id", "note"],
            "additionalProperties": False,
        },
    )
    plan = WINDOW.completion_ids(tokenizer, WINDOW.written(text, PAY))
    table = SlotTable.of(text)
    named = set(table.slots)
    nameless = tokenizer.convert_tokens_to_ids(next(t for t in SLOT_TOKENS if t not in named))
    date = tokenizer.convert_tokens_to_ids(next(t for t, v in table.slots.items() if v == "2026-03-04"))
    contact = next(i for i, token in enumerate(plan) if token in slot_ids(tokenizer))
    prompt_length = len(WINDOW.prompt_ids(tokenizer, text))
    constrained = dataclasses.replace(WINDOW, constrained_actions=True)

    def decode(window: PromptWindow, rather: int) -> str:
        network = _SlotWriter(plan, prompt_length, len(tokenizer), {contact: rather})
        policy = PlannerPolicy(network, tokenizer, name="slots", window=window)
        return policy.generate_with_tools(messages(), [pay]).text

    assert decode(WINDOW, nameless) == PAY.replace("c_14", "")  # free: the nameless slot writes nothing
    assert decode(WINDOW, date) == PAY.replace("c_14", "2026-03-04")  # free: a value the schema forbids
    assert decode(constrained, nameless) == PAY  # constrained: the next best token, the contact's slot
    assert decode(constrained, date) == PAY  # the date slot is read as "2026-03-04", which the pattern refuses
