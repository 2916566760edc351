// The prompts in the composer (agents/web/views/prompts.py): the user's saved prompts (their own and
// their teams' shared ones) first, then the MCP servers'. Typing "/" at the start of the message box
// lists them (title or name, description, whose: "yours", the team, the server), filtered by what
// follows the "/"; Up and Down choose, Enter takes one, Esc closes the list. A prompt with blanks (a
// saved prompt's {{variables}}, an MCP prompt's arguments) asks for them in a small form (required
// ones marked); the prompt, filled by the server (a saved one is counted as used) or got from its MCP
// server, is put into the message box as text, for the user to read, edit and send. A textarea may not take the combobox role, so the box
// keeps its textbox role and carries the rest of the pattern: aria-autocomplete="list", aria-controls
// naming the listbox while it is open and aria-activedescendant naming the chosen option.
(function () {
  "use strict";

  var LIST_ID = "prompt-listbox";
  var FORM_ID = "prompt-form";
  var FRESH_MS = 30000;  // a list fetched this recently is used again
  var QUERY = /^\/(\S*)$/;  // "/", then no space: still choosing a prompt

  var prompts = null;  // the last list fetched, or null
  var fetchedAt = 0;
  var loading = null;  // the fetch in flight
  var shown = [];  // the prompts listed now
  var active = -1;

  function composer() { return document.querySelector("form[data-prompts-url]"); }
  function box() { return document.getElementById("message"); }
  function listbox() { return document.getElementById(LIST_ID); }
  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (err) {
      return "";
    }
  }
  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text) node.textContent = text;
    return node;
  }
  // The list and the form sit just above the composer, outside it: a redraw of the composer (a turn
  // starts or ends) leaves a half-filled form alone, and its inputs never go with the message.
  function slot() {
    var form = composer();
    if (!form) return null;
    var holder = document.getElementById("prompt-popup");
    if (!holder) {
      holder = el("div", "prompt-popup");
      holder.id = "prompt-popup";
      form.parentNode.insertBefore(holder, form);
    }
    return holder;
  }
  function announce(text) {
    var form = composer();
    var live = document.getElementById("prompt-status");
    if (!live && form) {
      live = el("p", "visually-hidden");
      live.id = "prompt-status";
      live.setAttribute("aria-live", "polite");
      form.parentNode.insertBefore(live, form);
    }
    if (live) live.textContent = text;
  }

  function load() {
    var form = composer();
    if (prompts && Date.now() - fetchedAt < FRESH_MS) return Promise.resolve(prompts);
    if (loading) return loading;
    loading = fetch(form.dataset.promptsUrl, {headers: {Accept: "application/json"}, credentials: "same-origin"})
      .then(function (response) { return response.json().then(function (body) { return [response, body]; }); })
      .then(function (answer) {
        loading = null;
        if (!answer[0].ok) throw new Error((answer[1].error && answer[1].error.message) || "The prompts could not be listed.");
        // One shape for both kinds: `kind`, `name` (what the list shows after "/"), `source` (whose),
        // `arguments` ({name, title, description, required}).
        prompts = (answer[1].saved || []).map(function (p) {
          return {
            kind: "saved", id: p.id, name: p.title, title: "", description: p.description,
            source: p.team || "yours",
            arguments: p.variables.map(function (v) { return {name: v, required: true}; }),
          };
        }).concat((answer[1].prompts || []).map(function (p) {
          return {
            kind: "mcp", server: p.server, name: p.name, title: p.title, description: p.description,
            source: p.server, arguments: p.arguments,
          };
        }));
        fetchedAt = Date.now();
        return prompts;
      }, function (err) {
        loading = null;
        throw err instanceof Error && err.message ? err : new Error("The prompts could not be listed.");
      });
    return loading;
  }

  function matches(prompt, query) {
    var q = query.toLowerCase();
    return !q || [prompt.name, prompt.title, prompt.source].some(function (s) { return (s || "").toLowerCase().indexOf(q) >= 0; });
  }

  function closeList() {
    var list = listbox();
    if (list) list.remove();
    shown = [];
    active = -1;
    var b = box();
    if (b) {
      b.removeAttribute("aria-controls");
      b.removeAttribute("aria-activedescendant");
    }
  }

  function drawList(query, note) {
    var holder = slot();
    var b = box();
    if (!holder || !b) return;
    var list = listbox();
    if (!list) {
      list = el("ul", "prompt-list");
      list.id = LIST_ID;
      list.setAttribute("role", "listbox");
      list.setAttribute("aria-label", "Saved prompts and prompts of the MCP servers");
      holder.insertBefore(list, holder.firstChild);
    }
    list.textContent = "";
    b.setAttribute("aria-autocomplete", "list");
    b.setAttribute("aria-controls", LIST_ID);
    if (note) {
      var empty = el("li", "prompt-empty muted", note);
      empty.setAttribute("role", "option");
      empty.setAttribute("aria-disabled", "true");
      empty.setAttribute("aria-selected", "false");
      list.appendChild(empty);
      b.removeAttribute("aria-activedescendant");
      return;
    }
    shown.forEach(function (prompt, i) {
      var option = el("li", "prompt-option");
      option.id = "prompt-option-" + i;
      option.setAttribute("role", "option");
      option.setAttribute("aria-selected", i === active ? "true" : "false");
      option.dataset.index = String(i);
      var head = el("span", "prompt-head");
      head.appendChild(el("span", "prompt-name" + (prompt.kind === "saved" ? " saved" : ""), "/" + prompt.name));
      if (prompt.title && prompt.title !== prompt.name) head.appendChild(el("span", "prompt-title", prompt.title));
      head.appendChild(el("span", "prompt-server" + (prompt.kind === "saved" ? " saved" : ""), prompt.source));
      option.appendChild(head);
      if (prompt.description) option.appendChild(el("span", "prompt-description muted", prompt.description));
      list.appendChild(option);
    });
    if (active >= 0) {
      b.setAttribute("aria-activedescendant", "prompt-option-" + active);
      var current = document.getElementById("prompt-option-" + active);
      if (current) current.scrollIntoView({block: "nearest"});
    }
  }

  function openList(query) {
    load().then(function (all) {
      var b = box();
      var still = b && QUERY.exec(b.value);
      if (!still || still[1] !== query) return;  // typed on meanwhile: that input redraws
      shown = all.filter(function (p) { return matches(p, query); });
      active = shown.length ? 0 : -1;
      if (!shown.length) {
        drawList(query, all.length ? "No prompt matches “" + query + "”." : "No saved prompts, and the MCP servers offer none: save one under Settings → Prompts.");
        announce(all.length ? "No prompt matches." : "No prompts.");
        return;
      }
      drawList(query);
      announce(shown.length + (shown.length === 1 ? " prompt" : " prompts") + ". Up and down arrows choose, Enter takes it, Escape closes.");
    }, function (err) {
      drawList(query, err.message);
      announce(err.message);
    });
  }

  function move(by) {
    if (!shown.length) return;
    active = (active + by + shown.length) % shown.length;
    var b = box();
    var query = (QUERY.exec(b.value) || ["", ""])[1];
    drawList(query);
  }

  // --- a prompt chosen: its arguments, then its text -----------------------------------------------

  function closeForm(refocus) {
    var form = document.getElementById(FORM_ID);
    if (form) form.remove();
    if (refocus && box()) box().focus();
  }

  function choose(prompt) {
    closeList();  // the box keeps "/…" until the prompt's text replaces it (Cancel leaves it as typed)
    if (!prompt.arguments.length) {
      get(prompt, {}, null);
      return;
    }
    closeForm(false);
    var form = el("form", "prompt-form");
    form.id = FORM_ID;
    form.setAttribute("aria-labelledby", "prompt-form-title");
    var title = el("h2", "", prompt.title || prompt.name);
    title.id = "prompt-form-title";
    title.appendChild(document.createTextNode(" "));
    title.appendChild(el("span", "prompt-server" + (prompt.kind === "saved" ? " saved" : ""), prompt.source));
    form.appendChild(title);
    if (prompt.description) form.appendChild(el("p", "muted small", prompt.description));
    var anyRequired = false;
    prompt.arguments.forEach(function (argument, i) {
      var field = el("div", "prompt-field");
      var id = "prompt-arg-" + i;
      var label = el("label", "", argument.title || argument.name);
      label.htmlFor = id;
      if (argument.required) {
        anyRequired = true;
        var mark = el("span", "required-mark", " *");
        mark.setAttribute("aria-hidden", "true");
        label.appendChild(mark);
      }
      var input = el("input");
      input.type = "text";
      input.id = id;
      input.dataset.argument = argument.name;
      input.autocomplete = "off";
      if (argument.required) input.required = true;
      field.appendChild(label);
      field.appendChild(input);
      if (prompt.kind === "mcp") suggestions(prompt, form, input, field, id + "-values");
      if (argument.description) {
        var hint = el("span", "why", argument.description);
        hint.id = id + "-hint";
        input.setAttribute("aria-describedby", hint.id);
        field.appendChild(hint);
      }
      form.appendChild(field);
    });
    if (anyRequired) form.appendChild(el("p", "why", "* required"));
    var error = el("p", "prompt-error");
    error.setAttribute("role", "alert");
    form.appendChild(error);
    var buttons = el("div", "prompt-buttons");
    var insert = el("button", "primary", "Insert");
    insert.type = "submit";
    var cancel = el("button", "secondary", "Cancel");
    cancel.type = "button";
    cancel.dataset.promptCancel = "1";
    buttons.appendChild(insert);
    buttons.appendChild(cancel);
    form.appendChild(buttons);
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var values = {};
      form.querySelectorAll("input[data-argument]").forEach(function (input) { values[input.dataset.argument] = input.value; });
      get(prompt, values, form);
    });
    slot().appendChild(form);
    announce("");
    form.querySelector("input").focus();
  }

  // An MCP prompt's argument: as the user types, the server's suggestions (MCP completion, through
  // data-complete-url) fill a <datalist> the input names; a server that offers none leaves it empty.
  var SUGGEST_MS = 200;  // typing pauses this long before the server is asked
  function suggestions(prompt, form, input, field, listId) {
    var page = composer();
    if (!page || !page.dataset.completeUrl) return;
    var list = el("datalist");
    list.id = listId;
    input.setAttribute("list", listId);
    field.appendChild(list);
    var timer = null;
    var asked = 0;
    function ask() {
      var context = {};
      form.querySelectorAll("input[data-argument]").forEach(function (other) {
        if (other !== input && other.value) context[other.dataset.argument] = other.value;
      });
      var mine = ++asked;
      fetch(page.dataset.completeUrl.replace("SERVER", encodeURIComponent(prompt.server)), {
        method: "POST",
        credentials: "same-origin",
        headers: {"Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken()},
        body: JSON.stringify({
          ref: {type: "prompt", name: prompt.name},
          argument: {name: input.dataset.argument, value: input.value},
          context: {arguments: context},
        }),
      }).then(function (response) { return response.ok ? response.json() : {values: []}; })
        .then(function (answer) {
          if (mine !== asked) return;  // typed on meanwhile: a later answer fills the list
          list.replaceChildren();
          (answer.values || []).forEach(function (value) {
            var option = el("option");
            option.value = value;
            list.appendChild(option);
          });
        }, function () { /* no suggestions: the field stays a plain text box */ });
    }
    input.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(ask, SUGGEST_MS);
    });
    input.addEventListener("focus", function () { if (!list.children.length) ask(); });
  }

  function get(prompt, values, form) {
    var page = composer();
    if (!page) return;
    var saved = prompt.kind === "saved";
    var url = saved
      ? page.dataset.savedPromptUrl.replace("PROMPT_ID", encodeURIComponent(prompt.id))
      : page.dataset.promptsUrl + encodeURIComponent(prompt.server) + "/" + encodeURIComponent(prompt.name);
    var error = form ? form.querySelector(".prompt-error") : null;
    var button = form ? form.querySelector("button[type=submit]") : null;
    if (button) button.disabled = true;
    announce(saved ? "Filling the prompt…" : "Getting the prompt from " + prompt.server + "…");
    fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: {"Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken()},
      body: JSON.stringify(saved ? {variables: values} : {arguments: values}),
    }).then(function (response) {
      return response.json().then(function (body) { return [response, body]; });
    }).then(function (answer) {
      if (button) button.disabled = false;
      if (!answer[0].ok) {
        var problem = answer[1].error || {};
        refused(problem.message || "The prompt could not be got.", problem.field, form);
        return;
      }
      insertText(answer[1].text || "");
      closeForm(false);
      announce("The prompt is in the message box: edit it, then send.");
    }, function () {
      if (button) button.disabled = false;
      refused("The server could not be reached.", null, form);
    });
  }

  function refused(message, field, form) {
    var error = form ? form.querySelector(".prompt-error") : null;
    if (!error) {  // a prompt without arguments: the composer's own error line says it
      var line = document.getElementById("composer-error");
      if (line) line.textContent = message;
      announce(message);
      return;
    }
    error.textContent = message;
    form.querySelectorAll("input[data-argument]").forEach(function (input) {
      var wrong = field === "arguments." + input.dataset.argument || field === "variables." + input.dataset.argument;
      if (wrong) {
        input.setAttribute("aria-invalid", "true");
        input.focus();
      } else {
        input.removeAttribute("aria-invalid");
      }
    });
  }

  function insertText(text) {
    var b = box();
    if (!b) return;
    b.value = text;
    b.focus();
    b.setSelectionRange(text.length, text.length);
    b.dispatchEvent(new Event("input", {bubbles: true}));  // whatever follows the box's size sees it
  }

  // --- events --------------------------------------------------------------------------------------

  document.addEventListener("input", function (e) {
    if (!e.target || e.target.id !== "message" || !composer()) return;
    var query = QUERY.exec(e.target.value);
    if (query) openList(query[1]);
    else if (listbox()) closeList();
  });

  // Capturing, so the list's keys come before the composer's own (Enter sends, Esc stops a turn).
  document.addEventListener("keydown", function (e) {
    if (e.isComposing) return;
    if (e.target && e.target.id === "message" && listbox()) {
      var take = false;
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        move(e.key === "ArrowDown" ? 1 : -1);
        take = true;
      } else if (e.key === "Enter" && !e.shiftKey && active >= 0) {
        choose(shown[active]);
        take = true;
      } else if (e.key === "Escape") {
        closeList();
        announce("");
        take = true;
      } else if (e.key === "Tab") {
        closeList();
      }
      if (take) {
        e.preventDefault();
        e.stopImmediatePropagation();
      }
      return;
    }
    var form = e.target && e.target.closest && e.target.closest("#" + FORM_ID);
    if (form && e.key === "Escape") {  // Cancel: back to the box as it was
      e.preventDefault();
      e.stopImmediatePropagation();
      closeForm(true);
    }
  }, true);

  document.addEventListener("mousedown", function (e) {
    if (e.target.closest && e.target.closest("#" + LIST_ID)) e.preventDefault();  // the box keeps the focus
  });
  document.addEventListener("click", function (e) {
    var option = e.target.closest && e.target.closest("#" + LIST_ID + " .prompt-option");
    if (option) {
      choose(shown[Number(option.dataset.index)]);
      return;
    }
    if (e.target.closest && e.target.closest("[data-prompt-cancel]")) {
      closeForm(true);
      return;
    }
    if (listbox() && !(e.target.closest && e.target.closest("#message"))) closeList();
  });
  // Leaving the box (elsewhere than into the list) closes the list.
  document.addEventListener("focusout", function (e) {
    if (e.target && e.target.id === "message" && listbox()) {
      setTimeout(function () {
        if (document.activeElement !== box()) closeList();
      }, 0);
    }
  });
})();
