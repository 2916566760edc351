// The sandbox proxy of MCP Apps (spec 2026-01-26), run in the outer frame on the separate apps origin
// (templates/agents/mcp_app_frame.html). It exists so that an app's HTML, which comes from an MCP
// server and is not trusted, never shares an origin with Aptix: the app runs one frame further in, from
// srcdoc, sandboxed without allow-same-origin (an opaque origin: no cookies, no storage, no reaching
// into this frame) and without top navigation or popups (links go through the host's ui/open-link,
// where the user decides). This script is only a relay: it speaks to exactly one origin above, the
// Aptix page that embeds it, and to the one frame it made below; everything else is ignored.
// No inline script or style anywhere (the page's CSP): the layout is set here through element.style.
(function () {
  "use strict";

  var PROXY_READY = "ui/notifications/sandbox-proxy-ready";
  var RESOURCE_READY = "ui/notifications/sandbox-resource-ready";
  var SANDBOX_PREFIX = "ui/notifications/sandbox-";  // between the host and this proxy only

  var me = document.currentScript;
  var hostOrigin = me ? me.getAttribute("data-host-origin") || "" : "";
  try {
    if (new URL(hostOrigin).origin !== hostOrigin) return;  // an origin, not a URL or "*"
  } catch (err) {
    return;
  }
  if (window.parent === window) return;  // opened on its own: there is nothing to relay

  var inner = null;

  function fill(node) {
    node.style.margin = "0";
    node.style.padding = "0";
    node.style.height = "100%";
    node.style.overflow = "hidden";
  }
  fill(document.documentElement);
  fill(document.body);

  // The frame's page shows through only where both documents have the same colour scheme (else the
  // browser paints an opaque backdrop): follow the theme the host gives the app.
  function followTheme(data) {
    var theme = data.method === "ui/notifications/host-context-changed" ? data.params && data.params.theme
      : data.result && data.result.hostContext && data.result.hostContext.theme;
    if (theme === "light" || theme === "dark") document.documentElement.style.colorScheme = theme;
  }

  function isRpc(data) { return !!data && typeof data === "object" && data.jsonrpc === "2.0"; }

  // As the host's frame (static/js/mcp_apps.js): the inner frame cannot get more than this one has.
  function allowAttribute(permissions) {
    var p = permissions && typeof permissions === "object" ? permissions : {};
    var features = [];
    if (p.camera) features.push("camera 'src'");
    if (p.microphone) features.push("microphone 'src'");
    if (p.geolocation) features.push("geolocation 'src'");
    if (p.clipboardWrite) features.push("clipboard-write 'src'");
    return features.join("; ");
  }

  function createInner(params) {
    var frame = document.createElement("iframe");
    // Set before the frame has a document: sandbox flags apply when it navigates. A sandbox the host
    // may pass in the params is not used; this one is fixed.
    frame.setAttribute("sandbox", "allow-scripts allow-forms");
    var allow = allowAttribute(params.permissions);
    if (allow) frame.setAttribute("allow", allow);
    frame.title = "App";
    frame.style.display = "block";
    frame.style.width = "100%";
    frame.style.height = "100%";
    frame.style.border = "0";
    frame.srcdoc = params.html;
    document.body.appendChild(frame);
    inner = frame;
  }

  window.addEventListener("message", function (event) {
    var data = event.data;
    if (!isRpc(data)) return;
    if (event.source === window.parent && event.origin === hostOrigin) {
      if (data.method === RESOURCE_READY) {
        if (!inner && data.params && typeof data.params.html === "string") createInner(data.params);
        return;  // once: a second one would swap the app under the host's feet
      }
      // The app speaks first (ui/initialize), so nothing for it can arrive before it exists.
      if (!inner || !inner.contentWindow) return;
      followTheme(data);
      inner.contentWindow.postMessage(data, "*");  // its origin is opaque: "*" is the only name for it
      return;
    }
    if (inner && event.source === inner.contentWindow) {
      if (typeof data.method === "string" && data.method.indexOf(SANDBOX_PREFIX) === 0) return;  // no forging
      window.parent.postMessage(data, hostOrigin);
    }
  });

  window.parent.postMessage({jsonrpc: "2.0", method: PROXY_READY, params: {}}, hostOrigin);
})();
