// Aptix workspace behaviour on top of htmx and its ws extension. No framework; progressive where it can be.
(function () {
  "use strict";

  // Resume: every (re)connect of the ws extension asks for the events after the page's stream cursor,
  // which each streamed fragment advances. So a reconnect replays exactly what was missed.
  function withCursor(url) {
    var cursor = document.getElementById("stream-cursor");
    var u = new URL(url, window.location.href);
    if (cursor) {  // an empty turn: the page showed no turn yet
      u.searchParams.set("turn", cursor.dataset.turn || "");
      u.searchParams.set("seq", cursor.dataset.seq || "0");
    }
    return u.toString();
  }

  // A stream the server closed for good (no access any more, too many open, a frame too big: codes
  // the ws extension does not retry) says so above the timeline, with a way back.
  document.addEventListener("htmx:wsClose", function (e) {
    var notice = document.getElementById("stream-notice");
    var code = e.detail && e.detail.event && e.detail.event.code;
    var text = notice && notice.getAttribute("data-close-" + code);
    if (!text) return;
    notice.textContent = text + " ";
    var way = document.createElement("a");  // the way on: the code's own (sign in, your sessions) or a reload
    way.href = notice.getAttribute("data-close-" + code + "-href") || "";
    way.textContent = notice.getAttribute("data-close-" + code + "-link") || "Reload";
    notice.appendChild(way);
  });

  // At once, not on DOMContentLoaded: htmx opens the page's socket on that event too, maybe first.
  // (The page's ws-connect URL carries its cursor as well, so the first connect never depends on it.)
  if (window.htmx) {
    htmx.createWebSocket = function (url) { return new WebSocket(withCursor(url)); };
  }

  // Streamed text comes as `<b data-seq="N">text</b>` (agents/_live_tail.html: the most frequent frame,
  // kept small, so not an htmx out-of-band swap): its text goes at the end of the page's live tail and
  // the stream cursor moves to N. With no tail on the page the cursor stays, so a reconnect replays it.
  document.addEventListener("htmx:wsBeforeMessage", function (e) {
    var message = e.detail.message;
    if (typeof message !== "string" || message.lastIndexOf('<b data-seq="', 0) !== 0) return;
    e.preventDefault();
    var box = document.createElement("template");
    box.innerHTML = message;
    var piece = box.content.firstElementChild;
    var tail = document.getElementById("live-tail");
    var cursor = document.getElementById("stream-cursor");
    if (!piece || !tail) return;
    tail.appendChild(document.createTextNode(piece.textContent));
    if (cursor) cursor.dataset.seq = piece.dataset.seq;
    stickToBottom(false);
  });

  // A new turn arrives as an append to the timeline (from the send request's answer and from the
  // stream, whichever comes first; the other copy yields, see htmx:oobBeforeSwap below).
  document.addEventListener("htmx:oobAfterSwap", function (e) {
    var target = e.detail.target;
    if (target && target.id === "timeline") {
      retireOlderTurns();
      stickToBottom(true);
    } else if (target && target.classList && target.classList.contains("turn")) {
      retireOlderTurns();
    }
  });
  // Only the newest turn offers answers (a proposal's choices, "Continue in a new session"), as on a
  // reloaded page: once another turn starts, those of the turns before it are gone.
  function retireOlderTurns() {
    var turns = document.querySelectorAll("#timeline > .turn");
    for (var i = 0; i < turns.length - 1; i++) {
      turns[i].querySelectorAll(".choices, form.branch, form.continue, form.again").forEach(function (el) { el.remove(); });
    }
  }
  // Versions of a message (agents/web/versions.py): the button pressed left with the version it was in,
  // so focus goes to the same step of the switcher now shown (or its other step, at either end).
  document.addEventListener("htmx:afterSwap", function (e) {
    var target = e.detail.target;
    if (!target || !target.classList || !target.classList.contains("turn-version")) return;
    var pressed = e.detail.requestConfig && e.detail.requestConfig.elt;
    var shown = target.firstElementChild ? target : target.parentElement.querySelector(":scope > .turn-body");
    var group = shown && shown.querySelector(".versions");
    if (!group) return;
    var step = pressed && pressed.dataset ? pressed.dataset.step : "";
    var button = group.querySelector('.version-step[data-step="' + step + '"]:not(:disabled)')
      || group.querySelector(".version-step:not(:disabled)");
    if (button) button.focus();
  });
  // A turn that arrives as an append (data-if-absent) may already be on the page: the send request's
  // answer and the stream's turn.started both carry it, in either order. The copy that has seen more
  // events (data-seq) wins: it replaces the one shown, or yields to it.
  // Likewise the busy composer of a send's answer yields when the stream has already ended that turn...
  document.addEventListener("htmx:oobBeforeSwap", function (e) {
    var incoming = e.detail.fragment && e.detail.fragment.firstElementChild;
    if (!incoming || !incoming.dataset) return;
    if (incoming.dataset.busyTurn) {
      var turn = document.getElementById("turn-" + incoming.dataset.busyTurn);
      // ...or waits for the user's approval (the composer stays free: a new message declines it).
      if (turn && (turn.dataset.finished || turn.classList.contains("status-awaiting_approval"))) e.detail.shouldSwap = false;
      return;
    }
    if (!incoming.dataset.ifAbsent) return;
    var shown = document.getElementById(incoming.id);
    if (!shown) return;
    e.detail.shouldSwap = false;
    if (Number(incoming.dataset.seq || 0) > Number(shown.dataset.seq || 0)) {
      htmx.swap(shown, incoming.outerHTML, {swapStyle: "outerHTML"});
    }
  });

  // Keep the newest output in view while the user is at the bottom.
  var pinned = true;
  var ownScrollTop = null;  // where stickToBottom put the timeline
  function timelineEl() { return document.getElementById("timeline"); }
  function stickToBottom(force) {
    var t = timelineEl();
    if (t && (pinned || force)) {
      t.scrollTop = t.scrollHeight;
      ownScrollTop = t.scrollTop;
      pinned = true;
    }
  }
  document.addEventListener("scroll", function (e) {
    var t = timelineEl();
    if (!t || e.target !== t) return;
    // The event of our own scroll arrives later, when the content may have grown again (an image
    // loaded): that is no reason to stop following. Only the user's scrolling decides.
    if (ownScrollTop !== null && Math.abs(t.scrollTop - ownScrollTop) < 2) return;
    ownScrollTop = null;
    pinned = t.scrollHeight - t.scrollTop - t.clientHeight < 80;
  }, true);
  document.addEventListener("htmx:wsAfterMessage", function () { stickToBottom(false); });
  document.addEventListener("DOMContentLoaded", function () { stickToBottom(true); });
  // Images (charts) finish loading after the page or fragment is in place and make it taller.
  document.addEventListener("load", function (e) {
    var t = timelineEl();
    if (e.target && e.target.tagName === "IMG" && t && t.contains(e.target)) stickToBottom(false);
  }, true);

  // Composer: Enter sends, Shift+Enter adds a line; cleared after a successful send.
  document.addEventListener("keydown", function (e) {
    var box = e.target;
    if (box && box.id === "message" && e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      if (!box.value.trim()) return;
      if (box.form.dataset.busy) {  // nothing is queued silently: say why it did not go
        var error = document.getElementById("composer-error");
        if (error) error.textContent = box.form.dataset.busySays;
        return;
      }
      box.form.requestSubmit();
    }
  });

  // Esc closes the innermost open thing: an open popover (the browser closes it), a search field
  // (the browser clears it), an open tool card or reasoning section. Only when none of those is open
  // and focus is in the conversation (composer, timeline, or nowhere in particular) does it stop the
  // running turn.
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape" || e.defaultPrevented || e.isComposing) return;
    if (document.querySelector(":popover-open")) return;
    var focus = document.activeElement;
    var inConversation = !focus || focus === document.body ||
      !!(focus.closest && focus.closest("#composer, #timeline"));
    if (!inConversation) return;
    var details = focus && focus.closest && focus.closest("#timeline details[open]");
    if (details) {
      e.preventDefault();
      details.open = false;
      details.querySelector("summary").focus();
      return;
    }
    var stop = document.querySelector("#timeline .turn-status .stop");
    if (stop) { e.preventDefault(); stop.click(); }
  });
  document.addEventListener("htmx:afterRequest", function (e) {
    var form = e.detail.elt;
    if (form && form.id === "composer") {  // a button's choice goes with its own message only
      form.elements.choice_mode.value = "";
      form.elements.choice_branch.value = "";
    }
    // Only a 2xx clears the error: a 422/429 has just swapped its reason in (responseHandling).
    if (form && form.id === "composer" && e.detail.successful && e.detail.xhr.status < 300) {
      var error = document.getElementById("composer-error");
      if (error) error.textContent = "";
      stickToBottom(true);
    }
  });
  document.addEventListener("htmx:afterSwap", function (e) {
    if (e.detail.target && e.detail.target.id === "composer") focusComposer();
  });
  document.addEventListener("htmx:oobAfterSwap", function (e) {
    if (e.detail.target && e.detail.target.id === "composer") focusComposer();
  });
  // The draft survives a redraw of the composer (a turn ending, an approval, in this tab or another):
  // what the box held is put back into the new one, unless it is the message this tab just sent.
  var sending = null;  // the composer's message in flight
  var carried = "";
  document.addEventListener("htmx:beforeRequest", function (e) {
    var box = document.getElementById("message");
    if (e.detail.elt && e.detail.elt.id === "composer" && box) sending = box.value;
  });
  document.addEventListener("htmx:afterRequest", function (e) {
    if (e.detail.elt && e.detail.elt.id === "composer") sending = null;
  });
  document.addEventListener("htmx:oobBeforeSwap", function (e) {
    var incoming = e.detail.fragment && e.detail.fragment.firstElementChild;
    if (!incoming || incoming.id !== "composer" || !e.detail.shouldSwap) return;
    var box = document.getElementById("message");
    carried = box ? box.value : "";
    if (sending !== null && carried === sending && incoming.dataset.busyTurn) carried = "";
  });
  document.addEventListener("htmx:oobAfterSwap", function (e) {
    if (!e.detail.target || e.detail.target.id !== "composer" || !carried) return;
    var box = document.getElementById("message");
    if (box && !box.value) box.value = carried;
    carried = "";
  });
  // The server's reason for refusing a message (a turn still running, started in another tab) stays
  // until the next send: the stream redraws the composer (that turn's start, its end) with an empty
  // line, which used to wipe the reason a moment after it appeared and leave the draft unexplained.
  var refusal = "";
  document.addEventListener("htmx:beforeRequest", function (e) {
    var error = document.getElementById("composer-error");
    if (!e.detail.elt || e.detail.elt.id !== "composer" || !error || !error.dataset.refusal) return;
    error.textContent = "";
    delete error.dataset.refusal;
  });
  document.addEventListener("htmx:oobBeforeSwap", function (e) {
    var incoming = e.detail.fragment && e.detail.fragment.firstElementChild;
    if (!incoming || incoming.id !== "composer" || !e.detail.shouldSwap) return;
    var error = document.getElementById("composer-error");
    refusal = error && error.dataset.refusal ? error.textContent : "";
  });
  document.addEventListener("htmx:oobAfterSwap", function (e) {
    if (!e.detail.target || e.detail.target.id !== "composer" || !refusal) return;
    var error = document.getElementById("composer-error");
    if (error && !error.textContent.trim()) {
      error.textContent = refusal;
      error.dataset.refusal = "1";
    }
    refusal = "";
  });
  function focusComposer() {
    var box = document.getElementById("message");
    if (box) box.focus();
  }

  // Buttons that answer for the user (mode proposal options, suggestions): fill the composer and send.
  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("[data-send]");
    if (!button) return;
    var box = document.getElementById("message");
    if (!box || box.form.dataset.busy) return;
    box.value = button.dataset.send;
    // A proposal's switch option also sends its answer structured: the user's consent to that mode.
    box.form.elements.choice_mode.value = button.dataset.choiceMode || "";
    box.form.elements.choice_branch.value = button.dataset.choiceBranch || "";
    box.form.requestSubmit();
  });

  // Copy buttons: a code block's code, a token (data-copy-text), or an answer's Markdown, fetched
  // from data-copy-url when clicked (the page carries each answer once, as HTML). The button says
  // "Copied" (or "Copy failed") for two seconds. The clipboard write starts in the click itself with
  // a promise of the text (ClipboardItem), so the click's user activation still holds when the text
  // arrives; without ClipboardItem the text is fetched first and then written. Without the
  // Clipboard API (a page served over plain HTTP to another host is no secure context) a selected,
  // off-screen textarea is copied instead.
  function fetchText(url) {
    return fetch(url, {credentials: "same-origin", headers: {"Accept": "text/markdown"}}).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.text();
    });
  }
  function copyFallback(text) {
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.className = "offscreen";
      document.body.appendChild(area);
      area.select();
      var ok = document.execCommand("copy");
      area.remove();
      if (ok) { resolve(); } else { reject(new Error("copy refused")); }
    });
  }
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    return copyFallback(text);
  }
  function copyFetched(url) {
    if (navigator.clipboard && window.isSecureContext && window.ClipboardItem && navigator.clipboard.write) {
      var blob = fetchText(url).then(function (text) { return new Blob([text], {type: "text/plain"}); });
      // The clipboard may reject the write before it reads this promise (the page lost focus, say):
      // then a refused fetch would be an unhandled rejection. The write's own rejection reports it.
      blob.catch(function () {});
      return navigator.clipboard.write([new ClipboardItem({"text/plain": blob})]);
    }
    return fetchText(url).then(copyText);
  }
  function copiedState(button, ok) {
    button.textContent = ok ? "Copied" : "Copy failed";
    button.classList.add(ok ? "copied" : "failed");
    clearTimeout(button.copyTimer);
    button.copyTimer = setTimeout(function () {
      button.textContent = "Copy";
      button.classList.remove("copied", "failed");
    }, 2000);
  }
  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("button.copy[data-copy]");
    if (!button) return;
    var done;
    if (button.dataset.copyUrl) {
      done = copyFetched(button.dataset.copyUrl);
    } else {
      done = copyText((button.dataset.copy === "code"
        ? (button.closest(".code-block").querySelector("code") || {}).textContent
        : button.dataset.copyText) || "");
    }
    done.then(function () { copiedState(button, true); }, function () { copiedState(button, false); });
  });

  // A running turn's status line says what it waits for and for how long ("waiting for the model · 40 s",
  // "running sql__query · 3 s"). The server draws the line when that changes (a step starts, the tools
  // run), with the seconds spent so far (data-elapsed); the page counts on, with no message per second.
  function tickElapsed() {
    document.querySelectorAll("#timeline .turn-status .elapsed").forEach(function (el) {
      if (!el.dataset.t0) el.dataset.t0 = String(Date.now() - Number(el.dataset.elapsed || 0) * 1000);
      var turn = el.closest(".turn");
      var tool = turn && turn.querySelector(".tool-card.tool-running .tool-name");
      var live = turn && turn.querySelector(".live");
      var what = tool ? "running " + tool.textContent.trim()
        : live && live.textContent.trim() ? "writing" : "waiting for the model";
      el.textContent = "· " + what + " · " + Math.floor((Date.now() - Number(el.dataset.t0)) / 1000) + " s";
    });
  }
  setInterval(tickElapsed, 1000);
  document.addEventListener("htmx:oobAfterSwap", tickElapsed);  // a new line: said at once, not a second later

  // A session of the user's got a new turn (in this tab or another): the sidebar puts it first, after
  // the pinned ones, as the server orders it (the most recently updated first).
  document.addEventListener("htmx:oobAfterSwap", function (e) {
    var moved = e.target;  // the new element (detail.target is the one it replaced)
    if (!moved || moved.id !== "session-moved" || !moved.dataset.sessions) return;
    moved.dataset.sessions.split(" ").forEach(function (id) {  // in the order they moved: the newest last
      var link = document.querySelector('#session-list a[href="/sessions/' + id + '/"]');
      var item = link && link.closest("li");
      if (!item || item.classList.contains("pinned")) return;
      var list = item.parentElement;
      // Grouped by project: to the top of its own group (after the group's heading and pinned sessions).
      var heading = list.querySelector(':scope > li.project-group[data-group="' + (item.dataset.group || "") + '"]');
      var after;
      if (heading) {
        after = heading.nextElementSibling;
        while (after && after !== item && after.classList.contains("pinned")) after = after.nextElementSibling;
      } else {
        var pinned = list.querySelectorAll(":scope > li.pinned");
        after = pinned.length ? pinned[pinned.length - 1].nextElementSibling : list.firstElementChild;
      }
      if (after !== item) list.insertBefore(item, after);
    });
  });

  // A message above the workspace (a session renamed, deleted…) goes when clicked, or by itself after
  // NOTICE_MS (it said what happened; the page shows the result).
  var NOTICE_MS = 6000;
  document.addEventListener("click", function (e) {
    var message = e.target.closest && e.target.closest(".workspace > .messages > li");
    if (message) message.remove();
  });
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".workspace > .messages > li").forEach(function (message) {
      message.title = message.textContent.trim();  // cut short on one line: the whole text on hover
      setTimeout(function () { message.remove(); }, NOTICE_MS);
    });
  });

  // Errors of htmx requests (network, 4xx/5xx) are shown, not swallowed.
  document.addEventListener("htmx:responseError", function (e) {
    var error = document.getElementById("composer-error");
    var status = e.detail.xhr.status;
    if (error) {
      error.textContent = status === 404 ? "That no longer exists (or is not yours)."
        : status === 403 ? "The request was refused. Reload the page and try again."
        : "The request failed (" + status + "). Try again.";
    }
  });
  document.addEventListener("htmx:sendError", function () {
    var error = document.getElementById("composer-error");
    if (error) error.textContent = "The server could not be reached. Check your connection and try again.";
  });

  // Long turns: while the session's newest turn runs, the tab says so (title and favicon); when it
  // ends while the user looks elsewhere, "✓ <session>" (and the done favicon) stays until the tab is
  // focused, plus a browser notification for users who opted in on the settings page. The turn's
  // status arrives as an out-of-band swap of its article (class status-<status>, data-finished).
  var tab = {state: "idle"};
  function sessionName() {
    var title = document.getElementById("session-title");  // swapped in again when the session is renamed
    return title ? title.textContent.trim() : "";
  }
  function newestTurn() {
    var all = document.querySelectorAll("#timeline > .turn");
    return all.length ? all[all.length - 1] : null;
  }
  function paused(turn) {
    return turn.classList.contains("status-awaiting_approval") || turn.classList.contains("status-requires_action");
  }
  function newestTurnRunning() {
    var turn = newestTurn();
    return !!turn && !turn.dataset.finished && !paused(turn);
  }
  function showTab(state) {
    var icon = document.getElementById("favicon");
    tab.state = state;
    document.title = state === "running" ? "● Running — " + sessionName() + " · Aptix"
      : state === "done" ? "✓ " + sessionName() : sessionName() + " · Aptix";
    if (icon) icon.href = icon.dataset[state] || icon.dataset.idle;
  }
  function away() { return document.hidden || !document.hasFocus(); }
  function notifyDone() {
    if (!document.body.dataset.notifyTurns || !("Notification" in window) || Notification.permission !== "granted") return;
    if (!document.hidden) return;  // a visible, unfocused tab shows its title; a hidden one is told
    var turn = newestTurn();
    var body = turn && paused(turn) ? "The agent waits for your approval." : "The turn finished.";
    var note = new Notification("✓ " + sessionName(), {body: body, tag: "aptix-turn"});
    note.onclick = function () { window.focus(); note.close(); };
  }
  function watchTurn() {
    if (!sessionName()) return;
    if (newestTurnRunning()) {
      if (tab.state !== "running") showTab("running");
    } else if (tab.state === "running") {
      if (away()) { showTab("done"); notifyDone(); } else { showTab("idle"); }
    }
  }
  function backToTab() { if (tab.state === "done" && !away()) showTab("idle"); }
  document.addEventListener("DOMContentLoaded", function () {
    var icon = document.getElementById("favicon");
    if (icon) icon.dataset.idle = icon.getAttribute("href");
    watchTurn();
  });
  document.addEventListener("htmx:oobAfterSwap", watchTurn);
  document.addEventListener("htmx:afterSwap", watchTurn);
  window.addEventListener("focus", backToTab);
  document.addEventListener("visibilitychange", backToTab);

  // The header's bell: its count comes by polling (every page) and over the websocket (session pages),
  // each a swap of #badge-inbox. When it rises, users who opted in (the inbox page or the settings
  // page: data-notify-inbox) get a browser notification that opens the inbox.
  var inboxSeen = null;
  function inboxCount() {
    var badge = document.getElementById("badge-inbox");
    return badge ? parseInt(badge.dataset.count || "0", 10) || 0 : null;
  }
  function watchInbox() {
    var count = inboxCount();
    if (count === null) return;
    var rose = inboxSeen !== null && count > inboxSeen;
    inboxSeen = count;
    if (!rose || !document.body.dataset.notifyInbox || !("Notification" in window) || Notification.permission !== "granted") return;
    var note = new Notification("Aptix inbox: " + count + " waiting", {
      body: "An automation needs you: an approval or a notice.", tag: "aptix-inbox"
    });
    var bell = document.getElementById("inbox-bell");
    note.onclick = function () { window.focus(); if (bell) window.location.href = bell.getAttribute("href"); note.close(); };
  }
  document.addEventListener("DOMContentLoaded", watchInbox);
  document.addEventListener("htmx:oobAfterSwap", watchInbox);
  document.addEventListener("htmx:afterSwap", watchInbox);

  // The settings page: ticking "Notify me…" is when the browser asks for the permission (never before).
  function showPermission() {
    var hint = document.getElementById("notify-permission");
    if (!hint) return;
    hint.textContent = !("Notification" in window) ? hint.dataset.unsupported
      : Notification.permission === "denied" ? hint.dataset.denied : "";
  }
  document.addEventListener("change", function (e) {
    if (!e.target || (e.target.id !== "id_notify_turns" && e.target.id !== "id_notify_inbox") || !e.target.checked) return;
    if ("Notification" in window && Notification.permission === "default") {
      Notification.requestPermission().then(showPermission);
    }
    showPermission();
  });

  // A page opens with focus in the message box, ready to type. The skip link puts focus into its
  // target (following a fragment only moves where the next Tab starts).
  document.addEventListener("DOMContentLoaded", function () {
    if (!document.activeElement || document.activeElement === document.body) focusComposer();
  });
  document.addEventListener("click", function (e) {
    var link = e.target.closest && e.target.closest("a.skip-link");
    var target = link && document.getElementById(link.getAttribute("href").slice(1));
    if (!target) return;
    target.focus();
    if (document.activeElement === target) e.preventDefault();  // else the browser follows the link
  });

  // The home composer of someone in several teams: the mode select offers the chosen team's modes
  // (team catalogs; the server refuses any other), and a change of team starts on that team's default.
  document.addEventListener("DOMContentLoaded", function () {
    var team = document.getElementById("id_team");
    var mode = document.getElementById("id_mode");
    var defaults = document.getElementById("team-default-modes");
    if (!team || !mode || !defaults) return;
    var byTeam = JSON.parse(defaults.textContent);
    function follow(reset) {
      Array.prototype.forEach.call(mode.options, function (option) {
        var usable = (option.dataset.teams || "").split(" ").indexOf(team.value) >= 0;
        option.hidden = !usable;
        option.disabled = !usable;
      });
      var chosen = mode.options[mode.selectedIndex];
      if (reset || !chosen || chosen.disabled) mode.value = byTeam[team.value] || "";
    }
    team.addEventListener("change", function () { follow(true); });
    follow(false);
  });

  // Phone: the session list is a drawer (a disclosure, not a modal). The top bar's "Sessions" button
  // opens it and focus moves into it; Esc, the button again or a tap beside it closes it and focus goes
  // back to the button; tabbing on into the page closes it too. Wider screens never show the button,
  // and a drawer left open there closes.
  var phone = window.matchMedia("(max-width: 760px)");
  function drawerOpen() { return document.body.classList.contains("drawer-open"); }
  function setDrawer(open, refocus) {
    var toggle = document.getElementById("sessions-toggle");
    var sidebar = document.getElementById("sidebar");
    if (!toggle || !sidebar) return;
    document.body.classList.toggle("drawer-open", open);
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    if (open) {
      var first = sidebar.querySelector("li.current a") || sidebar.querySelector("a[href], input, select, button");
      if (first) first.focus();
    } else if (refocus) {
      toggle.focus();
    }
  }
  document.addEventListener("click", function (e) {
    if (e.target.closest && e.target.closest("#sessions-toggle")) {
      setDrawer(!drawerOpen(), true);
    } else if (drawerOpen() && !(e.target.closest && e.target.closest("#sidebar, .topbar"))) {
      setDrawer(false, true);  // a tap on the shaded page beside the drawer
    }
  });
  // Capturing, before the turn's Esc handler: with the drawer open, Esc closes it (unless it first
  // clears the sessions filter, as the browser does) and never stops the running turn.
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape" || e.isComposing || !drawerOpen() || document.querySelector(":popover-open")) return;
    var focus = document.activeElement;
    if (focus && focus.type === "search" && focus.value) return;
    e.preventDefault();
    setDrawer(false, true);
  }, true);
  document.addEventListener("focusin", function (e) {
    if (drawerOpen() && !(e.target.closest && e.target.closest("#sidebar, .topbar"))) setDrawer(false, false);
  });
  phone.addEventListener("change", function () {
    if (!phone.matches && drawerOpen()) setDrawer(false, false);
  });
})();
