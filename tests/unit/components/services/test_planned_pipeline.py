"""
Tests for components.services.planned_pipeline: a planned run gives what Haystack's own ``Pipeline.run`` gives (the
same components run, with the same inputs and defaults, and the same outputs), on small graphs that exercise each
of Haystack's rules, and on the real search and RAG pipelines over the sample corpus.
"""

import json
from typing import Any

import pytest
from haystack import Document, Pipeline, component, tracing
from haystack.core.errors import PipelineRuntimeError
from haystack.core.pipeline import pipeline as haystack_pipeline
from haystack.dataclasses import ChatMessage
from haystack.tracing.tracer import NullTracer
from support.query_corpus import sample_corpus_chunks, write_store

from components.services.pipeline_loader import load_pipeline
from components.services.planned_pipeline import PlannedPipeline
from components.services.query_service import QueryService

RUNS: list[str] = []


@component
class _Router:
    """Sends the text to one of two branches (the other output is not produced)."""

    @component.output_types(left=str, right=str)
    def run(self, text: str, go_left: bool = True) -> dict:
        RUNS.append("router")
        return {"left": text} if go_left else {"right": text}


@component
class _Upper:
    def __init__(self, name: str):
        self.name = name

    @component.output_types(text=str)
    def run(self, text: str) -> dict:
        RUNS.append(self.name)
        return {"text": text.upper()}


@component
class _Join:
    """Optional inputs from both branches, with defaults."""

    @component.output_types(joined=str, spare=str)
    def run(self, left: str = "L?", right: str = "R?", suffix: str = "") -> dict:
        RUNS.append("join")
        return {"joined": f"{left}|{right}{suffix}", "spare": "unconnected"}


@component
class _Constant:
    """No inputs at all: runs once per pipeline run."""

    @component.output_types(value=str)
    def run(self) -> dict:
        RUNS.append("constant")
        return {"value": "!"}


@component
class _Mutator:
    """Mutates its inputs in place, as a careless component might."""

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict:
        documents[0].meta["touched"] = True
        documents.append(Document(content="extra"))
        return {"documents": documents}


@component
class _Counter:
    @component.output_types(count=int, touched=bool)
    def run(self, documents: list[Document]) -> dict:
        return {"count": len(documents), "touched": bool(documents[0].meta.get("touched"))}


@component
class _Source:
    """Makes one Document (and remembers the list it returned)."""

    def __init__(self):
        self.produced: list[list[Document]] = []

    @component.output_types(documents=list[Document])
    def run(self, text: str) -> dict:
        self.produced.append([Document(content=text)])
        return {"documents": self.produced[-1]}


@component
class _Keeper:
    """Records the inputs it was given (by identity)."""

    reads_inputs_only = True

    def __init__(self):
        self.seen: list[Any] = []

    @component.output_types(count=int)
    def run(self, documents: list[Document]) -> dict:
        self.seen.append(documents)
        return {"count": len(documents)}


@component
class _Failing:
    @component.output_types(text=str)
    def run(self, text: str) -> dict:
        raise ValueError(f"cannot handle {text}")


@component
class _Messages:
    @component.output_types(messages=list[ChatMessage])
    def run(self, text: str) -> dict:
        return {"messages": [ChatMessage.from_user(text)]}


@component
class _Echo:
    @component.output_types(text=str)
    def run(self, text: str) -> dict:
        return {"text": text}


@component
class _Loop:
    """Counts up to 3 through its own feedback connection (a cycle)."""

    @component.output_types(next=int, done=int)
    def run(self, start: int = 0, feedback: int | None = None) -> dict:
        value = start if feedback is None else feedback
        return {"next": value + 1} if value < 3 else {"done": value}


@component
class _IntEcho:
    @component.output_types(value=int)
    def run(self, value: int) -> dict:
        return {"value": value}


class _RecordingTracer(tracing.Tracer):
    """Names the spans opened, and opens none."""

    def __init__(self):
        self.names: list[str] = []

    def trace(self, operation_name, tags=None, parent_span=None):
        self.names.append(operation_name)
        return NullTracer().trace(operation_name, tags, parent_span)

    def current_span(self):
        return None


def _branching(cls: type[Pipeline]) -> Pipeline:
    pipe = cls()
    pipe.add_component("router", _Router())
    pipe.add_component("left", _Upper("left"))
    pipe.add_component("right", _Upper("right"))
    pipe.add_component("join", _Join())
    pipe.add_component("constant", _Constant())
    pipe.connect("router.left", "left.text")
    pipe.connect("router.right", "right.text")
    pipe.connect("left.text", "join.left")
    pipe.connect("right.text", "join.right")
    pipe.connect("constant.value", "join.suffix")
    return pipe


def _both(build, data: dict[str, Any], **kwargs: Any) -> tuple[dict, list[str], dict, list[str]]:
    """Run the same graph with Haystack's scheduler and planned; the outputs and the components that ran."""
    RUNS.clear()
    expected = build(Pipeline).run(data, **kwargs)
    haystack_runs = sorted(RUNS)
    RUNS.clear()
    planned = build(PlannedPipeline)
    assert planned.plan() is not None
    result = planned.run(data, **kwargs)
    return expected, haystack_runs, result, sorted(RUNS)


@pytest.mark.unit
class TestPlannedPipeline:
    def test_init(self):
        pipe = _branching(PlannedPipeline)
        steps = pipe.plan()
        names = [step.name for step in steps]
        assert names.index("router") < names.index("left") < names.index("join")
        assert names.index("constant") < names.index("join")
        assert {step.name: step.mandatory for step in steps}["left"] == ("text",)

    def test_to_dict(self):
        assert _branching(PlannedPipeline).to_dict() == _branching(Pipeline).to_dict()

    def test_from_dict(self):
        data = _branching(Pipeline).to_dict()
        pipe = PlannedPipeline.from_dict(data, allowed_modules=[__name__])
        assert isinstance(pipe, PlannedPipeline) and pipe.to_dict() == data
        assert pipe.run({"router": {"text": "a"}})["join"] == {"joined": "A|R?!", "spare": "unconnected"}

    @pytest.mark.parametrize("go_left", [True, False])
    def test_run_branches_and_defaults_like_haystack(self, go_left):
        expected, expected_runs, result, runs = _both(_branching, {"router": {"text": "a", "go_left": go_left}})
        assert result == expected
        assert runs == expected_runs
        assert ("right" in runs) is not go_left  # the branch without input is blocked, as in Haystack
        assert result["join"]["joined"] == ("A|R?!" if go_left else "L?|A!")

    def test_run_include_outputs_from_like_haystack(self):
        data = {"router": {"text": "a"}}
        expected, _, result, _ = _both(_branching, data, include_outputs_from={"left", "join"})
        assert result == expected and result["left"] == {"text": "A"}

    def test_run_without_trigger_does_not_run(self):
        # The right branch is blocked, so the join behind it (only optional inputs, all from senders) gets no
        # trigger and does not run; the input-less component runs once.
        def build(cls):
            pipe = cls()
            pipe.add_component("router", _Router())
            pipe.add_component("right", _Upper("right"))
            pipe.add_component("join", _Join())
            pipe.add_component("constant", _Constant())
            pipe.connect("router.right", "right.text")
            pipe.connect("right.text", "join.right")
            return pipe

        expected, expected_runs, result, runs = _both(build, {"router": {"text": "a"}})
        assert result == expected
        assert runs == expected_runs == ["constant", "router"]

    def test_run_isolates_inputs(self):
        def build(cls):
            pipe = cls()
            pipe.add_component("mutator", _Mutator())
            pipe.add_component("counter", _Counter())
            return pipe

        documents = [Document(content="x")]
        data = {"mutator": {"documents": documents}, "counter": {"documents": documents}}
        expected, _, result, _ = _both(build, data)
        assert result == expected
        assert result["counter"] == {"count": 1, "touched": False}
        assert len(documents) == 1 and documents[0].meta == {}

    def test_run_passes_inputs_uncopied_only_to_components_that_read_only(self):
        pipe = PlannedPipeline()
        pipe.add_component("source", _Source())
        pipe.add_component("keeper", _Keeper())
        pipe.add_component("mutator", _Mutator())
        pipe.add_component("counter", _Counter())
        pipe.connect("source.documents", "keeper.documents")
        pipe.connect("source.documents", "mutator.documents")
        pipe.connect("source.documents", "counter.documents")
        result = pipe.run({"source": {"text": "x"}})
        (produced,) = pipe.get_component("source").produced
        assert pipe.get_component("keeper").seen[0] is produced  # declared read-only: no copy
        assert result["counter"] == {"count": 1, "touched": False}  # the mutator changed its own copy only
        assert len(produced) == 1 and produced[0].meta == {}
        assert [step.name for step in pipe.plan() if not step.copies_inputs] == ["keeper"]

    def test_run_traced_copies_every_input(self):
        documents = [Document(content="x")]
        pipe = PlannedPipeline()
        pipe.add_component("keeper", _Keeper())
        tracing.enable_tracing(_RecordingTracer())
        try:
            pipe.run({"keeper": {"documents": documents}})
        finally:
            tracing.disable_tracing()
        (seen,) = pipe.get_component("keeper").seen
        assert seen == documents and seen is not documents

    def test_run_uses_the_installed_input_copy(self, monkeypatch):
        calls = []
        original = haystack_pipeline._deepcopy_with_exceptions

        def counting(value):
            calls.append(value)
            return original(value)

        monkeypatch.setattr(haystack_pipeline, "_deepcopy_with_exceptions", counting)
        _branching(PlannedPipeline).run({"router": {"text": "a"}})
        assert len(calls) == 4  # one per component that ran

    def test_run_failure_raises_haystack_error(self):
        def build(cls):
            pipe = cls()
            pipe.add_component("failing", _Failing())
            return pipe

        with pytest.raises(PipelineRuntimeError) as expected:
            build(Pipeline).run({"failing": {"text": "x"}})
        with pytest.raises(PipelineRuntimeError) as planned:
            build(PlannedPipeline).run({"failing": {"text": "x"}})
        assert str(planned.value) == str(expected.value)
        assert isinstance(planned.value.__cause__, ValueError)

    def test_run_rejects_bad_input_like_haystack(self):
        with pytest.raises(ValueError, match="not found"):
            _branching(PlannedPipeline).run({"nobody": {"text": "a"}})
        with pytest.raises(ValueError, match="Missing mandatory input"):
            _branching(PlannedPipeline).run({"join": {"left": "x"}, "router": {}})

    def test_run_converts_between_socket_types_like_haystack(self):
        def build(cls):
            pipe = cls()
            pipe.add_component("messages", _Messages())
            pipe.add_component("echo", _Echo())
            pipe.connect("messages.messages", "echo.text")  # list[ChatMessage] -> str: Haystack converts
            return pipe

        expected, _, result, _ = _both(build, {"messages": {"text": "hello"}})
        assert result == expected == {"echo": {"text": "hello"}}

    def test_run_cycle_falls_back_to_haystack(self):
        def build(cls):
            pipe = cls()
            pipe.add_component("loop", _Loop())
            pipe.add_component("back", _IntEcho())
            pipe.connect("loop.next", "back.value")
            pipe.connect("back.value", "loop.feedback")
            return pipe

        planned = build(PlannedPipeline)
        assert planned.plan() is None
        assert (
            planned.run({"loop": {"start": 1}}) == build(Pipeline).run({"loop": {"start": 1}}) == {"loop": {"done": 3}}
        )

    def test_run_replans_after_a_change(self):
        pipe = _branching(PlannedPipeline)
        assert pipe.run({"router": {"text": "a"}})["join"]["joined"] == "A|R?!"
        pipe.add_component("tail", _Upper("tail"))
        pipe.connect("join.joined", "tail.text")
        assert [step.name for step in pipe.plan()][-1] == "tail"
        assert pipe.run({"router": {"text": "a"}})["tail"] == {"text": "A|R?!"}

    def test_run_traced_creates_haystack_spans(self):
        recorder = _RecordingTracer()
        tracing.enable_tracing(recorder)
        try:
            result = _branching(PlannedPipeline).run({"router": {"text": "a"}})
        finally:
            tracing.disable_tracing()
        assert result["join"]["joined"] == "A|R?!"
        assert recorder.names == ["haystack.pipeline.run"] + ["haystack.component.run"] * 4


def _snapshot(value: Any) -> Any:
    """A comparable deep snapshot of a component's inputs (Documents by their fields)."""
    if isinstance(value, Document):
        return ("Document", _snapshot(value.to_dict(flatten=False)))
    if isinstance(value, dict):
        return {key: _snapshot(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_snapshot(item) for item in value]
    return repr(value) if not isinstance(value, (str, int, float, bool, type(None))) else value


def _normalised(value: dict[str, Any]) -> Any:
    value = json.loads(json.dumps(value, default=str))
    for key in ("generation_time_ms", "retrieval_time_ms", "latency_ms"):
        value.pop(key, None)
    (value.get("metadata") or {}).pop("latency_ms", None)
    return value


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """The RAG and search pipelines as served (loaded from YAML) over the sample corpus."""
    data_dir = tmp_path_factory.mktemp("planned")
    write_store(data_dir / "qdrant", sample_corpus_chunks())
    env = {"SOURCEBOUND_DATA_DIR": str(data_dir)}
    service = QueryService(load_pipeline("query", env=env), load_pipeline("search", env=env))
    assert isinstance(service.rag_pipeline, PlannedPipeline) and service.rag_pipeline.plan() is not None
    assert isinstance(service.search_pipeline, PlannedPipeline) and service.search_pipeline.plan() is not None
    yield service
    for pipeline in (service.rag_pipeline, service.search_pipeline):
        pipeline.close()


@pytest.mark.integration
class TestPlannedPipelineOnTheYamlPipelines:
    """The served pipelines (loaded as ``PlannedPipeline``) answer exactly as with Haystack's scheduler."""

    @pytest.mark.parametrize(
        "request_body",
        [
            {"query": "How many days of paid annual leave do employees get?", "tenant_id": "acme",
             "user_tags": ["hr"]},
            {"query": "vpn setup", "tenant_id": "acme", "user_tags": ["it", "hr"], "search_mode": "keyword"},
            {"query": "expense report", "tenant_id": "globex", "user_tags": ["finance"], "search_mode": "vector"},
            {"query": "quantum teleportation recipe", "tenant_id": "acme", "user_tags": ["hr"]},
            {"query": "leave", "tenant_id": "nobody", "user_tags": ["none"]},
        ],
    )  # fmt: skip
    def test_run_same_answers_as_haystack(self, service, request_body, monkeypatch):
        rag_body = {key: value for key, value in request_body.items() if key != "search_mode"}
        planned = (service.search(request_body), service.rag(rag_body))
        monkeypatch.setattr(PlannedPipeline, "run", Pipeline.run)
        haystack = (service.search(request_body), service.rag(rag_body))
        assert _normalised(planned[0]) == _normalised(haystack[0])
        assert _normalised(planned[1]) == _normalised(haystack[1])
        if request_body["tenant_id"] == "acme" and "leave" in request_body["query"]:
            assert planned[0]["results"] and planned[1]["action"] == "CITE"  # the comparison saw real answers

    def test_components_that_read_only_change_no_input(self, service, monkeypatch):
        # What reads_inputs_only declares, checked on real requests: each declared component's inputs are the same
        # after its run as before it.
        checked: dict[str, int] = {}
        for pipeline in (service.rag_pipeline, service.search_pipeline):
            for name, instance in pipeline.walk():
                if not getattr(type(instance), "reads_inputs_only", False):
                    continue
                run = instance.run

                def checking(*args, _run=run, _name=name, **kwargs):
                    before = _snapshot(kwargs)
                    result = _run(*args, **kwargs)
                    assert _snapshot(kwargs) == before, f"{_name} changed its inputs"
                    checked[_name] = checked.get(_name, 0) + 1
                    return result

                monkeypatch.setattr(instance, "run", checking)
        for body in (
            {"query": "How many days of paid annual leave do employees get?", "tenant_id": "acme", "user_tags": ["hr"]},
            {"query": "vpn setup", "tenant_id": "acme", "user_tags": ["it", "hr"]},
        ):
            service.rag(body)
            service.search(body)
        expected = {"selector", "similarity", "guard", "domain_allowlist", "limiter", "dedup", "budgeter", "citations",
                    "results", "sentence_embedder", "neighbours", "sentences", "answerer", "prompt_builder",
                    "confidence", "router", "assembler"}  # fmt: skip
        assert expected <= set(checked)
