"""Helpers shared by the indexing tests: sample files, PDFs made with fpdf2, and index checksums."""

import hashlib
import json
from pathlib import Path

import pytest
from haystack import Document

from components.core.document_identity import CHUNK_META_FIELDS
from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore


# Store fixtures: a test module imports them (``from indexing_support import module_store, store``).
@pytest.fixture(scope="module")
def module_store(tmp_path_factory):
    """One Qdrant Edge store per test module (opening a shard takes ~1 s)."""
    return QdrantEdgeDocumentStore(path=str(tmp_path_factory.mktemp("qdrant")))


@pytest.fixture
def store(module_store):
    """An empty store (the module shares one and empties it)."""
    module_store.delete_all_documents()
    return module_store


def make_pdf(path: Path, pages: list[str]) -> Path:
    """Write a PDF with one page per text (Latin-1 text only: fpdf2's core fonts)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, text)
    pdf.output(str(path))
    return path


def sentences(topic: str, count: int, start: int = 0) -> str:
    """Distinct, numbered sentences, so overlaps between chunks are unambiguous."""
    return " ".join(
        f"Sentence {number} explains how the {topic} policy handles case {number * 7 % 97} for every team."
        for number in range(start, start + count)
    )


def write_mixed_folder(folder: Path) -> dict[str, Path]:
    """A folder with one source of each type, big enough to give several chunks each."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "txt": folder / "vacation.txt",
        "md": folder / "handbook.md",
        "html": folder / "help" / "timesheets.html",
        "pdf": folder / "expenses.pdf",
    }
    files["html"].parent.mkdir(exist_ok=True)
    files["txt"].write_text(
        "\n\n".join(sentences("vacation", 12, start) for start in range(0, 60, 12)), encoding="utf-8"
    )
    files["md"].write_text(
        "# Employee handbook\n\nWelcome to the handbook.\n\n"
        f"## Onboarding\n\n{sentences('onboarding', 20)}\n\n"
        f"## Security\n\n{sentences('security', 8)}\n\n```bash\n## not a heading\n```\n",
        encoding="utf-8",
    )
    files["html"].write_text(
        "<html lang='en'><head><title>Timesheets help</title>"
        "<link rel='canonical' href='https://Help.Example.com/timesheets/?utm_source=newsletter#top'></head>"
        "<body><nav>Home | Help</nav><h1>Timesheets</h1><p>Submit your timesheet every Friday.</p>"
        f"<h2>Approval</h2><p>{sentences('approval', 10)}</p><script>track()</script></body></html>",
        encoding="utf-8",
    )
    make_pdf(files["pdf"], [sentences("expense", 12), sentences("travel", 12)])
    return files


def index_checksum(store) -> tuple[int, str]:
    """(count, digest) over every stored chunk's id, content and meta: equal before and after means unchanged."""
    rows = sorted(
        (document.id, document.content, json.dumps(document.meta, sort_keys=True, default=str))
        for document in store.filter_documents()
    )
    return len(rows), hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def unit_vector(seed: int, dim: int = 384) -> list[float]:
    """A deterministic non-zero vector (for store-level tests that need no real embedder)."""
    values = [((seed * 31 + index * 17) % 101) / 100.0 + 0.01 for index in range(dim)]
    norm = sum(value * value for value in values) ** 0.5
    return [value / norm for value in values]


def stored_chunk(document_id: str, index: int, tenant_id: str = "acme", content: str | None = None, **meta) -> Document:
    """A complete chunk as the pipeline writes it, with a synthetic embedding."""
    full = {field: None for field in CHUNK_META_FIELDS}
    full.update(
        tenant_id=tenant_id,
        tags=["hr"],
        scope="tenant",
        document_id=document_id,
        source_type="text",
        source_hash="hash-1",
        embedding_model="sentence-transformers/all-MiniLM-L6-v2",
        chunk_index=index,
        verified=False,
        tainted=False,
        token_count=5,
    )
    full.update(meta)
    text = content or f"Chunk {index} of {document_id}."
    return Document(
        id=f"{document_id}:{index}", content=text, meta=full, embedding=unit_vector(index + len(document_id))
    )


def roundtrip(component, name: str = "component"):
    """Serialise a component in a pipeline and load it back under the project's module allowlist."""
    from haystack import Pipeline

    from components.services.pipeline_loader import ALLOWED_MODULES

    pipeline = Pipeline()
    pipeline.add_component(name, component)
    return Pipeline.loads(pipeline.dumps(), allowed_modules=ALLOWED_MODULES).get_component(name)
