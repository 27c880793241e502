"""`--baseline latest:TAG` as the client resolves it against a real host: the newest completed
eval run of the suite and agent that carries the tag, never a newer run without it."""

from __future__ import annotations

import uuid

import pytest

from wopeval import client

from .._server import TENANT_A, ServerHandle
from ._evals import SCRIPTED_AGENT, new_suite_id, publish, run_eval, suite, task


def test_latest_tag_passes_over_newer_runs_that_do_not_carry_the_tag(
    server: ServerHandle,
) -> None:
    tag = f"main-{uuid.uuid4().hex[:8]}"
    suite_id = new_suite_id("latest")
    runner = server.client()
    with server.http(TENANT_A) as http:
        ref = publish(http, suite(suite_id, [task("only", answer="done")]))
        tagged = run_eval(runner, http, ref, tags=[tag]).run_id
        # Newer runs of the same suite and agent: one untagged, one under another tag.
        run_eval(runner, http, ref)
        run_eval(runner, http, ref, tags=[f"{tag}-other"])
    with client.WireClient(server.base_url, server.key_a, trust_env=False) as host:
        picked = client.latest_baseline(host, tag, suite_id, SCRIPTED_AGENT)
        assert picked.run_id == tagged
        with pytest.raises(client.ClientError, match="carries the tag"):
            client.latest_baseline(host, f"{tag}-none", suite_id, SCRIPTED_AGENT)
