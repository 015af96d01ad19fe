// The gateway's admin page. Every element is built with DOM calls and every value
// from the server goes in as text: nothing here parses HTML. The admin's token is
// kept in sessionStorage (this tab, until it closes) and sent as a bearer token;
// the gateway sets no cookie.

const LANGS = ["en", "zh_CN", "zh_TW", "es"];
const LANG_NAMES = { en: "English", zh_CN: "简体中文", zh_TW: "繁體中文", es: "Español" };
let messages = {};
let lang = "en";

function t(key, ...args) {
  const m = messages[key];
  if (m === undefined) return key;
  return m.replace(/\$(\d)/g, (_, n) => String(args[Number(n) - 1] ?? ""));
}

async function loadMessages(l) {
  const resp = await fetch(`/admin/assets/i18n/${l}.json`);
  messages = await resp.json();
  lang = l;
  document.documentElement.lang = l.replace("_", "-");
  document.title = t("title");
}

// el builds an element: el("td", {class: "n"}, "text", child…).
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const token = {
  get: () => sessionStorage.getItem("ferry-gateway-token") || "",
  set: (v) => sessionStorage.setItem("ferry-gateway-token", v),
  clear: () => sessionStorage.removeItem("ferry-gateway-token"),
};

class APIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(method, path, body) {
  let resp;
  try {
    resp = await fetch("/admin/api/" + path, {
      method,
      headers: { Authorization: "Bearer " + token.get(), ...(body ? { "Content-Type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
  } catch (err) {
    throw new APIError(0, t("errNetwork", err.message));
  }
  const data = await resp.json().catch(() => ({}));
  if (!resp.ok) throw new APIError(resp.status, data.error || resp.statusText);
  return data;
}

// download fetches a CSV with the token and saves it as a file.
async function download(path, name) {
  const resp = await fetch("/admin/api/" + path, { headers: { Authorization: "Bearer " + token.get() } });
  if (!resp.ok) throw new APIError(resp.status, resp.statusText);
  const url = URL.createObjectURL(await resp.blob());
  const a = el("a", { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

const app = document.getElementById("app");
const status = () => document.getElementById("status");

function say(text, isError) {
  const s = status();
  if (!s) return;
  s.textContent = text;
  s.className = isError ? "status error" : "status";
}

function fail(err) {
  if (err.status === 401) {
    token.clear();
    return signIn(t("errUnauthorized"));
  }
  say(err.status === 0 ? err.message : t("errFailed", err.message), true);
}

function header() {
  const select = el("select", { id: "lang", "aria-label": t("language") });
  for (const l of LANGS) select.append(el("option", { value: l, selected: l === lang }, LANG_NAMES[l]));
  select.addEventListener("change", async () => {
    localStorage.setItem("ferry-gateway-lang", select.value);
    await loadMessages(select.value);
    token.get() ? main(current) : signIn();
  });
  return el("header", {}, el("h1", { id: "title" }, t("title")), el("label", { class: "lang" }, t("language") + " ", select));
}

function signIn(error) {
  const input = el("input", { id: "token", type: "password", autocomplete: "off", spellcheck: "false", size: 60 });
  const form = el(
    "form",
    { id: "signin-form" },
    el("h2", {}, t("signInTitle")),
    el("p", {}, t("signInHelp")),
    el("label", { for: "token" }, t("tokenLabel")),
    input,
    el("button", { id: "signin", type: "submit" }, t("signIn")),
    el("p", { id: "status", class: error ? "status error" : "status", role: "status" }, error || ""),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    token.set(input.value.trim());
    try {
      await api("GET", "whoami");
      main("users");
    } catch (err) {
      token.clear();
      signIn(err.status === 403 ? t("errForbidden") : err.status === 401 ? t("errUnauthorized") : err.message);
    }
  });
  app.replaceChildren(header(), form);
  input.focus();
}

let current = "users";
const views = { users: usersView, teams: teamsView, usage: usageView, audit: auditView };

async function main(view) {
  current = view;
  let me;
  try {
    me = await api("GET", "whoami");
  } catch (err) {
    return fail(err);
  }
  const nav = el("nav", {});
  for (const [key, label] of [["users", "navUsers"], ["teams", "navTeams"], ["usage", "navUsage"], ["audit", "navAudit"]]) {
    nav.append(el("button", { id: "nav-" + key, class: key === view ? "tab active" : "tab", type: "button", onclick: () => main(key) }, t(label)));
  }
  const out = el("button", { id: "signout", type: "button", onclick: () => { token.clear(); signIn(); } }, t("signOut"));
  const section = el("section", { id: "view-" + view }, el("p", {}, t("loading")));
  app.replaceChildren(header(), el("div", { class: "bar" }, nav, el("span", { id: "me" }, t("signedInAs", me.name)), out),
    el("p", { id: "status", class: "status", role: "status" }), section);
  try {
    await views[view](section);
  } catch (err) {
    fail(err);
  }
}

function table(id, columns, rows) {
  if (rows.length === 0) return el("p", { id, class: "empty" }, t("noData"));
  const head = el("tr", {});
  for (const c of columns) head.append(el("th", { scope: "col" }, t(c.label)));
  const body = el("tbody", {});
  for (const r of rows) {
    const tr = el("tr", {});
    for (const c of columns) {
      const v = c.value(r);
      tr.append(el("td", { class: c.num ? "num" : undefined }, v));
    }
    body.append(tr);
  }
  return el("table", { id }, el("thead", {}, head), body);
}

const n = (v) => (v ? Number(v).toLocaleString(lang.replace("_", "-")) : "0");
const limit = (v) => (v ? n(v) : t("noLimit"));

function field(id, label, attrs = {}) {
  return el("label", { for: id }, t(label), el("input", { id, name: id, ...attrs }));
}

async function usersView(section) {
  const users = await api("GET", "users");
  const shown = el("div", { id: "token-box" });
  const form = el(
    "form",
    { id: "user-form", class: "inline" },
    el("h2", {}, t("addUser")),
    field("user-name", "name", { required: true, maxlength: 64 }),
    field("user-team", "team", { maxlength: 64 }),
    field("user-daily", "dailyTokens", { type: "number", min: 0, value: 0 }),
    field("user-rpm", "rpm", { type: "number", min: 0, value: 0 }),
    field("user-models", "models", { placeholder: t("modelsHelp") }),
    el("label", { for: "user-admin" }, el("input", { id: "user-admin", type: "checkbox" }), t("admin")),
    el("button", { id: "user-add", type: "submit" }, t("addUser")),
  );
  const showToken = (name, tok) => {
    const code = el("code", { id: "new-token" }, tok);
    const copy = el("button", { type: "button", onclick: async () => { await navigator.clipboard?.writeText(tok); copy.textContent = t("copied"); } }, t("copy"));
    shown.replaceChildren(el("p", {}, t("tokenOnce", name)), code, copy);
  };
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const v = (id) => document.getElementById(id).value.trim();
    try {
      const res = await api("POST", "users", {
        name: v("user-name"),
        team: v("user-team"),
        daily_tokens: Number(v("user-daily") || 0),
        rpm: Number(v("user-rpm") || 0),
        models: v("user-models") ? v("user-models").split(",").map((s) => s.trim()).filter(Boolean) : [],
        admin: document.getElementById("user-admin").checked,
      });
      await usersView(section);
      showTokenAfter(res.name, res.token);
    } catch (err) {
      fail(err);
    }
  });
  const act = (label, fn) => el("button", { type: "button", class: "small", onclick: async () => { try { await fn(); } catch (err) { fail(err); } } }, t(label));
  const rows = users.map((u) => ({ ...u }));
  const tbl = table("users-table", [
    { label: "name", value: (u) => u.name },
    { label: "team", value: (u) => u.team },
    { label: "admin", value: (u) => (u.admin ? "✓" : "") },
    { label: "state", value: (u) => t(u.disabled ? "disabled" : "enabled") },
    { label: "dailyTokens", value: (u) => limit(u.daily_tokens), num: true },
    { label: "rpm", value: (u) => limit(u.rpm), num: true },
    { label: "models", value: (u) => (u.models.length ? u.models.join(", ") : t("allModels")) },
    {
      label: "actions",
      value: (u) =>
        el(
          "span",
          { class: "actions", "data-user": u.name },
          act(u.disabled ? "enable" : "disable", async () => { await api("PATCH", "users/" + encodeURIComponent(u.name), { disabled: !u.disabled }); await usersView(section); }),
          act("rotate", async () => {
            if (!confirm(t("confirmRotate", u.name))) return;
            const res = await api("POST", "users/" + encodeURIComponent(u.name) + "/rotate");
            await usersView(section);
            showTokenAfter(res.name, res.token);
          }),
          act("remove", async () => {
            if (!confirm(t("confirmRemove", u.name))) return;
            await api("DELETE", "users/" + encodeURIComponent(u.name));
            await usersView(section);
          }),
        ),
    },
  ], rows);
  section.replaceChildren(tbl, form, shown);
  function showTokenAfter(name, tok) {
    showToken(name, tok);
    section.querySelector("#token-box")?.replaceWith(shown);
  }
}

async function teamsView(section) {
  const teams = await api("GET", "teams");
  const form = el(
    "form",
    { id: "team-form", class: "inline" },
    el("h2", {}, t("setTeam")),
    field("team-name", "team", { required: true, maxlength: 64 }),
    field("team-daily", "dailyTokens", { type: "number", min: 0, value: 0 }),
    field("team-rpm", "rpm", { type: "number", min: 0, value: 0 }),
    el("button", { id: "team-save", type: "submit" }, t("save")),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const v = (id) => document.getElementById(id).value.trim();
    try {
      await api("PUT", "teams/" + encodeURIComponent(v("team-name")), { daily_tokens: Number(v("team-daily") || 0), rpm: Number(v("team-rpm") || 0) });
      await teamsView(section);
      say(t("saved"));
    } catch (err) {
      fail(err);
    }
  });
  section.replaceChildren(
    table("teams-table", [
      { label: "team", value: (x) => x.name },
      { label: "members", value: (x) => n(x.members), num: true },
      { label: "dailyTokens", value: (x) => limit(x.daily_tokens), num: true },
      { label: "rpm", value: (x) => limit(x.rpm), num: true },
    ], teams),
    form,
  );
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

// chart draws input and output tokens per day as stacked bars.
function chart(rows) {
  const days = [...new Set(rows.map((r) => r.day))].sort();
  const sum = {};
  for (const r of rows) {
    const s = (sum[r.day] ||= { in: 0, out: 0 });
    s.in += r.input_tokens;
    s.out += r.output_tokens;
  }
  const W = 640, H = 180, pad = 24;
  const top = Math.max(1, ...days.map((d) => sum[d].in + sum[d].out));
  const bw = Math.max(4, Math.min(40, (W - pad) / Math.max(1, days.length) - 4));
  const g = svg("svg", { id: "usage-chart", viewBox: `0 0 ${W} ${H + 20}`, role: "img", "aria-label": t("chartTitle") });
  g.append(svg("title", {}, t("chartTitle")));
  days.forEach((d, i) => {
    const x = pad + i * (bw + 4);
    const hin = (sum[d].in / top) * H, hout = (sum[d].out / top) * H;
    const bar = svg("g", { class: "bar" });
    bar.append(svg("title", {}, `${d}: ${t("inputTokens")} ${n(sum[d].in)}, ${t("outputTokens")} ${n(sum[d].out)}`));
    bar.append(svg("rect", { x, y: H - hin, width: bw, height: hin, class: "in" }));
    bar.append(svg("rect", { x, y: H - hin - hout, width: bw, height: hout, class: "out" }));
    g.append(bar);
    if (days.length <= 14 || i % Math.ceil(days.length / 14) === 0) g.append(svg("text", { x, y: H + 14, class: "label" }, d.slice(5)));
  });
  return el("figure", {}, el("figcaption", {}, t("chartTitle")), g);
}

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  return q.toString();
}

async function usageView(section) {
  const f = usageView.filters || (usageView.filters = { since: "", until: "", by: "day,user,model", user: "", team: "", model: "" });
  const by = el("select", { id: "usage-by" });
  for (const [v, label] of [["day,user,model", "user"], ["day,team,model", "team"], ["day,model", "model"], ["day", "day"]]) {
    by.append(el("option", { value: v, selected: v === f.by }, t("day") + (v === "day" ? "" : " + " + t(label))));
  }
  const form = el(
    "form",
    { id: "usage-form", class: "inline" },
    field("usage-since", "since", { type: "date", value: f.since }),
    field("usage-until", "until", { type: "date", value: f.until }),
    field("usage-user", "user", { value: f.user }),
    field("usage-team", "team", { value: f.team }),
    el("label", { for: "usage-by" }, t("groupBy"), by),
    el("button", { type: "submit", id: "usage-apply" }, t("apply")),
    el("button", { type: "button", id: "export-usage", onclick: () => download("usage?" + query({ ...f, format: "csv" }), "ferry-gateway-usage.csv").catch(fail) }, t("exportCSV")),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const v = (id) => document.getElementById(id).value.trim();
    usageView.filters = { since: v("usage-since"), until: v("usage-until"), user: v("usage-user"), team: v("usage-team"), by: by.value, model: "" };
    usageView(section).catch(fail);
  });
  const rows = await api("GET", "usage?" + query(f));
  const cols = [{ label: "day", value: (r) => r.day }];
  if (f.by.includes("user")) cols.push({ label: "user", value: (r) => r.user });
  if (f.by.includes("team")) cols.push({ label: "team", value: (r) => r.team });
  if (f.by.includes("model")) cols.push({ label: "model", value: (r) => r.model });
  cols.push(
    { label: "requests", value: (r) => n(r.requests), num: true },
    { label: "errors", value: (r) => n(r.errors), num: true },
    { label: "inputTokens", value: (r) => n(r.input_tokens), num: true },
    { label: "outputTokens", value: (r) => n(r.output_tokens), num: true },
    { label: "cachedTokens", value: (r) => n(r.cached_tokens), num: true },
    { label: "cost", value: (r) => money(r.cost_micros), num: true },
  );
  section.replaceChildren(form, rows.length ? chart(rows) : "", table("usage-table", cols, rows));
}

// money shows micros of the price table's currency in its units.
function money(micros) {
  return ((micros || 0) / 1e6).toFixed(2);
}

async function auditView(section) {
  const f = auditView.filters || (auditView.filters = { user: "", model: "", since: "", errors: "" });
  const form = el(
    "form",
    { id: "audit-form", class: "inline" },
    field("audit-user", "user", { value: f.user }),
    field("audit-model", "model", { value: f.model }),
    field("audit-since", "since", { type: "date", value: f.since }),
    el("label", { for: "audit-errors" }, el("input", { id: "audit-errors", type: "checkbox", checked: f.errors === "1" }), t("errorsOnly")),
    el("button", { type: "submit", id: "audit-apply" }, t("apply")),
    el("button", { type: "button", id: "export-audit", onclick: () => download("audit?" + query({ ...f, format: "csv", limit: 10000 }), "ferry-gateway-audit.csv").catch(fail) }, t("exportCSV")),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const v = (id) => document.getElementById(id).value.trim();
    auditView.filters = { user: v("audit-user"), model: v("audit-model"), since: v("audit-since"), errors: document.getElementById("audit-errors").checked ? "1" : "" };
    auditView(section).catch(fail);
  });
  const [reqs, acts] = await Promise.all([api("GET", "audit?" + query(f)), api("GET", "actions?" + query({ user: f.user, since: f.since }))]);
  const time = (s) => s.replace("T", " ").slice(0, 19);
  section.replaceChildren(
    form,
    el("h2", {}, t("auditRequests")),
    table("audit-table", [
      { label: "time", value: (r) => time(r.time) },
      { label: "user", value: (r) => r.user },
      { label: "team", value: (r) => r.team },
      { label: "model", value: (r) => r.model },
      { label: "upstream", value: (r) => r.upstream },
      { label: "status", value: (r) => String(r.status) },
      { label: "inputTokens", value: (r) => n(r.input_tokens) + (r.estimated ? " (" + t("estimated") + ")" : ""), num: true },
      { label: "outputTokens", value: (r) => n(r.output_tokens), num: true },
      { label: "cachedTokens", value: (r) => n(r.cached_tokens), num: true },
      { label: "cost", value: (r) => money(r.cost_micros), num: true },
      { label: "latency", value: (r) => r.latency_ms.toFixed(1), num: true },
      { label: "trace", value: (r) => r.trace_id },
      { label: "error", value: (r) => r.error },
    ], reqs),
    el("h2", {}, t("auditActions")),
    table("actions-table", [
      { label: "time", value: (a) => time(a.time) },
      { label: "actor", value: (a) => a.actor },
      { label: "action", value: (a) => a.action },
      { label: "target", value: (a) => a.target },
      { label: "detail", value: (a) => a.detail },
    ], acts),
  );
}

async function start() {
  const asked = new URLSearchParams(location.search).get("lang");
  const stored = localStorage.getItem("ferry-gateway-lang");
  const served = document.documentElement.dataset.lang;
  const pick = [asked, stored, served].find((l) => LANGS.includes(l)) || "en";
  await loadMessages(pick);
  if (token.get()) main("users");
  else signIn();
}

start();
