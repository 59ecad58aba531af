"""
``PlannedPipeline``: a Haystack ``Pipeline`` that runs an acyclic graph in an order planned once, instead of
re-deciding what runs next after every component.

Why: Haystack 3.4's ``Pipeline.run`` recomputes every component's priority from its inputs after each component
(``_fill_queue``: component x socket checks, each pass over all components) and builds each component's span tags
(``_create_component_span``: the type names of every socket) even with tracing off. For the 12-component search
pipeline that was ~15 % of a request's CPU and for the 20-component RAG pipeline ~17 % (bench/README.md, "Stage
profile"): more than the query embedding's share once the embedding was fast.

What: for a graph without cycles and without variadic sockets, each component depends only on components before
it in a topological order, so the order is computed once (``networkx.lexicographical_topological_sort``, ties by
name as Haystack breaks them) and every run walks it once. A component runs exactly when Haystack's rules would run
it: every mandatory socket holds a value, and it has a trigger (a value from a sender, input from the caller, or
no senders at all); a socket whose sender did not produce a value takes its default. Everything else is Haystack's
own code: input validation, input copies (``_deepcopy_with_exceptions``, so ``pipeline_copy``'s fast path applies),
output checks, conversions between socket types, the error types, and with tracing on the same spans
(``Pipeline._run_component``).

Input copies: Haystack gives every component a deep copy of its inputs, so that a component that changes its inputs
in place cannot change what another component, the caller or a sender's cache holds. A component class that sets
``reads_inputs_only = True`` declares that it never does (its run changes nothing reachable from its inputs and
keeps no reference to them), so it gets its inputs as they are (docs/contract.md, "Pipeline runs"); every other
component still gets its copy. With tracing on, every component gets its copy, as in Haystack.

Cyclic or variadic graphs, break points and snapshots go to ``Pipeline.run`` unchanged. The YAML, the components
and their connections are the same; only the scheduling (and the copies declared unneeded) differ.

Usage (``components.services.pipeline_loader.load_pipeline`` builds every pipeline this way):

```python
from components.services.planned_pipeline import PlannedPipeline

pipeline = PlannedPipeline.from_dict(data)       # or build it with add_component / connect
result = pipeline.run({"embedder": {"text": "vpn"}}, include_outputs_from={"results"})
```
"""

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import networkx
from haystack import Pipeline, tracing
from haystack.core.errors import BreakpointException, PipelineRuntimeError
from haystack.core.pipeline import pipeline as haystack_pipeline
from haystack.core.pipeline.base import _validate_component_output_keys
from haystack.core.type_utils import _convert_value
from haystack.telemetry import pipeline_running

logger = logging.getLogger(__name__)

# The class attribute by which a component declares that its run() changes none of its inputs (nor anything reachable
# from them) and keeps no reference to them after it returns: it then gets them without a copy.
READS_INPUTS_ONLY = "reads_inputs_only"


@dataclass(frozen=True)
class _Step:
    """One component of the plan, with what deciding and feeding it needs."""

    name: str
    node: dict[str, Any]  # the graph node: instance, input_sockets, output_sockets
    mandatory: tuple[str, ...]
    defaults: tuple[tuple[str, Any], ...]
    has_senders: bool
    receivers: tuple[tuple[str, str, str, Any], ...]  # (receiver, output socket, input socket, conversion)
    connected_outputs: frozenset[str]
    copies_inputs: bool  # False for a component that declares ``reads_inputs_only`` (see the module doc)


class PlannedPipeline(Pipeline):
    """
    A ``Pipeline`` whose acyclic graph runs in a precomputed order (see the module doc); otherwise Haystack's.

    Built like a ``Pipeline`` (``from_dict``, ``loads``, ``add_component``/``connect``); the plan is made on the
    first run and again after any change to the graph.
    """

    _plan: tuple[_Step, ...] | None = None
    _planned: bool = False
    _warm: bool = False

    def add_component(self, name: str, instance: Any) -> None:
        self._planned = self._warm = False
        super().add_component(name, instance)

    def connect(self, sender: str, receiver: str) -> "PlannedPipeline":
        self._planned = False
        return super().connect(sender, receiver)

    def remove_component(self, name: str) -> Any:
        self._planned = False
        return super().remove_component(name)

    def plan(self) -> tuple[_Step, ...] | None:
        """The run order, or ``None`` when the graph needs Haystack's scheduler (a cycle or a variadic socket)."""
        if not self._planned:
            self._plan = self._make_plan()
            self._planned = True
        return self._plan

    def _make_plan(self) -> tuple[_Step, ...] | None:
        graph = self.graph
        if not networkx.is_directed_acyclic_graph(graph):
            return None
        steps = []
        for name in networkx.lexicographical_topological_sort(graph):
            node = graph.nodes[name]
            sockets = node["input_sockets"]
            if any(socket.is_variadic for socket in sockets.values()):
                return None
            receivers = tuple(
                (receiver, sender_socket.name, receiver_socket.name, conversion)
                for receiver, sender_socket, receiver_socket, conversion in self._find_receivers_from(name)
            )
            steps.append(
                _Step(
                    name=name,
                    node=node,
                    mandatory=tuple(key for key, socket in sockets.items() if socket.is_mandatory),
                    defaults=tuple(
                        (key, socket.default_value) for key, socket in sockets.items() if not socket.is_mandatory
                    ),
                    has_senders=any(socket.senders for socket in sockets.values()),
                    receivers=receivers,
                    connected_outputs=frozenset(output for _, output, _, _ in receivers),
                    copies_inputs=getattr(type(node["instance"]), READS_INPUTS_ONLY, False) is not True,
                )
            )
        return tuple(steps)

    def warm_up(self) -> None:
        super().warm_up()
        self._warm = True

    def run(  # noqa: D417 - Pipeline.run documents the parameters
        self,
        data: dict[str, Any],
        include_outputs_from: set[str] | None = None,
        *,
        break_point: Any = None,
        pipeline_snapshot: Any = None,
        snapshot_callback: Any = None,
    ) -> dict[str, Any]:
        """``Pipeline.run``, in the planned order where the graph allows (see the class doc)."""
        steps = self.plan()
        if steps is None or break_point is not None or pipeline_snapshot is not None:
            return super().run(
                data, include_outputs_from, break_point=break_point, pipeline_snapshot=pipeline_snapshot,
                snapshot_callback=snapshot_callback,
            )  # fmt: skip
        if not self._warm:
            self.warm_up()  # Pipeline.run warms every component on every run; once is what warm_up promises
        pipeline_running(self)  # telemetry, as Pipeline.run
        include = include_outputs_from or set()
        data = self._prepare_component_input_data(data)
        self.validate_input(data)
        traced = tracing.is_tracing_enabled()
        tags = {
            "haystack.pipeline.input_data": data,
            "haystack.pipeline.metadata": self.metadata,
            "haystack.pipeline.max_runs_per_component": self._max_runs_per_component,
            "haystack.pipeline.execution_mode": "sync",
        }
        with tracing.tracer.trace("haystack.pipeline.run", tags=tags) as span:
            outputs = self._run_plan(steps, data, include, span if traced else None)
            span.set_content_tag("haystack.pipeline.output_data", outputs)
        return outputs

    def _run_plan(
        self, steps: tuple[_Step, ...], data: dict[str, dict[str, Any]], include: set[str], span: Any
    ) -> dict[str, Any]:
        # received[component][socket]: the values that reached it (the caller's first, then the senders').
        received: dict[str, dict[str, Any]] = {name: dict(values) for name, values in data.items()}
        fed: set[str] = set()  # components a sender gave a value
        visits = dict.fromkeys(self.graph.nodes, 0)
        outputs: dict[str, Any] = {}
        for step in steps:
            values = received.get(step.name, {})
            if any(key not in values for key in step.mandatory):
                continue  # blocked: a mandatory input never came
            if not (step.name in fed or data.get(step.name) or not step.has_senders):
                continue  # no trigger
            inputs = dict(values)
            for key, default in step.defaults:
                if key not in inputs:
                    inputs[key] = default
            result = self._run_step(step, inputs, visits, span)
            for receiver, output, socket, conversion in step.receivers:
                if output not in result:
                    continue  # produced nothing for this connection: the receiver's default applies
                value = result[output]
                if conversion:
                    value = self._convert(step.name, receiver, output, socket, value, conversion)
                received.setdefault(receiver, {})[socket] = value
                fed.add(receiver)
            if step.name in include:
                outputs[step.name] = result
            else:
                unconnected = {key: value for key, value in result.items() if key not in step.connected_outputs}
                if unconnected:
                    outputs[step.name] = unconnected
        if self._is_pipeline_possibly_blocked(current_pipeline_outputs=outputs):
            logger.warning("Pipeline produced none of its outputs: a component's mandatory input never arrived.")
        return outputs

    def _run_step(self, step: _Step, inputs: dict[str, Any], visits: dict[str, int], span: Any) -> Mapping[str, Any]:
        if span is not None:  # tracing on: Haystack's own component run, spans and all
            return self._run_component(step.name, step.node, inputs, visits, parent_span=span)
        instance = step.node["instance"]
        # Looked up per call: components.services.pipeline_copy replaces it in that module.
        copied = haystack_pipeline._deepcopy_with_exceptions(inputs) if step.copies_inputs else inputs
        try:
            result = instance.run(**copied)
        except (BreakpointException, PipelineRuntimeError):
            raise
        except Exception as error:
            raise PipelineRuntimeError.from_exception(step.name, instance.__class__, error) from error
        visits[step.name] += 1
        if not isinstance(result, Mapping):
            raise PipelineRuntimeError.from_invalid_output(step.name, instance.__class__, result)
        _validate_component_output_keys(step.name, step.node, result)
        return result

    def _convert(self, sender: str, receiver: str, output: str, socket: str, value: Any, conversion: Any) -> Any:
        try:
            return _convert_value(value=value, conversion_strategy=conversion)
        except Exception as error:
            message = (
                f"Failed to perform conversion between components:\nSender component: '{sender}'\n"
                f"Sender socket: '{output}'\nReceiver component: '{receiver}'\nReceiver socket: '{socket}'\n"
                f"Error: {error}"
            )
            raise PipelineRuntimeError(component_name=None, component_type=None, message=message) from error
