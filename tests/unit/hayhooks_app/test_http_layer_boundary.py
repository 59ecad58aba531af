"""
hayhooks_app speaks HTTP: it runs no SQL (CONTRIBUTING.md, "Where code goes"). import-linter keeps the database
drivers out (pyproject.toml); this scan keeps SQL text out, which no import graph can see.
"""

import ast
import re
from pathlib import Path

import pytest

import hayhooks_app

HTTP_LAYER = Path(hayhooks_app.__file__).resolve().parent
# Uppercase statements as the stores write them; prose ("delete from the index") is lowercase.
SQL_STATEMENT = re.compile(
    r"\bSELECT\b.+\bFROM\b|\bINSERT\s+INTO\b|\bDELETE\s+FROM\b|\bUPDATE\s+\w+\s+SET\b|\b(CREATE|DROP|ALTER)\s+TABLE\b"
    r"|\bPRAGMA\s+\w+",
    re.DOTALL,
)
DRIVERS = ("sqlite3", "sqlalchemy", "psycopg", "alembic")


def _string_constants(tree: ast.AST) -> list[tuple[int, str]]:
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
    return found


def problems(source: str, name: str) -> list[str]:
    """SQL statements in string literals and imports of database drivers in one module's source."""
    tree = ast.parse(source)
    found = [
        f"{name}:{line}: SQL {SQL_STATEMENT.search(text).group(0)[:40]!r}"
        for line, text in _string_constants(tree)
        if SQL_STATEMENT.search(text)
    ]
    found += [
        f"{name}:{line}: imports {module}"
        for line, module in _imported_modules(tree)
        if module.split(".")[0] in DRIVERS
    ]
    return found


@pytest.mark.unit
class TestHttpLayerBoundary:
    def test_no_module_of_the_http_layer_runs_sql_or_imports_a_driver(self):
        modules = sorted(HTTP_LAYER.rglob("*.py"))
        assert len(modules) > 30  # the whole package, sub-packages included
        found = [problem for path in modules for problem in problems(path.read_text(), path.name)]
        assert found == [], "move these to a store in components/stores:\n" + "\n".join(found)

    @pytest.mark.parametrize(
        "source",
        [
            'sa.text("SELECT * FROM api_keys WHERE key_hash = :key_hash")',
            'QUERY = "INSERT INTO query_log (created_at) VALUES (:created_at)"',
            'connection.execute(f"DELETE FROM {table} WHERE tenant_id = :tenant_id")',
            '"UPDATE rag_conversations SET updated_at = :now WHERE id = :id"',
            "import sqlite3",
            "from sqlalchemy.exc import SQLAlchemyError",
            "import sqlalchemy as sa",
        ],
    )
    def test_the_scan_finds_sql_and_drivers(self, source):
        assert problems(source, "probe.py")

    def test_prose_is_not_sql(self):
        source = (
            '"""Delete from the index; select the tenant from the key."""\nHELP = "update the owner, then set it"\n'
        )
        assert problems(source, "probe.py") == []
