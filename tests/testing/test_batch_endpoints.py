"""Specification of the simulated vendor's provider batches: OpenAI's Files and Batch API
and Anthropic's Message Batches, on ``cross_judge.testing.VendorServer``.

Batches end after a counted number of status polls (or ``complete_batches()``), never
after a time, so no outcome here depends on the machine's speed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from cross_judge.testing import Persona, Reply, VendorServer

CLIENT_OPTIONS: dict[str, Any] = {"timeout": 30.0, "trust_env": False, "verify": False}
KEY = "sk-test"
AUTH = {"Authorization": f"Bearer {KEY}"}
ANTHROPIC_AUTH = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
ITEMS = ("a first item", "a second item", "a third item")


@contextmanager
def serving(*personas: Persona, **kwargs: Any) -> Iterator[tuple[VendorServer, httpx.Client]]:
    """A server (api key ``KEY``) and a client on its origin."""
    kwargs.setdefault("api_key", KEY)
    with (
        VendorServer(personas, **kwargs) as server,
        httpx.Client(base_url=server.anthropic_url, **CLIENT_OPTIONS) as client,
    ):
        yield server, client


def chat_body(model: str, text: str) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}]}


def messages_body(model: str, text: str) -> dict[str, Any]:
    return {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": text}]}


def jsonl(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def openai_line(custom_id: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}


def upload(client: httpx.Client, content: bytes, purpose: str = "batch") -> httpx.Response:
    files = {"file": ("input.jsonl", content, "application/jsonl")}
    return client.post("/v1/files", data={"purpose": purpose}, files=files, headers=AUTH)


def create_openai(client: httpx.Client, lines: list[dict[str, Any]]) -> dict[str, Any]:
    file = upload(client, jsonl(lines))
    assert file.status_code == 200, file.text
    body = {
        "input_file_id": file.json()["id"],
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
    }
    response = client.post("/v1/batches", json=body, headers=AUTH)
    assert response.status_code == 200, response.text
    batch: dict[str, Any] = response.json()
    return batch


def poll_openai(client: httpx.Client, batch_id: str) -> dict[str, Any]:
    response = client.get(f"/v1/batches/{batch_id}", headers=AUTH)
    assert response.status_code == 200, response.text
    batch: dict[str, Any] = response.json()
    return batch


def file_lines(client: httpx.Client, file_id: str | None) -> dict[str, dict[str, Any]]:
    """The lines of an output or error file by custom_id (empty for no file)."""
    if file_id is None:
        return {}
    response = client.get(f"/v1/files/{file_id}/content", headers=AUTH)
    assert response.status_code == 200, response.text
    lines = [json.loads(line) for line in response.text.splitlines()]
    return {line["custom_id"]: line for line in lines}


def create_anthropic(client: httpx.Client, requests: list[dict[str, Any]]) -> httpx.Response:
    return client.post("/v1/messages/batches", json={"requests": requests}, headers=ANTHROPIC_AUTH)


def poll_anthropic(client: httpx.Client, batch_id: str) -> dict[str, Any]:
    response = client.get(f"/v1/messages/batches/{batch_id}", headers=ANTHROPIC_AUTH)
    assert response.status_code == 200, response.text
    batch: dict[str, Any] = response.json()
    return batch


def anthropic_results(client: httpx.Client, batch_id: str) -> dict[str, dict[str, Any]]:
    response = client.get(f"/v1/messages/batches/{batch_id}/results", headers=ANTHROPIC_AUTH)
    assert response.status_code == 200, response.text
    lines = [json.loads(line) for line in response.text.splitlines()]
    return {line["custom_id"]: line["result"] for line in lines}


def strip_ids(body: dict[str, Any]) -> dict[str, Any]:
    """A response body without the fields that differ between two answers (id, time)."""
    return {k: v for k, v in body.items() if k not in ("id", "created")}


# -- OpenAI ---------------------------------------------------------------------------------


def test_openai_batch_answers_equal_live_answers_for_the_same_bodies() -> None:
    with serving(Persona("critic", accuracy=0.6)) as (server, client):
        lines = [openai_line(f"r{i}", chat_body("critic", t)) for i, t in enumerate(ITEMS)]
        batch = create_openai(client, lines)
        server.complete_batches()
        done = poll_openai(client, batch["id"])
        output = file_lines(client, done["output_file_id"])
        live = [
            client.post("/v1/chat/completions", json=line["body"], headers=AUTH).json()
            for line in lines
        ]
    assert done["status"] == "completed"
    assert done["error_file_id"] is None
    assert done["request_counts"] == {"total": 3, "completed": 3, "failed": 0}
    for line, live_body in zip(lines, live, strict=True):
        result = output[line["custom_id"]]
        assert result["error"] is None
        assert result["id"].startswith("batch_req_")
        assert result["response"]["status_code"] == 200
        assert strip_ids(result["response"]["body"]) == strip_ids(live_body)


def test_openai_upload_returns_a_file_object() -> None:
    with serving(Persona("critic")) as (_, client):
        content = jsonl([openai_line("r0", chat_body("critic", "x"))])
        file = upload(client, content).json()
    assert file["id"].startswith("file-")
    assert file["object"] == "file"
    assert file["bytes"] == len(content)
    assert file["filename"] == "input.jsonl"
    assert file["purpose"] == "batch"
    assert isinstance(file["created_at"], int)


def test_an_upload_larger_than_aiohttps_default_body_cap_is_accepted() -> None:
    lines = [openai_line(f"r{n}", chat_body("m", "x" * 1000)) for n in range(3000)]
    content = jsonl(lines)
    assert len(content) > 3 * 1024 * 1024
    with serving() as (_, client):
        response = upload(client, content)
    assert response.status_code == 200, response.text
    assert response.json()["bytes"] == len(content)


def test_openai_upload_refuses_a_purpose_other_than_batch() -> None:
    with serving() as (_, client):
        response = upload(client, b"{}\n", purpose="fine-tune")
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_openai_batch_is_validating_then_in_progress_then_completed_on_the_nth_poll() -> None:
    with serving(Persona("critic"), batch_polls=3) as (_, client):
        batch = create_openai(client, [openai_line("r0", chat_body("critic", "x"))])
        statuses = [poll_openai(client, batch["id"])["status"] for _ in range(4)]
    assert batch["status"] == "validating"
    assert batch["object"] == "batch"
    assert batch["output_file_id"] is None
    assert statuses == ["in_progress", "in_progress", "completed", "completed"]


def test_batch_polls_zero_ends_the_batch_in_the_create_response() -> None:
    with serving(Persona("critic"), batch_polls=0) as (_, client):
        batch = create_openai(client, [openai_line("r0", chat_body("critic", "x"))])
    assert batch["status"] == "completed"
    assert batch["output_file_id"] is not None


def test_complete_batches_ends_every_open_batch_and_returns_their_ids() -> None:
    with serving(Persona("critic"), batch_polls=100) as (server, client):
        first = create_openai(client, [openai_line("r0", chat_body("critic", "x"))])
        second = create_anthropic(
            client, [{"custom_id": "r0", "params": messages_body("critic", "x")}]
        )
        ended = server.complete_batches()
        again = server.complete_batches()
        statuses = (
            poll_openai(client, first["id"])["status"],
            poll_anthropic(client, second.json()["id"])["processing_status"],
        )
    assert ended == [first["id"], second.json()["id"]]
    assert again == []
    assert statuses == ("completed", "ended")


def test_openai_failed_request_goes_to_the_error_file_with_its_status() -> None:
    with serving(Persona("critic")) as (server, client):
        server.fail_batch_request("r1", status=500)
        lines = [openai_line(f"r{i}", chat_body("critic", t)) for i, t in enumerate(ITEMS)]
        batch = create_openai(client, lines)
        done = poll_openai(client, batch["id"])
        errors = file_lines(client, done["error_file_id"])
        output = file_lines(client, done["output_file_id"])
    assert done["status"] == "completed"
    assert done["request_counts"] == {"total": 3, "completed": 2, "failed": 1}
    assert sorted(output) == ["r0", "r2"]
    failed = errors["r1"]
    assert failed["error"] is None
    assert failed["response"]["status_code"] == 500
    assert failed["response"]["body"]["error"]["type"] == "server_error"


def test_openai_request_for_an_unknown_model_fails_with_the_live_404() -> None:
    with serving(Persona("critic")) as (_, client):
        batch = create_openai(client, [openai_line("r0", chat_body("nobody", "x"))])
        done = poll_openai(client, batch["id"])
        errors = file_lines(client, done["error_file_id"])
    assert done["output_file_id"] is None
    assert errors["r0"]["response"]["status_code"] == 404
    assert errors["r0"]["response"]["body"]["error"]["code"] == "model_not_found"


def test_openai_expired_request_makes_the_batch_expired_with_batch_expired_errors() -> None:
    with serving(Persona("critic")) as (server, client):
        server.expire_batch_request("r0")
        lines = [openai_line(f"r{i}", chat_body("critic", t)) for i, t in enumerate(ITEMS)]
        batch = create_openai(client, lines)
        done = poll_openai(client, batch["id"])
        errors = file_lines(client, done["error_file_id"])
        output = file_lines(client, done["output_file_id"])
    assert done["status"] == "expired"
    assert done["expired_at"] is not None
    assert sorted(output) == ["r1", "r2"]
    assert errors["r0"]["response"] is None
    assert errors["r0"]["error"]["code"] == "batch_expired"


def test_expire_batch_expires_every_request_of_an_open_batch() -> None:
    with serving(Persona("critic"), batch_polls=5) as (server, client):
        lines = [openai_line(f"r{i}", chat_body("critic", t)) for i, t in enumerate(ITEMS)]
        batch = create_openai(client, lines)
        server.expire_batch(batch["id"])
        done = poll_openai(client, batch["id"])
        errors = file_lines(client, done["error_file_id"])
        with pytest.raises(ValueError, match="already ended"):
            server.expire_batch(batch["id"])
        with pytest.raises(KeyError):
            server.expire_batch("batch_unknown")
    assert done["status"] == "expired"
    assert done["output_file_id"] is None
    assert {e["error"]["code"] for e in errors.values()} == {"batch_expired"}
    assert len(errors) == 3


def test_scripted_batch_failure_is_one_shot() -> None:
    with serving(Persona("critic")) as (server, client):
        server.fail_batch_request("r0")
        line = openai_line("r0", chat_body("critic", "x"))
        first = poll_openai(client, create_openai(client, [line])["id"])
        second = poll_openai(client, create_openai(client, [line])["id"])
    assert first["request_counts"]["failed"] == 1
    assert second["request_counts"] == {"total": 1, "completed": 1, "failed": 0}


def test_batch_failure_and_expiry_rates_are_seeded_per_batch_and_custom_id() -> None:
    def outcome() -> dict[str, str]:
        options = {"batch_failure_rate": 0.3, "batch_expiry_rate": 0.3}
        with serving(Persona("critic"), **options) as (_, client):
            lines = [openai_line(f"r{i}", chat_body("critic", f"item {i}")) for i in range(60)]
            done = poll_openai(client, create_openai(client, lines)["id"])
            errors = file_lines(client, done["error_file_id"])
        kinds = {}
        for custom_id, line in errors.items():
            kinds[custom_id] = line["error"]["code"] if line["error"] else "failed"
        return kinds

    first, second = outcome(), outcome()
    assert first == second
    assert {"batch_expired", "failed"} == set(first.values())
    assert 10 < len(first) < 60


def test_openai_batch_with_a_duplicate_custom_id_fails_validation() -> None:
    with serving(Persona("critic")) as (_, client):
        lines = [openai_line("r0", chat_body("critic", t)) for t in ITEMS[:2]]
        batch = create_openai(client, lines)
        done = poll_openai(client, batch["id"])
    assert done["status"] == "failed"
    assert done["failed_at"] is not None
    assert done["output_file_id"] is None
    assert done["error_file_id"] is None
    error = done["errors"]["data"][0]
    assert (error["code"], error["line"], error["param"]) == ("duplicate_custom_id", 2, "custom_id")


def test_openai_batch_with_two_models_in_one_file_fails_validation() -> None:
    with serving(Persona("a"), Persona("b")) as (_, client):
        lines = [openai_line("r0", chat_body("a", "x")), openai_line("r1", chat_body("b", "x"))]
        done = poll_openai(client, create_openai(client, lines)["id"])
    assert done["status"] == "failed"
    assert [(e["code"], e["line"]) for e in done["errors"]["data"]] == [("model_mismatch", 2)]


def test_openai_batch_with_a_malformed_line_fails_validation() -> None:
    with serving(Persona("critic")) as (_, client):
        content = jsonl([openai_line("r0", chat_body("critic", "x"))]) + b"not json\n"
        file_id = upload(client, content).json()["id"]
        body = {
            "input_file_id": file_id,
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
        }
        batch = client.post("/v1/batches", json=body, headers=AUTH).json()
        done = poll_openai(client, batch["id"])
    assert done["status"] == "failed"
    assert [(e["code"], e["line"]) for e in done["errors"]["data"]] == [("invalid_json_line", 2)]


def test_openai_batch_create_refuses_a_window_other_than_24h() -> None:
    with serving(Persona("critic")) as (_, client):
        file_id = upload(client, jsonl([openai_line("r0", chat_body("critic", "x"))])).json()["id"]
        body = {
            "input_file_id": file_id,
            "endpoint": "/v1/chat/completions",
            "completion_window": "1h",
        }
        response = client.post("/v1/batches", json=body, headers=AUTH)
    assert response.status_code == 400
    assert "completion_window" in response.json()["error"]["message"]


def test_openai_batch_keeps_its_metadata() -> None:
    with serving(Persona("critic")) as (_, client):
        file_id = upload(client, jsonl([openai_line("r0", chat_body("critic", "x"))])).json()["id"]
        body = {
            "input_file_id": file_id,
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
            "metadata": {"job": "review-1"},
        }
        batch = client.post("/v1/batches", json=body, headers=AUTH).json()
    assert batch["metadata"] == {"job": "review-1"}


def test_openai_cancel_makes_the_batch_cancelling_then_cancelled_on_the_next_poll() -> None:
    with serving(Persona("critic"), batch_polls=5) as (_, client):
        lines = [openai_line(f"r{i}", chat_body("critic", t)) for i, t in enumerate(ITEMS)]
        batch = create_openai(client, lines)
        cancelling = client.post(f"/v1/batches/{batch['id']}/cancel", headers=AUTH).json()
        done = poll_openai(client, batch["id"])
        errors = file_lines(client, done["error_file_id"])
        again = client.post(f"/v1/batches/{batch['id']}/cancel", headers=AUTH)
    assert cancelling["status"] == "cancelling"
    assert done["status"] == "cancelled"
    assert {e["error"]["code"] for e in errors.values()} == {"batch_cancelled"}
    assert again.status_code == 400


def test_uploaded_batch_input_cannot_be_downloaded() -> None:
    with serving(Persona("critic")) as (_, client):
        file_id = upload(client, jsonl([openai_line("r0", chat_body("critic", "x"))])).json()["id"]
        response = client.get(f"/v1/files/{file_id}/content", headers=AUTH)
    assert response.status_code == 400


def test_openai_batch_endpoints_are_also_served_without_the_v1_prefix() -> None:
    with serving(Persona("critic"), batch_polls=0) as (_, client):
        files = {"file": ("in.jsonl", jsonl([openai_line("r0", chat_body("critic", "x"))]))}
        file = client.post("/files", data={"purpose": "batch"}, files=files, headers=AUTH)
        body = {
            "input_file_id": file.json()["id"],
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
        }
        batch = client.post("/batches", json=body, headers=AUTH).json()
        output = client.get(f"/files/{batch['output_file_id']}/content", headers=AUTH)
    assert output.status_code == 200
    assert json.loads(output.text)["custom_id"] == "r0"


def test_batch_requests_ignore_scripted_replies_and_fault_rate() -> None:
    with serving(Persona("critic", fault_rate=1.0), batch_polls=0) as (server, client):
        server.always("*", Reply.status(500))
        batch = create_openai(client, [openai_line("r0", chat_body("critic", "x"))])
        stats = server.stats()
    assert batch["request_counts"] == {"total": 1, "completed": 1, "failed": 0}
    assert stats["faults"] == 0


def test_unknown_batch_is_a_404() -> None:
    with serving() as (_, client):
        openai_missing = client.get("/v1/batches/batch_nope", headers=AUTH)
        anthropic_missing = client.get("/v1/messages/batches/msgbatch_nope", headers=ANTHROPIC_AUTH)
    assert openai_missing.status_code == 404
    assert anthropic_missing.status_code == 404
    assert anthropic_missing.json()["error"]["type"] == "not_found_error"


# -- Anthropic ------------------------------------------------------------------------------


def test_anthropic_batch_answers_equal_live_answers_for_the_same_bodies() -> None:
    with serving(Persona("critic", accuracy=0.6)) as (server, client):
        requests = [
            {"custom_id": f"r{i}", "params": messages_body("critic", t)}
            for i, t in enumerate(ITEMS)
        ]
        batch = create_anthropic(client, requests).json()
        server.complete_batches()
        done = poll_anthropic(client, batch["id"])
        results = anthropic_results(client, batch["id"])
        live = [
            client.post("/v1/messages", json=r["params"], headers=ANTHROPIC_AUTH).json()
            for r in requests
        ]
    assert batch["type"] == "message_batch"
    assert batch["id"].startswith("msgbatch_")
    assert done["processing_status"] == "ended"
    assert done["results_url"].endswith(f"/v1/messages/batches/{batch['id']}/results")
    assert done["request_counts"] == {
        "processing": 0,
        "succeeded": 3,
        "errored": 0,
        "canceled": 0,
        "expired": 0,
    }
    for request, live_body in zip(requests, live, strict=True):
        result = results[request["custom_id"]]
        assert result["type"] == "succeeded"
        assert strip_ids(result["message"]) == strip_ids(live_body)


def test_anthropic_batch_is_in_progress_until_the_nth_poll() -> None:
    with serving(Persona("critic"), batch_polls=2) as (_, client):
        requests = [{"custom_id": "r0", "params": messages_body("critic", "x")}]
        batch = create_anthropic(client, requests).json()
        polls = [poll_anthropic(client, batch["id"]) for _ in range(2)]
    assert batch["processing_status"] == "in_progress"
    assert batch["results_url"] is None
    assert batch["request_counts"]["processing"] == 1
    assert [p["processing_status"] for p in polls] == ["in_progress", "ended"]
    assert polls[1]["ended_at"] is not None


def test_anthropic_results_before_the_batch_ends_are_refused() -> None:
    with serving(Persona("critic"), batch_polls=5) as (_, client):
        requests = [{"custom_id": "r0", "params": messages_body("critic", "x")}]
        batch = create_anthropic(client, requests).json()
        response = client.get(f"/v1/messages/batches/{batch['id']}/results", headers=ANTHROPIC_AUTH)
    assert response.status_code == 400


def test_anthropic_failed_expired_and_invalid_requests_have_their_result_types() -> None:
    with serving(Persona("critic")) as (server, client):
        server.fail_batch_request("failed", status=529)
        server.expire_batch_request("expired")
        no_max_tokens = {"model": "critic", "messages": [{"role": "user", "content": "x"}]}
        requests = [
            {"custom_id": "ok", "params": messages_body("critic", "x")},
            {"custom_id": "failed", "params": messages_body("critic", "y")},
            {"custom_id": "expired", "params": messages_body("critic", "z")},
            {"custom_id": "invalid", "params": no_max_tokens},
        ]
        batch = create_anthropic(client, requests).json()
        done = poll_anthropic(client, batch["id"])
        results = anthropic_results(client, batch["id"])
    assert done["processing_status"] == "ended"
    assert done["request_counts"] == {
        "processing": 0,
        "succeeded": 1,
        "errored": 2,
        "canceled": 0,
        "expired": 1,
    }
    assert results["ok"]["type"] == "succeeded"
    assert results["expired"] == {"type": "expired"}
    assert results["failed"]["type"] == "errored"
    assert results["failed"]["error"]["type"] == "error"
    assert results["failed"]["error"]["error"]["type"] == "overloaded_error"
    assert results["invalid"]["error"]["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize("custom_id", ["has space", "", "x" * 65, "slash/id"])
def test_anthropic_batch_refuses_a_custom_id_outside_the_pattern(custom_id: str) -> None:
    with serving(Persona("critic")) as (server, client):
        requests = [{"custom_id": custom_id, "params": messages_body("critic", "x")}]
        response = create_anthropic(client, requests)
        stats = server.stats()
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert stats["batches"]["anthropic"] == 0


def test_anthropic_batch_refuses_a_duplicate_custom_id() -> None:
    with serving(Persona("critic")) as (_, client):
        requests = [{"custom_id": "r0", "params": messages_body("critic", t)} for t in ITEMS[:2]]
        response = create_anthropic(client, requests)
    assert response.status_code == 400
    assert "Duplicate custom_id" in response.json()["error"]["message"]


def test_anthropic_cancel_makes_the_batch_canceling_then_ended_with_canceled_results() -> None:
    with serving(Persona("critic"), batch_polls=5) as (_, client):
        requests = [{"custom_id": "r0", "params": messages_body("critic", "x")}]
        batch = create_anthropic(client, requests).json()
        canceling = client.post(
            f"/v1/messages/batches/{batch['id']}/cancel", headers=ANTHROPIC_AUTH
        ).json()
        done = poll_anthropic(client, batch["id"])
        results = anthropic_results(client, batch["id"])
    assert canceling["processing_status"] == "canceling"
    assert canceling["cancel_initiated_at"] is not None
    assert done["processing_status"] == "ended"
    assert done["request_counts"]["canceled"] == 1
    assert results == {"r0": {"type": "canceled"}}


def test_expire_batch_expires_every_anthropic_request() -> None:
    with serving(Persona("critic"), batch_polls=5) as (server, client):
        requests = [
            {"custom_id": f"r{i}", "params": messages_body("critic", t)}
            for i, t in enumerate(ITEMS)
        ]
        batch = create_anthropic(client, requests).json()
        server.expire_batch(batch["id"])
        results = anthropic_results(client, batch["id"])
    assert set(results) == {"r0", "r1", "r2"}
    assert all(result == {"type": "expired"} for result in results.values())


# -- auth and stats -------------------------------------------------------------------------


def test_batch_endpoints_require_the_api_key() -> None:
    with serving(Persona("critic")) as (_, client):
        no_key = client.post("/v1/batches", json={}, headers={"Authorization": "Bearer wrong"})
        no_file_key = client.post("/v1/files", files={"file": ("a", b"")})
        no_anthropic_key = client.post(
            "/v1/messages/batches", json={"requests": []}, headers={"x-api-key": "wrong"}
        )
    assert no_key.status_code == 401
    assert no_file_key.status_code == 401
    assert no_anthropic_key.status_code == 401
    assert no_anthropic_key.json()["error"]["type"] == "authentication_error"


def test_anthropic_batches_accept_the_bearer_header_too() -> None:
    with serving(Persona("critic")) as (_, client):
        requests = [{"custom_id": "r0", "params": messages_body("critic", "x")}]
        response = client.post("/v1/messages/batches", json={"requests": requests}, headers=AUTH)
    assert response.status_code == 200


def test_stats_count_batches_apart_from_live_requests() -> None:
    with serving(Persona("critic"), batch_polls=2) as (server, client):
        batch = create_openai(
            client, [openai_line(f"r{i}", chat_body("critic", t)) for i, t in enumerate(ITEMS)]
        )
        poll_openai(client, batch["id"])
        requests = [{"custom_id": "r0", "params": messages_body("critic", "x")}]
        create_anthropic(client, requests)
        stats = server.stats()
        server.reset_stats()
        after_reset = server.stats()
    assert stats["requests"] == 0
    assert stats["by_model"] == {}
    assert stats["files_uploaded"] == 1
    assert stats["batches"] == {"openai": 1, "anthropic": 1}
    assert stats["batch_requests"] == {"openai": 3, "anthropic": 1}
    assert stats["batch_polls"] == 1
    assert after_reset["batches"] == {"openai": 0, "anthropic": 0}
    assert after_reset["files_uploaded"] == 0


def test_invalid_batch_options_are_refused() -> None:
    with pytest.raises(ValueError, match="batch_polls"):
        VendorServer(batch_polls=-1)
    with pytest.raises(ValueError, match="batch_failure_rate"):
        VendorServer(batch_failure_rate=1.5)
    with pytest.raises(ValueError, match="at most 1"):
        VendorServer(batch_failure_rate=0.6, batch_expiry_rate=0.6)


# -- official SDKs --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_openai_sdk_round_trips_a_batch() -> None:
    import openai

    lines = [openai_line(f"r{i}", chat_body("critic", t)) for i, t in enumerate(ITEMS)]
    async with VendorServer([Persona("critic")], api_key=KEY, batch_polls=2) as server:
        client = openai.AsyncOpenAI(base_url=server.url, api_key=KEY, max_retries=0, timeout=30.0)
        try:
            file = await client.files.create(file=("in.jsonl", jsonl(lines)), purpose="batch")
            batch = await client.batches.create(
                input_file_id=file.id,
                endpoint="/v1/chat/completions",
                completion_window="24h",
            )
            statuses = [(await client.batches.retrieve(batch.id)).status for _ in range(2)]
            done = await client.batches.retrieve(batch.id)
            assert done.output_file_id is not None
            output = await client.files.content(done.output_file_id)
            live = await client.chat.completions.create(
                model="critic", messages=[{"role": "user", "content": ITEMS[0]}]
            )
        finally:
            await client.close()
    assert batch.status == "validating"
    assert statuses == ["in_progress", "completed"]
    assert done.request_counts is not None
    assert done.request_counts.completed == 3
    by_id = {json.loads(line)["custom_id"]: json.loads(line) for line in output.text.splitlines()}
    body = by_id["r0"]["response"]["body"]
    assert body["choices"][0]["message"]["content"] == live.choices[0].message.content


@pytest.mark.anyio
async def test_the_anthropic_sdk_round_trips_a_message_batch() -> None:
    import anthropic

    async with VendorServer([Persona("critic")], api_key=KEY, batch_polls=1) as server:
        client = anthropic.AsyncAnthropic(
            base_url=server.anthropic_url, api_key=KEY, max_retries=0, timeout=30.0
        )
        try:
            batch = await client.messages.batches.create(
                requests=[
                    {"custom_id": f"r{i}", "params": messages_body("critic", t)}
                    for i, t in enumerate(ITEMS)
                ]
            )
            # results() polls the batch first (its retrieve ends it here), then downloads.
            results = {
                r.custom_id: r.result async for r in await client.messages.batches.results(batch.id)
            }
            done = await client.messages.batches.retrieve(batch.id)
            live = await client.messages.create(**messages_body("critic", ITEMS[0]))
        finally:
            await client.close()
    assert batch.processing_status == "in_progress"
    assert done.processing_status == "ended"
    assert done.request_counts.succeeded == 3
    first = results["r0"]
    assert first.type == "succeeded"
    assert first.message.content == live.content
    assert first.message.usage == live.usage
