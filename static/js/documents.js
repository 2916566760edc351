// The document panel beside the timeline (templates/agents/_document_panel.html). Wide screens: shown
// beside the timeline once the session has a document, hidden and shown again with the "Documents"
// button. Phones: a drawer from the right behind the same button (aria-expanded, Esc, focus), opened
// too by a timeline card's "Open version N". The live stream redraws the panel when the agent writes,
// except while the user's editor is open: their text stays, and the panel says a new version came.
(function () {
  "use strict";
  var phone = window.matchMedia("(max-width: 760px)");

  function panel() { return document.getElementById("doc-panel"); }
  function toggle() { return document.getElementById("docs-toggle"); }
  function isOpen() {
    return phone.matches ? document.body.classList.contains("docs-open") : !document.body.classList.contains("docs-hidden");
  }
  function sync() {
    var p = panel(), t = toggle();
    if (!p || !t) return;
    t.hidden = p.hidden;
    t.setAttribute("aria-expanded", String(!p.hidden && isOpen()));
  }
  function setOpen(open, focus) {
    if (phone.matches) {
      document.body.classList.toggle("docs-open", open);
    } else {
      document.body.classList.toggle("docs-hidden", !open);
    }
    sync();
    if (!focus) return;
    var target = open ? document.getElementById("doc-panel-title") : toggle();
    if (target) target.focus();
  }

  document.addEventListener("click", function (e) {
    var el = e.target;
    if (!el || !el.closest) return;
    if (el.closest("#docs-toggle")) {
      setOpen(!isOpen(), true);
    } else if (el.closest("[data-doc-close]")) {
      setOpen(false, true);
    } else if (el.closest(".doc-open")) {
      setOpen(true, false);
    } else if (phone.matches && document.body.classList.contains("docs-open") && !el.closest("#doc-panel, .topbar")) {
      setOpen(false, false);  // a tap on the shaded page beside the drawer
    }
  });
  // Capturing, before the turn's Esc handler: with the drawer open on a phone, Esc closes it.
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape" || e.isComposing || !phone.matches || !document.body.classList.contains("docs-open")) return;
    e.preventDefault();
    e.stopPropagation();
    setOpen(false, true);
  }, true);
  document.addEventListener("htmx:oobBeforeSwap", function (e) {
    var target = e.detail && e.detail.target;
    if (!target || target.id !== "doc-panel" || !target.querySelector("form.doc-editor")) return;
    e.preventDefault();  // the user is editing: keep their text
    var note = target.querySelector(".doc-live-note");
    if (note) note.textContent = " · The agent saved a new version meanwhile: saving tells you so and keeps your text.";
  });
  document.addEventListener("htmx:afterSettle", sync);
  document.addEventListener("htmx:oobAfterSwap", sync);
  phone.addEventListener("change", sync);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", sync);
  } else {
    sync();
  }
})();
