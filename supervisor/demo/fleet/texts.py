"""The fleet's words: the work parents delegate, the texts its failures and results
carry, the notes of its activity, its leads' titles and providers. Every text names its
episode (`{ref}`), so that no two tasks' texts are the same."""

from __future__ import annotations

from dataclasses import dataclass

PARENT_TITLES = (
    "Release coordinator",
    "Platform lead",
    "Merge captain",
    "Ops lead",
    "Client migration lead",
    "Docs lead",
)
PROVIDERS = (("claudeAgent", "claude-opus-5-5"), ("codex", "gpt-6.1-sol"))


@dataclass(frozen=True)
class Work:
    """One kind of work a parent delegates; `{ref}` makes each task's texts its own."""

    slug: str
    title: str
    prompt: str
    interim: str  # the child's "still working" text when it waits on something
    final: str
    command: str
    review: str  # what a reviewer it asks for reports


WORKS = (
    Work(
        "retry-port",
        "Port the retry loop to the new client ({ref})",
        "Port the retry loop to the new HTTP client, run the suite, open a PR ({ref}).",
        "Ported the retry loop ({ref}); the suite is running, waiting on the checks.",
        "Retry loop ported ({ref}): suite green, 412 passed; PR is ready to merge.",
        "pytest -q tests/",
        "Review of {ref}: two nits in the backoff jitter; otherwise correct.",
    ),
    Work(
        "ci-watch",
        "Open the PR and watch CI ({ref})",
        "Open a PR for the fix and report when CI is green ({ref}).",
        "PR opened for {ref}; waiting on CI.",
        "CI green for {ref}; the PR is ready to merge.",
        "gh pr checks --watch",
        "Review of {ref}: the change is minimal and tested; approve.",
    ),
    Work(
        "flaky-bisect",
        "Bisect the flaky retry test ({ref})",
        "Find the commit that made test_retry_backoff flaky ({ref}).",
        "Reproduced the flaky test for {ref}; bisecting in the background.",
        "Bisected {ref}: commit 4be1c0d made the backoff clock global; fix proposed.",
        "git bisect run ./scripts/repro-flaky.sh",
        "Review of {ref}: the bisect script is sound; the culprit commit is right.",
    ),
    Work(
        "schema-audit",
        "Audit the schema changes ({ref})",
        "Audit the schema changes of the release and check the indexes ({ref}).",
        "Schema audit for {ref} under way; the index check is running.",
        "Schema audit done ({ref}): 3 missing indexes on orders; migration drafted.",
        "./manage.py sqlmigrate --check",
        "Review of {ref}: the migration is safe to run online.",
    ),
    Work(
        "docs-install",
        "Rewrite the install docs ({ref})",
        "Rewrite docs/install.md for the new installer ({ref}).",
        "Drafted the install docs for {ref}; the link checker is running.",
        "Install docs rewritten ({ref}): 5 sections, all links checked.",
        "lychee docs/",
        "Review of {ref}: clear; one outdated screenshot to replace.",
    ),
    Work(
        "load-test",
        "Run the staging load test ({ref})",
        "Run the staging load test up to 800 rps and report p99 ({ref}).",
        "Load test for {ref} ramping up; waiting on the run to end.",
        "Load test done ({ref}): 800 rps held, p99 210 ms, no errors.",
        "k6 run load/staging.js",
        "Review of {ref}: the test plan matches production traffic.",
    ),
    Work(
        "lint-sweep",
        "Sweep the lint warnings ({ref})",
        "Fix the lint warnings in api/ and web/ ({ref}).",
        "Fixed the api/ warnings for {ref}; ruff is running over web/.",
        "Lint sweep done ({ref}): 58 warnings fixed, none left.",
        "ruff check web/",
        "Review of {ref}: fixes are mechanical; fine.",
    ),
    Work(
        "deploy-staging",
        "Deploy the release to staging ({ref})",
        "Deploy the release to staging, run the smoke checks ({ref}).",
        "Deploying {ref} to staging; waiting for the rollout.",
        "Deployed {ref} to staging; smoke checks green.",
        "kubectl rollout status deploy/api",
        "Review of {ref}: rollout plan is safe.",
    ),
    Work(
        "dep-bump",
        "Bump the HTTP client dependency ({ref})",
        "Bump the HTTP client to the new major and fix the call sites ({ref}).",
        "Bumped the client for {ref}; the full suite is running.",
        "Client bumped ({ref}): 14 call sites fixed, suite green.",
        "uv run pytest",
        "Review of {ref}: the call-site changes look right.",
    ),
)

# Passing provider or transport faults: contract §5 says transient_failure for these.
TRANSIENT_ERRORS = (
    "Failed to authenticate. API Error: 403 Attention Required! | Cloudflare",
    'API Error: 529 {"type":"overloaded_error","message":"Overloaded"}',
    "API Error: 503 Service Unavailable",
    "Request failed: fetch failed (ECONNRESET)",
    "API Error: 429 rate limit exceeded for this organization",
    "Provider stream ended: socket hang up",
)
# Real failures: none of the words or codes above, so no transient_failure.
REAL_FAILURES = (
    "Dry-run failed for {ref}: migration 0042 drops a column still read by billing. Not applying.",
    "Cannot build {ref}: the lockfile pins protobuf 3.20, which the new plugin refuses. "
    "Needs a decision on the upgrade.",
    "Stopped on {ref}: main has uncommitted changes that are not mine; refusing to overwrite them.",
)
# Account limits as providers word them (account_limit), some with their reset.
ACCOUNT_LIMITS = (
    "5-hour limit reached ∙ resets in 3 hours",
    "You've hit your usage limit. Upgrade to Pro or try again in 2 days 4 hours.",
    "API Error: 429 You exceeded your current quota, please check your plan and billing "
    "details. (insufficient_quota)",
    "Your credit balance is too low to access the Anthropic API.",
)
ACTIVITY_NOTES = (
    "Bash: pytest -q",
    "Edit: src/client/retry.py",
    "Read: docs/install.md",
    "Grep: RetryPolicy",
    "Bash: git diff main",
    "Write: notes/plan.md",
    "Bash: gh pr view --json checks",
)
