// The sourcebound page: ask (streamed, cited answers), search, upload. Plain JavaScript, no build step.
// Every document or answer text reaches the DOM through textContent / text nodes, never as HTML
// (documents are untrusted input); the server's Content-Security-Policy is a second line.
"use strict";

(() => {
  const SOURCE_ID = /\[SourceId:\s*([a-zA-Z0-9-]+:\d+)\]/g;
  const PARTIAL_MARKER = /\[(S(o(u(r(c(e(I(d(:[^\]]*)?)?)?)?)?)?)?)?)?$/;
  const HISTORY_LIMIT = 40; // messages sent back as chat history (the server accepts up to 200)
  const STORE_IDENTITY = "sourcebound.identity";
  const STORE_KEY = "sourcebound.apiKey";

  const $ = (id) => document.getElementById(id);
  const SignIn = window.SourceboundSignIn;
  // mode: "trusted", "api_key" or "oidc" (signed in with the provider); me: what the server says a token grants.
  const state = { mode: "trusted", identity: {}, history: [], busy: false, me: null };

  // ---- small DOM helpers (text only) -------------------------------------------------------
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function splitTags(value) {
    return String(value || "")
      .split(",")
      .map((tag) => tag.trim())
      .filter(Boolean);
  }

  function score(value) {
    return typeof value === "number" ? value.toFixed(2) : "n/a";
  }

  // ---- identity ------------------------------------------------------------------------------
  function loadIdentity() {
    try {
      state.identity = JSON.parse(sessionStorage.getItem(STORE_IDENTITY) || "{}") || {};
    } catch (_) {
      state.identity = {};
    }
    state.identity.key = sessionStorage.getItem(STORE_KEY) || "";
    $("id-tenant").value = state.identity.tenant || "";
    $("id-tags").value = (state.identity.tags || []).join(", ");
    $("id-user").value = state.identity.user || "";
    $("id-project").value = state.identity.project || "";
    $("id-key").value = state.identity.key;
    if (!$("upload-tags").value) $("upload-tags").value = (state.identity.tags || []).join(", ");
  }

  function identityReady() {
    if (state.mode === "oidc") return Boolean(SignIn.session() && state.me);
    if (state.mode === "api_key") return Boolean(state.identity.key);
    return Boolean(state.identity.tenant) && (state.identity.tags || []).length > 0;
  }

  function showIdentity(open) {
    $("identity").hidden = !open;
    $("identity-toggle").setAttribute("aria-expanded", String(open));
    if (!open) return;
    if (state.mode === "oidc") ($("sign-out").hidden ? $("sign-in") : $("sign-out")).focus();
    else (state.mode === "api_key" ? $("id-key") : $("id-tenant")).focus();
  }

  function describeIdentity() {
    const id = state.identity;
    if (state.mode === "oidc") {
      const me = state.me;
      const signedIn = Boolean(me && SignIn.session());
      $("identity-toggle").textContent = signedIn ? `Identity: ${me.user_id} · ${me.tenant_id}` : "Identity: sign in";
      $("signed-in-as").textContent = signedIn
        ? `Signed in as ${SignIn.session().name || me.user_id} (${me.user_id}, tenant ${me.tenant_id}) · tags: ${
            me.tags.join(", ") || "none"
          } · may ${me.permissions.join(", ")}`
        : "";
      $("sign-in").hidden = signedIn;
      $("sign-out").hidden = !signedIn;
      return;
    }
    let text;
    if (state.mode === "api_key") text = id.key ? "API key set" : "No API key";
    else text = id.tenant ? `${id.tenant} · ${(id.tags || []).join(", ")}` : "Set identity";
    if (id.user) text += ` · ${id.user}`;
    if (id.project) text += ` · ${id.project}`;
    $("identity-toggle").textContent = `Identity: ${text}`;
  }

  function saveIdentity(event) {
    event.preventDefault();
    state.identity = {
      tenant: $("id-tenant").value.trim(),
      tags: splitTags($("id-tags").value),
      user: $("id-user").value.trim(),
      project: $("id-project").value.trim(),
      key: $("id-key").value.trim(),
    };
    const { key, ...rest } = state.identity;
    sessionStorage.setItem(STORE_IDENTITY, JSON.stringify(rest));
    if (key) sessionStorage.setItem(STORE_KEY, key);
    else sessionStorage.removeItem(STORE_KEY);
    if (!$("upload-tags").value) $("upload-tags").value = rest.tags.join(", ");
    describeIdentity();
    if (!identityReady()) {
      $("identity-status").textContent =
        state.mode === "api_key" ? "Enter your API key." : "Tenant and at least one tag are required.";
      return;
    }
    $("identity-status").textContent = "Saved for this browser tab.";
    showIdentity(false);
    $("question").focus();
  }

  function identityFields() {
    const id = state.identity;
    const body = {};
    if (state.mode === "oidc") return body; // the token decides; the body could only narrow it
    if (id.tenant) body.tenant_id = id.tenant;
    if ((id.tags || []).length) body.user_tags = id.tags;
    if (id.user) body.user_id = id.user;
    if (id.project) body.project_id = id.project;
    return body;
  }

  async function authHeaders() {
    if (state.mode === "oidc") {
      const session = await SignIn.current(); // renewed first when it is about to expire
      return session ? { Authorization: `Bearer ${session.token}` } : {};
    }
    return state.mode === "api_key" && state.identity.key ? { Authorization: `Bearer ${state.identity.key}` } : {};
  }

  function requireIdentity(statusNode) {
    if (identityReady()) return true;
    statusNode.textContent = {
      oidc: "Sign in first (Identity).",
      api_key: "Enter your API key first (Identity).",
      trusted: "Set your tenant and tags first (Identity).",
    }[state.mode];
    showIdentity(true);
    return false;
  }

  async function errorText(response) {
    try {
      const body = await response.json();
      // A refused token (expired, revoked, provider changed): ask to sign in again.
      if (response.status === 401 && state.mode === "oidc") SignIn.expire(body.message || "Sign in again.");
      if (body && body.message) return `${body.error || response.status}: ${body.message}`;
    } catch (_) {
      /* not JSON */
    }
    return `HTTP ${response.status}`;
  }

  // ---- tabs ----------------------------------------------------------------------------------
  const tabs = ["ask", "search", "upload"];

  function selectTab(name, focus) {
    for (const tab of tabs) {
      const selected = tab === name;
      const button = $(`tab-${tab}`);
      button.setAttribute("aria-selected", String(selected));
      button.tabIndex = selected ? 0 : -1;
      $(`panel-${tab}`).hidden = !selected;
      if (selected && focus) button.focus();
    }
    const first = { ask: "question", search: "search-query", upload: "upload-files" }[name];
    if (!focus) $(first).focus();
  }

  function tabKeys(event) {
    const current = tabs.findIndex((tab) => $(`tab-${tab}`).getAttribute("aria-selected") === "true");
    let next = null;
    if (event.key === "ArrowRight") next = (current + 1) % tabs.length;
    else if (event.key === "ArrowLeft") next = (current + tabs.length - 1) % tabs.length;
    else if (event.key === "Home") next = 0;
    else if (event.key === "End") next = tabs.length - 1;
    if (next === null) return;
    event.preventDefault();
    selectTab(tabs[next], true);
  }

  // ---- chips, tooltip, chunk dialog ----------------------------------------------------------
  function chipLabel(source) {
    return source.document_name ? `Source ${source.number}: ${source.document_name}` : `Source ${source.number}`;
  }

  // A link to where the source lives (docs/contract.md, "Sources"); only http(s) addresses become links, so no
  // document can put a script: or data: URL behind a click.
  function sourceLink(source) {
    const url = typeof source.url === "string" ? source.url : "";
    if (!/^https?:\/\//i.test(url)) return null;
    const link = el("a", "source-link", "open");
    link.href = url;
    link.target = "_blank";
    link.rel = "noopener noreferrer";
    link.title = source.title || url;
    return link;
  }

  function placeOf(source) {
    const parts = [];
    if (source.page_number !== null && source.page_number !== undefined) parts.push(`page ${source.page_number}`);
    if (source.section) parts.push(`section ${source.section}`);
    if (!parts.length && source.chunk_index !== undefined) parts.push(`chunk ${source.chunk_index}`);
    return parts.join(" · ");
  }

  function showTooltip(chip) {
    const source = chip._source;
    const tip = $("tooltip");
    tip.replaceChildren();
    if (!source || !source.document_name) {
      tip.append(el("div", "tip-title", source ? source.source_id : "Source"), el("div", "tip-meta", "Loading…"));
    } else {
      const scoreValue = source.relevance_score ?? source.score;
      tip.append(
        el("div", "tip-title", source.document_name),
        el("div", "tip-meta", `${placeOf(source)} · score ${score(scoreValue)} · ${source.source_id}`),
        el("div", "tip-snippet", source.snippet || ""),
        el("div", "tip-hint", "Click for the full passage"),
      );
    }
    tip.hidden = false;
    const box = chip.getBoundingClientRect();
    const width = Math.min(360, window.innerWidth - 16);
    tip.style.maxWidth = `${width}px`;
    const left = Math.max(8, Math.min(box.left + window.scrollX, window.scrollX + window.innerWidth - width - 8));
    tip.style.left = `${left}px`;
    tip.style.top = `${box.bottom + window.scrollY + 6}px`;
    chip.setAttribute("aria-describedby", "tooltip");
  }

  function hideTooltip() {
    $("tooltip").hidden = true;
  }

  function openChunk(source) {
    hideTooltip();
    $("chunk-title").textContent = source.document_name || source.source_id;
    const scoreValue = source.relevance_score ?? source.score;
    $("chunk-meta").textContent = [source.source_id, placeOf(source), `score ${score(scoreValue)}`]
      .filter(Boolean)
      .join(" · ");
    $("chunk-text").textContent = source.snippet_full || source.snippet || "";
    $("chunk-dialog").showModal();
  }

  function makeChip(source) {
    const chip = el("button", "chip", String(source.number));
    chip.type = "button";
    chip.dataset.sourceId = source.source_id;
    chip.setAttribute("aria-label", chipLabel(source));
    chip._source = source;
    chip.addEventListener("mouseenter", () => showTooltip(chip));
    chip.addEventListener("focus", () => showTooltip(chip));
    chip.addEventListener("mouseleave", hideTooltip);
    chip.addEventListener("blur", hideTooltip);
    chip.addEventListener("click", () => openChunk(chip._source));
    return chip;
  }

  // ---- answers -------------------------------------------------------------------------------
  // Sources numbered by first appearance in the answer, then any other cited source.
  function numberSources(text, citations) {
    const byId = new Map((citations || []).map((citation) => [citation.source_id, citation]));
    const sources = new Map();
    const add = (id) => {
      if (!sources.has(id)) sources.set(id, { ...(byId.get(id) || { source_id: id }), number: sources.size + 1 });
    };
    for (const match of text.matchAll(SOURCE_ID)) add(match[1]);
    for (const citation of citations || []) add(citation.source_id);
    return sources;
  }

  function renderAnswerText(node, text, sources) {
    const parts = [];
    let last = 0;
    for (const match of text.matchAll(SOURCE_ID)) {
      if (match.index > last) parts.push(document.createTextNode(text.slice(last, match.index)));
      parts.push(makeChip(sources.get(match[1])));
      last = match.index + match[0].length;
    }
    if (last < text.length) parts.push(document.createTextNode(text.slice(last)));
    node.replaceChildren(...parts);
  }

  function meter(label, value, max, className) {
    const row = el("div", `meter ${className || ""}`);
    const known = typeof value === "number";
    const fraction = known ? Math.max(0, Math.min(1, value / max)) : 0;
    row.append(el("span", "meter-label", label));
    const bar = el("span", "meter-bar");
    bar.setAttribute("role", "meter");
    bar.setAttribute("aria-label", label);
    bar.setAttribute("aria-valuemin", "0");
    bar.setAttribute("aria-valuemax", String(max));
    if (known) bar.setAttribute("aria-valuenow", String(value));
    const fill = el("span", "meter-fill");
    fill.style.width = `${Math.round(fraction * 100)}%`;
    bar.append(fill);
    const shown = max === 1 ? value.toFixed(2) : `${value}%`;
    row.append(bar, el("span", "meter-value", known ? shown : "n/a"));
    return row;
  }

  function renderConfidence(confidence, action) {
    const box = el("div", "confidence");
    box.dataset.action = action;
    box.append(meter("Confidence", confidence.overall, 100, "overall"));
    const parts = el("div", "confidence-parts");
    parts.append(
      meter("Retrieval", confidence.retrieval_score, 1, "part retrieval"),
      meter("Coverage", confidence.coverage_score, 1, "part coverage"),
      meter("LLM check", confidence.llm_score, 100, "part llm"),
    );
    box.append(parts);
    return box;
  }

  function renderRoute(route) {
    const card = el("section", "route-card");
    card.setAttribute("aria-label", "Routed to an owner");
    card.append(el("h3", null, "Routed to a person who knows"));
    const owner = route.owner_email || route.owner_user_id || "the administrator";
    const who = el("p", "route-owner");
    who.append(el("strong", null, owner));
    if (route.owner_email && route.owner_user_id) who.append(document.createTextNode(` (${route.owner_user_id})`));
    const tag = route.fallback ? `Tag “${route.tag}” has no owner: sent to the administrator.` : `Owner of the tag “${route.tag}”`;
    card.append(who, el("p", "route-tag", tag), el("p", "route-reason", route.reason));
    return card;
  }

  function renderSourceList(sources) {
    const list = el("ol", "source-list");
    list.setAttribute("aria-label", "Sources");
    for (const source of sources.values()) {
      if (!source.document_name) continue;
      const item = el("li");
      item.append(makeChip(source), document.createTextNode(` ${source.document_name}`));
      const where = placeOf(source);
      if (where) item.append(el("span", "meta", ` · ${where}`));
      const link = sourceLink(source);
      if (link) item.append(document.createTextNode(" "), link);
      list.append(item);
    }
    return list;
  }

  // ---- feedback: thumbs on each answer (POST /feedback with the answer's query_id) ---------------
  async function sendFeedback(queryId, rating, comment) {
    const body = { query_id: queryId, rating };
    if (comment) body.comment = comment;
    // Only who asked: the server checks the query is this asker's (trusted mode: tenant and user; a key or a
    // token names its own).
    if (state.mode !== "oidc") {
      if (state.identity.tenant) body.tenant_id = state.identity.tenant;
      if (state.identity.user) body.user_id = state.identity.user;
    }
    const response = await fetch("/feedback", {
      method: "POST",
      headers: { "Content-Type": "application/json", ...(await authHeaders()) },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(await errorText(response));
    return (await response.json()).result;
  }

  // The thumb is an SVG in the page's <template> (no emoji font needed, nothing loaded).
  function thumbButton(label, down) {
    const button = el("button", "secondary thumb");
    const icon = $("thumb-icon").content.firstElementChild.cloneNode(true);
    if (down) icon.classList.add("down");
    button.append(icon, document.createTextNode(` ${label}`));
    return button;
  }

  function renderFeedback(queryId) {
    const bar = el("div", "feedback");
    bar.setAttribute("role", "group");
    bar.setAttribute("aria-label", "Was this answer helpful?");
    const up = thumbButton("Helpful", false);
    const down = thumbButton("Not helpful", true);
    const comment = el("input", "feedback-comment");
    comment.type = "text";
    comment.maxLength = 2000;
    comment.placeholder = "What was wrong or missing? (optional)";
    comment.setAttribute("aria-label", "What was wrong or missing");
    const send = el("button", "feedback-send", "Send");
    const status = el("span", "status feedback-status");
    status.setAttribute("role", "status");
    for (const button of [up, down, send]) button.type = "button";
    up.dataset.rating = "up";
    down.dataset.rating = "down";
    comment.hidden = true;
    send.hidden = true;
    const submit = async (rating) => {
      for (const button of [up, down, send]) button.disabled = true;
      status.textContent = "Sending…";
      try {
        await sendFeedback(queryId, rating, rating === "down" ? comment.value.trim() : "");
        (rating === "up" ? up : down).setAttribute("aria-pressed", "true");
        comment.hidden = true;
        send.hidden = true;
        status.textContent = rating === "up" ? "Thanks: recorded." : "Thanks: the owner of these documents will see it.";
        bar.dataset.sent = rating;
      } catch (error) {
        status.textContent = error.message || String(error);
        for (const button of [up, down, send]) button.disabled = false;
      }
    };
    up.addEventListener("click", () => submit("up"));
    down.addEventListener("click", () => {
      comment.hidden = false;
      send.hidden = false;
      comment.focus();
    });
    send.addEventListener("click", () => submit("down"));
    comment.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        submit("down");
      }
    });
    bar.append(up, down, comment, send, status);
    return bar;
  }

  function finishAnswer(bubble, text, extra) {
    const sources = numberSources(text, extra.citations);
    renderAnswerText(bubble.querySelector(".answer-text"), text, sources);
    bubble.dataset.action = extra.action;
    const details = el("div", "answer-details");
    details.append(renderConfidence(extra.confidence, extra.action));
    if (extra.action === "ROUTE" && extra.route_to) details.append(renderRoute(extra.route_to));
    if (sources.size) details.append(renderSourceList(sources));
    if (extra.query_id) details.append(renderFeedback(extra.query_id));
    bubble.append(details);
  }

  function addMessage(role, text) {
    const item = el("li", `message ${role}`);
    item.append(el("div", "who", role === "user" ? "You" : "sourcebound"));
    const body = el("div", role === "user" ? "question-text" : "answer-text", text);
    item.append(body);
    $("conversation").append(item);
    item.scrollIntoView({ block: "end" });
    return item;
  }

  async function* serverSentEvents(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = event
          .split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(5).trimStart())
          .join("\n");
        if (data) yield data;
      }
    }
  }

  async function ask(question) {
    hideTooltip();
    state.busy = true;
    $("ask-button").disabled = true;
    addMessage("user", question);
    const bubble = addMessage("assistant", "");
    bubble.classList.add("streaming");
    bubble.setAttribute("aria-busy", "true");
    const textNode = bubble.querySelector(".answer-text");
    const messages = [...state.history.slice(-HISTORY_LIMIT), { role: "user", content: question }];
    let text = "";
    let extra = null;
    try {
      const response = await fetch("/v1/chat/completions", {
        method: "POST",
        headers: { "Content-Type": "application/json", ...(await authHeaders()) },
        body: JSON.stringify({ model: "rag", stream: true, messages, ...identityFields() }),
      });
      if (!response.ok) throw new Error(await errorText(response));
      for await (const data of serverSentEvents(response)) {
        if (data === "[DONE]") break;
        const chunk = JSON.parse(data);
        const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
        if (delta && delta.content) {
          text += delta.content;
          // Chips appear as soon as a marker is complete; a half-received marker stays hidden.
          const shown = text.replace(PARTIAL_MARKER, "");
          renderAnswerText(textNode, shown, numberSources(shown, []));
        }
        if (chunk.sourcebound) extra = chunk.sourcebound;
      }
      if (!extra) throw new Error("The answer stream ended without its sources.");
      finishAnswer(bubble, text, extra);
      state.history.push({ role: "user", content: question }, { role: "assistant", content: text });
    } catch (error) {
      bubble.classList.add("error");
      const problem = el("p", "error-text", error.message || String(error));
      problem.setAttribute("role", "alert");
      bubble.append(problem);
    } finally {
      bubble.classList.remove("streaming");
      bubble.removeAttribute("aria-busy");
      state.busy = false;
      $("ask-button").disabled = false;
    }
  }

  function submitQuestion(event) {
    event.preventDefault();
    const question = $("question").value.trim();
    if (!question || state.busy) return;
    if (!requireIdentity($("identity-status"))) return;
    $("question").value = "";
    ask(question);
  }

  function questionKeys(event) {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) submitQuestion(event);
  }

  function newConversation() {
    state.history = [];
    $("conversation").replaceChildren();
    $("question").focus();
  }

  // ---- search --------------------------------------------------------------------------------
  async function search(event) {
    event.preventDefault();
    const status = $("search-status");
    const query = $("search-query").value.trim();
    if (!query || !requireIdentity(status)) return;
    status.textContent = "Searching…";
    $("search-results").replaceChildren();
    const body = {
      query,
      search_mode: $("search-mode").value,
      k: Number($("search-k").value) || 8,
      ...identityFields(),
    };
    try {
      const response = await fetch("/search/run", {
        method: "POST",
        headers: { "Content-Type": "application/json", ...(await authHeaders()) },
        body: JSON.stringify(body),
      });
      if (!response.ok) throw new Error(await errorText(response));
      const result = (await response.json()).result;
      status.textContent = `${result.results.length} result(s), ${result.search_mode}, ${Math.round(
        result.metadata.latency_ms,
      )} ms`;
      result.results.forEach((hit, index) => {
        const item = el("li", "result");
        item.dataset.sourceId = hit.source_id;
        const head = el("div", "result-head");
        const open = el("button", "link", hit.document_name);
        open.type = "button";
        open.addEventListener("click", () => openChunk(hit));
        head.append(el("span", "rank", `${index + 1}`), open, el("span", "meta", `score ${score(hit.score)}`));
        const link = sourceLink(hit);
        if (link) head.append(link);
        item.append(
          head,
          el("div", "meta", `${hit.source_id} · ${(hit.tags || []).join(", ")}`),
          el("p", "snippet", hit.snippet),
        );
        $("search-results").append(item);
      });
    } catch (error) {
      status.textContent = error.message || String(error);
    }
  }

  // ---- upload --------------------------------------------------------------------------------
  let pendingFiles = [];

  function listFiles(files) {
    pendingFiles = Array.from(files);
    $("upload-list").replaceChildren(
      ...pendingFiles.map((file) => {
        const item = el("li", "upload-item");
        item.append(el("span", "file-name", file.name), el("span", "file-status", "ready"));
        return item;
      }),
    );
  }

  async function uploadOne(file, item) {
    const status = item.querySelector(".file-status");
    status.textContent = "uploading…";
    item.dataset.status = "uploading";
    const me = state.mode === "oidc" ? state.me : null;
    const id = me ? { tenant: me.tenant_id, tags: me.tags, user: me.user_id } : state.identity;
    const scope = $("upload-scope").value;
    const form = new FormData();
    form.append("files", file, file.name);
    form.append("tenant_id", id.tenant || "");
    form.append("tags", $("upload-tags").value || (id.tags || []).join(","));
    form.append("scope", scope);
    if (id.user && (!me || scope !== "tenant")) form.append("user_id", id.user);
    if (id.project) form.append("project_id", id.project);
    try {
      const response = await fetch("/index/upload", { method: "POST", headers: await authHeaders(), body: form });
      if (!response.ok) throw new Error(await errorText(response));
      const document_ = (await response.json()).result.documents[0] || { status: "error", error: "no result" };
      item.dataset.status = document_.status;
      item.dataset.documentId = document_.document_id || "";
      status.textContent =
        document_.status === "error"
          ? `error: ${document_.error}`
          : `${document_.status} · ${document_.chunks} chunk(s) · ${document_.document_id}`;
    } catch (error) {
      item.dataset.status = "error";
      status.textContent = error.message || String(error);
    }
  }

  async function upload(event) {
    event.preventDefault();
    const items = $("upload-list").querySelectorAll(".upload-item");
    if (!pendingFiles.length) {
      $("upload-list").replaceChildren(el("li", "upload-item", "Choose or drop files first."));
      return;
    }
    if (!requireIdentity($("identity-status"))) return;
    $("upload-button").disabled = true;
    // One request per file, so each gets its own status and error.
    for (let index = 0; index < pendingFiles.length; index += 1) await uploadOne(pendingFiles[index], items[index]);
    pendingFiles = [];
    $("upload-files").value = "";
    $("upload-button").disabled = false;
  }

  function wireDropZone() {
    const zone = $("drop-zone");
    zone.addEventListener("dragover", (event) => {
      event.preventDefault();
      zone.classList.add("over");
    });
    zone.addEventListener("dragleave", () => zone.classList.remove("over"));
    zone.addEventListener("drop", (event) => {
      event.preventDefault();
      zone.classList.remove("over");
      if (event.dataTransfer && event.dataTransfer.files.length) listFiles(event.dataTransfer.files);
    });
    $("upload-files").addEventListener("change", (event) => listFiles(event.target.files));
  }

  // ---- start ---------------------------------------------------------------------------------
  function applyMode(mode) {
    state.mode = ["api_key", "oidc"].includes(mode) ? mode : "trusted";
    document.body.dataset.mode = state.mode;
    $("mode-badge").textContent = { oidc: "organisation sign-in", api_key: "API-key mode", trusted: "trusted mode" }[
      state.mode
    ];
    for (const node of document.querySelectorAll("#identity [data-mode]")) {
      node.hidden = !node.dataset.mode.split(" ").includes(state.mode);
    }
    describeIdentity();
    if (!identityReady()) showIdentity(true);
  }

  // ---- organisation sign-in (sign_in.js) -------------------------------------------------------
  // What the server grants the current token (tenant, user, tags, permissions): shown, and used for uploads.
  async function loadGrant() {
    state.me = null;
    const headers = await authHeaders();
    if (headers.Authorization) {
      const response = await fetch("/auth/me", { headers });
      if (response.ok) state.me = await response.json();
      else $("sign-in-status").textContent = await errorText(response);
    }
    describeIdentity();
    if (!$("upload-tags").value && state.me) $("upload-tags").value = state.me.tags.join(", ");
  }

  function signInChanged(session, reason) {
    if (!session) {
      state.me = null;
      $("sign-in-status").textContent = reason;
      describeIdentity();
      showIdentity(true);
    } else if (state.me) {
      loadGrant(); // a renewed token may carry other groups: show what the server grants now
    }
  }

  async function startSignIn(config) {
    // Every mode with oidc signs people in at the provider; API keys (oidc,api_key) are for services.
    const oidc = config.oidc || {};
    if (!oidc.sign_in) {
      $("sign-in").disabled = true;
      $("sign-in-status").textContent =
        oidc.error || "Sign-in is not configured on this server (SOURCEBOUND_OIDC_CLIENT_ID); ask its operator.";
      return;
    }
    SignIn.configure(oidc, signInChanged);
    $("sign-in").addEventListener("click", () =>
      SignIn.begin().catch((error) => ($("sign-in-status").textContent = error.message)),
    );
    $("sign-out").addEventListener("click", () => SignIn.signOut());
    let returned = false;
    try {
      returned = await SignIn.completeRedirect();
    } catch (error) {
      $("sign-in-status").textContent = error.message;
    }
    if (SignIn.session()) await loadGrant();
    if (returned && identityReady()) showIdentity(false);
  }

  async function start() {
    loadIdentity();
    $("identity-form").addEventListener("submit", saveIdentity);
    $("identity-toggle").addEventListener("click", () => showIdentity($("identity").hidden));
    for (const tab of tabs) $(`tab-${tab}`).addEventListener("click", () => selectTab(tab, false));
    document.querySelector(".tabs").addEventListener("keydown", tabKeys);
    $("ask-form").addEventListener("submit", submitQuestion);
    $("question").addEventListener("keydown", questionKeys);
    $("new-chat").addEventListener("click", newConversation);
    $("search-form").addEventListener("submit", search);
    $("upload-form").addEventListener("submit", upload);
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape") hideTooltip();
    });
    wireDropZone();
    let config = { auth_mode: "trusted" };
    try {
      config = await (await fetch("/auth/config")).json();
    } catch (_) {
      /* the page still works in trusted mode */
    }
    const methods = String(config.auth_mode || "trusted").split(",");
    // People sign in at the provider; with oidc,api_key and no sign-in configured, the page takes a key instead.
    const configured = Boolean(config.oidc && config.oidc.sign_in);
    const signIn = methods.includes("oidc") && (configured || !methods.includes("api_key"));
    const mode = signIn ? "oidc" : methods.includes("api_key") ? "api_key" : "trusted";
    applyMode(mode);
    if (mode === "oidc") await startSignIn(config);
    document.body.dataset.ready = "true";
  }

  start();
})();
