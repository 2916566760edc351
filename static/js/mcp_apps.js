// MCP Apps host (the MCP Apps extension, spec 2026-01-26): a tool result whose tool names a ui://
// resource is shown as an interactive app. The app's HTML comes from an MCP server, so it is never
// trusted: it runs in two frames, an outer one on a separate apps origin (static/js/mcp_app_sandbox.js,
// our code only) and an inner srcdoc one with an opaque origin. This page speaks JSON-RPC with it over
// postMessage through the official SDK's AppBridge (static/vendor/mcp-apps/, loaded only when a page
// shows an app), and everything the app asks of Aptix goes through this page's own endpoints, with the
// user's say where the app would act for them (calling a tool the server holds for approval, writing a
// message as them, opening a link): an app can never post to Aptix itself. Under the frame, the tool
// calls the app made ("Called by the app"), as the server recorded them, and those of this page view.
// Apps arrive with the page and with htmx swaps (the live stream's out-of-band ones included), so
// elements are found on load and on every htmx:load, and mounted once. An app whose element leaves the
// page is torn down; one a swap keeps (hx-preserve) goes on, or starts again if its frame was reloaded.
(function () {
  "use strict";

  var MIN_HEIGHT = 40;
  var MAX_HEIGHT = 2000;
  var CONTEXT_MAX_HEIGHT = 800;  // what the app is told it may grow to in the timeline
  var START_MS = 20000;  // no word from the sandbox by then: the frame did not load
  var READ_ONLY = "This is a read-only view: the app cannot call tools here.";
  var READ_ONLY_READ = "This is a read-only view: the app cannot read its server's resources here.";
  var DENIED = "The user denied the call.";
  var UNREACHABLE = "The server could not be reached.";
  // The site's colours (static/css/aptix.css) under the names the extension's apps style with.
  var VARIABLES = [
    ["--color-background-primary", "--card"], ["--color-background-secondary", "--bg"],
    ["--color-text-primary", "--fg"], ["--color-text-secondary", "--muted"],
    ["--color-border-primary", "--border"], ["--color-text-danger", "--error"],
    ["--color-text-success", "--ok"], ["--color-text-warning", "--warn"], ["--color-ring-primary", "--accent"]
  ];

  var apps = [];  // the mounted ones: {el, data, frame, bridge, context, ...}
  var bridgeLoading = null;
  var promptCount = 0;
  var darkQuery = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  function noop() {}
  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // The bridge is 650 kB: fetched the first time a page shows an app, once for all of them.
  function loadBridge(src) {
    if (window.McpAppBridge) return Promise.resolve(window.McpAppBridge);
    if (bridgeLoading) return bridgeLoading;
    bridgeLoading = new Promise(function (resolve, reject) {
      if (!src) { reject(new Error("the app runtime is missing.")); return; }
      var script = document.createElement("script");
      script.src = src;
      script.onload = function () {
        if (window.McpAppBridge) resolve(window.McpAppBridge);
        else reject(new Error("the app runtime did not start."));
      };
      script.onerror = function () {
        script.remove();
        reject(new Error("the app runtime did not load."));
      };
      document.head.appendChild(script);
    });
    bridgeLoading.catch(function () { bridgeLoading = null; });  // the next app tries again
    return bridgeLoading;
  }

  // As files.js and prompts.js: the token base.html gives htmx, else Django's cookie.
  function csrfToken() {
    try {
      var token = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"];
      if (token) return token;
    } catch (err) { /* the cookie then */ }
    var match = /(?:^|;\s*)csrftoken=([^;]+)/.exec(document.cookie);
    return match ? decodeURIComponent(match[1]) : "";
  }
  function answerOf(response) {
    return response.json().catch(function () { return {}; }).then(function (json) {
      return {ok: response.ok, status: response.status, statusText: response.statusText, json: json || {}};
    });
  }
  // Rejects only when the server could not be reached; any HTTP answer resolves.
  function post(url, body) {
    if (!url) return Promise.resolve({ok: false, status: 0, statusText: "Not available here.", json: {}});
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: {"Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken()},
      body: JSON.stringify(body)
    }).then(answerOf, function () { throw new Error(UNREACHABLE); });
  }
  function errorText(answer) {
    var error = answer.json && answer.json.error;
    if (typeof error === "string" && error) return error;
    if (error && typeof error.message === "string") return error.message;
    return answer.statusText || "The request failed (" + answer.status + ").";
  }
  function toolError(text) { return {isError: true, content: [{type: "text", text: text}]}; }

  // ---- host context: theme, colours, size ------------------------------------------------------
  function theme() {
    var chosen = document.documentElement.getAttribute("data-theme");
    if (chosen === "light" || chosen === "dark") return chosen;
    return darkQuery && darkQuery.matches ? "dark" : "light";
  }
  function styles() {
    var root = window.getComputedStyle(document.documentElement);
    var variables = {};
    VARIABLES.forEach(function (pair) {
      var value = root.getPropertyValue(pair[1]).trim();
      if (value) variables[pair[0]] = value;
    });
    variables["--font-sans"] = window.getComputedStyle(document.body).fontFamily;
    variables["--border-radius-md"] = "8px";
    return {variables: variables};
  }
  function timeZone() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (err) { return undefined; }
  }
  // The SDK checks the Tool it passes on: optional fields are left out, never null.
  function toolInfo(tool) {
    var clean = {name: "", inputSchema: {type: "object"}};
    Object.keys(tool || {}).forEach(function (key) {
      if (tool[key] !== null && tool[key] !== undefined) clean[key] = tool[key];
    });
    return clean;
  }
  function hostContext(app) {
    return {
      toolInfo: {tool: toolInfo(app.data.tool)},
      theme: theme(),
      styles: styles(),
      displayMode: "inline",
      availableDisplayModes: ["inline"],
      locale: navigator.language,
      timeZone: timeZone(),
      platform: "web",
      userAgent: "Aptix",
      containerDimensions: {maxHeight: CONTEXT_MAX_HEIGHT, width: Math.round(app.el.clientWidth)}
    };
  }
  // A read-only view (a teammate's shared session: the server refuses its calls) does not offer what
  // it would refuse, so a well-behaved app can hide those controls; the handlers refuse them anyway.
  function hostCapabilities(data) {
    var caps = {
      openLinks: {},
      logging: {},
      sandbox: {csp: data.csp || {}, permissions: data.permissions || {}}
    };
    if (data.interactive) {
      caps.serverTools = {};
      caps.serverResources = {};
      caps.updateModelContext = {text: {}, structuredContent: {}};
      caps.message = {text: {}};
    }
    return caps;
  }
  // Before the app's ui/initialize it gets the context in the answer; after, only what changed
  // (setHostContext sends the difference as ui/notifications/host-context-changed).
  function updateContext(app, patch) {
    Object.keys(patch).forEach(function (key) { app.context[key] = patch[key]; });
    if (!app.initialized || app.closed) return;
    try { app.bridge.setHostContext(Object.assign({}, app.context)); } catch (err) { console.debug("[mcp app]", err); }
  }
  function themeChanged() {
    var patch = {theme: theme(), styles: styles()};
    apps.forEach(function (app) { updateContext(app, patch); });
  }
  new MutationObserver(themeChanged).observe(document.documentElement, {attributes: true, attributeFilter: ["data-theme"]});
  if (darkQuery && darkQuery.addEventListener) darkQuery.addEventListener("change", themeChanged);

  // The permissions the server asked for, as a Permissions Policy for the frame (the sandbox passes
  // the same on to the inner frame; a feature not allowed here cannot be allowed there).
  function allowAttribute(permissions) {
    var p = permissions || {};
    var features = [];
    if (p.camera) features.push("camera 'src'");
    if (p.microphone) features.push("microphone 'src'");
    if (p.geolocation) features.push("geolocation 'src'");
    if (p.clipboardWrite) features.push("clipboard-write 'src'");
    return features.join("; ");
  }

  // ---- prompts: the user's say, inside the app's element ---------------------------------------
  // One card at a time per app: each waits until the one before it is answered. Resolves true (yes),
  // false (no) or null (unanswered: the app went away, or gave up on its request, which the SDK
  // cancels after its timeout, 60 s by default; the card goes then, lest a late yes act for nobody).
  function ask(app, card, signal) {
    var turn = app.queue.then(function () {
      return app.closed || (signal && signal.aborted) ? null : showCard(app, card, signal);
    });
    app.queue = turn.then(noop, noop);
    return turn;
  }
  // card: {ask: [text or node…], body: [node…], yes, no, onYes}. onYes runs inside the click itself,
  // so what needs the user's gesture (a new window) is allowed.
  function showCard(app, card, signal) {
    return new Promise(function (resolve) {
      var id = "mcp-app-prompt-" + (++promptCount);
      var section = el("section", "mcp-app-prompt approval-card");
      section.setAttribute("role", "group");
      section.setAttribute("aria-labelledby", id);
      var question = el("p", "approval-ask");
      question.id = id;
      card.ask.forEach(function (part) {
        question.appendChild(typeof part === "string" ? document.createTextNode(part) : part);
      });
      section.appendChild(question);
      (card.body || []).forEach(function (node) { section.appendChild(node); });
      var actions = el("div", "approval-actions");
      var yes = el("button", "primary", card.yes);
      var no = el("button", "ghost", card.no);
      yes.type = "button";
      no.type = "button";
      actions.appendChild(yes);
      actions.appendChild(no);
      section.appendChild(actions);
      var done = false;
      function answer(value) {
        if (done) return;
        done = true;
        app.pending = null;
        var hadFocus = section.contains(document.activeElement);
        section.remove();
        if (hadFocus && app.frame.isConnected) app.frame.focus();  // back to the app the user was in
        resolve(value);
      }
      yes.addEventListener("click", function () {
        if (card.onYes) card.onYes();
        answer(true);
      });
      no.addEventListener("click", function () { answer(false); });
      // Before aptix.js's Esc (which would stop the running turn): this Esc only says no.
      section.addEventListener("keydown", function (e) {
        if (e.key !== "Escape" || e.isComposing) return;
        e.preventDefault();
        answer(false);
      });
      app.pending = function () { answer(null); };
      if (signal) signal.addEventListener("abort", function () { answer(null); });
      app.el.insertBefore(section, app.frame);
      yes.focus();
    });
  }

  // ---- what the app asks of the host -----------------------------------------------------------
  // The SDK aborts this when the app cancels its request (or gives up waiting).
  function signalOf(extra) { return extra && (extra.signal || (extra.mcpReq && extra.mcpReq.signal)) || null; }

  function callTool(app, params, signal) {
    var data = app.data;
    if (!data.interactive) return Promise.resolve(toolError(READ_ONLY));
    var call = {name: params.name, arguments: params.arguments || {}};
    // What the server recorded of the call (agents/mcp_apps/services.py), for "Called by the app": a
    // 200 ran it (on the policy's say, or the user's), a 403 refused it (not a tool open to the app).
    function answered(answer, decision) {
      if (answer.status === 200 || answer.status === 403) {
        var ok = answer.status === 200 ? answer.json.isError !== true : null;
        called(app, {tool: call.name, decision: answer.status === 403 ? "refused" : decision, ok: ok});
      }
      if (answer.status !== 200) return toolError(errorText(answer));
      return Array.isArray(answer.json.content) ? answer.json : toolError("The server's answer was not a tool result.");
    }
    return post(data.callUrl, call).then(function (answer) {
      if (answer.status !== 409 || answer.json.approval !== "required") return answered(answer, "auto");
      var tool = answer.json.tool || call.name;
      var args = answer.json.arguments || call.arguments;
      var body = [];
      var intro = ["The app asks to run ", el("code", "", tool)];
      if (args && typeof args === "object" && Object.keys(args).length) {
        intro.push(" with");
        body.push(el("pre", "approval-arguments", JSON.stringify(args, null, 2)));
      } else {
        intro.push(" with no arguments.");
      }
      return ask(app, {ask: intro, body: body, yes: "Approve", no: "Deny"}, signal).then(function (ok) {
        if (ok === null) return toolError("The call was not answered.");
        if (!ok) {  // said to the server, which records the denial, before the app hears of it
          return post(data.callUrl, Object.assign({}, call, {approved: false})).then(function (answer) {
            if (answer.status === 200) called(app, {tool: call.name, decision: "denied", ok: null});
            return answer.status === 200 && Array.isArray(answer.json.content) ? answer.json : toolError(DENIED);
          }, function () { return toolError(DENIED); });
        }
        return post(data.callUrl, Object.assign({}, call, {approved: true})).then(function (answer) {
          return answered(answer, "approved");
        });
      });
    }).catch(function (err) { return toolError(err.message || UNREACHABLE); });
  }

  function readResource(app, params) {
    if (!app.data.interactive) return Promise.reject(new Error(READ_ONLY_READ));
    return post(app.data.readUrl, {uri: params.uri}).then(function (answer) {
      if (answer.status !== 200) throw new Error(errorText(answer));
      return answer.json;
    });
  }

  function updateModelContext(app, params) {
    if (!app.data.interactive) return Promise.resolve({});
    return post(app.data.contextUrl, params).then(function (answer) {
      if (!answer.ok) throw new Error(errorText(answer));
      return {};
    });
  }

  function sendMessage(app, params, signal) {
    if (!app.data.interactive) return Promise.resolve({isError: true});
    var text = (params.content || []).filter(function (block) {
      return block && block.type === "text" && typeof block.text === "string";
    }).map(function (block) { return block.text; }).join("\n\n");
    if (!text.trim()) return Promise.resolve({isError: true});
    var quote = el("blockquote", "mcp-app-message", text);
    return ask(app, {ask: ["The app wants to send this message as you:"], body: [quote], yes: "Send", no: "Cancel"}, signal)
      .then(function (ok) {
        if (!ok) return {isError: true};
        return post(app.data.messageUrl, {text: text}).then(function (answer) {
          return answer.status === 200 ? {} : {isError: true};
        });
      }).catch(function () { return {isError: true}; });
  }

  function openLink(app, params, signal) {
    var url;
    try { url = new URL(params.url); } catch (err) { return Promise.resolve({isError: true}); }
    if (url.protocol !== "http:" && url.protocol !== "https:") return Promise.resolve({isError: true});
    var href = url.href;
    return ask(app, {
      ask: ["The app wants to open ", el("code", "mcp-app-url", href)],
      yes: "Open",
      no: "Cancel",
      onYes: function () { window.open(href, "_blank", "noopener,noreferrer"); }
    }, signal).then(function (ok) { return ok ? {} : {isError: true}; });
  }

  // ---- "Called by the app": the tool calls it made, as the server recorded them --------------------
  var DECISIONS = {
    auto: "ran (allowed by the policy)",
    approved: "approved",
    denied: "denied by you",
    refused: "refused: not a tool open to this app"
  };
  function callText(call, interactive) {
    var text = call.decision === "denied" && !interactive ? "denied by its author"
      : DECISIONS[call.decision] || String(call.decision || "");
    if (call.ok === true) text += ", succeeded";
    else if (call.ok === false) text += ", failed";
    return text;
  }
  function callItem(call, interactive) {
    var item = el("li", "mcp-app-call decision-" + call.decision);
    item.appendChild(el("code", "", String(call.tool || "")));
    item.appendChild(document.createTextNode(" — "));
    item.appendChild(el("span", "mcp-app-call-outcome", callText(call, interactive)));
    var at = call.at ? new Date(call.at) : null;
    if (at && !isNaN(at.getTime())) {
      var clock = at.toLocaleTimeString([], {hour: "2-digit", minute: "2-digit", second: "2-digit"});
      var time = el("time", "muted", clock);
      time.setAttribute("datetime", at.toISOString());
      item.appendChild(document.createTextNode(" "));
      item.appendChild(time);
    }
    return item;
  }
  // Under the frame, hidden while the app has called nothing; kept open if the user opened it.
  function showCalls(app) {
    var calls = Array.isArray(app.data.calls) ? app.data.calls : [];
    var box = app.calls;
    if (!box) {
      box = app.calls = el("details", "mcp-app-calls");
      box.appendChild(el("summary"));
      box.appendChild(el("ol", "mcp-app-call-list"));
    }
    if (app.frame.parentNode === app.el && box.previousSibling !== app.frame) {
      app.el.insertBefore(box, app.frame.nextSibling);
    }
    box.hidden = !calls.length;
    box.querySelector("summary").textContent = "Called by the app (" + calls.length + ")";
    var list = box.querySelector("ol");
    list.replaceChildren.apply(list, calls.map(function (call) { return callItem(call, app.data.interactive); }));
  }
  function called(app, call) {
    if (!Array.isArray(app.data.calls)) app.data.calls = [];
    call.at = new Date().toISOString();
    app.data.calls.push(call);
    showCalls(app);
  }

  // ---- mounting ---------------------------------------------------------------------------------
  function showError(element, text) {
    var old = element.querySelector(":scope > .mcp-app-error");
    if (old) old.remove();
    var loading = element.querySelector(":scope > .mcp-app-loading");
    if (loading) loading.remove();
    element.appendChild(el("p", "mcp-app-error", "The app could not be loaded: " + text));
  }

  function fetchApp(url) {
    if (!url) return Promise.reject(new Error("it has no address."));
    return fetch(url, {credentials: "same-origin", headers: {Accept: "application/json"}})
      .then(answerOf, function () { throw new Error("the server could not be reached."); })
      .then(function (answer) {
        if (!answer.ok) throw new Error(errorText(answer));
        return answer.json;
      });
  }

  // The sandbox must be on an origin of its own: with allow-same-origin it could reach into Aptix.
  function frameOriginOf(data) {
    var url;
    try { url = new URL(data.frameUrl); } catch (err) { return null; }
    if (url.protocol !== "https:" && url.protocol !== "http:") return null;
    if (url.origin === window.location.origin) return null;
    if (data.frameOrigin && data.frameOrigin !== url.origin) return null;
    return url.origin;
  }

  function mount(element) {
    if (element.dataset.mcpAppMounted) return;
    element.dataset.mcpAppMounted = "1";
    Promise.all([fetchApp(element.getAttribute("data-app-url")), loadBridge(element.getAttribute("data-bridge-src"))])
      .then(function (both) {
        if (!element.isConnected) {  // gone while loading: mounted again if it comes back
          delete element.dataset.mcpAppMounted;
          return;
        }
        start(element, both[0], both[1]);
      })
      .catch(function (err) { showError(element, err.message || "unknown error."); });
  }

  function start(element, data, lib) {
    var frameOrigin = frameOriginOf(data);
    if (!frameOrigin) { showError(element, "its sandbox is not on a separate origin."); return; }
    var frame = document.createElement("iframe");
    frame.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
    var allow = allowAttribute(data.permissions);
    if (allow) frame.setAttribute("allow", allow);
    frame.setAttribute("referrerpolicy", "no-referrer");
    frame.title = "App: " + ((data.tool && (data.tool.title || data.tool.name)) || "tool result");
    frame.className = "mcp-app-frame" + (data.prefersBorder === true ? " bordered" : "");
    frame.style.height = "120px";  // CSSOM, which the page's CSP (no inline styles) allows
    frame.src = data.frameUrl;
    var loading = element.querySelector(":scope > .mcp-app-loading");
    if (loading) loading.remove();
    element.appendChild(frame);

    var app = {el: element, data: data, frame: frame, queue: Promise.resolve(), pending: null,
               initialized: false, closed: false, started: false,
               calls: element.querySelector(":scope > .mcp-app-calls")};  // a restarted app's list
    showCalls(app);
    app.context = hostContext(app);
    var bridge = new lib.AppBridge(null, {name: "Aptix", version: "1"}, hostCapabilities(data), {hostContext: app.context});
    app.bridge = bridge;
    app.context = Object.assign({}, app.context);  // ours to change; the bridge's is its own

    bridge.onsandboxready = function () {
      // Again if the frame's page reloads: the app starts over.
      app.started = true;
      app.initialized = false;
      var late = element.querySelector(":scope > .mcp-app-error");  // "did not answer", said too soon
      if (late) late.remove();
      bridge.sendSandboxResourceReady({html: data.html, csp: data.csp, permissions: data.permissions})
        .catch(function (err) { console.debug("[mcp app]", err); });
    };
    bridge.oninitialized = function () {
      app.initialized = true;
      updateContext(app, {});  // what changed while it started
      bridge.sendToolInput({arguments: data.toolInput || {}})
        .then(function () { if (data.toolResult) return bridge.sendToolResult(data.toolResult); })
        .catch(function (err) { console.debug("[mcp app]", err); });
    };
    bridge.onsizechange = function (params) {
      if (typeof params.height !== "number" || !isFinite(params.height)) return;
      frame.style.height = Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, Math.ceil(params.height))) + "px";
    };
    bridge.oncalltool = function (params, extra) { return callTool(app, params, signalOf(extra)); };
    bridge.onreadresource = function (params) { return readResource(app, params); };
    bridge.onupdatemodelcontext = function (params) { return updateModelContext(app, params); };
    bridge.onmessage = function (params, extra) { return sendMessage(app, params, signalOf(extra)); };
    bridge.onopenlink = function (params, extra) { return openLink(app, params, signalOf(extra)); };
    bridge.onloggingmessage = function (params) {
      console.debug("[mcp app " + (data.tool && data.tool.name) + "]", params.level, params.data);
    };
    bridge.onrequestteardown = function () {
      console.debug("[mcp app " + (data.tool && data.tool.name) + "] asked to be closed: it stays in the timeline");
    };

    // The SDK's transport posts with "*" and checks only the sender's window: here only the sandbox's
    // origin may send or receive (a frame that navigated elsewhere gets nothing).
    var win = frame.contentWindow;
    app.win = win;
    var transport = new lib.PostMessageTransport({postMessage: function (message) { win.postMessage(message, frameOrigin); }}, win);
    var listen = transport.messageListener;
    if (typeof listen === "function") {
      transport.messageListener = function (event) { if (event.origin === frameOrigin) listen(event); };
    }
    // Connected before the frame's page can load, so its sandbox-proxy-ready is heard.
    bridge.connect(transport).catch(function (err) { showError(element, err.message || "it could not connect."); });
    apps.push(app);

    if (window.ResizeObserver) {
      var width = app.context.containerDimensions.width;
      app.resize = new ResizeObserver(function () {
        var now = Math.round(element.clientWidth);
        if (now === width) return;
        width = now;
        updateContext(app, {containerDimensions: {maxHeight: CONTEXT_MAX_HEIGHT, width: now}});
      });
      app.resize.observe(element);
    }
    setTimeout(function () {
      if (!app.started && !app.closed) showError(element, "its frame did not answer.");
    }, START_MS);
  }

  function close(app, teardown) {
    app.closed = true;
    if (app.pending) app.pending();
    if (app.resize) app.resize.disconnect();
    var bridge = app.bridge;
    // The frame has already gone with its element: no answer can come, so no long wait for one.
    Promise.resolve().then(function () { if (teardown) return bridge.teardownResource({}, {timeout: 1000}); })
      .catch(noop)
      .then(function () { return bridge.close(); })
      .catch(noop);
  }
  // An element that left the page is torn down. One put back (a swap's hx-preserve without
  // moveBefore) has a new frame: a new window, which the old connection does not hear, so the app
  // starts again from what was fetched. Moved with moveBefore, its frame and connection live on.
  var removals = new MutationObserver(function (records) {
    if (!apps.length || !records.some(function (r) { return r.removedNodes.length; })) return;
    var again = [];
    apps = apps.filter(function (app) {
      if (app.el.isConnected && app.frame.isConnected && app.frame.contentWindow === app.win) return true;
      close(app, !app.el.isConnected);
      if (app.el.isConnected) again.push(app);
      return false;
    });
    again.forEach(function (app) {
      app.frame.remove();
      start(app.el, app.data, window.McpAppBridge);
    });
  });

  function scan(root) {
    if (!root || root.nodeType !== 1) return;
    if (root.matches(".mcp-app[data-app-url]")) mount(root);
    root.querySelectorAll(".mcp-app[data-app-url]").forEach(mount);
  }
  function init() {
    removals.observe(document.body, {childList: true, subtree: true});
    scan(document.body);
  }
  document.addEventListener("htmx:load", function (e) { if (document.body) scan((e.detail && e.detail.elt) || e.target); });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
