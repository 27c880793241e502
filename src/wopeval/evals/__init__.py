"""The eval domain: pure rules, no I/O (docs/design.md §1).

Suite references, the fixture matcher and its miss analysis, derived fixtures
(RFC 0252 §D), graders and their reasons, structural JSON diffs, pass
policies, the summary, the paired verdict (RFC 0244 §F) and the trials that
would decide an inconclusive one, a judge's agreement with people, the create-time
rules of RFC 0251 / RFC 0252 §B–§C, the diff of two run logs (RFC 0054) and
what changed in the tools an agent is offered since a recording.
Call sites use `evals.<name>`.
"""

import typing

if typing.TYPE_CHECKING:
    from wopeval.evals._calibration import (
        Calibration,
        CalibrationFloor,
        Confusion,
        LabelledVerdict,
        calibrate,
    )
    from wopeval.evals._canonical import args_hash, canonical_json, compact_json, json_equal
    from wopeval.evals._create_rules import (
        BaselineFacts,
        SourceFacts,
        check_baseline_fields,
        check_eval_only_fields,
        check_fixture_runs_fields,
        is_usable_baseline,
        is_usable_source,
        resolve_eval_modes,
    )
    from wopeval.evals._derive import (
        CallStatus,
        DerivableCall,
        RecordedCall,
        RecordedStatus,
        ServedBy,
        derive_fixture_documents,
        derive_fixtures,
        fixtures_of,
        has_failed_call,
        own_calls,
    )
    from wopeval.evals._executed import ExecutedCall, ServedAs
    from wopeval.evals._golden import grade_golden, strategy_for_decision, stringify
    from wopeval.evals._grade import Grade
    from wopeval.evals._graders import (
        check_known_graders,
        grade_task,
        graders_named,
    )
    from wopeval.evals._idle import IdleReason, describe_idle, idle_reasons, missing_model_calls
    from wopeval.evals._jsondiff import Found, PathChange, json_diff, subset_diff, value_at
    from wopeval.evals._judge_part import CriterionGrade, JudgePart
    from wopeval.evals._live_tasks import tasks_reaching_live_tools
    from wopeval.evals._matcher import (
        FixtureCursor,
        FixtureHit,
        FixtureIndex,
        FixtureMiss,
        GoLive,
        Missed,
        Served,
        args_match,
        is_json_subset,
        select_entry,
    )
    from wopeval.evals._miss import MissDetail, closest_entry
    from wopeval.evals._model_fixture import DEFAULT_API, ModelFixture
    from wopeval.evals._model_miss import ModelMiss
    from wopeval.evals._models import (
        ModelPrice,
        ModelReplayCursor,
        ModelServedBy,
        RecordedExchange,
        derive_model_fixtures,
        exchange_cost,
        model_request_hash,
    )
    from wopeval.evals._more_trials import (
        MORE_TRIALS_CAP,
        MoreTrials,
        PassCounts,
        Undecided,
        inconclusive_more_trials,
        more_trials_needed,
    )
    from wopeval.evals._policy import (
        DEFAULT_POLICY,
        DEFAULT_TRIALS,
        PassPolicy,
        effective_policy,
        effective_trials,
        trials_pass,
    )
    from wopeval.evals._pool import MAX_TRIALS_PER_RUN, allocate_trials, pool_summaries
    from wopeval.evals._rubric import (
        ANSWER_FORMAT,
        DEFAULT_TEMPLATE,
        TEMPLATE_FIELDS,
        JudgementUnreadable,
        JudgeRules,
        JudgeScale,
        judge_prompt,
        judged_output,
        read_judgement,
        rubric_grade,
        unjudged_grade,
        weighted_score,
    )
    from wopeval.evals._run_diff import LoggedRun, diff_logs
    from wopeval.evals._suite_ref import (
        SUITE_REF_PATTERN,
        FixtureSuiteRef,
        SuiteRef,
        VersionedSuiteRef,
        parse_suite_ref,
    )
    from wopeval.evals._summary import (
        DEFAULT_PASS_SCORE,
        TrialOutcome,
        p95,
        summarise,
        summarise_task,
        with_regression,
    )
    from wopeval.evals._tool_contracts import (
        ListedTool,
        ServerListing,
        describe_tool_changes,
        listing_digest,
        tools_changed,
    )
    from wopeval.evals._trajectory import grade_trajectory
    from wopeval.evals._verdict import (
        DEFAULT_ALPHA,
        PairedVerdict,
        TaskVerdict,
        fisher_p,
        holm_adjust,
        paired_verdict,
    )
    from wopeval.wire.summary import Verdict
else:
    # Each name's module is imported when the name is first read (wopeval/_lazy.py).
    from wopeval import _lazy

    __getattr__, __dir__ = _lazy.exports(__name__)

__all__ = [
    "ANSWER_FORMAT",
    "DEFAULT_ALPHA",
    "DEFAULT_API",
    "DEFAULT_PASS_SCORE",
    "DEFAULT_POLICY",
    "DEFAULT_TEMPLATE",
    "DEFAULT_TRIALS",
    "MAX_TRIALS_PER_RUN",
    "MORE_TRIALS_CAP",
    "SUITE_REF_PATTERN",
    "TEMPLATE_FIELDS",
    "BaselineFacts",
    "Calibration",
    "CalibrationFloor",
    "CallStatus",
    "Confusion",
    "CriterionGrade",
    "DerivableCall",
    "ExecutedCall",
    "FixtureCursor",
    "FixtureHit",
    "FixtureIndex",
    "FixtureMiss",
    "FixtureSuiteRef",
    "Found",
    "GoLive",
    "Grade",
    "IdleReason",
    "JudgePart",
    "JudgeRules",
    "JudgeScale",
    "JudgementUnreadable",
    "LabelledVerdict",
    "ListedTool",
    "LoggedRun",
    "MissDetail",
    "Missed",
    "ModelFixture",
    "ModelMiss",
    "ModelPrice",
    "ModelReplayCursor",
    "ModelServedBy",
    "MoreTrials",
    "PairedVerdict",
    "PassCounts",
    "PassPolicy",
    "PathChange",
    "RecordedCall",
    "RecordedExchange",
    "RecordedStatus",
    "Served",
    "ServedAs",
    "ServedBy",
    "ServerListing",
    "SourceFacts",
    "SuiteRef",
    "TaskVerdict",
    "TrialOutcome",
    "Undecided",
    "Verdict",
    "VersionedSuiteRef",
    "allocate_trials",
    "args_hash",
    "args_match",
    "calibrate",
    "canonical_json",
    "check_baseline_fields",
    "check_eval_only_fields",
    "check_fixture_runs_fields",
    "check_known_graders",
    "closest_entry",
    "compact_json",
    "derive_fixture_documents",
    "derive_fixtures",
    "derive_model_fixtures",
    "describe_idle",
    "describe_tool_changes",
    "diff_logs",
    "effective_policy",
    "effective_trials",
    "exchange_cost",
    "fisher_p",
    "fixtures_of",
    "grade_golden",
    "grade_task",
    "grade_trajectory",
    "graders_named",
    "has_failed_call",
    "holm_adjust",
    "idle_reasons",
    "inconclusive_more_trials",
    "is_json_subset",
    "is_usable_baseline",
    "is_usable_source",
    "json_diff",
    "json_equal",
    "judge_prompt",
    "judged_output",
    "listing_digest",
    "missing_model_calls",
    "model_request_hash",
    "more_trials_needed",
    "own_calls",
    "p95",
    "paired_verdict",
    "parse_suite_ref",
    "pool_summaries",
    "read_judgement",
    "resolve_eval_modes",
    "rubric_grade",
    "select_entry",
    "strategy_for_decision",
    "stringify",
    "subset_diff",
    "summarise",
    "summarise_task",
    "tasks_reaching_live_tools",
    "tools_changed",
    "trials_pass",
    "unjudged_grade",
    "value_at",
    "weighted_score",
    "with_regression",
]
