"""A registry version made ready to serve: its checkpoint at ``<cache root>/<name>/<version>`` with the harness's chat
template, so an OpenAI-compatible server renders a request's messages into exactly the text the in-process policy
renders (``harness_service.context.messages.render_messages`` + the assistant prefix), and a verbatim response
template, so ``transformers serve`` answers with the text the model wrote (by default it parses a Qwen3 checkpoint's
output with Qwen's template: ``<think>`` moved out of the content, tool calls lifted, whitespace stripped)."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness_service.context.messages import ASSISTANT_START, ChatMessage, render_messages
from infra.registry.port import Registry, VersionRef
from learner.model.tokenizer import CHAT_TEMPLATE
from learner.model.window import PromptWindow
from learner.registry import checkpoint_tar
from producers.rollout.versions import artifact_path

TEMPLATE_FILE = "chat_template.jinja"
VERBATIM_RESPONSE = {
    "defaults": {"role": "assistant"},
    "start_anchor": ASSISTANT_START,
    "fields": {"content": {"close": "<|im_end|>", "content": "text", "content_args": {"strip": False}}},
}
"""``transformers serve``'s response template: the whole completion (up to ``<|im_end|>``) is the content, unstripped;
the harness parses actions from it exactly as from the in-process policy's text."""
SAMPLE = (
    ChatMessage(role="system", content="You are a planner."),
    ChatMessage(role="user", content="Add a note 'buy milk'."),
    ChatMessage(role="assistant", content='<tool_call>\n{"name": "notes.add", "arguments": {}}\n</tool_call>'),
    ChatMessage(role="user", content="ok"),
)


class TemplateMismatch(RuntimeError):
    """The checkpoint's tokenizer renders chat messages differently from the harness: serving would drift."""


@dataclass(frozen=True)
class ServableVersion:
    """A downloaded version: ``label`` (``planner/4``) is both its registry name and the model name it is served as."""

    ref: VersionRef
    folder: Path
    checkpoint_sha256: str

    @property
    def label(self) -> str:
        return f"{self.ref.name}/{self.ref.version}"


def prepare_version(registry: Registry, ref: VersionRef, cache_root: Path) -> ServableVersion:
    """Download ``ref``'s checkpoint to ``cache_root/<name>/<version>`` (once; a crash leaves no half copy), give it
    the harness's chat template and check that it renders what the harness renders. A version whose prompt window
    uses the tokenizer's own chat template (trained from ``--base-model``) is served with that template; one that
    writes value slots (``learner.model.value_slots``) is refused: a server cannot write its slots back."""
    folder = cache_root / ref.name / ref.version
    if not (folder / "config.json").is_file():
        _download(registry, ref, folder)
    sha256 = ref.tags.get("checkpoint_sha256") or hashlib.sha256(checkpoint_tar(folder)).hexdigest()
    window = PromptWindow.load(folder)
    if window.value_slots:
        raise TemplateMismatch(
            f"{ref.name}/{ref.version} writes copied values as slot tokens (value_slots) that only the in-process "
            "planner writes back (flywheel run/eval, local: policies); an OpenAI-compatible server would return them "
            'as empty values. Train a version to serve with --config {"learner": {"value_slots": false}}.'
        )
    if not window.chat_template:  # a --base-model version keeps (and was trained with) its own
        apply_chat_template(folder)
    return ServableVersion(ref, folder, sha256)


def _download(registry: Registry, ref: VersionRef, folder: Path) -> None:
    if ref.run_id is None:
        raise LookupError(f"{ref.name}/{ref.version} has no run to download its checkpoint from")
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{ref.version}-", dir=folder.parent))
    try:
        registry.download_artifacts(ref.run_id, artifact_path(ref), partial)
        found = sorted(p.parent for p in partial.rglob("config.json"))
        if not found:
            raise LookupError(f"{ref.name}/{ref.version}: no checkpoint (config.json) in its artifacts")
        shutil.rmtree(folder, ignore_errors=True)
        found[0].rename(folder)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def apply_chat_template(folder: Path) -> None:
    """Make the harness's ChatML the checkpoint's chat template (a user's checkpoint may bring its own, which the
    in-process policy never uses), then check the tokenizer renders :data:`SAMPLE` as the harness does."""
    (folder / TEMPLATE_FILE).write_text(CHAT_TEMPLATE)
    config_file = folder / "tokenizer_config.json"
    config = json.loads(config_file.read_text()) if config_file.is_file() else {}
    config.pop("chat_template", None)  # an inline template would compete with the file's
    config["response_template"] = VERBATIM_RESPONSE
    config_file.write_text(json.dumps(config, indent=2))
    check_chat_template(folder)


def check_chat_template(folder: Path) -> None:
    """Raise :class:`TemplateMismatch` unless the tokenizer in ``folder`` renders chat exactly as the harness and
    returns a reply verbatim."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    messages = [m.model_dump() for m in SAMPLE]
    rendered = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    expected = render_messages(SAMPLE) + ASSISTANT_START
    if rendered != expected:
        raise TemplateMismatch(f"{folder}: its chat template renders {rendered!r}, the harness {expected!r}")
    reply = SAMPLE[2].content + "\n"
    parsed = tokenizer.parse_response(reply + "<|im_end|>", prefix=expected) if tokenizer.response_template else {}
    if parsed.get("content") != reply:
        raise TemplateMismatch(f"{folder}: its response template turns {reply!r} into {parsed!r}, not the text itself")
