"""Thin ipywidgets views over memkit objects: they call memkit and draw with ``memkit.lab.viz``.

Each view has ``show()``/``widget``; pass ``display=False`` in headless runs to build it without rendering.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import ipywidgets as W
import pandas as pd
from IPython.display import display as ipy_display

from ..write import reconcile
from . import viz
from ..errors import InvalidArgument
from ..store import FactStore
from ..memory import Memory
from ..write.rules import RuleExtractor
from ..types import Event


def _html_table(df: Any) -> str:
    if not len(df):
        return "<i>(none)</i>"
    cell = 'style="padding:2px 10px;text-align:left;border-bottom:1px solid #ddd"'
    return df.to_html(index=False, border=0, escape=True).replace("<td>", f"<td {cell}>").replace("<th>", f"<th {cell}>")


class _View:
    widget: W.Widget

    def show(self) -> "_View":
        ipy_display(self.widget)
        return self

    def _ipython_display_(self) -> None:
        ipy_display(self.widget)


class LayerInspector(_View):
    """Type a turn, watch the episodic window, the summary and the user's facts change."""

    def __init__(self, memory: Memory, user_id: str, session_id: str, display: bool = True) -> None:
        self.memory, self.user_id, self.session_id = memory, user_id, session_id
        self.text = W.Text(placeholder="Say something as the user…", layout=W.Layout(width="70%"),
                           continuous_update=False)
        self.send_button = W.Button(description="send", button_style="primary")
        self.window_html, self.facts_html, self.events_html = W.HTML(), W.HTML(), W.HTML()
        self.send_button.on_click(lambda _: self.send(self.text.value))
        self.text.observe(lambda change: self.send(change["new"]), names="value")  # Enter sends
        self.widget = W.VBox([
            W.HBox([self.text, self.send_button]),
            W.HBox([W.VBox([W.HTML("<b>Episodic: window + summary</b>"), self.window_html], layout=W.Layout(width="50%")),
                    W.VBox([W.HTML("<b>Semantic: current facts</b>"), self.facts_html], layout=W.Layout(width="50%"))]),
            W.HTML("<b>Events of the last turn</b>"), self.events_html])
        self.refresh([])
        if display:
            self.show()

    def send(self, text: str, role: str = "user") -> list[Event]:
        """Observe one turn and redraw."""
        if not text.strip():
            return []
        events = self.memory.observe(self.user_id, self.session_id, role, text)
        self.text.value = ""
        self.refresh(events)
        return events

    def refresh(self, events: Sequence[Event]) -> None:
        buf = self.memory.session(self.user_id, self.session_id)
        lines = [f"<div><code>{t.role}</code> {_esc(t.content[:200])} "
                 f"<small>({t.tokens} tok)</small></div>" for t in buf.window]
        summary = f"<div style='color:#b35c00'><b>summary</b> ({buf.summary.tokens} tok): {_esc(buf.summary.text)}</div>" \
            if buf.summary.text else ""
        self.window_html.value = summary + "".join(lines) + \
            f"<small>window {buf.window_tokens_used}/{buf.window_tokens} tokens</small>"
        self.facts_html.value = _html_table(viz.facts_table(self.memory.store.get(self.user_id))[["key", "text"]])
        self.events_html.value = _html_table(viz.events_table(events)[["event", "key", "after", "reason"]])


class ConflictTimeline(_View):
    """Pick a policy, scrub through a conversation, see the events and the fact versions at each step."""

    def __init__(self, turns: Sequence[str], policies: Sequence[str] = ("similarity", "keyed", "append", "temporal"),
                 embedder: Any = None, display: bool = True) -> None:
        self.turns = list(turns)
        self.steps: dict[str, list[tuple[list[Event], list]]] = {}
        extractor = RuleExtractor()
        for policy in policies:  # replay once per policy, keep every step
            store = FactStore.ephemeral(embedder)
            states = []
            for i, text in enumerate(self.turns):
                events = reconcile.plan(policy, store, "u", extractor.extract(text, (f"t{i + 1}",)), t=1000.0 + i)
                reconcile.apply(store, "u", events)
                states.append((events, store.get("u", include_superseded=True)))
            self.steps[policy] = states
        self.policy = W.Dropdown(options=list(policies), value=list(policies)[0], description="policy")
        self.step = W.IntSlider(min=1, max=len(self.turns), value=len(self.turns), description="turn")
        self.turn_html, self.events_html, self.facts_html = W.HTML(), W.HTML(), W.HTML()
        self.plot = W.Output()
        for w in (self.policy, self.step):
            w.observe(lambda _: self.refresh(), names="value")
        self.widget = W.VBox([W.HBox([self.policy, self.step]), self.turn_html, self.events_html, self.facts_html,
                              self.plot])
        self.refresh()
        if display:
            self.show()

    def state(self, policy: str, step: int) -> tuple[list[Event], list]:
        return self.steps[policy][step - 1]

    def refresh(self) -> None:
        events, facts = self.state(self.policy.value, self.step.value)
        self.turn_html.value = f"<b>turn {self.step.value}:</b> {_esc(self.turns[self.step.value - 1])}"
        self.events_html.value = _html_table(viz.events_table(events)[["event", "key", "before", "after"]])
        self.facts_html.value = _html_table(viz.facts_table(facts)[["key", "text", "current"]])
        _draw(self.plot, viz.fact_timeline(facts, until=1000.0 + len(self.turns)) if facts else None)


class RecallExplorer(_View):
    """A query box with k and floor sliders: scored hits against the floor and the resulting context."""

    def __init__(self, memory: Memory, user_id: str, session_id: str, query: str = "", budget: int = 600,
                 display: bool = True) -> None:
        self.memory, self.user_id, self.session_id, self.budget = memory, user_id, session_id, budget
        self.query = W.Text(value=query, description="query", layout=W.Layout(width="70%"))
        self.k = W.IntSlider(value=memory.read_options.k, min=1, max=10, description="k")
        self.floor = W.FloatSlider(value=memory.read_options.min_score, min=0.0, max=1.0, step=0.05, description="floor")
        self.table_html = W.HTML()
        self.plot = W.Output()
        for w in (self.query, self.k, self.floor):
            w.observe(lambda _: self.refresh(), names="value")
        self.widget = W.VBox([self.query, W.HBox([self.k, self.floor]), self.plot, self.table_html])
        self.refresh()
        if display:
            self.show()

    def refresh(self) -> None:
        hits = self.memory.store.search(self.user_id, self.query.value, k=10, min_score=-1.0)
        ctx = self.memory.context(self.user_id, self.session_id, self.query.value, budget=self.budget,
                                  k=self.k.value, min_score=self.floor.value)  # settings as arguments
        self.table_html.value = _html_table(viz.context_table(ctx)) + \
            "<br>" + _html_table(pd.DataFrame(ctx.account()))
        _draw(self.plot, viz.recall_scores(hits, self.floor.value) if hits else None)


class ContextExplorer(_View):
    """Pick a question and a budget: every line of the built context, which channel brought it in, and
    whether it is one of the question's evidence turns (those rows are marked and shaded). The lines are in
    the order the context gives them, or in the order the read ranked them (``order``)."""

    COLUMNS = ["part", "rank", "session", "date", "why", "item", "evidence"]
    ORDERS = ("context order", "rank order")

    def __init__(self, memory: Memory, user_id: str, questions: Sequence[tuple[str, Sequence[str]]],
                 budget: int = 400, display: bool = True, start: str | None = None) -> None:
        self.memory, self.user_id = memory, user_id
        self.evidence = {q: set(ev) for q, ev in questions}
        options = [q for q, _ in questions]
        if start is not None and start not in self.evidence:
            raise InvalidArgument(f"start must be one of the questions, got {start!r}")
        self.question = W.Dropdown(options=options, value=start or options[0], description="question",
                                   layout=W.Layout(width="90%"), style={"description_width": "70px"})
        self.budget = W.IntSlider(value=budget, min=100, max=2000, step=100, description="budget")
        self.order = W.ToggleButtons(options=self.ORDERS, value=self.ORDERS[0], description="lines in")
        self.summary = W.HTML()
        self.table_html = W.HTML()
        for w in (self.question, self.budget, self.order):
            w.observe(lambda _: self.refresh(), names="value")
        self.widget = W.VBox([self.question, W.HBox([self.budget, self.order]), self.summary, self.table_html])
        self.refresh()
        if display:
            self.show()

    def refresh(self) -> None:
        q = self.question.value
        ctx = self.memory.context(self.user_id, "explorer", q, budget=self.budget.value)
        table = viz.context_table(ctx, evidence=self.evidence[q])
        found = int(table["evidence"].sum())
        notes = "".join(f"<br><i>{_esc(n)}</i>" for n in ctx.notes if "observe it first" not in n)
        self.summary.value = (f"<b>{ctx.tokens}</b> tokens; evidence turns in context: <b>{found}</b> of "
                              f"{len(self.evidence[q])} (rows marked ✔){notes}")
        if self.order.value == "rank order":
            table = table.sort_values("rank", kind="stable", key=lambda r: r.map(lambda v: v if v != "" else 1 << 30))
        table = table.assign(evidence=table["evidence"].map({True: "✔", False: ""}))
        html = _html_table(table[self.COLUMNS])
        for row in html.split("<tr>")[1:]:  # shade the evidence rows
            if ">✔</td>" in row:
                html = html.replace("<tr>" + row, '<tr style="background:#e3f4e1">' + row, 1)
        self.table_html.value = html


class ThreadsAndMemory(_View):
    """An agent's two stores side by side: pick a thread to see what its checkpointer holds (``threads``: a
    table of messages per thread id), beside what memkit holds of the user (``memory``: tables by title)."""

    def __init__(self, threads: dict[str, pd.DataFrame], memory: dict[str, pd.DataFrame], display: bool = True) -> None:
        if not threads:
            raise InvalidArgument("ThreadsAndMemory needs at least one thread")
        self.threads = threads
        self.pick = W.Dropdown(options=list(threads), description="thread")
        self.thread_html = W.HTML()
        held = "".join(f"<p><b>{_esc(title)}</b></p>{_html_table(df)}" for title, df in memory.items())
        self.widget = W.VBox([self.pick, W.HBox([
            W.VBox([W.HTML("<b>Checkpointer: the thread</b>"), self.thread_html], layout=W.Layout(width="50%")),
            W.VBox([W.HTML("<b>memkit: the user</b>"), W.HTML(held)], layout=W.Layout(width="50%"))])])
        self.pick.observe(lambda _: self.refresh(), names="value")
        self.refresh()
        if display:
            self.show()

    def refresh(self) -> None:
        self.thread_html.value = _html_table(self.threads[self.pick.value])


def _draw(output: W.Output, fig: Any) -> None:
    """Put a plotly figure into an Output widget as one state update (plotly's mimetype bundle).

    Not ``with output: fig.show()``: that toggles the widget's ``msg_id`` and sends clear/display
    messages, and with them headless runs (nbclient, papermill) intermittently waited forever for a
    cell's reply (jupyter/nbclient#312).
    """
    if fig is None:
        output.outputs = ()
        return
    bundle = {"application/vnd.plotly.v1+json": {**json.loads(fig.to_json()), "config": {}}}
    output.outputs = ({"output_type": "display_data", "data": bundle, "metadata": {}},)


def _esc(text: str) -> str:
    import html

    return html.escape(text)
