from __future__ import annotations

import numpy as np

from memory_engine.local.adapters.onnx_embedder import OnnxMiniLMEmbedder
from tests.support.api_client import ApiClient


def test_paraphrases_score_clearly_higher_than_unrelated_sentences(embedder: OnnxMiniLMEmbedder) -> None:
    pairs = [
        ("The cat is sleeping on the sofa.", "A cat naps on the couch."),
        ("How do I reset my password?", "I forgot my password and need to change it."),
        ("Alice moved to Berlin last year.", "Last year Alice relocated to Berlin."),
    ]
    unrelated = ["Quarterly tax filings are due in April.", "The recipe needs two cups of flour.",
                 "The football match ended in a draw."]
    for left, right in pairs:
        a, b = embedder.embed_documents([left, right])
        paraphrase = float(np.dot(a, b))
        others = [float(np.dot(a, u)) for u in embedder.embed_documents(unrelated)]
        assert paraphrase > 0.6, (left, paraphrase)
        assert paraphrase - max(others) > 0.4, (left, paraphrase, others)


def test_vectors_are_unit_length_and_deterministic(embedder: OnnxMiniLMEmbedder) -> None:
    first = embedder.embed_documents(["short", "a considerably longer sentence about many things " * 20])
    again = embedder.embed_documents(["short"])
    assert all(abs(float(np.linalg.norm(v)) - 1) < 1e-5 for v in first)
    assert np.allclose(first[0], again[0], atol=1e-5)
    assert embedder.dimensions == 384 and first[0].shape == (384,)


def test_short_texts_share_model_calls_within_the_token_budget(embedder: OnnxMiniLMEmbedder) -> None:
    # Given short facts, a mid-length text and one past the model's 256 tokens
    facts = [f"Person {i} likes item number {i}." for i in range(40)]
    long_text = "a considerably longer sentence about many things " * 60
    texts = [*facts, "A medium sentence that says a little more than the short facts do here.", long_text]
    # When they are planned into model calls
    groups = embedder._groups(texts)
    lengths = [len(ids) for ids in embedder._encode(texts)]
    # Then every text is in exactly one call, no call holds more padded tokens than the budget
    # unless it is one text alone, and the short facts share calls (not one call each)
    assert sorted(i for g in groups for i in g) == list(range(len(texts)))
    for group in groups:
        assert len(group) == 1 or len(group) * max(lengths[i] for i in group) <= embedder.token_budget
    assert len(groups) < len(facts) // 4
    assert [len(texts) - 1] in groups  # the long text is alone
    # and a text embedded with company equals the same text embedded alone
    together = embedder.embed_documents(texts)
    assert np.allclose(together[3], embedder.embed_documents([texts[3]])[0], atol=1e-5)
    assert np.allclose(together[-1], embedder.embed_documents([long_text])[0], atol=1e-5)


def test_embeddings_endpoint_returns_vectors_of_the_deployment_model(api: ApiClient) -> None:
    response = api.post("/v1/embeddings", {"inputs": ["one", "two"]})
    assert response.status == 200
    body = response.json
    assert body["dimensions"] == 384 and [d["index"] for d in body["data"]] == [0, 1]
    assert len(body["data"][0]["embedding"]) == 384


def test_embeddings_over_the_per_request_bound_answer_413_before_any_model_work(api: ApiClient) -> None:
    from memory_engine.domain.requests import MAX_INPUTS, MAX_TOTAL_CHARS

    # Given requests past the documented bound (64 inputs x 32,000 characters took 6 s and 1.5 GB before)
    too_long = {"inputs": ["word " * 6_400] * 64}
    too_many = {"inputs": ["x"] * (MAX_INPUTS + 1)}
    one_too_big = {"input": "y" * (MAX_TOTAL_CHARS + 1)}
    # When they are sent, then each is 413 with the SPEC error body naming the limit
    for body in (too_long, too_many, one_too_big):
        response = api.post("/v1/embeddings", body)
        assert response.status == 413, response.json
        error = response.json["error"]
        assert error["code"] == "payload_too_large" and error["details"]["max_total_characters"] == MAX_TOTAL_CHARS
    # And a request at the bound is served
    at_bound = {"inputs": ["z" * (MAX_TOTAL_CHARS // 4)] * 4}
    assert api.post("/v1/embeddings", at_bound).status == 200
