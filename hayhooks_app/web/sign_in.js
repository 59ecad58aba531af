// Sign-in with the organisation's OpenID Connect provider (docs/api.md, "Web page"): the authorization code
// flow with PKCE (RFC 7636, S256) as a public client, so no secret exists in the page. The tokens stay in this
// tab's sessionStorage; the token is renewed with the refresh token shortly before it expires, or the page
// asks to sign in again. Plain JavaScript, no build step; app.js uses window.SourceboundSignIn.
"use strict";

window.SourceboundSignIn = (() => {
  const STORE_SESSION = "sourcebound.oidc";
  const STORE_FLOW = "sourcebound.oidcFlow";
  let config = null;
  let timer = null;
  let listener = () => {};

  function base64url(bytes) {
    let text = "";
    for (const byte of bytes) text += String.fromCharCode(byte);
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function randomString(size) {
    const bytes = new Uint8Array(size);
    crypto.getRandomValues(bytes);
    return base64url(bytes);
  }

  // The payload of a JWT, read without verifying it: only for display, the nonce and the expiry.
  // The server verifies every token it receives.
  function claimsOf(token) {
    const part = String(token || "").split(".")[1];
    if (!part) return {};
    try {
      const padded = part.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(part.length / 4) * 4, "=");
      const binary = atob(padded);
      return JSON.parse(new TextDecoder().decode(Uint8Array.from(binary, (char) => char.charCodeAt(0))));
    } catch (_) {
      return {};
    }
  }

  function now() {
    return Date.now() / 1000;
  }

  function redirectUri() {
    return config.redirect_uri || `${location.origin}/`;
  }

  function load() {
    try {
      return JSON.parse(sessionStorage.getItem(STORE_SESSION) || "null");
    } catch (_) {
      return null;
    }
  }

  function save(session, reason) {
    if (session) sessionStorage.setItem(STORE_SESSION, JSON.stringify(session));
    else sessionStorage.removeItem(STORE_SESSION);
    schedule();
    listener(session, reason || "");
  }

  // Renew before the token runs out: a quarter of its lifetime ahead, between 5 and 60 seconds.
  function margin(session) {
    return Math.max(5, Math.min(60, (session.expires_at - session.issued_at) / 4));
  }

  function schedule() {
    clearTimeout(timer);
    const session = load();
    if (!session) return;
    const due = session.refresh_token ? session.expires_at - margin(session) : session.expires_at;
    timer = setTimeout(renew, Math.max(0, (due - now()) * 1000));
  }

  async function begin() {
    const verifier = randomString(48);
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
    const flow = { state: randomString(24), nonce: randomString(24), verifier, redirect_uri: redirectUri() };
    sessionStorage.setItem(STORE_FLOW, JSON.stringify(flow));
    const url = new URL(config.authorization_endpoint);
    const params = {
      response_type: "code",
      client_id: config.client_id,
      redirect_uri: flow.redirect_uri,
      scope: config.scopes,
      state: flow.state,
      nonce: flow.nonce,
      code_challenge: base64url(new Uint8Array(digest)),
      code_challenge_method: "S256",
    };
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    location.assign(url.toString());
  }

  async function tokenRequest(fields) {
    const response = await fetch(config.token_endpoint, {
      method: "POST",
      body: new URLSearchParams({ client_id: config.client_id, ...fields }),
      credentials: "omit",
    });
    let data = {};
    try {
      data = await response.json();
    } catch (_) {
      /* not JSON */
    }
    if (!response.ok || !data[config.token]) {
      const reason = data.error_description || data.error || `HTTP ${response.status}`;
      throw new Error(`The sign-in provider refused: ${reason}`);
    }
    return data;
  }

  function sessionFrom(data, nonce, previous) {
    const token = data[config.token];
    const idToken = data.id_token || (previous && previous.id_token) || "";
    const identity = claimsOf(idToken);
    if (nonce !== undefined && identity.nonce !== nonce) {
      throw new Error("The sign-in answer does not belong to this page's request (nonce); sign in again.");
    }
    return {
      token,
      id_token: idToken,
      refresh_token: data.refresh_token || (previous && previous.refresh_token) || "",
      expires_at: claimsOf(token).exp || now() + Number(data.expires_in || 300),
      issued_at: now(),
      name: identity.name || identity.preferred_username || identity.email || identity.sub || "",
    };
  }

  // After the provider sends the browser back: exchange the code (once) for tokens.
  async function completeRedirect() {
    const params = new URLSearchParams(location.search);
    if (!params.has("code") && !params.has("error")) return false;
    let flow = null;
    try {
      flow = JSON.parse(sessionStorage.getItem(STORE_FLOW) || "null");
    } catch (_) {
      flow = null;
    }
    sessionStorage.removeItem(STORE_FLOW);
    history.replaceState(null, "", location.pathname); // the code is single-use: never leave it in the address bar
    if (params.has("error")) {
      throw new Error(`Sign-in failed: ${params.get("error_description") || params.get("error")}`);
    }
    if (!flow || params.get("state") !== flow.state) {
      throw new Error("A sign-in answer arrived without a matching request (state); sign in again.");
    }
    const data = await tokenRequest({
      grant_type: "authorization_code",
      code: params.get("code"),
      redirect_uri: flow.redirect_uri,
      code_verifier: flow.verifier,
    });
    save(sessionFrom(data, flow.nonce));
    return true;
  }

  async function renew() {
    const session = load();
    if (!session) return null;
    if (session.refresh_token) {
      try {
        const data = await tokenRequest({ grant_type: "refresh_token", refresh_token: session.refresh_token });
        const next = sessionFrom(data, undefined, session);
        save(next);
        return next;
      } catch (error) {
        expire(`${error.message}. Sign in again.`);
        return null;
      }
    }
    if (now() < session.expires_at) return session;
    expire("Your sign-in expired: sign in again.");
    return null;
  }

  function expire(reason) {
    save(null, reason);
  }

  // The session with a token that is not about to expire (renewed first if it is), or null.
  async function current() {
    const session = load();
    if (!session) return null;
    if (now() >= session.expires_at - margin(session)) return renew();
    return session;
  }

  function signOut() {
    const session = load();
    save(null, "Signed out.");
    if (!config.end_session_endpoint) return;
    const url = new URL(config.end_session_endpoint);
    if (session && session.id_token) url.searchParams.set("id_token_hint", session.id_token);
    url.searchParams.set("client_id", config.client_id);
    url.searchParams.set("post_logout_redirect_uri", redirectUri());
    location.assign(url.toString());
  }

  return {
    configure(settings, onChange) {
      config = settings;
      listener = onChange;
      schedule();
    },
    begin,
    completeRedirect,
    current,
    expire,
    session: load,
    signOut,
  };
})();
