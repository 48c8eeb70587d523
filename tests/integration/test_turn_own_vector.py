"""A conversation turn's own vector (migration 0011) on the real database and model: a turn embedded
with the turn before it as context also keeps the vector of its own text, and search reads the
better cosine of the two, so a self-contained turn after a long answer about something else is
found by what it says."""

from __future__ import annotations

from typing import Any

import numpy as np

from memory_engine.bootstrap import Container
from tests.support.api_client import ApiClient

MEMORIES = "/v1/memories"
ENTRIES = "/v1/memory-entries"
#: a long answer about something else (longer than the model's window leaves beside the message, so the
#: message's vector reads only its end), then a short message that stands on its own
ANSWER = (
    "To scale the deployment automatically, add a HorizontalPodAutoscaler that targets the web deployment, with "
    "minReplicas 2 and maxReplicas 10, scaling on average CPU utilization of 70 percent. Make sure the metrics "
    "server is installed in the cluster, otherwise the autoscaler reports unknown targets. Set CPU requests on "
    "every container, because utilization is computed against requests, and consider a stabilization window "
    "for scale-down so replicas are not removed during short traffic dips. You can watch the autoscaler with "
    "kubectl get hpa --watch while running a load test against the service. If the pods take long to become "
    "ready, raise the initial readiness delay so new replicas do not receive traffic too early, and give the "
    "cluster autoscaler room to add nodes when the pending pods cannot be scheduled on the current ones. Finally, "
    "keep an eye on memory limits: a pod that is killed for exceeding its limit restarts and looks idle to the "
    "autoscaler for a while, so size the limits from what the service uses under the load test."
)
MESSAGE = "I've never synchronized my server clock with an NTP service, so the token timestamps drift."
QUESTION = "Have I ever synchronized my server time with an NTP service?"
OTHERS = ["Let's rename the staging database before Friday.", "The logo should use the darker shade of blue.",
          "Remember to rotate the on-call schedule next month.", "The CSV export drops the header row sometimes."]


def cosine(a: Any, b: Any) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def vector_only(api: ApiClient, memory_id: str, query: str) -> list[dict[str, Any]]:
    response = api.post("/v1/knowledge/search", {"query": query, "memory_ids": [memory_id], "min_score": 0,
                                                 "preset": "vector_only"})
    assert response.status == 200, response.json
    return list(response.json["results"])


def stored_vectors(container: Container, entry_id: str) -> tuple[list[float] | None, list[float] | None]:
    with container.database.connection() as conn:
        row = conn.execute("SELECT embedding::text AS e, own_embedding::text AS o FROM memory_entries WHERE id = %s",
                           (entry_id,)).fetchone()
    assert row is not None
    return (None if row["e"] is None else [float(x) for x in row["e"].strip("[]").split(",")],
            None if row["o"] is None else [float(x) for x in row["o"].strip("[]").split(",")])


def conversation(api: ApiClient, name: str, *, batch: bool) -> tuple[str, list[str]]:
    """A memory holding other users' notes, then the answer and the message as one conversation's turns."""
    memory_id = str(api.post(MEMORIES, {"name": name}).json["id"])
    items = [{"memory_id": memory_id, "content": text, "subject": "user"} for text in OTHERS] + [
        {"memory_id": memory_id, "content": ANSWER, "subject": "assistant", "source_conversation_id": "s1"},
        {"memory_id": memory_id, "content": MESSAGE, "subject": "user", "source_conversation_id": "s1"},
    ]
    if batch:
        written = api.post(f"{ENTRIES}/batch", {"entries": items})
        assert written.status in (200, 201, 207), written.json
        ids = [str(r["entry"]["id"]) for r in written.json["results"]]
    else:
        ids = []
        for item in items:
            response = api.post(ENTRIES, item)
            assert response.status == 201, response.json
            ids.append(str(response.json["id"]))
    return memory_id, ids


def test_a_turn_after_a_long_answer_is_found_by_what_it_says(api: ApiClient, container: Container) -> None:
    for batch in (False, True):
        # Given a short message written as a turn right after a long answer about autoscaling
        memory_id, ids = conversation(api, f"own vector batch={batch}", batch=batch)
        message = ids[-1]
        with_context, own = stored_vectors(container, message)
        # Then it keeps two vectors: with the end of the answer before it, and of its own text alone
        assert with_context is not None and own is not None
        expected_own = container.embedder.embed_documents([MESSAGE])[0]
        assert cosine(own, expected_own) > 0.999
        # while the other notes (no conversation) and the conversation's first turn (nothing before it) keep one
        assert all(stored_vectors(container, entry_id)[1] is None for entry_id in ids[:-1])
        # When a question about what the message says is searched on vectors alone
        results = vector_only(api, memory_id, QUESTION)
        # Then the message ranks first, by the cosine of its own vector, the better of its two
        query = container.embedder.embed_query(QUESTION)
        assert results[0]["id"] == message
        assert results[0]["similarity_score"] == round(max(cosine(own, query), cosine(with_context, query)), 6)
        assert cosine(own, query) > cosine(with_context, query) + 0.05


def test_rewriting_a_turn_leaves_it_one_vector_of_its_new_text(api: ApiClient, container: Container) -> None:
    # Given the message written as a turn (two vectors)
    memory_id, ids = conversation(api, "own vector rewritten", batch=False)
    message = ids[-1]
    # When its content is replaced
    updated = api.put(f"{ENTRIES}/{message}", {"content": "My server clock is synchronized with pool.ntp.org now."})
    assert updated.status == 200, updated.json
    # Then it is embedded again from its own text alone and keeps no second vector of the old one
    embedding, own = stored_vectors(container, message)
    assert own is None and embedding is not None
    results = vector_only(api, memory_id, QUESTION)
    by_id = {r["id"]: r for r in results}
    assert by_id[message]["similarity_score"] == round(cosine(embedding, container.embedder.embed_query(QUESTION)), 6)


def test_a_short_turn_after_a_long_answer_is_recorded_not_skipped_as_a_duplicate_of_it(api: ApiClient) -> None:
    # Given an answer that fits whole in the window beside a short turn, so each short turn after it
    # is embedded mostly as the answer's text (cosine 0.94-0.99 to the answer's own vector)
    answer = ANSWER[:700]
    follow_ups = ["Always answer with kubectl commands when I ask about scaling.", "ok thanks, and the metrics server?"]
    for batch in (False, True):
        memory_id = str(api.post(MEMORIES, {"name": f"turns after an answer batch={batch}"}).json["id"])
        items = [{"memory_id": memory_id, "content": answer, "subject": "assistant", "source_conversation_id": "s1"},
                 *({"memory_id": memory_id, "content": text, "subject": "user", "source_conversation_id": "s1"}
                   for text in follow_ups)]
        # When a plain client writes them as turns, at the default duplicate threshold
        if batch:
            written = api.post(f"{ENTRIES}/batch", {"entries": items})
            assert written.status in (200, 201), written.json
            actions = [r["action"] for r in written.json["results"]]
            ids = [str(r["entry"]["id"]) for r in written.json["results"]]
        else:
            responses = [api.post(ENTRIES, item) for item in items]
            actions = [r.json["action"] for r in responses]
            ids = [str(r.json["id"]) for r in responses]
        # Then every turn is recorded (none answered as the answer, "skipped")
        assert actions == ["created"] * 3, actions
        listed = api.get(ENTRIES, params={"memory_id": memory_id, "limit": 10}).json["data"]
        assert sorted(e["content"] for e in listed) == sorted([answer, *follow_ups])
        # and a client's retry of the last turn is still not written twice
        retried = api.post(ENTRIES, items[-1])
        assert retried.status == 200 and retried.json["action"] == "skipped" and retried.json["id"] == ids[-1]
