// The sourcebound console: one page for a tenant's admin over the public HTTP API only (documents, sources,
// keys, tag owners, glossary, knowledge gaps, feedback). Plain JavaScript, no build step. Every value from the
// server reaches the DOM through textContent (documents and questions are untrusted input); the server's
// Content-Security-Policy is a second line. What the key may do is the API's decision: a refusal is shown as is.
"use strict";

(() => {
  const STORE_KEY = "sourcebound.console.apiKey";
  const STORE_IDENTITY = "sourcebound.console.identity";
  const PANELS = ["overview", "documents", "sources", "keys", "tags", "glossary", "gaps", "feedback"];

  const $ = (id) => document.getElementById(id);
  const state = { mode: "trusted", key: "", tenant: "", tenantOfResult: "", health: null, loaded: new Set() };

  // ---- small DOM helpers (text only) -------------------------------------------------------
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function button(label, className, onClick) {
    const node = el("button", className || "secondary", label);
    node.type = "button";
    node.addEventListener("click", onClick);
    return node;
  }

  function row(cells) {
    const tr = el("tr");
    for (const cell of cells) {
      const td = el("td");
      if (cell instanceof Node) td.append(cell);
      else td.textContent = cell === null || cell === undefined ? "" : String(cell);
      tr.append(td);
    }
    return tr;
  }

  function fact(list, label, value) {
    list.append(el("dt", null, label), el("dd", null, value === null || value === undefined ? "n/a" : value));
  }

  function when(value) {
    if (value === null || value === undefined || value === "") return "";
    const date = typeof value === "number" ? new Date(value * 1000) : new Date(value);
    return Number.isNaN(date.getTime()) ? String(value) : date.toISOString().replace("T", " ").slice(0, 16);
  }

  function percent(value) {
    return typeof value === "number" ? `${Math.round(value * 1000) / 10}%` : "n/a";
  }

  function splitList(value) {
    return String(value || "")
      .split(",")
      .map((part) => part.trim())
      .filter(Boolean);
  }

  // ---- the API -----------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  function withTenant(path) {
    if (state.mode !== "trusted") return path;
    const url = new URL(path, window.location.origin);
    if (state.tenant) url.searchParams.set("tenant_id", state.tenant);
    return url.pathname + url.search;
  }

  async function api(method, path, body) {
    const headers = {};
    if (state.mode === "api_key" && state.key) headers.Authorization = `Bearer ${state.key}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(withTenant(path), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let payload = null;
    try {
      payload = await response.json();
    } catch (_) {
      /* not JSON */
    }
    if (!response.ok) {
      const message = payload && payload.message ? `${payload.error}: ${payload.message}` : `HTTP ${response.status}`;
      throw new ApiError(response.status, message);
    }
    return payload && "result" in payload ? payload.result : payload;
  }

  function tenantBody(extra) {
    return state.tenantOfResult ? { tenant_id: state.tenantOfResult, ...extra } : { ...extra };
  }

  function showProblem(statusNode, error) {
    statusNode.textContent = error.message || String(error);
    statusNode.classList.add("problem");
    if (error.status === 401 || error.status === 403) {
      $("refusal").textContent = `This identity is refused: ${error.message}`;
      $("refusal").hidden = false;
    }
  }

  function clearProblem(statusNode, text) {
    statusNode.classList.remove("problem");
    statusNode.textContent = text || "";
  }

  // ---- identity ----------------------------------------------------------------------------
  function loadIdentity() {
    state.key = sessionStorage.getItem(STORE_KEY) || "";
    try {
      const saved = JSON.parse(sessionStorage.getItem(STORE_IDENTITY) || "{}") || {};
      state.tenant = saved.tenant || "";
    } catch (_) {
      state.tenant = "";
    }
    $("id-key").value = state.key;
    $("id-tenant").value = state.tenant;
  }

  function identityReady() {
    return state.mode === "api_key" ? Boolean(state.key) : Boolean(state.tenant);
  }

  function showIdentity(open) {
    $("identity").hidden = !open;
    $("identity-toggle").setAttribute("aria-expanded", String(open));
    if (open) (state.mode === "api_key" ? $("id-key") : $("id-tenant")).focus();
  }

  function describeIdentity() {
    let text;
    if (state.mode === "api_key") text = state.key ? "key set" : "no key";
    else text = state.tenant || "set tenant";
    $("identity-toggle").textContent = `Identity: ${text}`;
  }

  function saveIdentity(event) {
    event.preventDefault();
    state.key = $("id-key").value.trim();
    state.tenant = $("id-tenant").value.trim();
    state.tenantOfResult = "";
    if (state.key) sessionStorage.setItem(STORE_KEY, state.key);
    else sessionStorage.removeItem(STORE_KEY);
    sessionStorage.setItem(STORE_IDENTITY, JSON.stringify({ tenant: state.tenant }));
    describeIdentity();
    if (!identityReady()) {
      $("identity-status").textContent = state.mode === "api_key" ? "Enter an admin API key." : "Name the tenant.";
      return;
    }
    $("identity-status").textContent = "Saved for this browser tab.";
    $("refusal").hidden = true;
    state.loaded.clear();
    showIdentity(false);
    loadPanel(currentPanel());
  }

  // ---- tabs --------------------------------------------------------------------------------
  function currentPanel() {
    return PANELS.find((name) => $(`tab-${name}`).getAttribute("aria-selected") === "true") || "overview";
  }

  function selectPanel(name, focus) {
    for (const panel of PANELS) {
      const selected = panel === name;
      const tab = $(`tab-${panel}`);
      tab.setAttribute("aria-selected", String(selected));
      tab.tabIndex = selected ? 0 : -1;
      $(`panel-${panel}`).hidden = !selected;
      if (selected && focus) tab.focus();
    }
    if (!state.loaded.has(name)) loadPanel(name);
  }

  function tabKeys(event) {
    const current = PANELS.indexOf(currentPanel());
    let next = null;
    if (event.key === "ArrowRight") next = (current + 1) % PANELS.length;
    else if (event.key === "ArrowLeft") next = (current + PANELS.length - 1) % PANELS.length;
    else if (event.key === "Home") next = 0;
    else if (event.key === "End") next = PANELS.length - 1;
    if (next === null) return;
    event.preventDefault();
    selectPanel(PANELS[next], true);
  }

  const loaders = {
    overview: loadOverview,
    documents: loadDocuments,
    sources: loadSources,
    keys: loadKeys,
    tags: loadTags,
    glossary: loadGlossary,
    gaps: loadGaps,
    feedback: loadFeedback,
  };

  async function loadPanel(name) {
    const status = $(`${name}-status`);
    if (!identityReady()) {
      status.textContent = state.mode === "api_key" ? "Enter an admin API key (Identity)." : "Name the tenant (Identity).";
      showIdentity(true);
      return;
    }
    clearProblem(status, "Loading…");
    $(`panel-${name}`).setAttribute("aria-busy", "true");
    try {
      await loaders[name]();
      state.loaded.add(name);
      $(`panel-${name}`).dataset.loaded = "true";
    } catch (error) {
      showProblem(status, error);
    } finally {
      $(`panel-${name}`).removeAttribute("aria-busy");
    }
  }

  // ---- overview ----------------------------------------------------------------------------
  async function loadOverview() {
    const health = await api("GET", "/health");
    const gaps = await api("GET", "/insights/gaps");
    state.tenantOfResult = gaps.tenant_id;
    const facts = $("overview-health");
    facts.replaceChildren();
    fact(facts, "Status", health.status);
    fact(facts, "Tenant", gaps.tenant_id);
    fact(facts, "Identity mode", health.auth_mode);
    fact(facts, "Version", health.version);
    fact(facts, "Chunks in the store", health.store && health.store.points);
    fact(facts, "Answer backend", health.generator && `${health.generator.backend} (${health.generator.model})`);
    const queue = health.embedding_queue || {};
    fact(facts, "Sync jobs pending", queue.jobs_pending);
    const quality = gaps.quality;
    $("overview-window").textContent = String(gaps.window_days);
    const answers = $("overview-quality");
    answers.replaceChildren();
    fact(answers, "Answers", quality.answers);
    fact(answers, "Cited", quality.cited);
    fact(answers, "Declined (not cited)", percent(quality.decline_rate));
    fact(answers, "Routed to an owner", percent(quality.route_rate));
    fact(answers, "Nothing found", percent(quality.empty_rate));
    fact(answers, "Searches with no result", percent(quality.search_empty_rate));
    const stale = $("overview-stale");
    stale.replaceChildren();
    const counts = gaps.stale_documents.counts;
    fact(stale, `Not re-indexed for ${gaps.stale_documents.max_age_days} days`, counts.not_reindexed);
    fact(stale, "Source changed", counts.source_changed);
    fact(stale, "Source missing", counts.source_missing);
    clearProblem($("overview-status"), `Updated ${when(Date.now() / 1000)} UTC.`);
  }

  // ---- documents ---------------------------------------------------------------------------
  function documentState(doc) {
    const parts = [];
    if (doc.tainted) parts.push("tainted");
    if (doc.verified) parts.push("verified");
    for (const reason of doc.stale || []) parts.push(`stale: ${reason.replace(/_/g, " ")}`);
    return parts.length ? parts.join(" · ") : "ok";
  }

  async function documentAction(doc, kind, status) {
    clearProblem(status, `${kind}: ${doc.document_id}…`);
    try {
      if (kind === "invalidate") {
        const result = await api(
          "POST",
          "/invalidate/run",
          tenantBody({ document_ids: [doc.document_id], reason: "console" }),
        );
        clearProblem(status, `Invalidated ${doc.document_id}: ${result.chunks_removed} chunk(s) removed.`);
      } else {
        const flags = kind === "taint" ? { tainted: !doc.tainted } : { verified: !doc.verified };
        const result = await api("POST", "/flags/run", tenantBody({ document_ids: [doc.document_id], ...flags }));
        clearProblem(status, `${doc.document_id}: ${result.chunks_updated} chunk(s) updated.`);
      }
      const message = status.textContent;
      await loadDocuments();
      status.textContent = message;
    } catch (error) {
      showProblem(status, error);
    }
  }

  function confirmButton(label, onConfirm) {
    // Two steps instead of a modal: the first click asks, the second acts.
    const node = button(label, "secondary danger", () => {
      if (node.dataset.armed === "true") {
        onConfirm();
        return;
      }
      node.dataset.armed = "true";
      node.textContent = `Confirm ${label.toLowerCase()}`;
    });
    node.addEventListener("blur", () => {
      node.dataset.armed = "false";
      node.textContent = label;
    });
    return node;
  }

  async function loadDocuments() {
    const result = await api("GET", "/documents");
    state.tenantOfResult = result.tenant_id;
    const status = $("documents-status");
    const body = $("documents-table").querySelector("tbody");
    body.replaceChildren();
    for (const doc of result.documents) {
      const title = el("div");
      title.append(el("strong", null, doc.title), el("div", "meta", doc.document_id));
      const actions = el("div", "actions");
      actions.append(
        confirmButton("Invalidate", () => documentAction(doc, "invalidate", status)),
        button(doc.tainted ? "Untaint" : "Taint", "secondary", () => documentAction(doc, "taint", status)),
        button(doc.verified ? "Unverify" : "Verify", "secondary", () => documentAction(doc, "verify", status)),
      );
      const tr = row([
        title,
        doc.source,
        doc.chunks,
        (doc.languages || []).join(", "),
        when(doc.updated_at),
        when(doc.indexed_at),
        documentState(doc),
        actions,
      ]);
      tr.dataset.documentId = doc.document_id;
      tr.dataset.tainted = String(Boolean(doc.tainted));
      tr.dataset.stale = String((doc.stale || []).length > 0);
      body.append(tr);
    }
    const hidden = result.private_documents_hidden
      ? ` (${result.private_documents_hidden} private document(s) of other users not listed)`
      : "";
    clearProblem(status, `${result.documents.length} document(s) of ${result.tenant_id}${hidden}.`);
  }

  // ---- sources -----------------------------------------------------------------------------
  async function loadSources() {
    const result = await api("GET", "/sources");
    const list = $("sources-list");
    list.replaceChildren();
    for (const source of result.sources) {
      const item = el("li", "card");
      item.dataset.source = source.name;
      item.append(
        el("h3", null, source.name),
        el("p", "meta", `${source.type} · ${source.url} · branch ${source.branch} · tags ${source.tags.join(", ")}`),
        el("p", null, `Last indexed commit: ${source.last_commit || "none yet"} · ${source.files} file(s)`),
      );
      const jobs = el("table", "grid");
      jobs.append(row(["Job", "Trigger", "Status", "Created", "Finished", "Error"]));
      for (const job of source.jobs) {
        jobs.append(row([job.job_id, job.trigger, job.status, when(job.created_at), when(job.finished_at), job.error]));
      }
      item.append(jobs);
      list.append(item);
    }
    clearProblem(
      $("sources-status"),
      result.sources.length ? `${result.sources.length} source(s).` : "No declared sources for this tenant.",
    );
  }

  // ---- keys --------------------------------------------------------------------------------
  async function loadKeys() {
    const result = await api("GET", "/keys");
    state.tenantOfResult = result.tenant_id;
    const body = $("keys-table").querySelector("tbody");
    body.replaceChildren();
    for (const key of result.keys) {
      const revoke = confirmButton("Revoke", async () => {
        try {
          await api("DELETE", `/keys/${encodeURIComponent(key.key_id)}`);
          await loadKeys();
          clearProblem($("keys-status"), `Revoked ${key.key_id}.`);
        } catch (error) {
          showProblem($("keys-status"), error);
        }
      });
      const tr = row([
        key.key_id,
        key.label,
        key.kind,
        key.user_id,
        key.tags.join(", "),
        key.permissions.join(", "),
        revoke,
      ]);
      tr.dataset.keyId = key.key_id;
      body.append(tr);
    }
    clearProblem($("keys-status"), `${result.keys.length} key(s) of ${result.tenant_id}.`);
  }

  async function createKey(event) {
    event.preventDefault();
    const status = $("keys-status");
    const permissions = ["key-read", "key-write", "key-admin"].filter((id) => $(id).checked).map((id) => $(id).value);
    const body = tenantBody({ tags: splitList($("key-tags").value), permissions, label: $("key-label").value.trim() });
    if ($("key-user").value.trim()) body.user_id = $("key-user").value.trim();
    try {
      const created = await api("POST", "/keys", body);
      $("key-token-value").textContent = created.token;
      $("key-token").hidden = false;
      $("key-form").reset();
      await loadKeys();
      clearProblem(status, `Created ${created.key_id}.`);
    } catch (error) {
      showProblem(status, error);
    }
  }

  function forgetToken() {
    $("key-token-value").textContent = "";
    $("key-token").hidden = true;
  }

  // ---- tag owners --------------------------------------------------------------------------
  async function loadTags() {
    const result = await api("GET", "/tags");
    const body = $("tags-table").querySelector("tbody");
    body.replaceChildren();
    for (const tag of result.tags) {
      const tr = row([tag.tag, tag.owner_user_id || "none: routed to the administrator", tag.owner_email]);
      tr.dataset.tag = tag.tag;
      body.append(tr);
    }
    clearProblem($("tags-status"), `${result.tags.length} tag(s) of ${result.tenant_id}.`);
  }

  // ---- glossary ----------------------------------------------------------------------------
  async function loadGlossary() {
    const body = $("glossary-table").querySelector("tbody");
    body.replaceChildren();
    let result;
    try {
      result = await api("GET", "/glossary");
    } catch (error) {
      if (error.status !== 404) throw error;
      clearProblem($("glossary-status"), "No glossary yet.");
      return;
    }
    state.tenantOfResult = result.tenant_id;
    for (const term of result.vocabulary.terms || []) {
      body.append(row([term.term, (term.aliases || []).join(", "), term.definition]));
    }
    clearProblem($("glossary-status"), `${(result.vocabulary.terms || []).length} term(s).`);
  }

  async function glossaryChange(event) {
    event.preventDefault();
    const status = $("glossary-status");
    try {
      const tenant = state.tenantOfResult || state.tenant;
      const result = await api("POST", "/glossary", { tenant_id: tenant, csv: $("glossary-csv").value });
      $("glossary-csv").value = "";
      await loadGlossary();
      clearProblem(status, `Loaded ${result.terms} term(s).`);
    } catch (error) {
      showProblem(status, error);
    }
  }

  async function glossaryDelete() {
    const status = $("glossary-status");
    try {
      const tenant = state.tenantOfResult || state.tenant;
      await api("DELETE", `/glossary?tenant_id=${encodeURIComponent(tenant)}`);
      await loadGlossary();
      clearProblem(status, "Glossary deleted.");
    } catch (error) {
      showProblem(status, error);
    }
  }

  // ---- knowledge gaps ----------------------------------------------------------------------
  function ownerText(owner) {
    if (owner.fallback) return `nobody owns it: ask the administrator (${owner.owner_email || "not set"})`;
    return `ask ${owner.owner_email} (${owner.owner_user_id})`;
  }

  async function loadGaps() {
    const result = await api("GET", "/insights/gaps");
    state.tenantOfResult = result.tenant_id;
    $("gaps-keeping").textContent = result.keep_unanswered_questions
      ? `Question text is kept for ${result.retention_days} day(s) (SOURCEBOUND_KEEP_UNANSWERED_QUESTIONS).`
      : "Question text is not kept (SOURCEBOUND_KEEP_UNANSWERED_QUESTIONS is off): only the counts below.";
    const list = $("gaps-list");
    list.replaceChildren();
    for (const group of result.tags) {
      const item = el("li", "card gap");
      item.dataset.tag = group.tag;
      const quality = group.quality;
      item.append(
        el("h3", null, `${group.tag} · ${group.count} question(s)`),
        el("p", "owner", ownerText(group.owner)),
        el(
          "p",
          "meta",
          `${quality.answers} answer(s): ${quality.cited} cited, ${percent(quality.decline_rate)} declined, ` +
            `${percent(quality.empty_rate)} found nothing · feedback ${quality.feedback.up} up, ${quality.feedback.down} down`,
        ),
      );
      const questions = el("ol", "questions");
      for (const question of group.questions) {
        const entry = el("li", "question");
        entry.dataset.kind = question.kind;
        entry.append(
          el("span", `kind kind-${question.kind}`, question.kind.replace("_", " ")),
          el("span", "question-text", question.question === null ? "(text not kept)" : question.question),
          el("span", "meta", ` ${when(question.asked_at)} · ${question.reason || ""}`),
        );
        if (question.comment) entry.append(el("div", "comment", `“${question.comment}”`));
        questions.append(entry);
      }
      item.append(questions);
      list.append(item);
    }
    const stale = $("gaps-stale");
    stale.replaceChildren();
    for (const doc of result.stale_documents.documents) {
      stale.append(el("li", null, `${doc.title} (${doc.document_id}): ${doc.stale.join(", ").replace(/_/g, " ")}`));
    }
    if (!result.stale_documents.documents.length) stale.append(el("li", "meta", "None."));
    clearProblem($("gaps-status"), `${result.tags.length} tag(s) · ${result.tenant_id}`);
  }

  // ---- feedback ----------------------------------------------------------------------------
  async function loadFeedback() {
    const result = await api("GET", "/insights/feedback");
    const body = $("feedback-table").querySelector("tbody");
    body.replaceChildren();
    for (const entry of result.feedback) {
      const tr = row([
        when(entry.created_at),
        entry.rating === "up" ? "up" : "down",
        entry.tag,
        entry.action,
        entry.comment,
        entry.question,
      ]);
      tr.dataset.queryId = entry.query_id;
      body.append(tr);
    }
    clearProblem($("feedback-status"), `${result.feedback.length} rating(s) of ${result.tenant_id}.`);
  }

  // ---- start -------------------------------------------------------------------------------
  function applyMode(mode) {
    state.mode = mode === "api_key" ? "api_key" : "trusted";
    document.body.dataset.mode = state.mode;
    $("mode-badge").textContent = state.mode === "api_key" ? "API-key mode" : "trusted mode";
    for (const node of document.querySelectorAll("#identity [data-mode]")) node.hidden = node.dataset.mode !== state.mode;
    describeIdentity();
  }

  async function start() {
    loadIdentity();
    $("identity-form").addEventListener("submit", saveIdentity);
    $("identity-toggle").addEventListener("click", () => showIdentity($("identity").hidden));
    for (const name of PANELS) $(`tab-${name}`).addEventListener("click", () => selectPanel(name, false));
    document.querySelector(".tabs").addEventListener("keydown", tabKeys);
    for (const refresh of document.querySelectorAll(".refresh")) {
      refresh.addEventListener("click", () => loadPanel(refresh.dataset.panel));
    }
    $("key-form").addEventListener("submit", createKey);
    $("key-token-done").addEventListener("click", forgetToken);
    $("glossary-form").addEventListener("submit", glossaryChange);
    $("glossary-delete").addEventListener("click", glossaryDelete);
    let mode = "trusted";
    try {
      state.health = await (await fetch("/health")).json();
      mode = state.health.auth_mode || mode;
    } catch (_) {
      /* trusted mode then */
    }
    applyMode(mode);
    document.body.dataset.ready = "true";
    if (identityReady()) loadPanel("overview");
    else showIdentity(true);
  }

  start();
})();
