"""Two processes naming the same alias at once: the loser of MLflow's insert race moves the alias instead of failing."""

from __future__ import annotations

import pytest
from mlflow.exceptions import MlflowException

from infra.registry.mlflow_registry import MlflowRegistry
from infra.registry.port import RegistryError

pytestmark = pytest.mark.unit
RACE = (
    "(sqlite3.IntegrityError) UNIQUE constraint failed: registered_model_aliases.workspace, "
    "registered_model_aliases.name, registered_model_aliases.alias"
)


@pytest.fixture
def registry(tmp_path):
    reg = MlflowRegistry(f"sqlite:///{tmp_path}/mlflow.db")
    run = reg.start_run("alias-race")
    reg.register_version("m", run, "checkpoint")
    reg.register_version("m", run, "checkpoint")
    return reg


def _failing_first(registry, monkeypatch, message: str) -> list[tuple]:
    real, calls = registry._client.set_registered_model_alias, []

    def racing(name, alias, version):
        calls.append((name, alias, version))
        if len(calls) == 1:
            raise MlflowException(message)
        return real(name, alias, version)

    monkeypatch.setattr(registry._client, "set_registered_model_alias", racing)
    return calls


def test_an_alias_insert_lost_to_a_concurrent_one_is_set_again(registry, monkeypatch) -> None:
    calls = _failing_first(registry, monkeypatch, RACE)
    registry.set_alias("m", "production", "2")
    assert len(calls) == 2 and registry.resolve("m@production").version == "2"


def test_other_refusals_are_still_registry_errors(registry, monkeypatch) -> None:
    calls = _failing_first(registry, monkeypatch, "INVALID_PARAMETER_VALUE: alias name is reserved")
    with pytest.raises(RegistryError, match="reserved"):
        registry.set_alias("m", "production", "2")
    assert len(calls) == 1
