"""A planner model version as an MLflow pyfunc (models from code): ``mlflow models serve -m models:/planner/N``
answers a chat with the model's next reply, exactly as the harness gets it.

Input: a ``messages`` column, each a JSON list of ``{"role", "content"}`` turns; output: the reply text. The
checkpoint is the model's ``checkpoint`` artifact (weights, tokenizer, prompt window)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mlflow
from mlflow.pyfunc import PythonModel


class PlannerModel(PythonModel):
    def load_context(self, context: Any) -> None:
        from learner.model.policy import PlannerPolicy

        self.policy = PlannerPolicy.from_dir(Path(context.artifacts["checkpoint"]), name="pyfunc")

    def predict(self, context, model_input, params=None):  # noqa: ANN001, ANN201
        # (no type hints: MLflow reads them as an input schema; the model's signature is the schema)
        from harness_service.context.messages import ChatMessage

        chats = model_input["messages"] if hasattr(model_input, "columns") else [m["messages"] for m in model_input]
        return [
            self.policy.generate([ChatMessage.model_validate(turn) for turn in json.loads(chat)]).text for chat in chats
        ]


mlflow.models.set_model(PlannerModel())
