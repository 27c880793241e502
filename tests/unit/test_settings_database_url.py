"""A database URL no store can open is refused when the settings are built, by a message
that says what to give instead and never repeats the URL (it may hold a password)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from wopeval.settings import Settings

SECRET = "s3cr3t-pw"


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("not a url", "cannot be parsed"),
        (f"mysql://u:{SECRET}@db/runs", "SQLite or PostgreSQL, not 'mysql'"),
        (f"postgresql+asyncpg://u:{SECRET}@db/runs", "through psycopg, not 'asyncpg'"),
        (f"postgresql+psycopg2://u:{SECRET}@db/runs", "through psycopg, not 'psycopg2'"),
        ("sqlite://", "a SQLite database file"),
        ("sqlite:///:memory:", "a SQLite database file"),
        (f"postgresql+psycopg://u:{SECRET}@db/runs?prepare_threshold=x", "prepare_threshold"),
        (
            f"postgresql+psycopg://u:{SECRET}@db/runs?prepare_threshold=1&prepare_threshold=2",
            "prepare_threshold",
        ),
    ],
)
def test_a_url_no_store_opens_is_refused_by_what_to_give(url: str, said: str) -> None:
    with pytest.raises(ValidationError) as refused:
        Settings(database_url=url)
    message = str(refused.value.errors()[0]["msg"])
    assert said in message
    assert SECRET not in message


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///runs.db",
        "sqlite+aiosqlite:///runs.db",
        "postgresql://u@db/runs",
        "postgresql+psycopg://u@db/runs",
        "postgresql+psycopg_async://u@db/runs",
        "postgresql+psycopg://u@db/runs?prepare_threshold=none",
        "postgresql+psycopg://u@db/runs?prepare_threshold=NONE",
        "postgresql+psycopg://u@db/runs?prepare_threshold=0&sslmode=require",
    ],
)
def test_a_url_a_store_opens_is_kept_as_given(url: str) -> None:
    assert Settings(database_url=url).database_url == url
