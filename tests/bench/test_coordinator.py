"""bench/coordinator.py asks as members ask: its publications lie in the coordinator's own
vector space, a product-path search carries the query vector a member's `mem team
recall-team` sends, and a fallback-path search leaves the query to the coordinator."""

import sys
from pathlib import Path

import numpy as np
import pytest

from memmesh.net.search import SearchRequest, usable_vector
from memmesh.net.signing import Caller
from memmesh.net.wire import decode_request
from memmesh.registry.envelopes import Publication, open_envelope
from memmesh.registry.identity import create_identity

# The scripts import each other as top-level modules (`python bench/<script>.py`); appended,
# so that none of their names hides an installed one.
sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))
import coordinator as bench


def test_a_product_search_carries_the_query_vector_the_coordinator_would_make(
    tmp_path: Path,
) -> None:
    queries = bench.Corpus(1).queries(6)
    bodies = bench.search_bodies(queries, bench.team_embedder(), "product")
    with bench.BACKENDS["sqlite"](tmp_path / "coordinator") as backend:
        coordinator = backend.open(False)
        try:
            space = coordinator.store.embedder
            for query, body in zip(queries, bodies, strict=True):
                request = decode_request(body, SearchRequest)
                vector = usable_vector(request, space.fingerprint, space.dim)
                assert vector is not None, "the coordinator would embed the query itself"
                own = space.embed_query(query.text)
                np.testing.assert_allclose(vector, own, atol=1e-6)
                assert (request.query, request.project) == (query.text, query.project)
        finally:
            coordinator.close()


def test_a_fallback_search_leaves_the_query_to_the_coordinator() -> None:
    queries = bench.Corpus(1).queries(6)
    embedder = bench.team_embedder()
    product = bench.search_bodies(queries, embedder, "product")
    fallback = bench.search_bodies(queries, embedder, "fallback")
    for hinted, bare in zip(product, fallback, strict=True):
        asked = decode_request(bare, SearchRequest)
        assert (asked.vector, asked.embedder) == (None, None)
        same = decode_request(hinted, SearchRequest)
        assert (asked.query, asked.k, asked.project) == (same.query, same.k, same.project)


def test_publications_are_kept_in_the_coordinators_space_and_both_paths_answer_alike(
    tmp_path: Path,
) -> None:
    identities = [create_identity(tmp_path / "members" / name) for name in bench.MEMBERS]
    embedder = bench.team_embedder()
    published = bench.build_publications(bench.Corpus(2).memories(300), identities, embedder)
    queries = bench.Corpus(3).queries(8)
    bodies = {path: bench.search_bodies(queries, embedder, path) for path in bench.SEARCH_PATHS}
    asker = identities[-1]
    caller = Caller(key=asker.public_key_text, key_id=asker.key_id)
    with bench.BACKENDS["sqlite"](tmp_path / "coordinator") as backend:
        phase = bench.publish_in_process(backend, published, 0, 300)
        assert phase.outcomes == {"accepted": 300}
        coordinator = backend.open(False)
        try:
            space = coordinator.store.embedder.fingerprint
            signed = [open_envelope(envelope) for envelope in published.envelopes]
            assert all(isinstance(body, Publication) for body in signed)
            assert {body.embedder for body in signed if isinstance(body, Publication)} == {space}
            answered = 0
            for hinted, bare in zip(bodies["product"], bodies["fallback"], strict=True):
                product = coordinator.search(caller, decode_request(hinted, SearchRequest))
                fallback = coordinator.search(caller, decode_request(bare, SearchRequest))
                assert not product.lexical_only
                assert [h.envelope for h in product.hits] == [h.envelope for h in fallback.hits]
                answered += bool(product.hits)
            assert answered > 0
        finally:
            coordinator.close()


def test_the_backends_and_the_processes_are_chosen_on_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = bench.parse_args(["--sizes", "2000", "--backends", "sqlite", "--processes", "2"])
    assert (args.backends, args.processes) == (["sqlite"], 2)
    with pytest.raises(SystemExit) as refused:
        bench.parse_args(["--sizes", "2000", "--backends", "sqlite", "oracle"])
    assert refused.value.code == 2
    assert "oracle" in capsys.readouterr().err
