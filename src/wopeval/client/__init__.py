"""Driving a host over the OpenWOP v2 wire: the client, an embedded host, the eval flows.

The CLI and the demo are shells over this package (G13). It imports the
server stack only when an embedded host starts, and the eval domain only when
it judges, so a command that just reads a remote host starts quickly.
"""

import typing

if typing.TYPE_CHECKING:
    from wopeval.client._answers import (
        RunCreated,
        RunPage,
        RunSnapshot,
        SuiteLine,
        SuiteListing,
    )
    from wopeval.client._baselines import LATEST_PREFIX, PickedBaseline, latest_baseline
    from wopeval.client._capabilities import (
        MissingCapability,
        missing_capability,
        require_eval_capabilities,
    )
    from wopeval.client._embedded import (
        DatabaseInUse,
        EmbeddedHost,
        configured_key,
        embedded_client,
        embedded_settings,
    )
    from wopeval.client._events_page import EventsPage
    from wopeval.client._fixture_maps import read_fixture_map, under_tenant
    from wopeval.client._follow import (
        POLL_WAIT_SECONDS,
        RunWatch,
        all_events,
        follow,
        require_completed,
        run_outputs,
    )
    from wopeval.client._invocations import RunInvocations, fetch_invocations
    from wopeval.client._outage import (
        ModelUnavailable,
        provider_unavailable,
        require_models_answered,
        require_run_models_answered,
    )
    from wopeval.client._recorded_runs import runs_by_id, runs_by_tag
    from wopeval.client._request import (
        DERIVED_PATCH_BASE,
        EVAL_MODES,
        EvalRequest,
        default_modes,
        parse_fixture_runs,
        parse_modes,
        planned_trials,
        publish_extra_trials_variant,
        publish_trials_variant,
        readable_suite,
        suite_id_of,
        trials_version,
        with_trials,
    )
    from wopeval.client._suite_from_runs import (
        EXPECT_STRATEGIES,
        ExpectStrategy,
        RecordedRun,
        SuiteFromRuns,
        TaskIdRule,
        build_suite,
        recorded_run,
    )
    from wopeval.client._summaries import (
        DEFAULT_ALPHA,
        baseline_facts,
        compare_runs,
        ensure_verdict,
        fetch_summary,
        run_facts,
        summary_from_wire,
    )
    from wopeval.client._tasks import fetch_why, with_details
    from wopeval.client._wire import ClientError, HostError, Unreachable, WireClient
else:
    # Each name's module is imported when the name is first read (wopeval/_lazy.py).
    from wopeval import _lazy

    __getattr__, __dir__ = _lazy.exports(__name__)

__all__ = [
    "DEFAULT_ALPHA",
    "DERIVED_PATCH_BASE",
    "EVAL_MODES",
    "EXPECT_STRATEGIES",
    "LATEST_PREFIX",
    "POLL_WAIT_SECONDS",
    "ClientError",
    "DatabaseInUse",
    "EmbeddedHost",
    "EvalRequest",
    "EventsPage",
    "ExpectStrategy",
    "HostError",
    "MissingCapability",
    "ModelUnavailable",
    "PickedBaseline",
    "RecordedRun",
    "RunCreated",
    "RunInvocations",
    "RunPage",
    "RunSnapshot",
    "RunWatch",
    "SuiteFromRuns",
    "SuiteLine",
    "SuiteListing",
    "TaskIdRule",
    "Unreachable",
    "WireClient",
    "all_events",
    "baseline_facts",
    "build_suite",
    "compare_runs",
    "configured_key",
    "default_modes",
    "embedded_client",
    "embedded_settings",
    "ensure_verdict",
    "fetch_invocations",
    "fetch_summary",
    "fetch_why",
    "follow",
    "latest_baseline",
    "missing_capability",
    "parse_fixture_runs",
    "parse_modes",
    "planned_trials",
    "provider_unavailable",
    "publish_extra_trials_variant",
    "publish_trials_variant",
    "read_fixture_map",
    "readable_suite",
    "recorded_run",
    "require_completed",
    "require_eval_capabilities",
    "require_models_answered",
    "require_run_models_answered",
    "run_facts",
    "run_outputs",
    "runs_by_id",
    "runs_by_tag",
    "suite_id_of",
    "summary_from_wire",
    "trials_version",
    "under_tenant",
    "with_details",
    "with_trials",
]
